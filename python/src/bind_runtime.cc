// Runtime bindings: compile a PrimFunc (or hand-written CUDA C + a launch plan) to a
// Kernel object that launches on torch tensors.
//
// The call path is the product here: Kernel.__call__ is C++ all the way to
// cuLaunchKernel. torch tensors are read through six attributes (data_ptr, shape, stride,
// dtype, is_cuda, get_device; straight from torch.Tensor's descriptors; call_args.{h,cc}
// reads the arguments) once torch.Tensor is registered
// by tilec/kernel.py (_set_torch_hooks, done lazily on the first call after torch is
// imported); other arrays go through DLPack / the buffer protocol (nb::ndarray).
// Outputs are allocated with new_empty of an input of their dtype (else the registered
// torch.empty), the stream is torch's current
// stream of the tensors' device. Per call: no heap allocation in C++ beyond the Python
// objects the call must create (argument tuple, outputs). Argument errors raise
// tilec.KernelArgumentError (a ValueError) before anything reaches the GPU.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fstream>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "bind_ir_common.h"
#include "call_args.h"
#include "torch_shim_loader.h"
#include "tilec/ir/stmt.h"
#include "tilec/passes/pass.h"
#include "tilec/runtime/aot.h"
#include "tilec/runtime/cache.h"
#include "tilec/runtime/compiler.h"
#include "tilec/runtime/cuda_paths.h"
#include "tilec/runtime/driver.h"
#include "tilec/runtime/kernel.h"
#include "tilec/runtime/launch_errors.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/runtime/plan_text.h"
#include "tilec/support/diag.h"
#include "tilec/target/target.h"
#include "tilec/support/warnings.h"

namespace nb = nanobind;

namespace {

using namespace tilec;
using namespace tilec::runtime;
using namespace tilec::bind;

// The allocator (torch.empty) raised for an output: the same exception class (so that
// `except torch.OutOfMemoryError` still works), with a message naming the kernel, the output,
// its dtype, shape and byte size and the device, and the allocator's error as its __cause__.
[[noreturn]] void raise_output_allocation_error(const Kernel& k, int param, const int64_t* shape, int rank, int device) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback && value) PyException_SetTraceback(value, traceback);
  std::string cause;
  if (PyObject* text = value ? PyObject_Str(value) : nullptr) {
    if (const char* c = PyUnicode_AsUTF8(text)) cause = c;
    Py_DECREF(text);
  }
  PyErr_Clear();
  cause = cause.substr(0, cause.find('\n'));
  if (type) cause = std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name) + (cause.empty() ? "" : ": " + cause);
  const TensorParam& tp = k.plan().tensors[k.param_index(param)];
  std::string text = output_allocation_message(k.plan().kernel_name, tp.name, tp.dtype, shape, rank, device, cause);
  PyObject* message = PyUnicode_FromString(text.c_str());
  PyObject* error = type && message ? PyObject_CallOneArg(type, message) : nullptr;
  if (!error || !PyExceptionInstance_Check(error)) {  // a class that takes no message
    PyErr_Clear();
    Py_XDECREF(error);
    error = PyObject_CallOneArg(PyExc_RuntimeError, message);
  }
  Py_XDECREF(message);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  if (value) PyException_SetCause(error, value);  // steals `value`
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error)), error);
  Py_DECREF(error);
  throw nb::python_error();
}

// ---------------------------------------------------------------- the kernel object
struct PyKernel {
  std::shared_ptr<Kernel> kernel;
  std::vector<int> output_params;          // parameter positions of the outputs
  // For a kernel with TMA tensor maps compiled from a program: builds the same program
  // without TMA, run when an argument breaks TMA's rules (built once, on first need).
  std::function<CompiledArtifact()> build_without_tma;
  std::shared_ptr<Kernel> without_tma;
  // For a kernel compiled from a program: what the back end chose and why (kernel.explain()).
  std::function<std::string()> explain;
  // For a kernel compiled from a program: the inferred layouts (kernel.layouts(), plot_layouts()).
  std::function<std::vector<tilec::layout::InferredLayout>()> layouts;
  // Warnings and notes of the compile that made this kernel (none on a cache hit);
  // tilec/kernel.py turns them into Python warnings.
  std::vector<Diagnostic> diagnostics;
};

