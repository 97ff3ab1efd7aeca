// Shared conversion helpers of the IR bindings (bind_ir.cc, bind_ir_builder.cc).
//
// Python sees expressions as `Expr` (and its subclass `Var`), wrappers around the C++
// reference handles. Python ints / floats / bools / strings are accepted wherever an
// expression is expected and become immediates (int32 unless the value needs int64,
// float32); the C++ constructors then adopt the other operand's type for immediates.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "tilec/ir/buffer.h"
#include "tilec/ir/expr.h"
#include "tilec/ir/stmt.h"
#include "tilec/ir/type.h"
#include "tilec/layout/layout_maps.h"

namespace tilec::pybind {

namespace nb = nanobind;

struct PyExpr {
  ir::Expr node;
};
struct PyVar : PyExpr {
  ir::Var var() const { return ir::Var(std::static_pointer_cast<const ir::VarNode>(node.shared())); }
};

// Expr -> Python object (a Var for variables, None for a null expression).
nb::object wrap_expr(const ir::Expr& e);
nb::list wrap_exprs(const std::vector<ir::Expr>& es);
nb::list wrap_vars(const std::vector<ir::Var>& vs);

// Python value -> Expr (Expr, bool, int, float, str); TypeError otherwise.
ir::Expr to_expr(nb::handle h);
std::vector<ir::Expr> to_exprs(nb::handle seq);
ir::Var to_var(nb::handle h);
// DataType or a dtype name ("float16", "float", ...); a UserError for unknown names.
ir::DataType to_dtype(nb::handle h);

ir::AttrValue to_attr(nb::handle h);
nb::object from_attr(const ir::AttrValue& v);
ir::AttrMap to_attr_map(nb::handle dict_or_none);
nb::dict from_attr_map(const ir::AttrMap& attrs);

ir::BufferRegion to_region(nb::handle h);  // BufferRegion or Buffer (the whole buffer)

std::string py_type_name(nb::handle h);

// A layout evaluated at every element (tilec/layout/layout_maps.h) as a dict of ints and
// lists: shape, fragment, text, and thread/local/replicate/threads/registers (fragments) or
// offset/physical_size (plain layouts); bind_ir_layout.cc.
nb::dict wrap_layout_maps(const layout::LayoutMaps& m);
// One inferred layout of a program: the maps above plus name, scope, dtype, dtype_bits and
// the Layout object itself.
nb::dict wrap_inferred_layout(const layout::InferredLayout& l);

}  // namespace tilec::pybind
