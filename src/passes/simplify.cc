// Pass "simplify": simplifies every expression of the function with arith::Analyzer.
//
// Input:  a verified PrimFunc (variables defined before use, each loop variable bound once).
// Output: an equivalent function: same statements, buffers and tile ops; each expression
//         replaced by the analyzer's simplified form, except that an If whose condition
//         simplifies to a constant becomes the branch it takes (when that branch exists: a
//         false If without else stays). Expressions the analyzer cannot
//         improve keep their identity, so an already simple function comes back as the
//         same object (no copy, and the pass manager sees "unchanged").
// Before: verify.
// Algorithm: one IRMutator walk. Descending into a kernel binds block indices to
//   [0, grid) and thread indices to [0, threads); descending into a loop binds its
//   variable to [min, min + extent); a Let binds its variable to its value's bounds.
//   Each root expression (a statement's operand, a region bound, a buffer index or call
//   argument) is simplified once with everything bound so far. The analyzer has no
//   scopes, which is sound here because every variable is defined exactly once.
#include "tilec/arith/analyzer.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/structural.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using ir::Expr;
using ir::Stmt;

class Simplifier : public ir::IRMutator {
 protected:
  // Every expression handler goes through at_root, which simplifies only the outermost
  // expression: simplifying a sum and then its parent again would be wasted work.
#define TILEC_EXPR(Kind, NodeClass)                                   \
  Expr mutate_##Kind(const Expr& e, const ir::NodeClass* op) override { \
    return at_root(e, [&] { return IRMutator::mutate_##Kind(e, op); });  \
  }
#define TILEC_BINARY(Kind, Symbol, Category)
#include "tilec/ir/nodes.def"
  Expr mutate_binary(const Expr& e, const ir::BinaryNode* op) override {
    return at_root(e, [&] { return IRMutator::mutate_binary(e, op); });
  }

  Stmt mutate_For(const Stmt& s, const ir::ForNode* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    const int64_t* const_extent = ir::as_const_int(extent);
    if (const_extent == nullptr || *const_extent > 0) analyzer_.bind_range(op->loop_var, min, extent);
    Stmt body = mutate(op->body);
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return s;
    auto n = std::make_shared<ir::ForNode>(*op);
    n->min = std::move(min);
    n->extent = std::move(extent);
    n->body = std::move(body);
    return Stmt(std::shared_ptr<const ir::ForNode>(std::move(n)));
  }

  // `if True:` (a guard the bounds prove, e.g. `if k * block + i < n` of whole blocks) is its
  // body: later passes then see the statements themselves (a vector atomic, a plain store).
  Stmt mutate_If(const Stmt& s, const ir::IfNode* op) override {
    Stmt out = IRMutator::mutate_If(s, op);
    auto* n = out.as<ir::IfNode>();
    const int64_t* c = n ? ir::as_const_int(n->cond) : nullptr;
    if (c == nullptr) return out;
    if (*c != 0) return n->then_case;
    return n->else_case ? n->else_case : out;
  }

  Stmt mutate_KernelLaunch(const Stmt& s, const ir::KernelLaunchNode* op) override {
    for (size_t i = 0; i < op->block_vars.size() && i < op->grid.size(); ++i)
      analyzer_.bind_range(op->block_vars[i], ir::int_imm(0), op->grid[i]);
    for (size_t i = 0; i < op->thread_vars.size() && i < op->threads.size(); ++i)
      analyzer_.bind_bound(op->thread_vars[i], 0, op->threads[i] - 1);
    return IRMutator::mutate_KernelLaunch(s, op);
  }

  Stmt mutate_Let(const Stmt& s, const ir::LetNode* op) override {
    Expr value = mutate(op->value);
    if (op->var->dtype.is_integer()) {
      arith::ConstIntBound b = analyzer_.const_int_bound(value);
      if (b.min_value != arith::ConstIntBound::kNegInf || b.max_value != arith::ConstIntBound::kPosInf)
        analyzer_.bind_bound(op->var, b.min_value, b.max_value);
    }
    Stmt body = mutate(op->body);
    if (value.same_as(op->value) && body.same_as(op->body)) return s;
    return ir::let(op->var, std::move(value), std::move(body), op->loc);
  }

 private:
  template <typename Descend>
  Expr at_root(const Expr& e, Descend&& descend) {
    const bool is_root = depth_ == 0;
    // Indices of a load and arguments of a call are expressions of their own: simplify
    // them as roots, which the analyzer may not do when it treats the node as opaque.
    const bool children_are_roots = e->kind == ir::NodeKind::kBufferLoad || e->kind == ir::NodeKind::kCall;
    const int saved = depth_;
    depth_ = children_are_roots ? 0 : depth_ + 1;
    Expr out = descend();
    depth_ = saved;
    if (!is_root) return out;
    Expr simplified = analyzer_.simplify(out);
    if (simplified.same_as(e) || ir::structural_equal(simplified, e)) return e;
    return simplified;
  }

  arith::Analyzer analyzer_;
  int depth_ = 0;
};

}  // namespace

Pass simplify_pass() {
  return {"simplify", [](const ir::PrimFunc& f, PassContext&) {
            Simplifier simplifier;
            ir::Stmt body = simplifier.mutate(f->body);
            if (body.same_as(f->body)) return f;
            return ir::with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
