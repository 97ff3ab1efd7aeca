// Pass safe_pingpong_turns: no block or named barrier inside a ping-pong turn.
//
// Two consumer warpgroups taking turns (warp_specialize, tilec.pingpong) run
//   tl.pingpong_wait(a); <gemm issues, mbarrier waits>; tl.pingpong_pass(b)
// and the other warpgroup waits at its own tl.pingpong_wait until this one passes. A barrier
// of both warpgroups between the wait and the pass would deadlock them: one holds the turn
// and waits at the barrier, the other waits for the turn. insert_syncs places a barrier right
// before the first access it orders, which can be a gemm inside a turn (e.g. Q written by the
// threads before the loop, first read by the first step's gemm).
//
// Input:  lowered IR after insert_syncs and fence_proxy_async.
// Output: in each statement list, a barrier found inside a turn whose statements before it
//         (after the turn's wait) access no memory — fences, mbarrier waits — moves before
//         the turn's wait together with the fences right before it (equivalent: nothing it
//         orders lies between); also when it leads a statement, inside its annotations. When some turn cannot be fixed that way (a barrier after a
//         memory access, a barrier nested in another statement, a wait without its pass in
//         the same list), every tl.pingpong_wait / tl.pingpong_pass of the function is
//         removed: the warpgroups no longer take turns, which only costs speed.
// Runs after: fence_proxy_async. Before: split_host_device.
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

bool is_call(const Stmt& s, const char* op) {
  const CallNode* c = back::evaluated_call(s);
  return c && c->op == op;
}

bool has_turns(const Stmt& body) {
  bool found = false;
  for_each_node(body, [&](const Node* n) {
    auto* c = dynamic_cast<const CallNode*>(n);
    found |= c && c->op == "tl.pingpong_wait";
  });
  return found;
}

using back::contains_barrier;

// Statements a barrier may move back over: they touch no memory the barrier orders.
bool movable_over(const Stmt& s) {
  const CallNode* c = back::evaluated_call(s);
  if (!c) return false;
  return c->op == "tl.fence_proxy_async" || c->op == "barrier_wait" || c->op == "mbarrier_wait_parity";
}

// A statement that begins with fences and a barrier, possibly inside annotations (a gemm's
// layout hints wrap the barrier insert_syncs put before it): those leading statements, and
// the statement without them.
std::optional<std::pair<std::vector<Stmt>, Stmt>> leading_barrier(const Stmt& s) {
  if (auto* a = s.as<AnnotateNode>()) {
    auto inner = leading_barrier(a->body);
    if (!inner) return std::nullopt;
    return std::make_pair(inner->first, annotate(a->key, a->value, inner->second, s->loc));
  }
  auto* q = s.as<SeqNode>();
  if (!q) return std::nullopt;
  size_t i = 0;
  while (i < q->stmts.size() && is_call(q->stmts[i], "tl.fence_proxy_async")) ++i;
  if (i == q->stmts.size() || !back::is_barrier_stmt(q->stmts[i])) return std::nullopt;
  std::vector<Stmt> lead(q->stmts.begin(), q->stmts.begin() + static_cast<std::ptrdiff_t>(i + 1));
  std::vector<Stmt> rest(q->stmts.begin() + static_cast<std::ptrdiff_t>(i + 1), q->stmts.end());
  if (contains_barrier(seq(rest, s->loc))) return std::nullopt;
  return std::make_pair(lead, seq(rest, s->loc));
}

class TurnFixer : public IRMutator {
 public:
  bool unsafe = false;

 protected:
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    std::vector<Stmt> out;
    bool changed = false;
    constexpr size_t kNone = static_cast<size_t>(-1);
    size_t open = kNone;  // index in `out` of the open turn's wait
    for (const auto& x0 : op->stmts) {
      Stmt x = mutate(x0);
      changed |= !x.same_as(x0);
      if (is_call(x, "tl.pingpong_wait")) {
        if (open != kNone) unsafe = true;
        open = out.size();
      } else if (is_call(x, "tl.pingpong_pass")) {
        open = kNone;
      } else if (open != kNone && back::is_barrier_stmt(x)) {
        bool ok = true;
        for (size_t i = open + 1; i < out.size(); ++i) ok &= movable_over(out[i]);
        if (!ok) {
          unsafe = true;
        } else {
          // The fences right before the barrier go with it.
          size_t first_fence = out.size();
          while (first_fence > open + 1 && is_call(out[first_fence - 1], "tl.fence_proxy_async")) --first_fence;
          std::vector<Stmt> moved(out.begin() + static_cast<std::ptrdiff_t>(first_fence), out.end());
          out.erase(out.begin() + static_cast<std::ptrdiff_t>(first_fence), out.end());
          moved.push_back(x);
          out.insert(out.begin() + static_cast<std::ptrdiff_t>(open), moved.begin(), moved.end());
          open += moved.size();
          changed = true;
          continue;
        }
      } else if (open != kNone && contains_barrier(x)) {
        bool ok = true;
        for (size_t i = open + 1; i < out.size(); ++i) ok &= movable_over(out[i]);
        auto peeled = ok ? leading_barrier(x) : std::nullopt;
        if (!peeled) {
          unsafe = true;
        } else {
          out.insert(out.begin() + static_cast<std::ptrdiff_t>(open), peeled->first.begin(), peeled->first.end());
          open += peeled->first.size();
          x = peeled->second;
          changed = true;
        }
      }
      out.push_back(x);
    }
    if (open != kNone) unsafe = true;
    return changed ? seq(out, s->loc) : s;
  }
};

// The function without its turns.
class TurnRemover : public IRMutator {
 protected:
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    std::vector<Stmt> out;
    for (const auto& x : op->stmts)
      if (!is_call(x, "tl.pingpong_wait") && !is_call(x, "tl.pingpong_pass")) out.push_back(mutate(x));
    return seq(out, s->loc);
  }
  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode* op) override {
    // A lone turn call (a branch's whole body) becomes a no-op.
    if (is_call(s, "tl.pingpong_wait") || is_call(s, "tl.pingpong_pass")) return seq({}, s->loc);
    return IRMutator::mutate_Evaluate(s, op);
  }
};

}  // namespace

Pass safe_pingpong_turns_pass() {
  return {"safe_pingpong_turns", [](const PrimFunc& f, PassContext&) {
            if (!has_turns(f->body)) return f;
            TurnFixer fixer;
            Stmt body = fixer.mutate(f->body);
            if (fixer.unsafe) body = TurnRemover().mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
