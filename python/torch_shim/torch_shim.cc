// libtilec_torch_shim: what a kernel call needs from torch that costs microseconds through
// torch's Python API — a tensor argument's data pointer, sizes, strides, dtype and device (six
// attribute reads from Python, ~0.5 µs a tensor, against a few loads here), a new CUDA tensor
// for an output (at::empty, as torch's own allocating ops make theirs, instead of
// `input.new_empty(shape)` from Python: ~3 µs on the H200 host) and the current CUDA stream.
// The interface is python/torch_shim/torch_shim_abi.h.
//
// Contract:
// - Built only where torch (its headers and libraries) is installed at build time
//   (CMakeLists.txt, TILEC_TORCH_SHIM); never needed: the binding falls back to torch's Python
//   API when the shim is missing, was built against another torch (version string checked at
//   load), or returns null from a call.
// - Plain C interface, no C++ types across it: the _tilec extension links its own static
//   libstdc++, this library torch's. Loaded by python/src/torch_shim_loader.cc with dlopen after
//   torch is imported, so libtorch is already in the process.
// - No function raises: tilec_torch_shim_empty returns null (the caller then allocates through
//   Python, which raises torch's own exception, e.g. torch.OutOfMemoryError), read returns 0
//   for anything but a plain CUDA tensor (the caller's Python path handles the rest).
#include <Python.h>

#include <ATen/ops/empty.h>
#include <c10/core/TensorOptions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>

#include "torch_shim_abi.h"

#define TILEC_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

TILEC_SHIM_EXPORT int tilec_torch_shim_abi() { return TILEC_TORCH_SHIM_ABI; }

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

TILEC_SHIM_EXPORT int tilec_torch_shim_read(PyObject* obj, TilecShimTensor* out) {
  if (!THPVariable_CheckExact(obj)) return 0;  // subclasses: through Python, which honours overrides
  try {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (!t.defined() || t.layout() != c10::kStrided || !t.is_cuda() || t.dim() > TILEC_TORCH_SHIM_MAX_RANK) return 0;
    out->data = reinterpret_cast<uint64_t>(t.data_ptr());
    out->ndim = static_cast<int32_t>(t.dim());
    out->device = t.get_device();
    out->dtype = reinterpret_cast<PyObject*>(torch::getTHPDtype(t.scalar_type()));
    for (int64_t i = 0; i < t.dim(); ++i) {
      out->sizes[i] = t.size(i);
      out->strides[i] = t.stride(i);
    }
    return 1;
  } catch (...) {  // e.g. a wrapper tensor without storage: data_ptr() throws
    return 0;
  }
}
