// IR bindings: SourceLoc, DataType, Expr / Var (with Python operators that build IR),
// Buffer, BufferRegion, Layout, the printer, structural equality and error translation.
// The builder, statements and functions are in bind_ir_builder.cc.
//
// Thin by design: every constructor here calls the C++ one, which does the checking.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <limits>

#include "bind_ir_common.h"
#include "tilec/arith/analyzer.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/structural.h"
#include "tilec/ir/verifier.h"
#include "tilec/support/diag.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tilec::pybind {

using namespace tilec::ir;

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

nb::object wrap_expr(const Expr& e) {
  if (!e.defined()) return nb::none();
  if (e.as<VarNode>()) {
    PyVar v;
    v.node = e;
    return nb::cast(v);
  }
  return nb::cast(PyExpr{e});
}

nb::list wrap_exprs(const std::vector<Expr>& es) {
  nb::list out;
  for (const auto& e : es) out.append(wrap_expr(e));
  return out;
}

nb::list wrap_vars(const std::vector<Var>& vs) {
  nb::list out;
  for (const auto& v : vs) out.append(wrap_expr(v));
  return out;
}

Expr to_expr(nb::handle h) {
  if (nb::isinstance<PyExpr>(h)) return nb::cast<const PyExpr&>(h).node;
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return bool_imm(o == Py_True);
  if (PyLong_Check(o)) {
    int64_t v = nb::cast<int64_t>(h);
    bool fits32 = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    return int_imm(v, fits32 ? DataType::Int(32) : DataType::Int(64));
  }
  if (PyFloat_Check(o)) return float_imm(nb::cast<double>(h), DataType::Float(32));
  if (PyUnicode_Check(o)) return string_imm(nb::cast<std::string>(h));
  // numpy and other integer-like scalars
  if (PyIndex_Check(o)) {
    nb::object i = nb::steal(PyNumber_Index(o));
    if (i.is_valid()) return to_expr(i);
    PyErr_Clear();
  }
  throw nb::type_error(("a " + py_type_name(h) + " cannot be used as an IR expression").c_str());
}

std::vector<Expr> to_exprs(nb::handle seq) {
  std::vector<Expr> out;
  for (nb::handle item : seq) out.push_back(to_expr(item));
  return out;
}

Var to_var(nb::handle h) {
  if (!nb::isinstance<PyVar>(h)) throw nb::type_error(("expected a Var, got a " + py_type_name(h)).c_str());
  return nb::cast<const PyVar&>(h).var();
}

DataType to_dtype(nb::handle h) {
  if (nb::isinstance<DataType>(h)) return nb::cast<DataType>(h);
  if (PyUnicode_Check(h.ptr())) {
    std::string name = nb::cast<std::string>(h);
    if (auto t = DataType::parse(name)) return *t;
    throw_user_error("unknown dtype '" + name + "'", {},
                     "use a name such as \"float16\", \"bfloat16\", \"float32\" (\"float\"), \"int32\", "
                     "\"float8_e4m3\", or T.float16 / T.bfloat16 / ...");
  }
  throw nb::type_error(("expected a dtype (a name such as \"float16\"), got a " + py_type_name(h)).c_str());
}

ir::BufferRegion to_region(nb::handle h) {
  if (nb::isinstance<BufferRegion>(h)) return nb::cast<BufferRegion>(h);
  if (nb::isinstance<Buffer>(h)) return BufferRegion::full(nb::cast<Buffer>(h));
  throw nb::type_error(("expected a buffer or a buffer region, got a " + py_type_name(h)).c_str());
}

namespace {

bool is_pair_of(nb::handle item) {
  return (nb::isinstance<nb::tuple>(item) || nb::isinstance<nb::list>(item)) && nb::len(item) == 2 &&
         nb::isinstance<Buffer>(item[0]) && nb::isinstance<Layout>(item[1]);
}

}  // namespace

