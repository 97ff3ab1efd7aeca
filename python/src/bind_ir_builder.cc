// Builder, statement, tile-op and PrimFunc bindings (the Python front end's only way to
// make IR), plus the printer, structural equality / hashing and the verifier.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind_ir_common.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/structural.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/verifier.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::pybind;

ForKind parse_for_kind(const std::string& name, const SourceLoc& loc) {
  static const std::pair<const char*, ForKind> kNames[] = {
      {"serial", ForKind::kSerial},         {"parallel", ForKind::kParallel},
      {"Parallel", ForKind::kParallel},     {"pipelined", ForKind::kPipelined},
      {"Pipelined", ForKind::kPipelined},   {"unroll", ForKind::kUnrolled},
      {"unrolled", ForKind::kUnrolled},     {"vectorized", ForKind::kVectorized},
      {"thread_binding", ForKind::kThreadBinding},
  };
  for (const auto& [n, k] : kNames)
    if (name == n) return k;
  throw_user_error("unknown loop kind '" + name + "'", loc,
                   "loop kinds: serial, Parallel, Pipelined, unroll, vectorized, thread_binding");
}

Scope parse_scope_or_throw(const std::string& name, const SourceLoc& loc) {
  auto s = parse_scope(name);
  TILEC_USER_CHECK(s.has_value(), loc,
                   "scopes: shared, shared.dyn, local.fragment, local, local.var, shared.barrier, shared.tmem")
      << "unknown memory scope '" << name << "'";
  return *s;
}

std::vector<int64_t> to_ints(nb::handle seq) {
  std::vector<int64_t> out;
  if (seq.is_none()) return out;
  for (nb::handle h : seq) out.push_back(nb::cast<int64_t>(h));
  return out;
}

std::vector<int> to_small_ints(nb::handle seq) {
  std::vector<int> out;
  if (seq.is_none()) return out;
  for (nb::handle h : seq) out.push_back(nb::cast<int>(h));
  return out;
}

std::vector<TileArg> to_tile_args(nb::handle seq) {
  std::vector<TileArg> out;
  for (nb::handle h : seq) {
    if (nb::isinstance<BufferRegion>(h) || nb::isinstance<Buffer>(h)) out.emplace_back(to_region(h));
    else out.emplace_back(to_expr(h));
  }
  return out;
}

nb::object wrap_param(const Param& p) { return p.is_buffer() ? nb::cast(p.buffer) : wrap_expr(p.var); }

nb::object wrap_tile_arg(const TileArg& a) {
  if (auto* e = std::get_if<Expr>(&a)) return wrap_expr(*e);
  return nb::cast(std::get<BufferRegion>(a));
}

nb::object stmt_field(const Stmt& s, const std::string& f) {
  if (auto* n = s.as<SeqNode>(); n && f == "stmts") return nb::cast(n->stmts);
  if (auto* n = s.as<ForNode>()) {
    if (f == "loop_var") return wrap_expr(n->loop_var);
    if (f == "min") return wrap_expr(n->min);
    if (f == "extent") return wrap_expr(n->extent);
    if (f == "for_kind") return nb::cast(std::string(for_kind_name(n->for_kind)));
    if (f == "thread_tag") return nb::cast(n->thread_tag);
    if (f == "num_stages") return nb::cast(n->pipeline.num_stages);
    if (f == "order") return nb::cast(n->pipeline.order);
    if (f == "stage") return nb::cast(n->pipeline.stage);
    if (f == "annotations") return from_attr_map(n->annotations);
    if (f == "body") return nb::cast(n->body);
  }
  if (auto* n = s.as<IfNode>()) {
    if (f == "cond") return wrap_expr(n->cond);
    if (f == "then_case") return nb::cast(n->then_case);
    if (f == "else_case") return n->else_case ? nb::cast(n->else_case) : nb::none();
  }
  if (auto* n = s.as<LetNode>()) {
    if (f == "var") return wrap_expr(n->var);
    if (f == "value") return wrap_expr(n->value);
    if (f == "body") return nb::cast(n->body);
  }
  if (auto* n = s.as<BufferStoreNode>()) {
    if (f == "buffer") return nb::cast(n->buffer);
    if (f == "indices") return wrap_exprs(n->indices);
    if (f == "value") return wrap_expr(n->value);
  }
  if (auto* n = s.as<EvaluateNode>(); n && f == "value") return wrap_expr(n->value);
  if (auto* n = s.as<AllocateNode>()) {
    if (f == "buffer") return nb::cast(n->buffer);
    if (f == "body") return nb::cast(n->body);
  }
  if (auto* n = s.as<KernelLaunchNode>()) {
    if (f == "grid") return wrap_exprs(n->grid);
    if (f == "block_vars") return wrap_vars(n->block_vars);
    if (f == "threads") return nb::cast(n->threads);
    if (f == "thread_vars") return wrap_vars(n->thread_vars);
    if (f == "cluster") return nb::cast(n->cluster);
    if (f == "body") return nb::cast(n->body);
  }
  if (auto* n = s.as<TileOpNode>()) {
    if (f == "op") return nb::cast(n->op);
    if (f == "args") {
      nb::list out;
      for (const auto& a : n->args) out.append(wrap_tile_arg(a));
      return out;
    }
    if (f == "attrs") return from_attr_map(n->attrs);
  }
  if (auto* n = s.as<AnnotateNode>()) {
    if (f == "key") return nb::cast(n->key);
    if (f == "value") return from_attr(n->value);
    if (f == "body") return nb::cast(n->body);
  }
  throw nb::attribute_error(
      (std::string("a ") + node_kind_name(s->kind) + " statement has no field '" + f + "'").c_str());
}

