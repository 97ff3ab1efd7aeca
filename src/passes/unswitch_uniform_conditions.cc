// Pass unswitch_uniform_conditions: a T.Parallel nest inside a sequential loop whose body
// tests a condition on the nest's variables — a T.if_then_else or an `if` — that holds for
// the whole nest at once on most steps of that loop becomes
//   if (<holds for every point of the nest>) { the nest with the test replaced by its
//   true branch } else { the nest as written }.
//
// Input:  verified tile IR.
// Output: for every T.Parallel nest (each loop the whole body of the one outside it, constant
//         bounds) that sits inside a serial or pipelined loop, the first condition of its body
//         (in a select or an If; the body's Lets inlined into it) that
//           - reads no memory and compares integers, combined with and / or / not, and
//           - is affine in each nest variable with constant coefficients,
//         gets its "everywhere" form U: each comparison evaluated at the corner of the nest
//         where it is hardest to satisfy (a >= b over the nest <=> min(a - b) >= 0). The nest
//         becomes `if U { specialized } else { nest }`; the specialized copy has every select
//         and If on that same condition replaced by its true side. A copy that only stores
//         one constant into a whole fragment, indexed by the nest's own variables in order,
//         becomes T.fill (so fuse_clear_into_gemm sees attention's mask as a clear). When U
//         simplifies to true the nest is just specialized; when it simplifies to false, or
//         no condition has a U, the nest is unchanged. On targets without wgmma (no 240-register
//         consumer warpgroups) only nests whose copy becomes a fill are unswitched.
// When:   config tilec.unswitch_uniform_conditions (default on).
// Why:    attention masks every score of every step (`acc_s = if_then_else(q >= k, 0, -inf)`
//         for causal, `k * N + j < seq_len` for ragged keys), though only the diagonal / last
//         block has a masked element: 64 compares and selects per thread per step on the
//         softmax side of the ping-pong. FlashAttention-3 peels the masked steps by hand.
// Before: fuse_clear_into_gemm (which folds `if U { T.fill(S, 0) } else {...}; T.gemm(.., S)`
//         into the gemm), pipeline_planning and layout_inference (they see both copies).
#include "passes/cuda_back_util.h"
#include "tilec/arith/analyzer.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

using Nest = std::vector<const ForNode*>;

// The smallest (lowest) or largest value of integer `e` over the nest's box; null when e is
// not affine in some nest variable with a constant coefficient.
Expr extreme(Expr e, const Nest& nest, bool lowest) {
  for (const ForNode* l : nest) {
    auto a = back::affine_in(e, l->loop_var.get());
    if (!a) return Expr();
    if (a->coeff == 0) continue;
    const int64_t lo = *as_const_int(l->min), hi = lo + *as_const_int(l->extent) - 1;
    const int64_t at = (a->coeff > 0) == lowest ? lo : hi;
    e = back::add(a->rest, int_imm(a->coeff * at, e->dtype));
  }
  return e;
}

bool uses_nest(const Expr& e, const Nest& nest) {
  for (const ForNode* l : nest)
    if (back::uses_var(e, l->loop_var.get())) return true;
  return false;
}

// What the nest's body binds: its Lets (with their values, inlined into conditions) and
// every other variable it defines (inner loops), which a condition outside must not use.
struct BodyBindings {
  VarMap lets;
  std::unordered_set<const VarNode*> bound;
};

BodyBindings bindings_of(const Stmt& body) {
  BodyBindings b;
  for_each_node(body, [&](const Node* n) {
    if (n->kind == NodeKind::kLet) {
      auto* l = static_cast<const LetNode*>(n);
      b.lets[l->var.get()] = l->value;
      b.bound.insert(l->var.get());
    } else if (n->kind == NodeKind::kFor) {
      b.bound.insert(static_cast<const ForNode*>(n)->loop_var.get());
    }
  });
  return b;
}

// c with the body's Lets inlined (`live = key <= query` -> the comparison itself); null when
// it still uses a variable the body binds.
Expr inline_lets(Expr c, const BodyBindings& b) {
  for (int round = 0; round < 16 && back::uses_any_var(c, b.bound); ++round) c = substitute(c, b.lets);
  return back::uses_any_var(c, b.bound) ? Expr() : c;
}

// `holds`: a condition true iff c holds at every point of the nest; else one true iff c
// fails at every point. Null when none is derived. c has no variable the body binds.
Expr everywhere(const Expr& c, const Nest& nest, bool holds) {
  if (back::reads_memory(c)) return Expr();
  if (!uses_nest(c, nest)) return holds ? c : logical_not(c);
  if (auto* n = c.as<NotNode>()) return everywhere(n->a, nest, !holds);
  auto* b = c.as<BinaryNode>();
  if (!b) return Expr();
  if (b->kind == NodeKind::kAnd || b->kind == NodeKind::kOr) {
    Expr x = everywhere(b->a, nest, holds), y = everywhere(b->b, nest, holds);
    // All of (a and b) <=> all of a and all of b; none of (a or b) likewise. The other two
    // combinations keep only a sufficient condition: either side alone.
    const bool both_needed = (b->kind == NodeKind::kAnd) == holds;
    // (Expr's && and || build expressions: test definedness explicitly.)
    if (both_needed) return x.defined() && y.defined() ? binary(NodeKind::kAnd, x, y) : Expr();
    if (x.defined() && y.defined()) return binary(NodeKind::kOr, x, y);
    return x.defined() ? x : y;
  }
  const bool cmp = b->kind == NodeKind::kLT || b->kind == NodeKind::kLE || b->kind == NodeKind::kGT ||
                   b->kind == NodeKind::kGE;
  if (!cmp || !b->a->dtype.is_integer() || !b->b->dtype.is_integer() || b->a->dtype != b->b->dtype) return Expr();
  // d = a - b; "a < b everywhere" <=> max(d) < 0, "a < b nowhere" <=> min(d) >= 0, ...
  const Expr d = back::sub(b->a, b->b);
  const bool less = b->kind == NodeKind::kLT || b->kind == NodeKind::kLE;
  const bool strict = b->kind == NodeKind::kLT || b->kind == NodeKind::kGT;
  // Holding everywhere looks at the extreme that is hardest to satisfy; failing everywhere
  // at the one easiest to satisfy.
  Expr e = extreme(d, nest, /*lowest=*/less != holds);
  if (!e) return Expr();
  const Expr zero = int_imm(0, d->dtype);
  if (holds) return binary(less ? (strict ? NodeKind::kLT : NodeKind::kLE) : (strict ? NodeKind::kGT : NodeKind::kGE), e, zero);
  return binary(less ? (strict ? NodeKind::kGE : NodeKind::kGT) : (strict ? NodeKind::kLE : NodeKind::kLT), e, zero);
}