AttrValue to_attr(nb::handle h) {
  PyObject* o = h.ptr();
  if (h.is_none()) return std::monostate{};
  if (PyBool_Check(o)) return o == Py_True;
  if (PyLong_Check(o)) return nb::cast<int64_t>(h);
  if (PyFloat_Check(o)) return nb::cast<double>(h);
  if (PyUnicode_Check(o)) return nb::cast<std::string>(h);
  if (nb::isinstance<PyExpr>(h)) return nb::cast<const PyExpr&>(h).node;
  if (nb::isinstance<Buffer>(h)) return nb::cast<Buffer>(h);
  if (nb::isinstance<Layout>(h)) return nb::cast<Layout>(h);
  if (nb::isinstance<nb::dict>(h)) {
    LayoutMap map;
    for (auto [k, v] : nb::cast<nb::dict>(h)) {
      if (!nb::isinstance<Buffer>(k) || !nb::isinstance<Layout>(v))
        throw nb::type_error("a dict attribute must map buffers to layouts");
      map.emplace_back(nb::cast<Buffer>(k), nb::cast<Layout>(v));
    }
    return map;
  }
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    bool all_ints = true, all_pairs = true;
    for (nb::handle item : h) {
      all_ints = all_ints && PyLong_Check(item.ptr()) && !PyBool_Check(item.ptr());
      all_pairs = all_pairs && is_pair_of(item);
    }
    if (all_ints) {
      std::vector<int64_t> v;
      for (nb::handle item : h) v.push_back(nb::cast<int64_t>(item));
      return v;
    }
    if (all_pairs) {
      LayoutMap map;
      for (nb::handle item : h) map.emplace_back(nb::cast<Buffer>(item[0]), nb::cast<Layout>(item[1]));
      return map;
    }
    throw nb::type_error("a list attribute must hold ints or (buffer, layout) pairs");
  }
  throw nb::type_error(("a " + py_type_name(h) + " cannot be used as an attribute value").c_str());
}

nb::object from_attr(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> nb::object {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>) return nb::none();
        else if constexpr (std::is_same_v<X, Expr>) return wrap_expr(x);
        else if constexpr (std::is_same_v<X, LayoutMap>) {
          nb::dict d;
          for (const auto& [b, l] : x) d[nb::cast(b)] = nb::cast(l);
          return d;
        } else return nb::cast(x);
      },
      v);
}

AttrMap to_attr_map(nb::handle h) {
  AttrMap out;
  if (h.is_none()) return out;
  for (auto [k, v] : nb::cast<nb::dict>(h)) out.emplace_back(nb::cast<std::string>(k), to_attr(v));
  return out;
}

nb::dict from_attr_map(const AttrMap& attrs) {
  nb::dict d;
  for (const auto& [k, v] : attrs) d[k.c_str()] = from_attr(v);
  return d;
}

}  // namespace tilec::pybind

namespace {

using namespace tilec;
using namespace tilec::ir;
using tilec::pybind::PyExpr;
using tilec::pybind::PyVar;
using tilec::pybind::to_expr;
using tilec::pybind::wrap_expr;

// Python classes that C++ errors become (set from tilec/__init__.py).
PyObject* g_compile_error = nullptr;
PyObject* g_internal_error = nullptr;

void translate_errors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const UserError& e) {
    if (!g_compile_error) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      return;
    }
    PyObject* inst = PyObject_CallFunction(g_compile_error, "ssiis", e.message().c_str(), e.loc().file.c_str(),
                                           e.loc().line, e.loc().col, e.hint().c_str());
    if (inst) {
      PyErr_SetObject(g_compile_error, inst);
      Py_DECREF(inst);
    }
  } catch (const InternalError& e) {
    PyErr_SetString(g_internal_error ? g_internal_error : PyExc_RuntimeError, e.what());
  }
}