PyObject* torch_dtype_for(ir::DataType t) {
  if (t == ir::DataType::Float4E2M1()) t = ir::DataType::Float4E2M1(2);  // packed: torch.float4_e2m1fn_x2
  for (const auto& [obj, dt] : g_torch.dtypes) {
    if (dt == t) return obj;
  }
  raise_argument_error("torch has no dtype for " + t.str() + ", so the output cannot be allocated");
}

CuStream stream_from(PyObject* s) {
  if (PyLong_Check(s)) return reinterpret_cast<CuStream>(PyLong_AsUnsignedLongLong(s));
  PyRef raw(PyObject_GetAttr(s, s_cuda_stream));  // torch.cuda.Stream and the like
  return reinterpret_cast<CuStream>(PyLong_AsUnsignedLongLong(raw.p));
}

// The program compiled without TMA, for arguments a tensor map cannot address; warns once.
const Kernel& kernel_without_tma(PyKernel& self, const TmaArgumentError& why) {
  if (!self.without_tma) {
    std::string text = why.message() + ": running '" + self.kernel->plan().kernel_name +
                       "' compiled without TMA for such arguments (slower)";
    PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1);
    CompiledArtifact a;
    {
      nb::gil_scoped_release release;
      a = self.build_without_tma();
    }
    self.without_tma = std::make_shared<Kernel>(std::move(a));
  }
  return *self.without_tma;
}

// A new torch tensor for output `pos` of torch extents `shape` (null with the allocator's
// exception set). Through the torch shim when it is active (at::empty: no Python in between);
// else, and when the shim returns null, when an input argument is an exact torch.Tensor of the
// output's dtype, `input.new_empty(shape)` (same dtype and device: bind checked that every
// tensor is on call.device), which parses one argument; else torch.empty(shape, dtype=, device=).
PyObject* allocate_output(const Kernel& k, int pos, const ArgValue* values, PyObject* args, const int64_t* shape,
                          int rank, int device) {
  const ir::DataType want = k.plan().tensors[k.param_index(pos)].dtype;
  if (g_shim.active) {
    if (PyObject* t = g_shim.empty(shape, rank, torch_dtype_for(want), device < 0 ? 0 : device)) return t;
  }
  PyRef shape_tuple(PyTuple_New(rank));
  for (int i = 0; i < rank; ++i) PyTuple_SET_ITEM(shape_tuple.p, i, PyLong_FromLongLong(shape[i]));
  for (int p = 0, ai = 0; p < k.num_params(); ++p) {
    if (k.param_is_tensor(p) && k.plan().tensors[k.param_index(p)].is_output) continue;  // not among the args
    PyObject* arg = PyTuple_GET_ITEM(args, ai++);
    if (values[p].kind == ArgValue::kTensor && values[p].tensor.dtype == want && Py_TYPE(arg) == g_torch.tensor_type) {
      return PyObject_CallMethodOneArg(arg, s_new_empty, shape_tuple.p);
    }
  }
  PyRef index(PyLong_FromLong(device < 0 ? 0 : device));
  PyObject* argv[] = {shape_tuple.p, torch_dtype_for(want), index.p};
  return PyObject_Vectorcall(g_torch.empty, argv, 1, s_empty_kwnames);
}

