// Pass split_parallel_at_grid_syncs: a T.sync_grid() among the statements of a T.Parallel body
// splits the loop there (TileLang's own test of the grid barrier writes it inside the loop).
//
// Input:  a verified PrimFunc (front-end tile IR). Both targets run it, before
//         check_grid_syncs: the CUDA pipeline after simplify, the CPU target before it interprets.
// Output: every T.Parallel nest (directly nested parallel loops) whose innermost body is a
//         statement list with tl.sync_grid() calls at its top level becomes
//           nest(part 0); sync_grid(); nest(part 1); sync_grid(); ...
//         with fresh loop variables per copy of the nest (each variable is bound once in a
//         function) and the loops' annotations kept. This is what the barrier means there:
//         every iteration's statements before it, in every thread of every block, happen
//         before any iteration's statements after it. Values that cross the barrier must be in
//         buffers (a fragment indexed by the loop variables keeps its thread mapping in both
//         loops); a nest whose body starts with Lets is split only when their values read no
//         memory (they are recomputed in each part), and anything else (a barrier under an if
//         or a serial loop inside the body) is left as written for check_grid_syncs to refuse.
// Runs after: verify, simplify. Before: check_grid_syncs.
#include <algorithm>

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

using namespace ir;

namespace {

bool is_grid_sync(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  auto* c = e ? e->value.as<CallNode>() : nullptr;
  return c && c->op == "tl.sync_grid";
}

// Whether evaluating `e` reads memory or calls something impure (its value could then differ
// on the other side of the barrier).
class ReadsMemory : public IRVisitor {
 public:
  bool found = false;

 protected:
  void visit_BufferLoad(const BufferLoadNode* op) override { found = true; }
  void visit_Call(const CallNode* op) override {
    found |= !back::is_pure_intrinsic(op->op);
    IRVisitor::visit_Call(op);
  }
};

bool reads_memory(const Expr& e) {
  ReadsMemory r;
  r.visit(e);
  return r.found;
}

class ParallelSplitter : public IRMutator {
 protected:
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    if (op->for_kind != ForKind::kParallel) return IRMutator::mutate_For(s, op);
    // The nest and its innermost body, under pure Lets.
    std::vector<const ForNode*> nest{op};
    Stmt body = op->body;
    while (auto* inner = body.as<ForNode>()) {
      if (inner->for_kind != ForKind::kParallel) break;
      nest.push_back(inner);
      body = inner->body;
    }
    std::vector<const LetNode*> lets;
    while (auto* l = body.as<LetNode>()) {
      if (reads_memory(l->value)) return IRMutator::mutate_For(s, op);
      lets.push_back(l);
      body = l->body;
    }
    auto* list = body.as<SeqNode>();
    if (!list || std::none_of(list->stmts.begin(), list->stmts.end(), is_grid_sync)) {
      return IRMutator::mutate_For(s, op);
    }
    std::vector<std::vector<Stmt>> parts(1);
    std::vector<Stmt> syncs;
    for (const Stmt& x : list->stmts) {
      if (is_grid_sync(x)) {
        syncs.push_back(x);
        parts.emplace_back();
      } else {
        parts.back().push_back(mutate(x));
      }
    }
    std::vector<Stmt> out;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (!parts[k].empty()) out.push_back(rebuild(nest, lets, seq(std::move(parts[k]), list->loc)));
      if (k < syncs.size()) out.push_back(syncs[k]);
    }
    return seq(std::move(out), op->loc);
  }

 private:
  // The nest around `inner` with fresh loop (and Let) variables.
  static Stmt rebuild(const std::vector<const ForNode*>& nest, const std::vector<const LetNode*>& lets, Stmt inner) {
    VarMap fresh;
    std::vector<Var> loop_vars, let_vars;
    for (const ForNode* f : nest) {
      loop_vars.push_back(make_var(f->loop_var->name, f->loop_var->dtype, f->loop_var->loc));
      fresh[f->loop_var.get()] = loop_vars.back();
    }
    for (const LetNode* l : lets) {
      let_vars.push_back(make_var(l->var->name, l->var->dtype, l->var->loc));
      fresh[l->var.get()] = let_vars.back();
    }
    Stmt body = substitute(inner, fresh);
    for (size_t i = lets.size(); i-- > 0;) {
      body = let(let_vars[i], substitute(lets[i]->value, fresh), body, lets[i]->loc);
    }
    for (size_t i = nest.size(); i-- > 0;) {
      const ForNode* f = nest[i];
      body = make_for(loop_vars[i], substitute(f->min, fresh), substitute(f->extent, fresh), f->for_kind, body, f->loc,
                      f->pipeline, f->thread_tag, f->annotations);
    }
    return body;
  }
};

}  // namespace

PrimFunc split_parallel_at_grid_syncs(const PrimFunc& f) {
  if (!contains_grid_sync(f->body)) return f;
  Stmt body = ParallelSplitter().mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

Pass split_parallel_at_grid_syncs_pass() {
  return {"split_parallel_at_grid_syncs",
          [](const PrimFunc& f, PassContext&) { return split_parallel_at_grid_syncs(f); }};
}

}  // namespace tilec::passes