NodeKind binary_kind(const std::string& name) {
#define TILEC_BINARY(Kind, Symbol, Category) \
  if (name == #Kind) return NodeKind::k##Kind;
#include "tilec/ir/nodes.def"
  throw nb::value_error(("unknown binary operation '" + name + "'").c_str());
}

Expr bin(NodeKind k, nb::handle a, nb::handle b) { return binary(k, to_expr(a), to_expr(b)); }

nb::object expr_field(const PyExpr& self, const char* field) {
  const Expr& e = self.node;
  std::string f = field;
  if (auto* n = e.as<IntImmNode>(); n && f == "value") return e->dtype.is_bool() ? nb::cast(n->value != 0) : nb::cast(n->value);
  if (auto* n = e.as<FloatImmNode>(); n && f == "value") return nb::cast(n->value);
  if (auto* n = e.as<StringImmNode>(); n && f == "value") return nb::cast(n->value);
  if (auto* n = e.as<VarNode>(); n && f == "name") return nb::cast(n->name);
  if (auto* n = e.as<BinaryNode>()) {
    if (f == "a") return wrap_expr(n->a);
    if (f == "b") return wrap_expr(n->b);
  }
  if (auto* n = e.as<NotNode>(); n && f == "a") return wrap_expr(n->a);
  if (auto* n = e.as<SelectNode>()) {
    if (f == "cond") return wrap_expr(n->cond);
    if (f == "true_value") return wrap_expr(n->true_value);
    if (f == "false_value") return wrap_expr(n->false_value);
  }
  if (auto* n = e.as<CastNode>(); n && f == "value") return wrap_expr(n->value);
  if (auto* n = e.as<RampNode>()) {
    if (f == "base") return wrap_expr(n->base);
    if (f == "stride") return wrap_expr(n->stride);
    if (f == "lanes") return nb::cast(n->lanes);
  }
  if (auto* n = e.as<BroadcastNode>()) {
    if (f == "value") return wrap_expr(n->value);
    if (f == "lanes") return nb::cast(n->lanes);
  }
  if (auto* n = e.as<BufferLoadNode>()) {
    if (f == "buffer") return nb::cast(n->buffer);
    if (f == "indices") return tilec::pybind::wrap_exprs(n->indices);
  }
  if (auto* n = e.as<CallNode>()) {
    if (f == "op") return nb::cast(n->op);
    if (f == "args") return tilec::pybind::wrap_exprs(n->args);
  }
  throw nb::attribute_error(
      (std::string("a ") + node_kind_name(e->kind) + " expression has no field '" + f + "'").c_str());
}

void bind_types(nb::module_& m) {
  nb::class_<SourceLoc>(m, "SourceLoc")
      .def(nb::init<>())
      .def(
          "__init__",
          [](SourceLoc* self, std::string file, int line, int col) {
            new (self) SourceLoc{std::move(file), line, col};
          },
          "file"_a, "line"_a = 0, "col"_a = 0)
      .def_rw("file", &SourceLoc::file)
      .def_rw("line", &SourceLoc::line)
      .def_rw("col", &SourceLoc::col)
      .def("known", &SourceLoc::known)
      .def("__str__", &SourceLoc::str)
      .def("__repr__", [](const SourceLoc& l) { return "SourceLoc(" + l.str() + ")"; });

  nb::class_<DataType>(m, "DataType")
      .def("__init__", [](DataType* self, nb::handle name) { new (self) DataType(tilec::pybind::to_dtype(name)); })
      .def_static("parse", &DataType::parse, "name"_a)
      .def_prop_ro("bits", &DataType::bits)
      .def_prop_ro("lanes", &DataType::lanes)
      .def_prop_ro("bytes", &DataType::bytes)
      .def("is_int", &DataType::is_int)
      .def("is_uint", &DataType::is_uint)
      .def("is_integer", &DataType::is_integer)
      .def("is_float", &DataType::is_float)
      .def("is_bool", &DataType::is_bool)
      .def("is_handle", &DataType::is_handle)
      .def("with_lanes", &DataType::with_lanes)
      .def("element_of", &DataType::element_of)
      .def("__str__", &DataType::str)
      .def("__repr__", [](const DataType& t) { return "DataType(\"" + t.str() + "\")"; })
      .def("__eq__",
           [](const DataType& a, nb::handle b) {
             if (nb::isinstance<DataType>(b)) return a == nb::cast<DataType>(b);
             if (PyUnicode_Check(b.ptr())) {
               auto t = DataType::parse(nb::cast<std::string>(b));
               return t.has_value() && *t == a;
             }
             return false;
           })
      .def("__ne__",
           [](const DataType& a, nb::handle b) {
             if (nb::isinstance<DataType>(b)) return a != nb::cast<DataType>(b);
             if (PyUnicode_Check(b.ptr())) {
               auto t = DataType::parse(nb::cast<std::string>(b));
               return !(t.has_value() && *t == a);
             }
             return true;
           })
      .def("__hash__", [](const DataType& t) { return std::hash<std::string>()(t.str()); });
}

void bind_exprs(nb::module_& m) {
  auto expr = nb::class_<PyExpr>(m, "Expr");
  expr.def_prop_ro("kind", [](const PyExpr& e) { return std::string(node_kind_name(e.node->kind)); })
      .def_prop_ro("dtype", [](const PyExpr& e) { return e.node->dtype; })
      .def_prop_ro("loc", [](const PyExpr& e) { return e.node->loc; })
      .def("field", &expr_field, "name"_a, "A kind-specific field: value, name, a, b, op, args, buffer, ...")
      .def("__getattr__", &expr_field)
      .def("as_int", [](const PyExpr& e) -> std::optional<int64_t> {
        if (auto* p = as_const_int(e.node); p && !e.node->dtype.is_bool()) return *p;
        return std::nullopt;
      })
      .def("same_as", [](const PyExpr& a, const PyExpr& b) { return a.node.same_as(b.node); })
      .def("script", [](const PyExpr& e) { return script(e.node); })
      .def("__repr__", [](const PyExpr& e) { return script(e.node); })
      .def("__bool__",
           [](const PyExpr&) -> bool {
             throw nb::type_error(
                 "an IR expression has no Python truth value: inside a kernel, `if` on it becomes an IR "
                 "if-statement; use T.if_then_else(cond, a, b) for a value");
           })
      .def("__add__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kAdd, nb::cast(a), b)); })
      .def("__radd__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kAdd, b, nb::cast(a))); })
      .def("__sub__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kSub, nb::cast(a), b)); })
      .def("__rsub__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kSub, b, nb::cast(a))); })
      .def("__mul__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kMul, nb::cast(a), b)); })
      .def("__rmul__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kMul, b, nb::cast(a))); })
      .def("__truediv__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kDiv, nb::cast(a), b)); })
      .def("__rtruediv__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kDiv, b, nb::cast(a))); })
      .def("__floordiv__",
           [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kFloorDiv, nb::cast(a), b)); })
      .def("__rfloordiv__",
           [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kFloorDiv, b, nb::cast(a))); })
      .def("__mod__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kFloorMod, nb::cast(a), b)); })
      .def("__rmod__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kFloorMod, b, nb::cast(a))); })
      .def("__lt__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kLT, nb::cast(a), b)); })
      .def("__le__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kLE, nb::cast(a), b)); })
      .def("__gt__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kGT, nb::cast(a), b)); })
      .def("__ge__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kGE, nb::cast(a), b)); })
      .def("__eq__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kEQ, nb::cast(a), b)); })
      .def("__ne__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kNE, nb::cast(a), b)); })
      .def("__and__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kAnd, nb::cast(a), b)); })
      .def("__rand__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kAnd, b, nb::cast(a))); })
      .def("__or__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kOr, nb::cast(a), b)); })
      .def("__ror__", [](const PyExpr& a, nb::handle b) { return wrap_expr(bin(NodeKind::kOr, b, nb::cast(a))); })
      .def("__invert__", [](const PyExpr& a) { return wrap_expr(logical_not(a.node)); })
      .def("__neg__", [](const PyExpr& a) { return wrap_expr(binary(NodeKind::kSub, int_imm(0), a.node)); })
      .def("__pos__", [](const PyExpr& a) { return wrap_expr(a.node); });
  // Expressions build IR on ==, so they cannot be dict keys.
  expr.attr("__hash__") = nb::none();

  nb::class_<PyVar, PyExpr>(m, "Var").def_prop_ro("name", [](const PyVar& v) { return v.var()->name; });

  const SourceLoc no_loc{};
  m.def("int_imm", [](int64_t v, nb::handle t, SourceLoc loc) {
         return wrap_expr(int_imm(v, t.is_none() ? DataType::Int(32) : tilec::pybind::to_dtype(t), loc));
       }, "value"_a, "dtype"_a = nb::none(), "loc"_a = no_loc);
  m.def("float_imm", [](double v, nb::handle t, SourceLoc loc) {
         DataType dt = t.is_none() ? DataType::Float(32) : tilec::pybind::to_dtype(t);
         TILEC_USER_CHECK(dt.is_float(), loc, "") << "a float immediate needs a float dtype, got " << dt.str();
         return wrap_expr(float_imm(v, dt, loc));
       }, "value"_a, "dtype"_a = nb::none(), "loc"_a = no_loc);
  m.def("bool_imm", [](bool v, SourceLoc loc) { return wrap_expr(bool_imm(v, loc)); }, "value"_a, "loc"_a = no_loc);
  m.def("string_imm", [](std::string v, SourceLoc loc) { return wrap_expr(string_imm(std::move(v), loc)); },
        "value"_a, "loc"_a = no_loc);
  m.def("var", [](std::string name, nb::handle t, SourceLoc loc) {
         return wrap_expr(make_var(std::move(name), t.is_none() ? DataType::Int(32) : tilec::pybind::to_dtype(t), loc));
       }, "name"_a, "dtype"_a = nb::none(), "loc"_a = no_loc);
  m.def("const", [](nb::handle v) { return wrap_expr(to_expr(v)); }, "value"_a,
        "Wraps a Python int / float / bool / str as an immediate (int32 / float32 / bool / string).");
  m.def("binary", [](const std::string& kind, nb::handle a, nb::handle b, SourceLoc loc) {
         return wrap_expr(binary(binary_kind(kind), to_expr(a), to_expr(b), loc));
       }, "kind"_a, "a"_a, "b"_a, "loc"_a = no_loc,
       "kind: Add Sub Mul Div Mod FloorDiv FloorMod Min Max EQ NE LT LE GT GE And Or");
  m.def("logical_not", [](nb::handle a, SourceLoc loc) { return wrap_expr(logical_not(to_expr(a), loc)); },
        "a"_a, "loc"_a = no_loc);
  m.def("select", [](nb::handle c, nb::handle t, nb::handle f, SourceLoc loc) {
         return wrap_expr(select(to_expr(c), to_expr(t), to_expr(f), loc));
       }, "cond"_a, "true_value"_a, "false_value"_a, "loc"_a = no_loc);
  m.def("cast", [](nb::handle t, nb::handle v, SourceLoc loc) {
         return wrap_expr(cast(tilec::pybind::to_dtype(t), to_expr(v), loc));
       }, "dtype"_a, "value"_a, "loc"_a = no_loc);
  m.def("ramp", [](nb::handle base, nb::handle stride, int lanes, SourceLoc loc) {
         TILEC_USER_CHECK(lanes > 1, loc, "") << "T.Ramp needs at least 2 lanes, got " << lanes;
         return wrap_expr(ramp(to_expr(base), to_expr(stride), lanes, loc));
       }, "base"_a, "stride"_a, "lanes"_a, "loc"_a = no_loc);
  m.def("broadcast", [](nb::handle v, int lanes, SourceLoc loc) {
         TILEC_USER_CHECK(lanes > 1, loc, "") << "T.Broadcast needs at least 2 lanes, got " << lanes;
         return wrap_expr(broadcast(to_expr(v), lanes, loc));
       }, "value"_a, "lanes"_a, "loc"_a = no_loc);
  m.def("buffer_load", [](const Buffer& b, nb::handle idx, SourceLoc loc) {
         return wrap_expr(buffer_load(b, tilec::pybind::to_exprs(idx), loc));
       }, "buffer"_a, "indices"_a, "loc"_a = no_loc);
  m.def("call", [](nb::handle t, std::string op, nb::handle args, SourceLoc loc) {
         return wrap_expr(call(tilec::pybind::to_dtype(t), std::move(op), tilec::pybind::to_exprs(args), loc));
       }, "dtype"_a, "op"_a, "args"_a, "loc"_a = no_loc);
  m.def("ceildiv", [](nb::handle a, nb::handle b) { return wrap_expr(ceildiv(to_expr(a), to_expr(b))); },
        "a"_a, "b"_a);
  m.def("simplify", [](nb::handle e) { return wrap_expr(arith::simplify(to_expr(e))); }, "expr"_a);
}

void bind_buffers(nb::module_& m) {
  nb::class_<Buffer>(m, "Buffer")
      .def_prop_ro("name", [](const Buffer& b) { return b->name; })
      .def_prop_ro("dtype", [](const Buffer& b) { return b->dtype; })
      .def_prop_ro("shape", [](const Buffer& b) { return tilec::pybind::wrap_exprs(b->shape); })
      .def_prop_ro("strides", [](const Buffer& b) { return tilec::pybind::wrap_exprs(b->strides); })
      .def_prop_ro("scope", [](const Buffer& b) { return std::string(scope_name(b->scope)); })
      .def_prop_ro("ndim", [](const Buffer& b) { return b->ndim(); })
      .def_prop_ro("loc", [](const Buffer& b) { return b->loc; })
      .def("same_as", [](const Buffer& a, const Buffer& b) { return a.same_as(b); })
      .def("__eq__", [](const Buffer& a, nb::handle b) {
        return nb::isinstance<Buffer>(b) && a.same_as(nb::cast<Buffer>(b));
      })
      .def("__ne__", [](const Buffer& a, nb::handle b) {
        return !(nb::isinstance<Buffer>(b) && a.same_as(nb::cast<Buffer>(b)));
      })
      .def("__hash__", [](const Buffer& b) { return reinterpret_cast<uintptr_t>(b.get()); })
      .def("__repr__", [](const Buffer& b) {
        std::string s = "Buffer(" + b->name + ", (";
        for (size_t i = 0; i < b->shape.size(); ++i) s += (i ? ", " : "") + script(b->shape[i]);
        return s + (b->shape.size() == 1 ? ",), " : "), ") + b->dtype.str() + ", " + scope_name(b->scope) + ")";
      });

  m.def("make_buffer", [](std::string name, nb::handle shape, nb::handle dtype, const std::string& scope,
                          nb::handle strides, SourceLoc loc) {
         auto s = parse_scope(scope);
         TILEC_USER_CHECK(s.has_value(), loc, "scopes: global, shared, shared.dyn, local.fragment, local, local.var")
             << "unknown memory scope '" << scope << "'";
         return make_buffer(std::move(name), tilec::pybind::to_exprs(shape), tilec::pybind::to_dtype(dtype), *s,
                            strides.is_none() ? std::vector<Expr>{} : tilec::pybind::to_exprs(strides), loc);
       }, "name"_a, "shape"_a, "dtype"_a, "scope"_a = "global", "strides"_a = nb::none(), "loc"_a = SourceLoc{});

  nb::class_<BufferRegion>(m, "BufferRegion")
      .def("__init__",
           [](BufferRegion* self, const Buffer& b, nb::handle ranges, SourceLoc loc) {
             BufferRegion r;
             r.buffer = b;
             r.loc = std::move(loc);
             for (nb::handle item : ranges) {
               if (nb::len(item) != 2) throw nb::type_error("a region is a list of (min, extent) pairs");
               r.region.push_back({to_expr(item[0]), to_expr(item[1])});
             }
             new (self) BufferRegion(std::move(r));
           },
           "buffer"_a, "ranges"_a, "loc"_a = SourceLoc{})
      .def_static("full", &BufferRegion::full, "buffer"_a)
      .def_prop_ro("buffer", [](const BufferRegion& r) { return r.buffer; })
      .def_prop_ro("region", [](const BufferRegion& r) {
        nb::list out;
        for (const auto& rg : r.region) out.append(nb::make_tuple(wrap_expr(rg.min), wrap_expr(rg.extent)));
        return out;
      })
      .def_prop_ro("loc", [](const BufferRegion& r) { return r.loc; });

  nb::class_<Layout>(m, "Layout")
      .def_prop_ro("input_shape", [](const Layout& l) { return tilec::pybind::wrap_exprs(l->input_shape); })
      .def_prop_ro("vars", [](const Layout& l) { return tilec::pybind::wrap_vars(l->vars); })
      .def_prop_ro("forward_index", [](const Layout& l) { return tilec::pybind::wrap_exprs(l->forward_index); })
      .def_prop_ro("forward_thread", [](const Layout& l) { return wrap_expr(l->forward_thread); })
      .def_prop_ro("replicate", [](const Layout& l) { return wrap_expr(l->replicate); })
      .def_prop_ro("rep_var", [](const Layout& l) { return wrap_expr(l->rep_var); })
      .def("is_fragment", [](const Layout& l) { return l->is_fragment(); })
      .def("same_as", [](const Layout& a, const Layout& b) { return a.same_as(b); })
      .def("script", [](const Layout& l) { return script(l); })
      .def("__repr__", [](const Layout& l) { return script(l); });

  m.def("make_layout", [](nb::handle shape, nb::handle vars, nb::handle index) {
         std::vector<Var> vs;
         for (nb::handle v : vars) vs.push_back(tilec::pybind::to_var(v));
         TILEC_USER_CHECK(vs.size() == nb::len(shape), SourceLoc{}, "give one lambda parameter per dimension")
             << "a layout over " << nb::len(shape) << " dimensions got " << vs.size() << " index variables";
         return make_layout(tilec::pybind::to_exprs(shape), std::move(vs), tilec::pybind::to_exprs(index));
       }, "shape"_a, "vars"_a, "forward_index"_a);
  m.def("make_fragment", [](nb::handle shape, nb::handle vars, nb::handle index, nb::handle thread,
                            nb::handle replicate, nb::handle rep_var) {
         std::vector<Var> vs;
         for (nb::handle v : vars) vs.push_back(tilec::pybind::to_var(v));
         TILEC_USER_CHECK(vs.size() == nb::len(shape), SourceLoc{}, "give one lambda parameter per dimension")
             << "a fragment over " << nb::len(shape) << " dimensions got " << vs.size() << " index variables";
         return make_fragment(tilec::pybind::to_exprs(shape), std::move(vs), tilec::pybind::to_exprs(index),
                              to_expr(thread), replicate.is_none() ? Expr() : to_expr(replicate),
                              rep_var.is_none() ? Var() : tilec::pybind::to_var(rep_var));
       }, "shape"_a, "vars"_a, "forward_index"_a, "forward_thread"_a, "replicate"_a = nb::none(),
       "rep_var"_a = nb::none());
}

}  // namespace

void bind_ir_builder(nb::module_& m);  // bind_ir_builder.cc
void bind_ir_layout(nb::module_& m);   // bind_ir_layout.cc

void bind_ir(nb::module_& m) {
  nb::register_exception_translator(&translate_errors);
  m.def("_set_error_types", [](nb::handle compile_error, nb::handle internal_error) {
    Py_XDECREF(g_compile_error);
    Py_XDECREF(g_internal_error);
    g_compile_error = compile_error.ptr();
    g_internal_error = internal_error.ptr();
    Py_INCREF(g_compile_error);
    Py_INCREF(g_internal_error);
  });
  // For tests of the error channels.
  m.def("_raise_user_error", [](std::string msg, SourceLoc loc, std::string hint) {
    throw_user_error(msg, loc, hint);
  });
  m.def("_raise_internal_error", [](std::string msg) { throw_internal_error(msg, __FILE__, __LINE__); });
  bind_types(m);
  bind_exprs(m);
  bind_buffers(m);
  bind_ir_builder(m);
  bind_ir_layout(m);
}
