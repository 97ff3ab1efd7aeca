// python/torch_shim/torch_shim_abi.h: the C interface between the _tilec extension and
// libtilec_torch_shim (ABI 2). Plain C types only: the two are built against different C++
// runtimes (torch's libstdc++ and _tilec's static one).
#pragma once

#include <Python.h>
#include <stdint.h>

#define TILEC_TORCH_SHIM_ABI 2
#define TILEC_TORCH_SHIM_MAX_RANK 8

// What a kernel call reads from a torch tensor argument.
struct TilecShimTensor {
  uint64_t data;        // tensor.data_ptr()
  int32_t ndim;
  int32_t device;       // CUDA device index
  PyObject* dtype;      // the torch.dtype object (borrowed; torch keeps one per dtype)
  int64_t sizes[TILEC_TORCH_SHIM_MAX_RANK];
  int64_t strides[TILEC_TORCH_SHIM_MAX_RANK];  // in elements
};

// The shim's exports (C linkage):
//   int tilec_torch_shim_abi(void);                         TILEC_TORCH_SHIM_ABI
//   const char* tilec_torch_shim_torch_version(void);       torch.__version__ built against
//   PyObject* tilec_torch_shim_empty(const int64_t* shape, int rank, PyObject* torch_dtype, int device);
//       a new contiguous CUDA tensor (new reference), or null with no Python error set
//   int tilec_torch_shim_current_stream(int device, void** stream);
//       1 with *stream = the current cudaStream_t (null: the default stream), or 0
//   int tilec_torch_shim_read(PyObject* tensor, struct TilecShimTensor* out);
//       1 when `tensor` is an exact torch.Tensor, strided, on CUDA, of at most 8 dimensions
//       (then *out is filled); 0 otherwise (the caller reads it through Python, which also
//       makes the error messages), never raising
