// Layout helpers the T language exposes (tilec.layout): swizzled shared-memory layouts, and a
// layout evaluated at every element (for tilec.plot_layout and kernel.layouts()).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind_ir_common.h"
#include "tilec/layout/layout_maps.h"
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

nb::list int_list(const std::vector<int64_t>& v) {
  nb::list out;
  for (int64_t x : v) out.append(x);
  return out;
}

}  // namespace

namespace tilec::pybind {

nb::dict wrap_layout_maps(const tilec::layout::LayoutMaps& m) {
  nb::dict d;
  d["shape"] = int_list(m.shape);
  d["fragment"] = m.fragment;
  d["text"] = m.text;
  if (m.fragment) {
    d["replicate"] = m.replicate;
    d["threads"] = m.threads;
    d["registers"] = m.registers;
    d["thread"] = int_list(m.thread);
    d["local"] = int_list(m.local);
  } else {
    d["offset"] = int_list(m.offset);
    d["physical_size"] = m.physical_size;
  }
  return d;
}

nb::dict wrap_inferred_layout(const tilec::layout::InferredLayout& l) {
  nb::dict d = wrap_layout_maps(tilec::layout::evaluate_maps(l.layout));
  d["name"] = l.buffer->name;
  d["scope"] = std::string(tilec::ir::scope_name(l.buffer->scope));
  d["dtype"] = l.buffer->dtype.str();
  d["dtype_bits"] = l.buffer->dtype.bits() * l.buffer->dtype.lanes();
  d["layout"] = nb::cast(l.layout);
  return d;
}

}  // namespace tilec::pybind

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
  m.def("layout_maps", [](const tilec::ir::Layout& l) { return tilec::pybind::wrap_layout_maps(tilec::layout::evaluate_maps(l)); },
        "layout"_a,
        "The layout at every element of its tile, row-major: for a fragment the owning thread "
        "(replica 0) and register index, for a plain layout the physical element offset.");
}
