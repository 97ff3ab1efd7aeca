// T-script printer, part 2: functions and statements (expressions: printer_expr.cc).
//
// Contract: prints a PrimFunc (or a statement) as T-script exactly as docs/TSCRIPT.md
// specifies, so that the Python front end parses it back into a structurally equal
// function. Output is deterministic: it depends only on the IR, never on addresses.
//
// Shape of the output: symbolic variables (free Vars of the parameters' shapes and
// strides) as `m = T.dynamic("m")` lines, then the decorated def with one parameter per
// line, then the body indented by 4 spaces per level. Allocate, Let and Annotate print as
// one line and their body follows at the same indentation ("applies to the rest of the
// block"), except an Annotate with key "ws" (`with T.ws(0, 1):`) and an Annotate that
// more statements of its printed block follow (`with T.annotate(...):`): those print as
// `with` blocks with their body indented, so the statements after them read back as
// siblings. Directly nested T.Parallel loops print as one `for i, j in T.Parallel(M, N):`.
#include <algorithm>

#include "printer_internal.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"

namespace tilec::ir {

namespace printer_detail {
namespace {

// Every Var referenced in a statement, including the values of attributes and annotations;
// `ordered` lists them in pre-order, left to right (the order a reader meets them).
class VarCollector : public IRVisitor {
 public:
  std::unordered_set<const VarNode*> vars;
  std::vector<const VarNode*> ordered;
  void attr(const AttrValue& v) {
    if (auto* e = std::get_if<Expr>(&v)) visit(*e);
    if (auto* l = std::get_if<Layout>(&v)) layout(*l);
    if (auto* m = std::get_if<LayoutMap>(&v))
      for (const auto& kv : *m) layout(kv.second);
  }
  void layout(const Layout& l) {
    if (!l) return;
    for (const auto& e : l->input_shape) visit(e);
    for (const auto& e : l->forward_index) visit(e);
    visit(l->forward_thread);
    visit(l->replicate);
  }

