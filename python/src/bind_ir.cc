// STUB: replaced by the IR / builder bindings.
#include <nanobind/nanobind.h>
namespace nb = nanobind;
void bind_ir(nb::module_& m) {}