void bind_stmts(nb::module_& m) {
  nb::class_<Stmt>(m, "Stmt")
      .def_prop_ro("kind", [](const Stmt& s) { return std::string(node_kind_name(s->kind)); })
      .def_prop_ro("loc", [](const Stmt& s) { return s->loc; })
      .def("field", &stmt_field, "name"_a)
      .def("__getattr__", &stmt_field)
      .def("same_as", [](const Stmt& a, const Stmt& b) { return a.same_as(b); })
      .def("script", [](const Stmt& s, bool show_loc) { return script(s, PrintOptions{show_loc}); },
           "show_loc"_a = false)
      .def("__repr__", [](const Stmt& s) { return script(s); });

  nb::class_<PrimFunc>(m, "PrimFunc")
      .def_prop_ro("name", [](const PrimFunc& f) { return f->name; })
      .def_prop_ro("params", [](const PrimFunc& f) {
        nb::list out;
        for (const auto& p : f->params) out.append(wrap_param(p));
        return out;
      })
      .def_prop_ro("body", [](const PrimFunc& f) { return f->body; })
      .def_prop_ro("attrs", [](const PrimFunc& f) { return from_attr_map(f->attrs); })
      .def_prop_ro("loc", [](const PrimFunc& f) { return f->loc; })
      .def("with_attrs",
           [](const PrimFunc& f, nb::handle attrs) {
             AttrMap merged = f->attrs;
             for (auto& [k, v] : to_attr_map(attrs)) {
               auto it = std::find_if(merged.begin(), merged.end(), [&](auto& kv) { return kv.first == k; });
               if (it != merged.end()) it->second = v;
               else merged.emplace_back(k, v);
             }
             return make_prim_func(f->name, f->params, f->body, std::move(merged), f->loc);
           },
           "attrs"_a, "A copy with these function attributes added or replaced.")
      .def("script", [](const PrimFunc& f, bool show_loc) { return script(f, PrintOptions{show_loc}); },
           "show_loc"_a = false)
      .def("structural_equal", [](const PrimFunc& a, const PrimFunc& b) { return structural_equal(a, b); })
      .def("structural_hash", [](const PrimFunc& f) { return structural_hash(f); })
      .def("verify", [](const PrimFunc& f) { verify(f); })
      .def("same_as", [](const PrimFunc& a, const PrimFunc& b) { return a.same_as(b); })
      .def("__repr__", [](const PrimFunc& f) { return script(f); });

  m.def("script", [](nb::handle obj, bool show_loc) -> std::string {
         if (nb::isinstance<PrimFunc>(obj)) return script(nb::cast<PrimFunc>(obj), PrintOptions{show_loc});
         if (nb::isinstance<Stmt>(obj)) return script(nb::cast<Stmt>(obj), PrintOptions{show_loc});
         if (nb::isinstance<Layout>(obj)) return script(nb::cast<Layout>(obj));
         return script(to_expr(obj));
       }, "obj"_a, "show_loc"_a = false);
  m.def("structural_equal", [](nb::handle a, nb::handle b) -> bool {
         if (nb::isinstance<PrimFunc>(a) && nb::isinstance<PrimFunc>(b))
           return structural_equal(nb::cast<PrimFunc>(a), nb::cast<PrimFunc>(b));
         if (nb::isinstance<Stmt>(a) && nb::isinstance<Stmt>(b))
           return structural_equal(nb::cast<Stmt>(a), nb::cast<Stmt>(b));
         if (nb::isinstance<PyExpr>(a) && nb::isinstance<PyExpr>(b)) return structural_equal(to_expr(a), to_expr(b));
         throw nb::type_error("structural_equal compares two PrimFuncs, two Stmts or two Exprs");
       }, "a"_a, "b"_a);
  m.def("structural_hash", [](nb::handle a) -> uint64_t {
         if (nb::isinstance<PrimFunc>(a)) return structural_hash(nb::cast<PrimFunc>(a));
         if (nb::isinstance<Stmt>(a)) return structural_hash(nb::cast<Stmt>(a));
         return structural_hash(to_expr(a));
       }, "obj"_a);
  m.def("verify", [](const PrimFunc& f) { verify(f); }, "func"_a);
}

