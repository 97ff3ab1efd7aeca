#include "tilec/ir/mutator.h"

namespace tilec::ir {

namespace {
template <typename N>
std::shared_ptr<N> clone(const N* op) {
  return std::make_shared<N>(*op);
}
template <typename N>
Expr as_expr(std::shared_ptr<N> n) {
  return Expr(std::shared_ptr<const N>(std::move(n)));
}
template <typename N>
Stmt as_stmt(std::shared_ptr<N> n) {
  return Stmt(std::shared_ptr<const N>(std::move(n)));
}
}  // namespace

Expr IRMutator::mutate(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
#define TILEC_EXPR(Kind, NodeClass) \
  case NodeKind::k##Kind:           \
    return mutate_##Kind(e, static_cast<const NodeClass*>(e.get()));
#define TILEC_BINARY(Kind, Symbol, Category) \
  case NodeKind::k##Kind:                    \
    return mutate_binary(e, static_cast<const BinaryNode*>(e.get()));
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "statement kind in expression position";
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
#define TILEC_STMT(Kind, NodeClass) \
  case NodeKind::k##Kind:           \
    return mutate_##Kind(s, static_cast<const NodeClass*>(s.get()));
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "expression kind in statement position";
  }
}

std::vector<Expr> IRMutator::mutate_all(const std::vector<Expr>& xs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(xs.size());
  for (const auto& x : xs) {
    out.push_back(mutate(x));
    if (!out.back().same_as(x)) *changed = true;
  }
  return out;
}

AttrValue IRMutator::mutate_attr(const AttrValue& v, bool* changed) {
  if (auto* e = std::get_if<Expr>(&v)) {
    Expr n = mutate(*e);
    if (!n.same_as(*e)) *changed = true;
    return n;
  }
  if (auto* b = std::get_if<Buffer>(&v)) {
    Buffer n = mutate_buffer(*b);
    if (!n.same_as(*b)) *changed = true;
    return n;
  }
  return v;
}

BufferRegion IRMutator::mutate_region(const BufferRegion& r) {
  BufferRegion out = r;
  out.buffer = mutate_buffer(r.buffer);
  for (auto& rg : out.region) {
    rg.min = mutate(rg.min);
    rg.extent = mutate(rg.extent);
  }
  return out;
}

Expr IRMutator::mutate_IntImm(const Expr& e, const IntImmNode*) { return e; }
Expr IRMutator::mutate_FloatImm(const Expr& e, const FloatImmNode*) { return e; }
Expr IRMutator::mutate_StringImm(const Expr& e, const StringImmNode*) { return e; }
Expr IRMutator::mutate_Var(const Expr& e, const VarNode*) { return e; }

