// Pass narrow_guarded_parallel_loops: a T.Parallel nest whose body is `if v < c:` on one of
// its own variables runs v over [min, c) instead.
//
// Input:  verified tile IR.
// Output: for every nest of T.Parallel loops (each loop the whole body of the one outside it)
//         whose innermost body is an If without else, each conjunct of the condition of the
//         form `v < c`, `v <= c`, `c > v` or `c >= v` — v a variable of the nest starting at 0,
//         c a constant that leaves n, 0 < n < v's extent, iterations, and the body indexes a
//         fragment at `v + x * n` (x free of the nest's variables: a block of the fragment
//         chosen outside the loop) — is removed and v's extent becomes n; an If left with no
//         conjunct is replaced by its body. Everything else is unchanged (a loop that indexes
//         fragments with v alone keeps the fragment's shape, so its layout follows the fragment).
// Why:    TileLang programs write the half of a tile they store as
//           for s in range(2):
//             for i, j in T.Parallel(BS, D):
//               if i < BS // 2: half[i, j] = acc[i + s * (BS // 2), j]
//         (the DeepSeek sparse MLA backward passes). Layout inference follows a fragment read
//         at `i + s * E` when E is i's extent, which the guard makes it once the loop is
//         narrowed; the iterations it drops did nothing.
// Before: pipeline_planning and layout_inference (they see the narrowed loops).
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

// The number of iterations of `loop` (constant min and extent) that `term` keeps when it is
// a constant bound on the loop variable, else 0.
int64_t kept_iterations(const Expr& term, const ForNode& loop) {
  auto* b = term.as<BinaryNode>();
  const int64_t* lo = as_const_int(loop.min);
  const int64_t* n = as_const_int(loop.extent);
  if (!b || !lo || !n) return 0;
  const VarNode* v = loop.loop_var.get();
  auto is_var = [&](const Expr& e) { return e.get() == v; };
  int64_t end = 0;  // v < end keeps [lo, end)
  if (b->kind == NodeKind::kLT && is_var(b->a) && as_const_int(b->b)) end = *as_const_int(b->b);
  else if (b->kind == NodeKind::kLE && is_var(b->a) && as_const_int(b->b)) end = *as_const_int(b->b) + 1;
  else if (b->kind == NodeKind::kGT && is_var(b->b) && as_const_int(b->a)) end = *as_const_int(b->a);
  else if (b->kind == NodeKind::kGE && is_var(b->b) && as_const_int(b->a)) end = *as_const_int(b->a) + 1;
  else return 0;
  const int64_t kept = end - *lo;
  return kept > 0 && kept < *n ? kept : 0;
}

bool uses_nest_var(const Expr& e, const std::vector<const ForNode*>& nest) {
  bool found = false;
  for_each_node(evaluate(e), [&](const Node* n) {
    for (auto* l : nest) found |= n == l->loop_var.get();
  });
  return found;
}

// `x * n` (or a constant multiple of n) with x free of the nest's variables.
bool is_block_offset(const Expr& e, int64_t n, const std::vector<const ForNode*>& nest) {
  if (auto* c = as_const_int(e)) return *c != 0 && *c % n == 0;
  auto* m = e.as<BinaryNode>();
  if (!m || m->kind != NodeKind::kMul || uses_nest_var(e, nest)) return false;
  auto* k = as_const_int(m->b) ? as_const_int(m->b) : as_const_int(m->a);
  return k && *k % n == 0;
}

// Whether `body` indexes a fragment at `v + x * n` (either order) with x free of the nest.
bool reads_fragment_block(const Stmt& body, const VarNode* v, int64_t n, const std::vector<const ForNode*>& nest) {
  bool found = false;
  auto check = [&](const Buffer& b, const std::vector<Expr>& indices) {
    if (b->scope != Scope::kFragment) return;
    for (const Expr& i : indices) {
      auto* add = i.as<BinaryNode>();
      if (!add || add->kind != NodeKind::kAdd) continue;
      if ((add->a.get() == v && is_block_offset(add->b, n, nest)) || (add->b.get() == v && is_block_offset(add->a, n, nest)))
        found = true;
    }
  };
  for_each_node(body, [&](const Node* node) {
    if (node->kind == NodeKind::kBufferLoad) {
      auto* l = static_cast<const BufferLoadNode*>(node);
      check(l->buffer, l->indices);
    } else if (node->kind == NodeKind::kBufferStore) {
      auto* st = static_cast<const BufferStoreNode*>(node);
      check(st->buffer, st->indices);
    }
  });
  return found;
}

class NarrowGuardedParallelLoops : public IRMutator {
 protected:
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    if (op->for_kind != ForKind::kParallel) return IRMutator::mutate_For(s, op);
    // The nest, outermost first.
    std::vector<const ForNode*> nest = {op};
    while (auto* inner = back::sole_statement(nest.back()->body).as<ForNode>()) {
      if (inner->for_kind != ForKind::kParallel) break;
      nest.push_back(inner);
    }
    auto* guard = back::sole_statement(nest.back()->body).as<IfNode>();
    if (!guard || guard->else_case) return IRMutator::mutate_For(s, op);
    std::vector<Expr> extents;
    for (auto* l : nest) extents.push_back(l->extent);
    Expr rest;
    bool narrowed = false;
    for (const Expr& term : back::split_conjuncts(guard->cond)) {
      bool used = false;
      for (size_t k = 0; k < nest.size() && !used; ++k) {
        int64_t kept = kept_iterations(term, *nest[k]);
        if (kept == 0 || !is_zero(nest[k]->min) ||
            !reads_fragment_block(guard->then_case, nest[k]->loop_var.get(), kept, nest))
          continue;
        // Two bounds on one variable: the tighter one wins.
        const int64_t current = *as_const_int(extents[k]);
        extents[k] = int_imm(std::min(current, kept), extents[k]->dtype);
        used = narrowed = true;
      }
      if (!used) rest = back::conj(rest, term);
    }
    if (!narrowed) return IRMutator::mutate_For(s, op);
    Stmt body = mutate(guard->then_case);
    if (rest) body = if_then_else(rest, body, nullptr, guard->loc);
    for (size_t k = nest.size(); k-- > 0;) {
      auto n = std::make_shared<ForNode>(*nest[k]);
      n->extent = extents[k];
      n->body = body;
      body = Stmt(std::shared_ptr<const ForNode>(std::move(n)));
    }
    return body;
  }
};

}  // namespace

Pass narrow_guarded_parallel_loops_pass() {
  return {"narrow_guarded_parallel_loops",
          [](const PrimFunc& f, PassContext&) { return with_body(f, NarrowGuardedParallelLoops().mutate(f->body)); }};
}

}  // namespace tilec::passes