void bind_tile_ops(nb::module_& m) {
  m.def("tile_op_names", &tile_op_names);
  m.def("tile_op_schema", [](const std::string& name) -> nb::object {
         const TileOpSchema* s = find_tile_op(name);
         if (!s) return nb::none();
         nb::list args, attrs;
         for (const auto& a : s->args) {
           const char* kind = a.kind == ArgKind::kRegion ? "region" : a.kind == ArgKind::kExpr ? "expr" : "region_or_expr";
           args.append(nb::make_tuple(a.name, kind, a.optional));
         }
         for (const auto& a : s->attrs) attrs.append(nb::make_tuple(a.name, from_attr(a.default_value)));
         nb::dict d;
         d["args"] = args;
         d["attrs"] = attrs;
         return d;
       }, "name"_a, "The positional arguments (name, kind, optional) and keywords (name, default) of a tile op.");
}

void bind_builder(nb::module_& m) {
  nb::class_<Builder>(m, "Builder")
      .def(nb::init<std::string, SourceLoc>(), "name"_a, "loc"_a = SourceLoc{})
      .def("tensor",
           [](Builder& b, const std::string& name, nb::handle shape, nb::handle dtype, nb::handle strides,
              SourceLoc loc) {
             return b.tensor(name, to_exprs(shape), to_dtype(dtype),
                             strides.is_none() ? std::vector<Expr>{} : to_exprs(strides), loc);
           },
           "name"_a, "shape"_a, "dtype"_a, "strides"_a = nb::none(), "loc"_a = SourceLoc{})
      .def("scalar_param",
           [](Builder& b, const std::string& name, nb::handle dtype, SourceLoc loc) {
             return wrap_expr(b.scalar_param(name, to_dtype(dtype), loc));
           },
           "name"_a, "dtype"_a, "loc"_a = SourceLoc{})
      .def("dynamic",
           [](Builder& b, const std::string& name, nb::handle dtype, SourceLoc loc) {
             return wrap_expr(b.dynamic(name, dtype.is_none() ? DataType::Int(32) : to_dtype(dtype), loc));
           },
           "name"_a, "dtype"_a = nb::none(), "loc"_a = SourceLoc{})
      .def("reorder_params", &Builder::reorder_params, "names"_a, "loc"_a = SourceLoc{})
      .def("begin_kernel",
           [](Builder& b, nb::handle grid, nb::handle threads, nb::handle cluster, SourceLoc loc) {
             return wrap_vars(b.begin_kernel(to_exprs(grid), to_ints(threads), to_ints(cluster), loc));
           },
           "grid"_a, "threads"_a, "cluster"_a = nb::none(), "loc"_a = SourceLoc{})
      .def("thread_vars", [](const Builder& b) { return wrap_vars(b.thread_vars()); })
      .def("begin_for",
           [](Builder& b, const std::string& name, nb::handle min, nb::handle extent, const std::string& kind,
              int num_stages, nb::handle order, nb::handle stage, nb::handle annotations, std::string thread_tag,
              SourceLoc loc) {
             PipelineInfo p;
             p.num_stages = num_stages;
             p.order = to_small_ints(order);
             p.stage = to_small_ints(stage);
             ForKind k = parse_for_kind(kind, loc);
             return wrap_expr(b.begin_for(name, to_expr(min), to_expr(extent), k, std::move(p),
                                          to_attr_map(annotations), loc, std::move(thread_tag)));
           },
           "name"_a, "min"_a, "extent"_a, "kind"_a = "serial", "num_stages"_a = 0, "order"_a = nb::none(),
           "stage"_a = nb::none(), "annotations"_a = nb::none(), "thread_tag"_a = "", "loc"_a = SourceLoc{})
      .def("begin_loop_nest",
           [](Builder& b, const std::vector<std::string>& names, nb::handle extents, const std::string& kind,
              SourceLoc loc) {
             std::vector<Expr> ext = to_exprs(extents);
             TILEC_USER_CHECK(names.size() == ext.size(), loc, "name one loop variable per extent")
                 << "a loop over " << ext.size() << " extents binds " << names.size() << " variables";
             return wrap_vars(b.begin_loop_nest(names, std::move(ext), parse_for_kind(kind, loc), loc));
           },
           "names"_a, "extents"_a, "kind"_a = "Parallel", "loc"_a = SourceLoc{})
      .def("begin_if", [](Builder& b, nb::handle cond, SourceLoc loc) { b.begin_if(to_expr(cond), loc); },
           "cond"_a, "loc"_a = SourceLoc{})
      .def("begin_else", &Builder::begin_else, "loc"_a = SourceLoc{})
      .def("begin_while", [](Builder& b, nb::handle cond, SourceLoc loc) { b.begin_while(to_expr(cond), loc); },
           "cond"_a, "loc"_a = SourceLoc{})
      .def("begin_annotate",
           [](Builder& b, std::string key, nb::handle value, SourceLoc loc) {
             b.begin_annotate(std::move(key), to_attr(value), loc);
           },
           "key"_a, "value"_a, "loc"_a = SourceLoc{})
      .def("end_frame", &Builder::end_frame)
      .def_prop_ro("depth", &Builder::depth)
      .def("alloc",
           [](Builder& b, const std::string& name, nb::handle shape, nb::handle dtype, const std::string& scope,
              SourceLoc loc) {
             return b.alloc(name, to_exprs(shape), to_dtype(dtype), parse_scope_or_throw(scope, loc), loc);
           },
           "name"_a, "shape"_a, "dtype"_a, "scope"_a, "loc"_a = SourceLoc{})
      .def("alloc_view",
           [](Builder& b, const std::string& name, nb::handle shape, const Buffer& base, SourceLoc loc,
              nb::handle dtype) {
             std::optional<DataType> t;
             if (!dtype.is_none()) t = to_dtype(dtype);
             return b.alloc_view(name, to_exprs(shape), base, loc, t);
           },
           "name"_a, "shape"_a, "base"_a, "loc"_a = SourceLoc{}, "dtype"_a = nb::none())
      .def("make_tensor",
           [](Builder& b, const std::string& name, nb::handle address, nb::handle shape, nb::handle dtype,
              nb::handle strides, SourceLoc loc) {
             return b.make_tensor(name, to_expr(address), to_exprs(shape), tilec::pybind::to_dtype(dtype),
                                  strides.is_none() ? std::vector<Expr>{} : to_exprs(strides), loc);
           },
           "name"_a, "address"_a, "shape"_a, "dtype"_a, "strides"_a = nb::none(), "loc"_a = SourceLoc{})
      .def("store",
           [](Builder& b, const Buffer& buf, nb::handle indices, nb::handle value, SourceLoc loc) {
             b.store(buf, to_exprs(indices), to_expr(value), loc);
           },
           "buffer"_a, "indices"_a, "value"_a, "loc"_a = SourceLoc{})
      .def("tile_op",
           [](Builder& b, const std::string& op, nb::handle args, nb::handle attrs, SourceLoc loc) {
             b.tile_op(op, to_tile_args(args), to_attr_map(attrs), loc);
           },
           "op"_a, "args"_a, "attrs"_a = nb::none(), "loc"_a = SourceLoc{})
      .def("evaluate", [](Builder& b, nb::handle e, SourceLoc loc) { b.evaluate(to_expr(e), loc); }, "expr"_a,
           "loc"_a = SourceLoc{})
      .def("let",
           [](Builder& b, const std::string& name, nb::handle value, SourceLoc loc) {
             return wrap_expr(b.let(name, to_expr(value), loc));
           },
           "name"_a, "value"_a, "loc"_a = SourceLoc{})
      .def("finish", [](Builder& b, nb::handle attrs) { return b.finish(to_attr_map(attrs)); },
           "attrs"_a = nb::none());
}

}  // namespace

void bind_ir_builder(nb::module_& m) {
  bind_stmts(m);
  bind_tile_ops(m);
  bind_builder(m);
}