// `dry_run`: everything but the launch itself (host-overhead measurements, tests).
nb::object kernel_call_impl(PyKernel& self, nb::args args, nb::kwargs kwargs, bool dry_run) {
  maybe_install_torch_hooks();
  const Kernel& k = *self.kernel;
  const int np = k.num_params();
  const int given = static_cast<int>(PyTuple_GET_SIZE(args.ptr()));
  PyObject* stream_obj = nullptr;
  if (kwargs.size() != 0) {
    for (auto [key, value] : kwargs) {
      if (nb::cast<std::string>(key) != "stream") {
        throw nb::type_error(("kernel call got an unexpected keyword argument '" + nb::cast<std::string>(key) + "'").c_str());
      }
      stream_obj = value.ptr();
    }
  }
  // Only the first np ArgValues are constructed: building all kMaxParams costs more than
  // the whole validation of a small call.
  alignas(ArgValue) unsigned char value_storage[sizeof(ArgValue) * kMaxParams];
  ArgValue* values = reinterpret_cast<ArgValue*>(value_storage);
  static_assert(std::is_trivially_destructible_v<ArgValue>);
  for (int i = 0; i < np; ++i) new (&values[i]) ArgValue();
  int64_t shapes[kMaxParams][kMaxRank];
  int64_t strides[kMaxParams][kMaxRank];
  PyObject* outputs[kMaxParams];
  Keep keep;
  BoundCall call;
  const Kernel* run = &k;  // the kernel launched: k, or its variant without TMA
  std::vector<nb::object> allocated;  // only when the runtime allocates outputs
  const bool with_outputs = given == np;
  try {
    k.check_count(given);
    int ai = 0;
    for (int pos = 0; pos < np; ++pos) {
      bool is_output = k.param_is_tensor(pos) && k.plan().tensors[k.param_index(pos)].is_output;
      if (is_output && !with_outputs) {
        values[pos] = ArgValue{};
        continue;
      }
      fill_arg(PyTuple_GET_ITEM(args.ptr(), ai++), values[pos], shapes[pos], strides[pos], keep);
    }
    k.bind(values, call, !with_outputs);
    int out_count = 0;
    for (int pos : self.output_params) {
      if (with_outputs) {
        outputs[out_count++] = PyTuple_GET_ITEM(args.ptr(), pos);
        continue;
      }
      if (!g_torch.ready) {
        raise_argument_error("kernel " + k.signature() + " allocates its outputs with torch, which is not imported; "
                             "import torch or pass the outputs explicitly");
      }
      int64_t shape[kMaxRank];
      int rank = k.output_shape(pos, call, shape);
      const bool fp4 = k.plan().tensors[k.param_index(pos)].dtype == ir::DataType::Float4E2M1();
      int64_t torch_shape[kMaxRank];
      for (int i = 0; i < rank; ++i) {
        // float4_e2m1fn_x2: two elements a byte, so torch's last dimension is half (even:
        // check_fp4_buffers); `shape` keeps the elements for the error message below.
        torch_shape[i] = fp4 && i == rank - 1 ? shape[i] / 2 : shape[i];
      }
      nb::object tensor = nb::steal(allocate_output(k, pos, values, args.ptr(), torch_shape, rank, call.device));
      if (!tensor.is_valid()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) throw nb::python_error();  // KeyboardInterrupt and the like
        raise_output_allocation_error(k, pos, shape, rank, call.device < 0 ? 0 : call.device);
      }
      fill_arg(tensor.ptr(), values[pos], shapes[pos], strides[pos], keep);
      if (values[pos].kind != ArgValue::kTensor) raise_argument_error("the allocator did not return a tensor");
      k.check_tensor(pos, values[pos].tensor, call);
      outputs[out_count++] = tensor.ptr();
      allocated.push_back(std::move(tensor));
    }
    k.finalize(values, call);
  } catch (const TmaArgumentError& e) {
    if (!self.build_without_tma) raise_argument_error(e.message() + "\n  hint: " + e.hint());
    run = &kernel_without_tma(self, e);
    try {
      run->bind(values, call, false);
      run->finalize(values, call);
    } catch (const UserError& e2) {
      raise_argument_error(e2.hint().empty() ? e2.message() : e2.message() + "\n  hint: " + e2.hint());
    }
  } catch (const UserError& e) {
    raise_argument_error(e.hint().empty() ? e.message() : e.message() + "\n  hint: " + e.hint());
  }
  if (!dry_run && !call.empty_grid) {  // before torch's stream lookup, which would fail deep inside torch
    std::string why;
    if (!CudaDriver::available(&why)) {
      std::string text = no_driver_message(run->plan().kernel_name, why) +
                         "\n  hint: running kernels needs an NVIDIA GPU and its driver; " + kCpuTargetHint;
      PyErr_SetString(g_launch_error, text.c_str());
      throw nb::python_error();
    }
  }
  CuStream stream = nullptr;
  if (stream_obj && stream_obj != Py_None) {
    stream = stream_from(stream_obj);
  } else if (g_shim.active && !call.empty_grid &&
             g_shim.current_stream(call.device < 0 ? 0 : call.device, reinterpret_cast<void**>(&stream))) {
    // the torch shim's answer
  } else if (g_torch.current_stream && !call.empty_grid) {
    PyRef device(PyLong_FromLong(call.device < 0 ? 0 : call.device));
    PyRef s(PyObject_CallOneArg(g_torch.current_stream, device.p));
    stream = reinterpret_cast<CuStream>(PyLong_AsUnsignedLongLong(s.p));
  }
  if (!dry_run) {
    try {
      run->launch(call, stream);
    } catch (const UserError& e) {  // no driver, wrong architecture, a fault, launch failure
      std::string text = e.hint().empty() ? e.message() : e.message() + "\n  hint: " + e.hint();
      PyErr_SetString(g_launch_error, text.c_str());
      throw nb::python_error();
    }
  }
  const size_t n_out = self.output_params.size();
  if (n_out == 0) return nb::none();
  if (n_out == 1) return nb::borrow(outputs[0]);
  nb::list result;
  for (size_t i = 0; i < n_out; ++i) result.append(nb::borrow(outputs[i]));
  return result;
}

