// The _tilec extension module: one bind_* function per area, each in its own file.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_ir(nb::module_& m);       // bind_ir.cc: types, exprs, buffers, builder, printer
void bind_runtime(nb::module_& m);  // bind_runtime.cc: compile, kernels, launch, cache
void bind_cpu(nb::module_& m);      // bind_cpu.cc: target="cpu", the tile-level interpreter

NB_MODULE(_tilec, m) {
  m.doc() = "tilec: tile-level GPU kernel compiler (C++ core)";
  // The jit cache (python/tilec/jit.py) and the kernel cache keep compiled kernels alive for
  // the life of the process by design; nanobind would report them as leaks at exit.
  nb::set_leak_warnings(false);
  bind_ir(m);
  bind_runtime(m);
  bind_cpu(m);
}