// The body with every select / If on `cond` replaced by its true side.
class Specialize : public IRMutator {
 public:
  explicit Specialize(Expr cond) : cond_(std::move(cond)) {}

 protected:
  Expr mutate_Select(const Expr& e, const SelectNode* op) override {
    if (back::same_expr(op->cond, cond_)) return mutate(op->true_value);
    return IRMutator::mutate_Select(e, op);
  }
  Stmt mutate_If(const Stmt& s, const IfNode* op) override {
    if (back::same_expr(op->cond, cond_)) return mutate(op->then_case);
    return IRMutator::mutate_If(s, op);
  }

 private:
  Expr cond_;
};

// The conditions of the selects and Ifs of `body`, in order.
std::vector<Expr> conditions(const Stmt& body) {
  std::vector<Expr> out;
  for_each_node(body, [&](const Node* n) {
    if (n->kind == NodeKind::kSelect) out.push_back(static_cast<const SelectNode*>(n)->cond);
    if (n->kind == NodeKind::kIf) out.push_back(static_cast<const IfNode*>(n)->cond);
  });
  return out;
}

bool is_constant(const Expr& e) {
  if (e.as<IntImmNode>() || e.as<FloatImmNode>()) return true;
  auto* c = e.as<CastNode>();
  return c && is_constant(c->value);
}

// `for v0, v1, ... in T.Parallel(shape): F[v0, v1, ...] = constant` over the whole
// fragment F, as T.fill(F, constant); else null.
Stmt as_fill(const Nest& nest, const Stmt& body) {
  auto* st = back::sole_statement(body).as<BufferStoreNode>();
  if (!st || st->buffer->scope != Scope::kFragment || !is_constant(st->value) ||
      st->indices.size() != nest.size() || st->buffer->shape.size() != nest.size())
    return nullptr;
  for (size_t k = 0; k < nest.size(); ++k) {
    const int64_t* ext = as_const_int(st->buffer->shape[k]);
    if (st->indices[k].get() != nest[k]->loop_var.get() || !is_zero(nest[k]->min) || !ext ||
        *ext != *as_const_int(nest[k]->extent))
      return nullptr;
  }
  return make_tile_op("fill", {BufferRegion::full(st->buffer), st->value}, {}, st->loc);
}

class UnswitchUniformConditions : public IRMutator {
 public:
  explicit UnswitchUniformConditions(bool fills_only) : fills_only_(fills_only) {}

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    if (op->for_kind != ForKind::kParallel) {
      ++sequential_depth_;
      Stmt r = IRMutator::mutate_For(s, op);
      --sequential_depth_;
      return r;
    }
    if (sequential_depth_ == 0) return s;
    Nest nest = {op};
    while (auto* inner = back::sole_statement(nest.back()->body).as<ForNode>()) {
      if (inner->for_kind != ForKind::kParallel) break;
      nest.push_back(inner);
    }
    for (const ForNode* l : nest)
      if (!as_const_int(l->min) || !as_const_int(l->extent)) return s;
    const Stmt& body = nest.back()->body;
    const BodyBindings bindings = bindings_of(body);
    for (const Expr& c : conditions(body)) {
      Expr inlined = inline_lets(c, bindings);
      if (!inlined || !uses_nest(inlined, nest)) continue;
      Expr all = everywhere(inlined, nest, /*holds=*/true);
      if (!all) continue;
      all = arith::simplify(all);
      if (auto* k = as_const_int(all); k && *k == 0) continue;
      Stmt specialized_body = Specialize(c).mutate(body);
      Stmt specialized = as_fill(nest, specialized_body);
      if (!specialized) {
        specialized = specialized_body;
        for (size_t k = nest.size(); k-- > 0;) {
          auto n = std::make_shared<ForNode>(*nest[k]);
          n->body = specialized;
          specialized = Stmt(std::shared_ptr<const ForNode>(std::move(n)));
        }
      }
      if (as_const_int(all)) return specialized;  // holds on every step
      // Two copies of a computing loop can cost registers; without setmaxnreg's 240 (sm_80:
      // the backward's d64 body spilled) only a copy that became a fill is worth it.
      if (!fills_only_ || specialized.as<TileOpNode>()) return if_then_else(all, specialized, s, op->loc);
    }
    return s;
  }

 private:
  bool fills_only_;
  int sequential_depth_ = 0;
};

}  // namespace

Pass unswitch_uniform_conditions_pass() {
  return {"unswitch_uniform_conditions", [](const PrimFunc& f, PassContext& ctx) {
            if (!ctx.get_bool("tilec.unswitch_uniform_conditions")) return f;
            return with_body(f, UnswitchUniformConditions(!ctx.target().has_wgmma()).mutate(f->body));
          }};
}

}  // namespace tilec::passes
