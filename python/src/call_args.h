// The call path's arguments (python/src/bind_runtime.cc is the kernel object and its call):
// what tilec/kernel.py registers about torch (never imported here), and the reading of one call
// argument into the runtime's ArgValue: a torch tensor through six attributes (straight from
// torch.Tensor's descriptors for an exact torch.Tensor), any other array through DLPack /
// nb::ndarray, a Python bool, int or float as a scalar. Argument errors raise
// tilec.KernelArgumentError.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>
#include <utility>
#include <vector>

#include "tilec/ir/type.h"
#include "tilec/runtime/kernel.h"

namespace tilec::bind {

namespace nb = nanobind;

// The six tensor reads of a call. For an exact torch.Tensor they go straight to the
// descriptor torch.Tensor defines (a getset or a C method), which skips the attribute lookup
// and the instance-dict probe of every read; subclasses take the ordinary lookup.
enum TensorAttr { kAttrDtype, kAttrDataPtr, kAttrShape, kAttrStride, kAttrIsCuda, kAttrGetDevice, kNumTensorAttrs };
struct TensorAttrSlot {
  PyObject* name = nullptr;   // interned
  PyObject* descr = nullptr;  // torch.Tensor's descriptor (strong), or null: ordinary lookup
  bool is_method = false;     // a C method called with the tensor alone, else a getset
};

struct TorchHooks {
  bool ready = false;
  PyTypeObject* tensor_type = nullptr;
  TensorAttrSlot attrs[kNumTensorAttrs];
  std::vector<std::pair<PyObject*, ir::DataType>> dtypes;  // torch dtype object <-> tilec type
  PyObject* empty = nullptr;                                // torch.empty
  PyObject* current_stream = nullptr;                       // device index -> raw stream (int)
};
extern TorchHooks g_torch;          // strong references, kept for the process
extern PyObject* g_argument_error;  // tilec.KernelArgumentError (ValueError)
extern PyObject* g_launch_error;    // tilec.KernelLaunchError (RuntimeError)
extern PyObject* s_cuda_stream;     // interned attribute names the call uses
extern PyObject* s_new_empty;
extern PyObject* s_empty_kwnames;   // ("dtype", "device")

void intern_names();  // once, at module import
// Fills h.attrs from h.tensor_type (the descriptors used for an exact torch.Tensor).
void resolve_tensor_attrs(TorchHooks& h);
// Installs the torch hooks once torch has been imported by the user (never imports it).
void maybe_install_torch_hooks();
[[noreturn]] void raise_argument_error(const std::string& message);

struct PyRef {  // owns one new reference
  PyObject* p;
  explicit PyRef(PyObject* o) : p(o) {
    if (!p) throw nb::python_error();
  }
  ~PyRef() { Py_XDECREF(p); }
};

// Holds what the DLPack path must keep alive for the call.
struct Keep {
  std::vector<nb::ndarray<>> arrays;
};

// Reads argument `o` into `a` (shape and strides into the caller's arrays of kMaxRank).
void fill_arg(PyObject* o, runtime::ArgValue& a, int64_t* shape, int64_t* strides, Keep& keep);

}  // namespace tilec::bind
