// Layout helpers the T language exposes (tilec.layout): swizzled shared-memory layouts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind_ir_common.h"
#include "tilec/layout/swizzle.h"
#include "tilec/support/diag.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using tilec::layout::SwizzleMode;

SwizzleMode parse_mode(const std::string& name) {
  for (SwizzleMode m : {SwizzleMode::kNone, SwizzleMode::k32B, SwizzleMode::k64B, SwizzleMode::k128B})
    if (name == tilec::layout::swizzle_name(m)) return m;
  tilec::throw_user_error("unknown swizzle mode '" + name + "'", {}, "modes: none, 32B, 64B, 128B");
}

}  // namespace

void bind_ir_layout(nb::module_& m) {
  m.def("swizzle_applicable", [](const std::vector<int64_t>& shape, nb::handle dtype, const std::string& mode) {
         return tilec::layout::swizzle_applicable(shape, tilec::pybind::to_dtype(dtype), parse_mode(mode));
       }, "shape"_a, "dtype"_a, "mode"_a);
  m.def("widest_swizzle", [](const std::vector<int64_t>& shape, nb::handle dtype) {
         return std::string(tilec::layout::swizzle_name(
             tilec::layout::widest_swizzle(shape, tilec::pybind::to_dtype(dtype))));
       }, "shape"_a, "dtype"_a, "The widest swizzle mode (none, 32B, 64B, 128B) that fits a tile.");
  m.def("swizzled_layout", [](const std::vector<int64_t>& shape, nb::handle dtype, const std::string& mode) {
         auto t = tilec::pybind::to_dtype(dtype);
         SwizzleMode mm = parse_mode(mode);
         if (!tilec::layout::swizzle_applicable(shape, t, mm) && mm != SwizzleMode::kNone) {
           std::string s;
           for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
           tilec::throw_user_error("a " + std::string(tilec::layout::swizzle_name(mm)) + " swizzle does not fit a (" + s +
                                       ") tile of " + t.str(),
                                   {}, "rows must be a multiple of the swizzle span (or the tile a multiple of it)");
         }
         return tilec::layout::swizzled_layout(shape, t, mm);
       }, "shape"_a, "dtype"_a, "mode"_a);
}
