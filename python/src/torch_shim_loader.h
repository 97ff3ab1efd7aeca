// python/src/torch_shim_loader.h: the optional libtilec_torch_shim (python/torch_shim/), loaded
// once torch is imported; a kernel call allocates outputs and finds the current stream through
// it when it is active, through torch's Python API otherwise (and whenever it returns null).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

#include "../torch_shim/torch_shim_abi.h"

namespace tilec::bind {

struct TorchShim {
  // A new CUDA tensor (new reference), or null with no Python error set.
  PyObject* (*empty)(const int64_t* shape, int rank, PyObject* torch_dtype, int device) = nullptr;
  // 1 with *stream = the current cudaStream_t of `device` (null: the default stream), or 0.
  int (*current_stream)(int device, void** stream) = nullptr;
  // 1 with *out filled for an exact torch.Tensor on CUDA, else 0 (torch_shim_abi.h).
  int (*read)(PyObject* tensor, TilecShimTensor* out) = nullptr;
  std::string path;  // where it was loaded from
  bool loaded = false;
  bool active = false;  // loaded and not switched off (_set_torch_shim_active: benchmarks)
};
extern TorchShim g_shim;

// dlopens `path` and takes its functions when it speaks TILEC_TORCH_SHIM_ABI and was built against
// `torch_version` (torch.__version__ of the running process). "" when loaded (or when `path` is
// the one already loaded), else why not; once one shim is loaded every other is checked and refused.
std::string load_torch_shim(const std::string& path, const std::string& torch_version);

}  // namespace tilec::bind