nb::object kernel_call(PyKernel& self, nb::args args, nb::kwargs kwargs) {
  return kernel_call_impl(self, std::move(args), std::move(kwargs), false);
}

nb::object kernel_dry_run(PyKernel& self, nb::args args, nb::kwargs kwargs) {
  return kernel_call_impl(self, std::move(args), std::move(kwargs), true);
}

PyKernel make_kernel(CompiledArtifact artifact) {
  PyKernel pk;
  pk.kernel = std::make_shared<Kernel>(std::move(artifact));
  for (int pos = 0; pos < pk.kernel->num_params(); ++pos) {
    if (pk.kernel->param_is_tensor(pos) && pk.kernel->plan().tensors[pk.kernel->param_index(pos)].is_output) {
      pk.output_params.push_back(pos);
    }
  }
  return pk;
}

nb::dict ptxas_dict(const PtxasInfo& p) {
  nb::dict d;
  d["registers"] = p.registers;
  d["spill_stores_bytes"] = p.spill_stores_bytes;
  d["spill_loads_bytes"] = p.spill_loads_bytes;
  d["static_shared_bytes"] = p.static_shared_bytes;
  d["stack_frame_bytes"] = p.stack_frame_bytes;
  d["log"] = p.log;
  return d;
}

nb::list params_list(const Kernel& k) {
  nb::list out;
  for (int pos = 0; pos < k.num_params(); ++pos) {
    nb::dict d;
    d["name"] = k.param_name(pos);
    if (k.param_is_tensor(pos)) {
      const TensorParam& t = k.plan().tensors[k.param_index(pos)];
      d["kind"] = "tensor";
      d["dtype"] = t.dtype.str();
      nb::list shape, strides;
      // A symbolic dimension is its name, or "32*name" when scaled (tilec.kernel.dim_value reads both).
      for (const auto& dim : t.shape) shape.append(dim.symbol.empty() ? nb::object(nb::int_(dim.value)) : nb::object(nb::str(dim_spec_text(dim).c_str())));
      for (const auto& dim : t.strides) strides.append(dim.symbol.empty() ? nb::object(nb::int_(dim.value)) : nb::object(nb::str(dim_spec_text(dim).c_str())));
      d["shape"] = shape;
      d["strides"] = strides;
      d["is_output"] = t.is_output;
      d["alignment_bytes"] = t.alignment_bytes;
      d["index_bits"] = t.index_bits;
    } else {
      d["kind"] = "scalar";
      d["dtype"] = k.plan().scalars[k.param_index(pos)].dtype.str();
      d["is_output"] = false;
    }
    out.append(d);
  }
  return out;
}

passes::ConfigValue config_value(nb::handle v, const std::string& key) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return static_cast<int64_t>(nb::cast<int64_t>(v));
  if (PyFloat_Check(v.ptr())) return nb::cast<double>(v);
  if (PyUnicode_Check(v.ptr())) return nb::cast<std::string>(v);
  throw nb::type_error(("pass config '" + key + "' must be a bool, int, float or str").c_str());
}

