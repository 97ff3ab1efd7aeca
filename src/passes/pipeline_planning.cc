// pipeline_planning: decides the stage and issue order of every statement of each
// T.Pipelined loop.
//
// Input:  verified tile IR; T.Pipelined loops may carry num_stages and optional `order` /
//         `stage` lists (TileLang semantics: entry j is statement j's issue position /
//         stage).
// Output: every For of kind Pipelined that still needs pipelining has a canonical body
//         (pipeline_body.h: wrappers around a flat Seq, Lets inlined) and explicit
//         `stage` and `order` lists with one entry per statement; num_stages becomes the
//         pipeline depth max(stage) + 1. Loops that need none become serial loops with
//         their body in issue order: num_stages 0 without an explicit stage, a depth of 1,
//         or (default planning) no copy global -> shared in the body. The exception:
//         num_stages=1 without a stage list and with such copies stays a Pipelined loop
//         with num_stages 1 and default stages (copies 0, the rest 1): one buffer per
//         tile, which warp_specialize (sm_90a) hands between a producer and the
//         consumers; inject_pipeline runs it serially in issue order otherwise.
// Before: verify. After: inject_pipeline consumes the lists.
//
// Default planning (no `stage` given): the producers are the copies global -> shared;
// they are at stage 0, and so is every statement that writes a buffer a stage-0
// statement reads (what a copy's address depends on must run with it, ahead of the
// rest); everything else is at stage num_stages - 1. Issue order defaults to statement
// order.
//
// A loop written with num_stages >= 2 that has no such producer runs as a serial loop,
// with a warning at the loop that says why (tilec issues only global -> shared copies
// ahead; global -> fragment/local copies are plain loads in program order).
#include <algorithm>
#include <numeric>
#include <string>

#include "passes/pipeline_body.h"
#include "tilec/ir/mutator.h"
#include "tilec/passes/passes.h"
#include "tilec/support/warnings.h"

namespace tilec::passes {

namespace {

using namespace ir;
namespace pl = pipeline;

std::string list_str(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Why a T.Pipelined(num_stages >= 2) loop without a stage list gets no pipeline.
void warn_not_pipelined(const ForNode* op, const pl::Body& body) {
  std::string copies;
  for (const auto& s : body.stmts) {
    auto* t = s.as<TileOpNode>();
    if (!t || (t->op != "copy" && t->op != "async_copy") || t->args.size() < 2) continue;
    auto* src = std::get_if<BufferRegion>(&t->args[0]);
    auto* dst = std::get_if<BufferRegion>(&t->args[1]);
    if (src && dst && src->buffer->scope == Scope::kGlobal && !is_shared(dst->buffer->scope)) {
      copies = " (its copies from global memory go to '" + dst->buffer->name +
               "', which is not in shared memory)";
      break;
    }
  }
  warn(op->loc,
       "T.Pipelined(num_stages=" + std::to_string(op->pipeline.num_stages) +
           ") runs as a plain serial loop: its body has no copy from global to shared memory, the only "
           "statements tilec issues ahead" + copies,
       "stage the loads through T.alloc_shared buffers (T.copy(global, shared)), or use T.serial / num_stages=1 "
       "to say that no pipelining is wanted");
}

std::vector<int> default_stages(const pl::Body& body, int last_stage) {
  const size_t n = body.stmts.size();
  std::vector<int> stage(n, last_stage);
  std::vector<pl::Access> acc;
  for (const auto& s : body.stmts) acc.push_back(pl::accesses(s));
  for (size_t j = 0; j < n; ++j)
    if (pl::is_global_to_shared_copy(body.stmts[j])) stage[j] = 0;
  // Close over "writes what a stage-0 statement reads".
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t w = 0; w < n; ++w) {
      if (stage[w] == 0) continue;
      for (size_t r = 0; r < n && stage[w] != 0; ++r) {
        if (stage[r] != 0 || r == w) continue;
        for (const BufferNode* b : acc[w].writes)
          if (b->scope != Scope::kGlobal && acc[r].reads.count(b)) {
            stage[w] = 0;
            changed = true;
            break;
          }
      }
    }
  }
  return stage;
}

class Planner : public IRMutator {
 protected:
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    Stmt visited = IRMutator::mutate_For(s, op);
    op = visited.as<ForNode>();
    if (op->for_kind != ForKind::kPipelined) return visited;
    const PipelineInfo& info = op->pipeline;
    pl::Body body = pl::split_body(op->body);
    const int n = static_cast<int>(body.stmts.size());

    std::vector<int> order = info.order;
    if (order.empty()) {
      order.resize(n);
      std::iota(order.begin(), order.end(), 0);
    }
    TILEC_USER_CHECK(static_cast<int>(order.size()) == n, op->loc, "give one entry per statement of the loop body")
        << "T.Pipelined: `order` " << list_str(info.order) << " has " << order.size()
        << " entries but the loop body has " << n << " statements";
    {
      std::vector<int> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (int j = 0; j < n; ++j)
        TILEC_USER_CHECK(sorted[j] == j, op->loc, "order[j] is the issue position of statement j")
            << "T.Pipelined: `order` " << list_str(info.order) << " must list each of 0.." << n - 1 << " once";
    }

    std::vector<int> stage = info.stage;
    bool one_buffer = false;
    if (!stage.empty()) {
      TILEC_USER_CHECK(static_cast<int>(stage.size()) == n, op->loc, "give one entry per statement of the loop body")
          << "T.Pipelined: `stage` " << list_str(info.stage) << " has " << stage.size()
          << " entries but the loop body has " << n << " statements";
      for (int st : stage)
        TILEC_USER_CHECK(st >= 0, op->loc, "stages count from 0 (the statements that run furthest ahead)")
            << "T.Pipelined: `stage` " << list_str(info.stage) << " has a negative stage";
    } else {
      const bool has_producer = std::any_of(body.stmts.begin(), body.stmts.end(), pl::is_global_to_shared_copy);
      if (info.num_stages > 1 && !has_producer) warn_not_pipelined(op, body);
      // num_stages=1: one buffer per loaded tile. The copies are planned at stage 0 and the
      // rest at stage 1, so that warp_specialize can hand that buffer between a producer and
      // the consumers; inject_pipeline runs such a loop serially.
      one_buffer = info.num_stages == 1 && has_producer;
      if (!one_buffer && (info.num_stages <= 1 || !has_producer)) return pl::serial_loop(op, body, order);
      stage = default_stages(body, std::max(info.num_stages - 1, 1));
    }
    const int depth = *std::max_element(stage.begin(), stage.end()) + 1;
    if (depth <= 1) return pl::serial_loop(op, body, order);

    auto n_for = std::make_shared<ForNode>(*op);
    n_for->pipeline.num_stages = one_buffer ? 1 : depth;
    n_for->pipeline.order = order;
    n_for->pipeline.stage = stage;
    n_for->body = pl::join_body(body.wrappers, body.stmts);
    return Stmt(std::shared_ptr<const ForNode>(std::move(n_for)));
  }
};

}  // namespace

Pass pipeline_planning_pass() {
  return {"pipeline_planning", [](const PrimFunc& f, PassContext&) {
            Planner p;
            Stmt body = p.mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, body);
          }};
}

}  // namespace tilec::passes
