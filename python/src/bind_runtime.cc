// STUB: replaced by the runtime bindings.
#include <nanobind/nanobind.h>
namespace nb = nanobind;
void bind_runtime(nb::module_& m) {}
