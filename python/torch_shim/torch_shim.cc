// libtilec_torch_shim: the two things a kernel call needs from torch that cost microseconds
// through torch's Python API — a new CUDA tensor for an output (at::empty, as torch's own
// allocating ops make theirs, instead of `input.new_empty(shape)` from Python: ~1 µs against
// ~4.5 µs on the H200 host) and the current CUDA stream.
//
// Contract:
// - Built only where torch (its headers and libraries) is installed at build time
//   (CMakeLists.txt, TILEC_TORCH_SHIM); never needed: the binding falls back to torch's Python
//   API when the shim is missing, was built against another torch (version string checked at
//   load), or returns null from a call.
// - Plain C interface, no C++ types across it: the _tilec extension links its own static
//   libstdc++, this library torch's. Loaded by python/src/torch_shim_loader.cc with dlopen after
//   torch is imported, so libtorch is already in the process.
// - tilec_torch_shim_empty returns a new reference, or null with no Python error set (the
//   caller then allocates through Python, which raises torch's own exception, e.g.
//   torch.OutOfMemoryError). It never raises.
#include <Python.h>

#include <ATen/ops/empty.h>
#include <c10/core/TensorOptions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#define TILEC_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

TILEC_SHIM_EXPORT int tilec_torch_shim_abi() { return 1; }

// torch.__version__ of the torch this library was compiled against (CMake passes it).
TILEC_SHIM_EXPORT const char* tilec_torch_shim_torch_version() { return TILEC_TORCH_VERSION; }

TILEC_SHIM_EXPORT PyObject* tilec_torch_shim_empty(const int64_t* shape, int rank, PyObject* dtype, int device) {
  if (!dtype || !THPDtype_Check(dtype)) return nullptr;
  try {
    const auto options = at::TensorOptions()
                             .dtype(reinterpret_cast<THPDtype*>(dtype)->scalar_type)
                             .device(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device)));
    PyObject* out = THPVariable_Wrap(at::empty(c10::IntArrayRef(shape, static_cast<size_t>(rank)), options));
    if (!out) PyErr_Clear();
    return out;
  } catch (...) {  // out of memory and the like: the Python path raises torch's exception
    return nullptr;
  }
}

// The current stream of `device` into *stream (cudaStream_t; null is the default stream):
// 1, or 0 if torch cannot say.
TILEC_SHIM_EXPORT int tilec_torch_shim_current_stream(int device, void** stream) {
  try {
    *stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
    return 1;
  } catch (...) {
    return 0;
  }
}