CompileOptions make_options(const std::string& target, nb::handle out_idx, nb::handle pass_configs, nb::handle compiler,
                            nb::handle compile_flags, bool use_cache, nb::handle cache_dir) {
  CompileOptions o;
  o.target = target;
  if (!out_idx.is_none()) {
    if (PyLong_Check(out_idx.ptr())) o.out_idx = {nb::cast<int>(out_idx)};
    else o.out_idx = nb::cast<std::vector<int>>(out_idx);
  }
  if (!pass_configs.is_none()) {
    for (auto [k, v] : nb::cast<nb::dict>(pass_configs)) {
      std::string key = nb::cast<std::string>(k);
      o.pass_configs[key] = config_value(v, key);
    }
  }
  if (!compiler.is_none()) o.compiler = nb::cast<std::string>(compiler);
  else o.compiler = "";  // knobs decide (TILEC_COMPILER), default nvrtc
  if (!compile_flags.is_none()) {
    if (PyUnicode_Check(compile_flags.ptr())) o.compile_flags = {nb::cast<std::string>(compile_flags)};
    else o.compile_flags = nb::cast<std::vector<std::string>>(compile_flags);
  }
  o.use_cache = use_cache;
  if (!cache_dir.is_none()) o.cache_dir = nb::cast<std::string>(nb::str(cache_dir));
  return o;
}

}  // namespace