Expr IRMutator::mutate_binary(const Expr& e, const BinaryNode* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return e;
  auto n = clone(op);
  n->a = std::move(a);
  n->b = std::move(b);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_Not(const Expr& e, const NotNode* op) {
  Expr a = mutate(op->a);
  if (a.same_as(op->a)) return e;
  auto n = clone(op);
  n->a = std::move(a);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_Select(const Expr& e, const SelectNode* op) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
  auto n = clone(op);
  n->cond = std::move(c);
  n->true_value = std::move(t);
  n->false_value = std::move(f);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_Cast(const Expr& e, const CastNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return e;
  auto n = clone(op);
  n->value = std::move(v);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_Ramp(const Expr& e, const RampNode* op) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return e;
  auto n = clone(op);
  n->base = std::move(b);
  n->stride = std::move(s);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_Broadcast(const Expr& e, const BroadcastNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return e;
  auto n = clone(op);
  n->value = std::move(v);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) {
  bool changed = false;
  auto idx = mutate_all(op->indices, &changed);
  Buffer b = mutate_buffer(op->buffer);
  if (!changed && b.same_as(op->buffer)) return e;
  auto n = clone(op);
  n->indices = std::move(idx);
  n->buffer = std::move(b);
  return as_expr(std::move(n));
}
Expr IRMutator::mutate_Call(const Expr& e, const CallNode* op) {
  bool changed = false;
  auto args = mutate_all(op->args, &changed);
  if (!changed) return e;
  auto n = clone(op);
  n->args = std::move(args);
  return as_expr(std::move(n));
}

Stmt IRMutator::mutate_Seq(const Stmt& s, const SeqNode* op) {
  bool changed = false;
  std::vector<Stmt> out;
  out.reserve(op->stmts.size());
  for (const auto& x : op->stmts) {
    out.push_back(mutate(x));
    if (!out.back().same_as(x)) changed = true;
  }
  if (!changed) return s;
  return seq(std::move(out), op->loc);
}
Stmt IRMutator::mutate_For(const Stmt& s, const ForNode* op) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return s;
  auto n = clone(op);
  n->min = std::move(mn);
  n->extent = std::move(ext);
  n->body = std::move(body);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_While(const Stmt& s, const WhileNode* op) {
  Expr c = mutate(op->cond);
  Stmt b = mutate(op->body);
  if (c.same_as(op->cond) && b.same_as(op->body)) return s;
  auto n = clone(op);
  n->cond = std::move(c);
  n->body = std::move(b);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_If(const Stmt& s, const IfNode* op) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
  auto n = clone(op);
  n->cond = std::move(c);
  n->then_case = std::move(t);
  n->else_case = std::move(e);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_Let(const Stmt& s, const LetNode* op) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return s;
  auto n = clone(op);
  n->value = std::move(v);
  n->body = std::move(b);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) {
  bool changed = false;
  auto idx = mutate_all(op->indices, &changed);
  Expr v = mutate(op->value);
  Buffer b = mutate_buffer(op->buffer);
  if (!changed && v.same_as(op->value) && b.same_as(op->buffer)) return s;
  auto n = clone(op);
  n->indices = std::move(idx);
  n->value = std::move(v);
  n->buffer = std::move(b);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_Evaluate(const Stmt& s, const EvaluateNode* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return s;
  auto n = clone(op);
  n->value = std::move(v);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_Allocate(const Stmt& s, const AllocateNode* op) {
  Buffer b = mutate_buffer(op->buffer);
  Stmt body = mutate(op->body);
  if (b.same_as(op->buffer) && body.same_as(op->body)) return s;
  auto n = clone(op);
  n->buffer = std::move(b);
  n->body = std::move(body);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) {
  bool changed = false;
  auto grid = mutate_all(op->grid, &changed);
  Stmt body = mutate(op->body);
  if (!changed && body.same_as(op->body)) return s;
  auto n = clone(op);
  n->grid = std::move(grid);
  n->body = std::move(body);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_TileOp(const Stmt& s, const TileOpNode* op) {
  bool changed = false;
  std::vector<TileArg> args;
  for (const auto& a : op->args) {
    if (auto* e = std::get_if<Expr>(&a)) {
      Expr n = mutate(*e);
      if (!n.same_as(*e)) changed = true;
      args.emplace_back(std::move(n));
    } else {
      const auto& r = std::get<BufferRegion>(a);
      BufferRegion n = mutate_region(r);
      if (!n.buffer.same_as(r.buffer)) changed = true;
      for (size_t i = 0; i < r.region.size(); ++i) {
        if (!n.region[i].min.same_as(r.region[i].min) || !n.region[i].extent.same_as(r.region[i].extent))
          changed = true;
      }
      args.emplace_back(std::move(n));
    }
  }
  AttrMap attrs;
  for (const auto& [k, v] : op->attrs) attrs.emplace_back(k, mutate_attr(v, &changed));
  if (!changed) return s;
  auto n = clone(op);
  n->args = std::move(args);
  n->attrs = std::move(attrs);
  return as_stmt(std::move(n));
}
Stmt IRMutator::mutate_Annotate(const Stmt& s, const AnnotateNode* op) {
  bool changed = false;
  AttrValue v = mutate_attr(op->value, &changed);
  Stmt body = mutate(op->body);
  if (!changed && body.same_as(op->body)) return s;
  auto n = clone(op);
  n->value = std::move(v);
  n->body = std::move(body);
  return as_stmt(std::move(n));
}

namespace {
class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& m) : m_(m) {}

 protected:
  Expr mutate_Var(const Expr& e, const VarNode* op) override {
    auto it = m_.find(op);
    return it == m_.end() ? e : it->second;
  }

 private:
  const VarMap& m_;
};
}  // namespace

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (vmap.empty()) return e;
  return Substituter(vmap).mutate(e);
}
Stmt substitute(const Stmt& s, const VarMap& vmap) {
  if (vmap.empty()) return s;
  return Substituter(vmap).mutate(s);
}

}  // namespace tilec::ir
