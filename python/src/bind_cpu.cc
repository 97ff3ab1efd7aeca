// Bindings of target="cpu" (the tile-level interpreter, include/tilec/target/cpu/interpreter.h).
// Arrays arrive from python/tilec/cpu_kernel.py as (address, dtype name, shape, strides in
// elements); that module keeps them alive for the call and handles numpy / torch / ml_dtypes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind_ir_common.h"
#include "tilec/target/cpu/interpreter.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

tilec::cpu::CpuArg to_cpu_arg(nb::handle h) {
  if (nb::isinstance<nb::tuple>(h)) {
    auto t = nb::cast<nb::tuple>(h);
    tilec::cpu::HostArray a;
    a.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(t[0]));
    a.dtype = tilec::pybind::to_dtype(t[1]);
    a.shape = nb::cast<std::vector<int64_t>>(t[2]);
    a.strides = nb::cast<std::vector<int64_t>>(t[3]);
    return a;
  }
  if (PyBool_Check(h.ptr()) || PyLong_Check(h.ptr())) return static_cast<int64_t>(nb::cast<int64_t>(h));
  if (PyFloat_Check(h.ptr())) return nb::cast<double>(h);
  throw nb::type_error(("target=cpu: an argument must be an array or a number, got " +
                        tilec::pybind::py_type_name(h)).c_str());
}

}  // namespace

void bind_cpu(nb::module_& m) {
  m.def(
      "cpu_run",
      [](const tilec::ir::PrimFunc& f, nb::list args, bool strict_global_bounds) {
        std::vector<tilec::cpu::CpuArg> cargs;
        for (nb::handle h : args) cargs.push_back(to_cpu_arg(h));
        tilec::cpu::CpuOptions options;
        options.strict_global_bounds = strict_global_bounds;
        nb::gil_scoped_release release;
        tilec::cpu::run_on_cpu(f, cargs, options);
      },
      "func"_a, "args"_a, "strict_global_bounds"_a = false,
      "Runs a PrimFunc on the host at the tile level (target='cpu'); arrays are (address, dtype, shape, strides).");
  m.def(
      "cpu_param_shape",
      [](const tilec::ir::PrimFunc& f, size_t index, const std::vector<std::pair<std::string, int64_t>>& symbols) {
        return tilec::cpu::param_shape(f, index, symbols);
      },
      "func"_a, "index"_a, "symbols"_a, "The shape of tensor parameter `index` given symbol values by name.");
}