 protected:
  void visit_Var(const VarNode* op) override {
    if (vars.insert(op).second) ordered.push_back(op);
  }
  void visit_For(const ForNode* op) override {
    for (const auto& kv : op->annotations) attr(kv.second);
    IRVisitor::visit_For(op);
  }
  void visit_TileOp(const TileOpNode* op) override {
    for (const auto& kv : op->attrs) attr(kv.second);
    IRVisitor::visit_TileOp(op);
  }
  void visit_Annotate(const AnnotateNode* op) override {
    attr(op->value);
    IRVisitor::visit_Annotate(op);
  }
};

bool uses_any(const Expr& e, const std::vector<const VarNode*>& vars) {
  VarCollector c;
  c.visit(e);
  return std::any_of(vars.begin(), vars.end(), [&](const VarNode* v) { return c.vars.count(v) > 0; });
}

// An attribute equal to the schema default is left out (docs/TSCRIPT.md).
bool equals_default(const AttrValue& v, const AttrValue& def) {
  if (std::holds_alternative<std::monostate>(def) || v.index() != def.index()) return false;
  if (auto* b = std::get_if<bool>(&v)) return *b == std::get<bool>(def);
  if (auto* i = std::get_if<int64_t>(&v)) return *i == std::get<int64_t>(def);
  if (auto* d = std::get_if<double>(&v)) return *d == std::get<double>(def);
  if (auto* s = std::get_if<std::string>(&v)) return *s == std::get<std::string>(def);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l == std::get<std::vector<int64_t>>(def);
  return false;
}

bool is_whole_buffer(const BufferRegion& r) {
  const Buffer& b = r.buffer;
  if (static_cast<int>(r.region.size()) != b->ndim()) return false;
  for (size_t d = 0; d < r.region.size(); ++d) {
    const Range& rg = r.region[d];
    if (!is_zero(rg.min) || rg.min->dtype != b->shape[d]->dtype) return false;
    if (!rg.extent.same_as(b->shape[d])) {
      const int64_t* x = as_const_int(rg.extent);
      const int64_t* y = as_const_int(b->shape[d]);
      if (!x || !y || *x != *y || rg.extent->dtype != b->shape[d]->dtype) return false;
    }
  }
  return true;
}

std::string int_tuple(const std::vector<int64_t>& xs) {
  if (xs.size() == 1) return std::to_string(xs[0]);
  std::string s = "(";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + ")";
}

std::string int_list(const std::vector<int>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

}  // namespace

void ScriptPrinter::line(int indent, const std::string& text, const SourceLoc& loc) {
  out_ << std::string(static_cast<size_t>(indent) * 4, ' ') << text;
  if (opts_.show_loc && loc.known()) out_ << "  # " << loc.str();
  out_ << "\n";
}

std::string ScriptPrinter::print_func(const PrimFunc& f) {
  // Symbolic variables: free Vars of the tensor parameters' shapes and strides, in order.
  std::unordered_set<const VarNode*> scalar_params;
  for (const auto& p : f->params)
    if (!p.is_buffer()) scalar_params.insert(p.var.get());
  VarCollector in_signature;
  for (const auto& p : f->params) {
    if (!p.is_buffer()) continue;
    for (const auto& e : p.buffer->shape) in_signature.visit(e);
    for (const auto& e : p.buffer->strides) in_signature.visit(e);
  }
  std::vector<const VarNode*> symbolic;
  for (const VarNode* v : in_signature.ordered)
    if (!scalar_params.count(v)) symbolic.push_back(v);
  for (const VarNode* v : symbolic) {
    std::string name = define(v, v->name);
    std::string dtype = v->dtype == DataType::Int(32) ? "" : ", " + quote(v->dtype.str());
    out_ << name << " = T.dynamic(" << quote(name) << dtype << ")\n";
  }
  if (!symbolic.empty()) out_ << "\n";

  std::vector<std::string> names;
  for (const auto& p : f->params)
    names.push_back(p.is_buffer() ? define(p.buffer.get(), p.buffer->name) : define(p.var.get(), p.var->name));
  std::string header = "def " + identifier(f->name) + "(";
  std::string params;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Param& p = f->params[i];
    if (i) params += ",\n" + std::string(header.size(), ' ');
    params += names[i] + ": ";
    if (!p.is_buffer()) {
      params += "T." + p.var->dtype.str();
    } else if (p.buffer->strides.empty()) {
      params += "T.Tensor(" + shape_tuple(p.buffer->shape) + ", " + quote(p.buffer->dtype.str()) + ")";
    } else {
      params += "T.StridedTensor(" + shape_tuple(p.buffer->shape) + ", " + shape_tuple(p.buffer->strides) + ", " +
                quote(p.buffer->dtype.str()) + ")";
    }
  }
  out_ << "@T.prim_func\n";
  line(0, header + params + "):", f->loc);
  if (!f->attrs.empty()) {
    std::string s = "T.func_attr({";
    for (size_t i = 0; i < f->attrs.size(); ++i)
      s += (i ? ", " : "") + quote(f->attrs[i].first) + ": " + attr_value(f->attrs[i].second);
    line(1, s + "})");
  }
  stmt(f->body, 1);
  return out_.str();
}

std::string ScriptPrinter::print_stmt(const Stmt& s) {
  stmt(s, 0);
  return out_.str();
}

void ScriptPrinter::stmt(const Stmt& s, int indent) {
  if (!s) {
    line(indent, "pass");
    return;
  }
  switch (s->kind) {
#define TILEC_STMT(Kind, NodeClass)                                  \
  case NodeKind::k##Kind:                                            \
    print_##Kind(static_cast<const NodeClass*>(s.get()), indent); \
    return;
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "expression kind " << node_kind_name(s->kind) << " in statement position";
  }
}

void ScriptPrinter::nested(const Stmt& s, int indent) {
  bool outer = followed_;
  followed_ = false;
  stmt(s, indent);
  followed_ = outer;
}

void ScriptPrinter::print_Seq(const SeqNode* op, int indent) {
  if (op->stmts.empty()) line(indent, "pass", op->loc);
  bool outer = followed_;
  for (size_t i = 0; i < op->stmts.size(); ++i) {
    followed_ = outer || i + 1 < op->stmts.size();
    stmt(op->stmts[i], indent);
  }
  followed_ = outer;
}

std::string ScriptPrinter::loop_header(const ForNode* op) {
  std::string args;
  bool zero_min = is_zero(op->min);
  if (op->for_kind == ForKind::kParallel) {
    // T.Parallel's positional arguments are extents of a nest, so a start goes by keyword.
    args = expr(op->extent).text;
    if (!zero_min) args += ", min=" + expr(op->min).text;
  } else if (zero_min) {
    args = expr(op->extent).text;
  } else {
    const int64_t* lo = as_const_int(op->min);
    const int64_t* ext = as_const_int(op->extent);
    std::string hi;
    if (lo && ext && op->min->dtype == op->extent->dtype)
      hi = expr(int_imm(*lo + *ext, op->min->dtype)).text;
    else
      hi = operand(op->min, kPrecAdd) + " + " + operand(op->extent, kPrecAdd + 1);
    args = expr(op->min).text + ", " + hi;
  }
  if (op->for_kind == ForKind::kPipelined) {
    args += ", num_stages=" + std::to_string(op->pipeline.num_stages);
    if (!op->pipeline.order.empty()) args += ", order=" + int_list(op->pipeline.order);
    if (!op->pipeline.stage.empty()) args += ", stage=" + int_list(op->pipeline.stage);
  }
  if (op->for_kind == ForKind::kThreadBinding) args += ", thread=" + quote(op->thread_tag);
  if (!op->annotations.empty()) {
    args += ", annotations={";
    for (size_t i = 0; i < op->annotations.size(); ++i)
      args += (i ? ", " : "") + quote(op->annotations[i].first) + ": " + attr_value(op->annotations[i].second);
    args += "}";
  }
  return std::string("T.") + for_kind_name(op->for_kind) + "(" + args + ")";
}

void ScriptPrinter::print_For(const ForNode* op, int indent) {
  auto mergeable = [](const ForNode* f) {
    return f->for_kind == ForKind::kParallel && is_zero(f->min) && f->annotations.empty();
  };
  if (mergeable(op)) {
    // Directly nested Parallel loops print as one nest, unless an inner extent depends on
    // an outer loop variable (it could not be written before the variables exist).
    std::vector<const ForNode*> nest = {op};
    std::vector<const VarNode*> nest_vars = {op->loop_var.get()};
    while (auto* inner = nest.back()->body.as<ForNode>()) {
      if (!mergeable(inner) || uses_any(inner->extent, nest_vars)) break;
      nest.push_back(inner);
      nest_vars.push_back(inner->loop_var.get());
    }
    std::string extents;
    for (size_t i = 0; i < nest.size(); ++i) extents += (i ? ", " : "") + expr(nest[i]->extent).text;
    std::string vars;
    for (size_t i = 0; i < nest.size(); ++i)
      vars += (i ? ", " : "") + define(nest[i]->loop_var.get(), nest[i]->loop_var->name);
    line(indent, "for " + vars + " in T.Parallel(" + extents + "):", op->loc);
    nested(nest.back()->body, indent + 1);
    return;
  }
  std::string header = loop_header(op);
  std::string var = define(op->loop_var.get(), op->loop_var->name);
  line(indent, "for " + var + " in " + header + ":", op->loc);
  nested(op->body, indent + 1);
}

void ScriptPrinter::print_While(const WhileNode* op, int indent) {
  line(indent, "while " + expr(op->cond).text + ":", op->loc);
  nested(op->body, indent + 1);
}

void ScriptPrinter::print_If(const IfNode* op, int indent) {
  line(indent, "if " + expr(op->cond).text + ":", op->loc);
  nested(op->then_case, indent + 1);
  const IfNode* cur = op;
  while (cur->else_case) {
    if (auto* elif = cur->else_case.as<IfNode>()) {
      line(indent, "elif " + expr(elif->cond).text + ":", elif->loc);
      nested(elif->then_case, indent + 1);
      cur = elif;
    } else {
      line(indent, "else:");
      nested(cur->else_case, indent + 1);
      break;
    }
  }
}

void ScriptPrinter::print_Let(const LetNode* op, int indent) {
  std::string value = expr(op->value).text;  // before the name exists: the value cannot use it
  line(indent, define(op->var.get(), op->var->name) + " = " + value, op->loc);
  stmt(op->body, indent);
}

void ScriptPrinter::print_BufferStore(const BufferStoreNode* op, int indent) {
  std::string target = buffer_name(op->buffer.get()) + "[" + (op->indices.empty() ? "()" : exprs(op->indices)) + "]";
  line(indent, target + " = " + expr(op->value).text, op->loc);
}

void ScriptPrinter::print_Evaluate(const EvaluateNode* op, int indent) {
  std::string v = expr(op->value).text;
  line(indent, op->value.as<CallNode>() ? v : "T.evaluate(" + v + ")", op->loc);
}

void ScriptPrinter::print_Allocate(const AllocateNode* op, int indent) {
  const Buffer& b = op->buffer;
  std::string shape = shape_tuple(b->shape);
  std::string dtype = quote(b->dtype.str());
  std::string strides = b->strides.empty() ? "" : ", strides=" + shape_tuple(b->strides);
  std::string call;
  switch (b->scope) {
    case Scope::kSharedDyn: call = "T.alloc_shared(" + shape + ", " + dtype + strides + ")"; break;
    case Scope::kShared: call = "T.alloc_shared(" + shape + ", " + dtype + ", scope=\"shared\"" + strides + ")"; break;
    case Scope::kFragment: call = "T.alloc_fragment(" + shape + ", " + dtype + strides + ")"; break;
    case Scope::kLocal: call = "T.alloc_local(" + shape + ", " + dtype + strides + ")"; break;
    default: break;
  }
  if (b->scope == Scope::kVar && b->ndim() == 1 && is_one(b->shape[0]) && b->strides.empty())
    call = "T.alloc_var(" + dtype + ")";
  if (call.empty())
    call = "T.alloc_buffer(" + shape + ", " + dtype + ", scope=" + quote(scope_name(b->scope)) + strides + ")";
  if (b->viewed) call = "T.reshape(" + buffer_name(b->viewed.get()) + ", " + shape + ")";
  if (b->viewed && b->dtype != b->viewed->dtype)
    call = "T.view(" + buffer_name(b->viewed.get()) + ", " + shape + ", " + dtype + ")";
  if (b->data) call = "T.make_tensor(" + var_name(b->data.get()) + ", " + shape + ", " + dtype + strides + ")";
  line(indent, define(b.get(), b->name) + " = " + call, op->loc);
  stmt(op->body, indent);
}

void ScriptPrinter::print_KernelLaunch(const KernelLaunchNode* op, int indent) {
  std::string head = "with T.Kernel(" + exprs(op->grid) + ", threads=" + int_tuple(op->threads);
  if (!op->cluster.empty()) head += ", cluster_dims=" + int_tuple(op->cluster);
  head += ")";
  std::vector<std::string> block;
  for (const auto& v : op->block_vars) block.push_back(define(v.get(), v->name));
  if (block.size() == 1) {
    head += " as " + block[0];
  } else if (!block.empty()) {
    head += " as (";
    for (size_t i = 0; i < block.size(); ++i) head += (i ? ", " : "") + block[i];
    head += ")";
  }
  line(indent, head + ":", op->loc);
  VarCollector used;
  used.visit(op->body);
  for (size_t i = 0; i < op->thread_vars.size(); ++i) {
    const Var& tv = op->thread_vars[i];
    if (!used.vars.count(tv.get())) continue;
    line(indent + 1, define(tv.get(), tv->name) + " = T.get_thread_binding(" + std::to_string(i) + ")");
  }
  nested(op->body, indent + 1);
}

std::string ScriptPrinter::slice(const Range& r) {
  const int64_t* lo = as_const_int(r.min);
  const int64_t* ext = as_const_int(r.extent);
  if (lo && ext && r.min->dtype == r.extent->dtype)
    return expr(r.min).text + ":" + expr(int_imm(*lo + *ext, r.min->dtype)).text;
  if (is_zero(r.min)) return expr(r.min).text + ":" + expr(r.extent).text;
  return expr(r.min).text + ":" + operand(r.min, kPrecAdd) + " + " + operand(r.extent, kPrecAdd + 1);
}

std::string ScriptPrinter::region(const BufferRegion& r, bool avoid_all_plain) {
  std::string name = buffer_name(r.buffer.get());
  if (is_whole_buffer(r)) return name;
  std::vector<std::string> dims;
  bool all_plain = true;
  for (const auto& rg : r.region) {
    bool plain = is_one(rg.extent);
    all_plain = all_plain && plain;
    dims.push_back(plain ? expr(rg.min).text : slice(rg));
  }
  // In T.copy an all-index region takes its extents from the other side; keep a slice so
  // that this region reads back with its own extents.
  if (avoid_all_plain && all_plain && !dims.empty()) dims.back() = slice(r.region.back());
  std::string s = name + "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + (dims.empty() ? "()]" : "]");
}

