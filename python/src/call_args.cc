// python/src/call_args.h: torch hooks and the reading of one call argument.
#include "call_args.h"
#include "torch_shim_loader.h"

namespace tilec::bind {

using namespace tilec::runtime;

// ---------------------------------------------------------------- torch hooks
TorchHooks g_torch;  // strong references, kept for the process

PyObject* g_argument_error = nullptr;  // tilec.KernelArgumentError (ValueError)
PyObject* g_launch_error = nullptr;    // tilec.KernelLaunchError (RuntimeError)
namespace {
PyObject* s_data_ptr;
PyObject* s_shape;
PyObject* s_stride;
PyObject* s_dtype;
PyObject* s_is_cuda;
PyObject* s_get_device;
PyObject* s_device;
}  // namespace
PyObject* s_cuda_stream;
PyObject* s_new_empty;
PyObject* s_empty_kwnames;  // ("dtype", "device")

void intern_names() {
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_shape = PyUnicode_InternFromString("shape");
  s_stride = PyUnicode_InternFromString("stride");
  s_dtype = PyUnicode_InternFromString("dtype");
  s_is_cuda = PyUnicode_InternFromString("is_cuda");
  s_get_device = PyUnicode_InternFromString("get_device");
  s_device = PyUnicode_InternFromString("device");
  s_cuda_stream = PyUnicode_InternFromString("cuda_stream");
  s_new_empty = PyUnicode_InternFromString("new_empty");
  s_empty_kwnames = PyTuple_Pack(2, s_dtype, s_device);
}

namespace {

// A new reference to attribute `a` of tensor `t` (a method is called without arguments).
PyObject* tensor_attr(PyObject* t, TensorAttr a) {
  const TensorAttrSlot& slot = g_torch.attrs[a];
  if (slot.descr && Py_TYPE(t) == g_torch.tensor_type) {
    if (slot.is_method) return PyObject_Vectorcall(slot.descr, &t, 1, nullptr);
    return Py_TYPE(slot.descr)->tp_descr_get(slot.descr, t, reinterpret_cast<PyObject*>(g_torch.tensor_type));
  }
  return slot.is_method ? PyObject_CallMethodNoArgs(t, slot.name) : PyObject_GetAttr(t, slot.name);
}

}  // namespace

// Fills g_torch.attrs from torch.Tensor: a descriptor is used directly only when it is a plain
// method or getset descriptor (anything else, e.g. a Python override, takes the ordinary lookup).
void resolve_tensor_attrs(TorchHooks& h) {
  const std::pair<TensorAttr, PyObject*> names[] = {{kAttrDtype, s_dtype},   {kAttrDataPtr, s_data_ptr},
                                                    {kAttrShape, s_shape},   {kAttrStride, s_stride},
                                                    {kAttrIsCuda, s_is_cuda}, {kAttrGetDevice, s_get_device}};
  for (const auto& [a, name] : names) {
    TensorAttrSlot& slot = h.attrs[a];
    slot.name = name;
    slot.is_method = a == kAttrDataPtr || a == kAttrStride || a == kAttrGetDevice;
    PyObject* d = PyObject_GetAttr(reinterpret_cast<PyObject*>(h.tensor_type), name);
    if (!d) {
      PyErr_Clear();
      continue;
    }
    const bool usable = slot.is_method ? Py_IS_TYPE(d, &PyMethodDescr_Type) : Py_IS_TYPE(d, &PyGetSetDescr_Type);
    if (usable) {
      slot.descr = d;
    } else {
      Py_DECREF(d);
    }
  }
}

void maybe_install_torch_hooks() {
  if (g_torch.ready) return;
  PyObject* modules = PyImport_GetModuleDict();
  if (!PyDict_GetItemString(modules, "torch")) return;
  nb::module_::import_("tilec.kernel").attr("_install_torch_hooks")();
}

[[noreturn]] void raise_argument_error(const std::string& message) {
  PyErr_SetString(g_argument_error, message.c_str());
  throw nb::python_error();
}

// ---------------------------------------------------------------- argument conversion
namespace {

ir::DataType dlpack_dtype(const nb::dlpack::dtype& t, bool* ok) {
  *ok = t.lanes == 1;
  switch (t.code) {
    case 0: return ir::DataType::Int(t.bits);
    case 1: return ir::DataType::UInt(t.bits);
    case 2: return ir::DataType::Float(t.bits);
    case 4: return ir::DataType::BFloat16();
    case 6: return ir::DataType::Bool();
    case 10: return ir::DataType::Float8E4M3();  // kDLFloat8_e4m3fn
    case 12: return ir::DataType::Float8E5M2();  // kDLFloat8_e5m2
    default: *ok = false; return ir::DataType::Void();
  }
}

int64_t long_of(PyObject* o) {
  int64_t v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

// A tuple-like of ints (torch.Size, tuple) into `out`; returns its length.
int read_int_tuple(PyObject* seq, int64_t* out, const std::string& what) {
  if (!PyTuple_Check(seq)) raise_argument_error(what + " is not a tuple");
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  if (n > kMaxRank) raise_argument_error(what + " has " + std::to_string(n) + " dimensions; at most 8 are supported");
  for (Py_ssize_t i = 0; i < n; ++i) out[i] = long_of(PyTuple_GET_ITEM(seq, i));
  return static_cast<int>(n);
}

// torch's float4_e2m1fn_x2 holds two float4_e2m1 elements per byte (element 2k in the low
// nibble): the kernel sees the tensor as float4_e2m1 with its last dimension doubled, strides
// in elements (twice torch's, which count bytes). The packed dimension must be the
// contiguous one.
void unpack_fp4x2_view(TensorView& v, int64_t* shape, int64_t* strides) {
  if (v.ndim == 0) raise_argument_error("a 0-d float4_e2m1fn_x2 tensor cannot be a float4_e2m1 argument");
  const int last = v.ndim - 1;
  if (v.shape[last] > 1 && v.strides[last] != 1) {
    raise_argument_error("a float4_e2m1fn_x2 tensor must be contiguous in its last dimension (two float4 elements "
                         "per byte along it), got stride " + std::to_string(v.strides[last]) + "; pass tensor.contiguous()");
  }
  for (int i = 0; i < last; ++i) strides[i] *= 2;
  strides[last] = 1;
  shape[last] *= 2;
  v.dtype = ir::DataType::Float4E2M1();
}

void torch_tensor_view(PyObject* t, TensorView& v, int64_t* shape, int64_t* strides) {
  {
    PyRef dtype(tensor_attr(t, kAttrDtype));
    bool found = false;
    for (const auto& [obj, dt] : g_torch.dtypes) {
      if (obj == dtype.p) {
        v.dtype = dt;
        found = true;
        break;
      }
    }
    if (!found) {
      raise_argument_error("tensors of dtype " + nb::cast<std::string>(nb::str(dtype.p)) + " are not supported by tilec");
    }
  }
  {
    PyRef ptr(tensor_attr(t, kAttrDataPtr));
    v.data = PyLong_AsUnsignedLongLong(ptr.p);
  }
  {
    PyRef s(tensor_attr(t, kAttrShape));
    v.ndim = read_int_tuple(s.p, shape, "the tensor's shape");
    v.shape = shape;
  }
  {
    PyRef s(tensor_attr(t, kAttrStride));
    read_int_tuple(s.p, strides, "the tensor's strides");
    v.strides = strides;
  }
  if (v.dtype == ir::DataType::Float4E2M1(2)) unpack_fp4x2_view(v, shape, strides);
  PyRef is_cuda(tensor_attr(t, kAttrIsCuda));
  if (is_cuda.p == Py_True) {
    v.device_type = DeviceType::kCUDA;
    PyRef dev(tensor_attr(t, kAttrGetDevice));
    v.device_id = static_cast<int>(long_of(dev.p));
  } else {
    v.device_type = DeviceType::kOther;
    v.device_label = "a non-CUDA device";
    PyRef dev(PyObject_GetAttr(t, s_device));
    static thread_local std::string label;  // lives until the error message is built
    label = nb::cast<std::string>(nb::str(dev.p));
    v.device_label = label.c_str();
  }
}

// The same view through the torch shim (no Python calls); false when the shim cannot read `t`
// (then torch_tensor_view reads it, and raises where it should).
bool shim_tensor_view(PyObject* t, TensorView& v, int64_t* shape, int64_t* strides) {
  TilecShimTensor st;
  if (!g_shim.read(t, &st)) return false;
  bool found = false;
  for (const auto& [obj, dt] : g_torch.dtypes) {
    if (obj == st.dtype) {
      v.dtype = dt;
      found = true;
      break;
    }
  }
  if (!found) return false;
  v.data = st.data;
  v.ndim = st.ndim;
  for (int i = 0; i < st.ndim; ++i) {
    shape[i] = st.sizes[i];
    strides[i] = st.strides[i];
  }
  v.shape = shape;
  v.strides = strides;
  if (v.dtype == ir::DataType::Float4E2M1(2)) unpack_fp4x2_view(v, shape, strides);
  v.device_type = DeviceType::kCUDA;
  v.device_id = st.device;
  return true;
}

}  // namespace

void fill_arg(PyObject* o, ArgValue& a, int64_t* shape, int64_t* strides, Keep& keep) {
  a = ArgValue{};
  if (g_torch.tensor_type && PyObject_TypeCheck(o, g_torch.tensor_type)) {
    a.kind = ArgValue::kTensor;
    if (!g_shim.active || !shim_tensor_view(o, a.tensor, shape, strides)) torch_tensor_view(o, a.tensor, shape, strides);
    return;
  }
  if (PyBool_Check(o)) {
    a.kind = ArgValue::kBool;
    a.int_value = o == Py_True;
    return;
  }
  if (PyLong_Check(o)) {
    a.kind = ArgValue::kInt;
    a.int_value = PyLong_AsLongLong(o);
    if (a.int_value == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      raise_argument_error("the integer argument " + nb::cast<std::string>(nb::str(o)) + " does not fit in 64 bits");
    }
    return;
  }
  if (PyFloat_Check(o)) {
    a.kind = ArgValue::kFloat;
    a.float_value = PyFloat_AS_DOUBLE(o);
    return;
  }
  nb::ndarray<> array;
  if (nb::try_cast(nb::handle(o), array, /*convert=*/false)) {
    bool ok = false;
    a.kind = ArgValue::kTensor;
    TensorView& v = a.tensor;
    v.dtype = dlpack_dtype(array.dtype(), &ok);
    if (!ok) raise_argument_error("an array argument has an element type tilec does not support");
    v.ndim = static_cast<int>(array.ndim());
    if (v.ndim > kMaxRank) raise_argument_error("arrays of more than 8 dimensions are not supported");
    for (int i = 0; i < v.ndim; ++i) {
      shape[i] = array.shape(i);
      strides[i] = array.stride(i);
    }
    v.shape = shape;
    v.strides = strides;
    v.data = reinterpret_cast<uint64_t>(array.data());
    int dev = array.device_type();
    v.device_type = dev == nb::device::cuda::value ? DeviceType::kCUDA
                    : dev == nb::device::cpu::value ? DeviceType::kCPU
                                                    : DeviceType::kOther;
    v.device_label = v.device_type == DeviceType::kCPU ? "cpu" : "a non-CUDA device";
    v.device_id = array.device_id();
    keep.arrays.push_back(std::move(array));
    return;
  }
  if (PyIndex_Check(o)) {  // numpy integer scalars
    PyRef i(PyNumber_Index(o));
    a.kind = ArgValue::kInt;
    a.int_value = long_of(i.p);
    return;
  }
  a.kind = ArgValue::kOther;
  a.type_name = Py_TYPE(o)->tp_name;
}

}  // namespace tilec::bind
