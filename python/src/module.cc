// The _tilec extension module: one bind_* function per area, each in its own file.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_ir(nb::module_& m);       // bind_ir.cc: types, exprs, buffers, builder, printer
void bind_runtime(nb::module_& m);  // bind_runtime.cc: compile, kernels, launch, cache

NB_MODULE(_tilec, m) {
  m.doc() = "tilec: tile-level GPU kernel compiler (C++ core)";
  bind_ir(m);
  bind_runtime(m);
}