void ScriptPrinter::print_TileOp(const TileOpNode* op, int indent) {
  const TileOpSchema* schema = find_tile_op(op->op);
  std::string args;
  for (const auto& a : op->args) {
    if (!args.empty()) args += ", ";
    if (auto* e = std::get_if<Expr>(&a)) args += expr(*e).text;
    else args += region(std::get<BufferRegion>(a), op->op == "copy");
  }
  for (const auto& [key, value] : op->attrs) {
    if (schema) {
      auto spec = std::find_if(schema->attrs.begin(), schema->attrs.end(),
                               [&](const TileOpAttrSpec& s) { return s.name == key; });
      if (spec != schema->attrs.end() && equals_default(value, spec->default_value)) continue;
    }
    if (!args.empty()) args += ", ";
    args += key + "=" + attr_value(value);
  }
  line(indent, "T." + op->op + "(" + args + ")", op->loc);
}

void ScriptPrinter::print_Annotate(const AnnotateNode* op, int indent) {
  auto* groups = std::get_if<std::vector<int64_t>>(&op->value);
  if (op->key == "ws" && groups && !groups->empty()) {
    // T.ws exists only as a `with` block (the warp groups that run the body).
    std::string ids;
    for (size_t i = 0; i < groups->size(); ++i) ids += (i ? ", " : "") + std::to_string((*groups)[i]);
    line(indent, "with T.ws(" + ids + "):", op->loc);
    nested(op->body, indent + 1);
    return;
  }
  std::string text;
  if (op->key == "layout_map" && std::holds_alternative<LayoutMap>(op->value))
    text = "T.annotate_layout(" + attr_value(op->value) + ")";
  else if (op->key == "use_swizzle" && std::holds_alternative<int64_t>(op->value))
    text = "T.use_swizzle(panel_size=" + std::to_string(std::get<int64_t>(op->value)) + ")";
  else
    text = "T.annotate(" + quote(op->key) + ", " + attr_value(op->value) + ")";
  if (followed_) {
    // As a statement it would extend over the siblings that follow; a block ends before them.
    line(indent, "with " + text + ":", op->loc);
    nested(op->body, indent + 1);
    return;
  }
  line(indent, text, op->loc);
  stmt(op->body, indent);
}

}  // namespace printer_detail

std::string script(const PrimFunc& f, const PrintOptions& opts) {
  return printer_detail::ScriptPrinter(opts).print_func(f);
}
std::string script(const Stmt& s, const PrintOptions& opts) {
  return printer_detail::ScriptPrinter(opts).print_stmt(s);
}
std::string script(const Expr& e) { return printer_detail::ScriptPrinter().print_expr(e); }
std::string script(const Layout& l) { return printer_detail::ScriptPrinter().print_layout(l); }

}  // namespace tilec::ir