void bind_runtime(nb::module_& m) {
  intern_names();
  g_argument_error = PyErr_NewExceptionWithDoc(
      "tilec.KernelArgumentError",
      "The arguments of a kernel call do not match the kernel (count, dtype, shape, strides, device or alignment).",
      PyExc_ValueError, nullptr);
  m.attr("KernelArgumentError") = nb::handle(g_argument_error);
  g_launch_error = PyErr_NewExceptionWithDoc(
      "tilec.KernelLaunchError",
      "A kernel call that CUDA refused: no driver or GPU, a kernel that does not fit the device, or a fault (after "
      "which the device's CUDA context is unusable for the rest of the process).",
      PyExc_RuntimeError, nullptr);
  m.attr("KernelLaunchError") = nb::handle(g_launch_error);

  // dynamic_attr: the autotuner leaves the winner's config / latency / ref_latency on it (TileLang's
  // examples read best_kernel.config).
  nb::class_<PyKernel>(m, "Kernel", nb::dynamic_attr(),
                       "A compiled kernel. Call it with tensors (and scalars); outputs named by out_idx are "
                       "allocated and returned (one tensor, or a list).")
      .def("__call__", &kernel_call)
      .def("_dry_run", &kernel_dry_run, "A call without the launch: validation, outputs and stream only.")
      .def("get_kernel_source", [](const PyKernel& k) { return k.kernel->artifact().cuda_source; })
      .def("get_ptx", [](const PyKernel& k) { return k.kernel->artifact().ptx; })
      .def("get_cubin",
           [](const PyKernel& k) {
             const auto& c = k.kernel->artifact().cubin;
             return nb::bytes(reinterpret_cast<const char*>(c.data()), c.size());
           })
      .def_prop_ro("ptxas_info",
                   [](const PyKernel& k) {
                     nb::dict d = ptxas_dict(k.kernel->artifact().ptxas);
                     // ptxas sees only static shared memory; tilec's arena is dynamic.
                     d["dynamic_shared_bytes"] = k.kernel->plan().dynamic_shared_bytes;
                     return d;
                   })
      .def_prop_ro("_diagnostics",
                   [](const PyKernel& k) {
                     nb::list out;
                     for (const auto& d : k.diagnostics)
                       out.append(nb::make_tuple(d.kind == Diagnostic::Kind::kNote ? "note" : "warning", d.message,
                                                 d.loc.file, d.loc.line, d.loc.col, d.hint));
                     return out;
                   })
      .def_prop_ro("signature", [](const PyKernel& k) { return k.kernel->signature(); })
      .def("launch_plan_summary", [](const PyKernel& k) { return k.kernel->summary(); })
      .def_prop_ro("launch_plan_text", [](const PyKernel& k) { return launch_plan_to_text(k.kernel->plan()); })
      .def_prop_ro("kernel_name", [](const PyKernel& k) { return k.kernel->plan().kernel_name; })
      .def_prop_ro("target", [](const PyKernel& k) { return k.kernel->artifact().target; })
      .def_prop_ro("from_cache", [](const PyKernel& k) { return k.kernel->artifact().from_cache; })
      .def_prop_ro("cache_key", [](const PyKernel& k) { return k.kernel->artifact().cache_key; })
      .def_prop_ro("symbols", [](const PyKernel& k) { return k.kernel->plan().symbols; })
      .def("params", [](const PyKernel& k) { return params_list(*k.kernel); },
           "One dict per parameter: name, kind, dtype, shape (ints and symbol names), is_output; tensors "
           "also strides, alignment_bytes and index_bits (32 or 64: the width of the kernel's offset arithmetic).")
      .def("prepare", [](const PyKernel& k, int device) { k.kernel->prepare(device); }, nb::arg("device") = 0,
           "Loads the module on a device now (the first call does it otherwise).")
      .def("get_profiler",
           [](nb::handle self, nb::args args, nb::kwargs kwargs) {
             // TileLang's form: get_profiler(tensor_supply_type=..., ...), the supply type often positional.
             return nb::module_::import_("tilec.profiler").attr("Profiler")(self, *args, **kwargs);
           })
      .def("_export",
           [](const PyKernel& k, const std::string& dir) {
             const CompiledArtifact& a = k.kernel->artifact();
             const std::string name = a.plan.kernel_name;
             auto write = [&](const std::string& file, const std::string& text) {
               std::ofstream out(dir + "/" + file, std::ios::binary);
               if (!out || !(out << text)) raise_argument_error("kernel.export: cannot write " + dir + "/" + file);
               return dir + "/" + file;
             };
             std::vector<std::string> files;
             files.push_back(write(name + ".tkc", serialize_artifact(a)));
             files.push_back(write(name + ".h", aot_header(a.plan, k.kernel->signature(), a.target, name + ".tkc", dir)));
             return files;
           })
      .def("_explain",
           [](const PyKernel& k) -> std::string {
             if (!k.explain) raise_argument_error("explain() needs a kernel compiled from a program (tilec.compile), "
                                                  "not from CUDA source");
             nb::gil_scoped_release release;
             return k.explain();
           })
      .def("_layouts",
           [](const PyKernel& k) {
             if (!k.layouts) raise_argument_error("layouts() needs a kernel compiled from a program (tilec.compile), "
                                                  "not from CUDA source");
             std::vector<tilec::layout::InferredLayout> found;
             {
               nb::gil_scoped_release release;
               found = k.layouts();
             }
             nb::list out;
             for (const auto& l : found) out.append(tilec::pybind::wrap_inferred_layout(l));
             return out;
           })
      .def("__repr__", [](const PyKernel& k) { return "<tilec.Kernel " + k.kernel->signature() + ">"; });

  m.def(
      "compile",
      [](const ir::PrimFunc& f, const std::string& target, nb::handle out_idx, nb::handle pass_configs,
         nb::handle compiler, nb::handle compile_flags, bool use_cache, nb::handle cache_dir) {
        CompileOptions o = make_options(target, out_idx, pass_configs, compiler, compile_flags, use_cache, cache_dir);
        CompiledArtifact a;
        std::vector<Diagnostic> diagnostics;
        {
          nb::gil_scoped_release release;
          DiagnosticCollector collect;
          a = compile(f, o);
          diagnostics = collect.diagnostics();
        }
        const bool uses_tma = !a.plan.tma_descs.empty();
        PyKernel k = make_kernel(std::move(a));
        k.explain = [f, o] { return explain_program(f, o); };
        k.layouts = [f, o] { return program_layouts(f, o); };
        k.diagnostics = std::move(diagnostics);
        if (uses_tma) {
          CompileOptions plain = o;
          plain.pass_configs["tl.disable_tma_lower"] = true;
          k.build_without_tma = [f, plain] { return compile(f, plain); };
        }
        return k;
      },
      nb::arg("func"), nb::arg("target") = "auto", nb::arg("out_idx") = nb::none(), nb::arg("pass_configs") = nb::none(),
      nb::arg("compiler") = nb::none(), nb::arg("compile_flags") = nb::none(), nb::arg("use_cache") = true,
      nb::arg("cache_dir") = nb::none(), "Lowers, compiles (cached) and returns a Kernel.");

  m.def(
      "compile_source",
      [](const std::string& source, const std::string& plan_text, const std::string& target, nb::handle out_idx,
         nb::handle compiler, nb::handle compile_flags, bool use_cache, nb::handle cache_dir) {
        CompileOptions o = make_options(target, out_idx, nb::none(), compiler, compile_flags, use_cache, cache_dir);
        LaunchPlan plan = launch_plan_from_text(plan_text);
        CompiledArtifact a;
        {
          nb::gil_scoped_release release;
          a = compile_source(source, plan, o);
        }
        return make_kernel(std::move(a));
      },
      nb::arg("source"), nb::arg("plan"), nb::arg("target") = "auto", nb::arg("out_idx") = nb::none(),
      nb::arg("compiler") = nb::none(), nb::arg("compile_flags") = nb::none(), nb::arg("use_cache") = true,
      nb::arg("cache_dir") = nb::none(),
      "Compiles hand-written CUDA C with a launch plan in text form (see plan_text.h) to a Kernel.");

  m.def("normalize_launch_plan", [](const std::string& text) { return launch_plan_to_text(launch_plan_from_text(text)); },
        "Parses launch plan text and prints it back in canonical form.");
  m.def("clear_memory_cache", &memory_cache_clear, "Empties the in-process kernel cache (the disk cache stays).");
  m.def("default_cache_dir", &default_cache_dir);
  m.def("config_keys", []() {
    std::vector<std::string> names;
    for (const auto& k : passes::config_keys()) names.push_back(k.name);
    return names;
  }, "The pass-config keys the pass context accepts (tilec --list-configs).");
  m.def("add_cuda_search_dirs", &add_cuda_search_dirs, nb::arg("lib_dirs"), nb::arg("include_dirs"));
  m.def("nvrtc_available", []() {
    std::string why;
    bool ok = nvrtc_available(&why);
    return nb::make_tuple(ok, why);
  });
  m.def(
      "_launch_failure_message",
      [](const std::string& kernel, int device, const std::string& driver_error, int code, const std::string& last) {
        LaunchFailure f{kernel, device, driver_error, is_sticky_cuda_error(code), last};
        return nb::make_tuple(launch_failure_message(f), launch_failure_hint(f));
      },
      "(message, hint) of a failed launch, as a kernel call raises them (tests check the texts without a GPU).");
  m.def("_cuda_compile_count", &cuda_compile_count,
        "How many NVRTC / nvcc builds this process ran (tests tell cache hits from builds with it).");
  m.def(
      "resolve_target", [](const std::string& spec) { return target::parse_target(spec).str(); }, nb::arg("spec"),
      "The architecture a target spec compiles for (\"auto\" and \"cuda\": this machine's GPU), e.g. \"sm_90a\".");
  m.def("driver_available", []() {
    std::string why;
    bool ok = CudaDriver::available(&why);
    return nb::make_tuple(ok, why);
  });
  m.def(
      "_set_torch_hooks",
      [](nb::handle tensor_type, nb::list dtypes, nb::handle empty, nb::handle current_stream) {
        TorchHooks h;
        h.tensor_type = reinterpret_cast<PyTypeObject*>(tensor_type.inc_ref().ptr());
        for (nb::handle item : dtypes) {
          nb::tuple pair = nb::cast<nb::tuple>(item);
          auto t = ir::DataType::parse(nb::cast<std::string>(pair[1]));
          if (!t) throw nb::value_error("unknown dtype name in the torch hooks");
          h.dtypes.emplace_back(pair[0].inc_ref().ptr(), *t);
        }
        h.empty = empty.inc_ref().ptr();
        h.current_stream = current_stream.is_none() ? nullptr : current_stream.inc_ref().ptr();
        resolve_tensor_attrs(h);
        h.ready = true;
        g_torch = std::move(h);
      },
      "Registers torch.Tensor, its dtypes, torch.empty and a current-stream function (tilec/kernel.py does this).");
  m.def("_load_torch_shim", &load_torch_shim, nb::arg("path"), nb::arg("torch_version"),
        "Loads libtilec_torch_shim (output allocation and the current stream without torch's Python API); "
        "returns '' when loaded, else why not (tilec/kernel.py calls it).");
  m.def(
      "_set_torch_shim_active",
      [](bool on) {
        const bool was = g_shim.active;
        g_shim.active = on && g_shim.loaded;
        return was;
      },
      "Turns the loaded torch shim on or off (benchmarks compare the two paths); returns the previous state.");
  m.def(
      "_torch_shim_loaded_from", [] { return g_shim.loaded ? g_shim.path : std::string(); },
      "The path the torch shim was loaded from, '' when none is loaded.");
}
