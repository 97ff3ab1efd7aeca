// Pass fence_proxy_async: orders threads' ordinary shared-memory writes before the
// asynchronous proxy reads them (wgmma operands, TMA stores).
//
// Input:  lowered IR after insert_syncs (and overlap_gemm_mainloop): barriers placed.
// Output: in a kernel where the async proxy reads shared memory (tl.wgmma_gemm_*,
//         tl.tma_store), every block / named barrier that follows shared-memory writes of
//         the threads (stores, cp.async, writes through intrinsics) since the previous
//         barrier gets tl.fence_proxy_async() right before it. The writers fence before the
//         barrier that hands the data over (PTX memory model: a generic-proxy write is seen
//         by a later async-proxy read only through fence.proxy.async; the writer-side
//         placement of CUTLASS and of the issue reports in HOPPER.md section 8).
//         Other kernels are unchanged. TMA stores fence for themselves (copy_tma.cc).
//         Writes that cannot reach the async proxy do not count: a static shared buffer
//         (scope shared, e.g. a reduction's cross-warp scratch) that no wgmma / TMA store names
//         holds no operand (dynamic shared buffers all count: plan_shared_memory lets them share
//         bytes).
//         Hand-offs through mbarriers (programs that synchronize roles themselves): a
//         barrier_arrive / mbarrier_arrive after such writes gets the fence before it, and a
//         wait on an mbarrier that cp.async copies complete (T.cp_async_barrier_noinc: the
//         copies land after the writer's last instruction, so only the reader can fence) gets
//         the fence right after it.
// Runs after: insert_syncs. Before: split_host_device.
// Algorithm: one walk in program order remembering whether a shared write happened since
//   the last barrier; loop bodies are walked twice (the write of one iteration reaches the
//   barrier at the top of the next). Conservative: a write anywhere in a branch counts.
#include <set>
#include <string>

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

bool is_fence(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  auto* c = e ? e->value.as<CallNode>() : nullptr;
  return c && c->op == "tl.fence_proxy_async";
}

// The buffers that async-proxy reads name (tl.address_of arguments of wgmma and TMA stores), by
// node and by name.
struct AsyncOperands {
  bool any = false;  // the kernel has an async-proxy read of shared memory at all
  std::set<const BufferNode*> nodes;
  std::set<std::string> names;
  // Whether a write to `b` may reach an async-proxy read (see the header).
  bool reachable(const BufferNode* b) const {
    if (!is_shared(b->scope)) return false;
    return b->scope != Scope::kShared || nodes.count(b) || names.count(b->name);
  }
};

bool is_async_proxy_read(const CallNode* c) {
  return c->op.rfind("tl.wgmma_gemm_", 0) == 0 || c->op == "tl.tma_store" || c->op == "tl.tma_reduce_add";
}

AsyncOperands async_operands(const Stmt& body) {
  AsyncOperands out;
  for_each_node(body, [&](const Node* n) {
    auto* c = dynamic_cast<const CallNode*>(n);
    if (!c || !is_async_proxy_read(c)) return;
    out.any = true;
    for (const auto& a : c->args) {
      auto* addr = a.as<CallNode>();
      auto* load = addr && addr->op == "tl.address_of" && !addr->args.empty() ? addr->args[0].as<BufferLoadNode>()
                                                                              : nullptr;
      if (!load) continue;
      out.nodes.insert(load->buffer.get());
      out.names.insert(load->buffer->name);
    }
  });
  return out;
}

// Whether a statement (not a barrier) writes shared memory that an async-proxy read may see.
bool writes_shared(const Stmt& s, const AsyncOperands& ops) {
  bool found = false;
  for_each_node(s, [&](const Node* n) {
    if (auto* st = dynamic_cast<const BufferStoreNode*>(n)) found |= ops.reachable(st->buffer.get());
    auto* c = dynamic_cast<const CallNode*>(n);
    if (!c || c->op == "tl.address_of") return;
    const std::string& spec = back::intrinsic_effect(c->op);
    for (size_t i = 0; i < c->args.size(); ++i) {
      auto* addr = c->args[i].as<CallNode>();
      auto* load = addr && addr->op == "tl.address_of" && !addr->args.empty() ? addr->args[0].as<BufferLoadNode>()
                                                                              : nullptr;
      if (!load || !ops.reachable(load->buffer.get())) continue;
      const char e = back::effect_of_arg(spec, i);
      found |= e == 'w' || e == 'm' || e == 'a' || e == '?';
    }
  });
  return found;
}

bool is_call_stmt(const Stmt& s, std::initializer_list<const char*> ops) {
  auto* e = s.as<EvaluateNode>();
  auto* c = e ? e->value.as<CallNode>() : nullptr;
  if (!c) return false;
  for (const char* op : ops)
    if (c->op == op) return true;
  return false;
}

const BufferNode* barrier_of(const Stmt& s) {
  auto* c = s.as<EvaluateNode>()->value.as<CallNode>();
  auto* l = c->args.empty() ? nullptr : c->args[0].as<BufferLoadNode>();
  return l ? l->buffer.get() : nullptr;
}

// The mbarriers that cp.async copies complete (tl.cp_async_mbarrier_arrive_noinc).
std::set<const BufferNode*> cp_async_barriers(const Stmt& body) {
  std::set<const BufferNode*> out;
  for_each_node(body, [&](const Node* n) {
    auto* c = dynamic_cast<const CallNode*>(n);
    if (!c || c->op != "tl.cp_async_mbarrier_arrive_noinc" || c->args.empty()) return;
    if (auto* l = c->args[0].as<BufferLoadNode>()) out.insert(l->buffer.get());
  });
  return out;
}

class Fencer : public IRMutator {
 public:
  Fencer(std::set<const BufferNode*> cp_async_barriers, AsyncOperands ops)
      : cp_async_barriers_(std::move(cp_async_barriers)), ops_(std::move(ops)) {}

 protected:
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const auto& x : op->stmts) {
      if (back::is_barrier_stmt(x)) {
        if (dirty_ && !(!out.empty() && is_fence(out.back()))) {
          out.push_back(back::call_stmt("tl.fence_proxy_async", {}, x->loc));
          changed = true;
        }
        dirty_ = false;
        out.push_back(x);
        continue;
      }
      Stmt y = mutate(x);
      changed |= !y.same_as(x);
      out.push_back(y);
    }
    return changed ? seq(out, s->loc) : s;
  }
  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode* op) override {
    if (back::is_barrier_stmt(s)) {
      // A barrier that is a whole branch or loop body: fence before it too.
      bool need = dirty_;
      dirty_ = false;
      if (need) return seq({back::call_stmt("tl.fence_proxy_async", {}, s->loc), s}, s->loc);
      return s;
    }
    if (is_call_stmt(s, {"barrier_arrive", "mbarrier_arrive"}) && dirty_) {
      dirty_ = false;
      return seq({back::call_stmt("tl.fence_proxy_async", {}, s->loc), s}, s->loc);
    }
    if (is_call_stmt(s, {"barrier_wait", "mbarrier_wait_parity"}) && cp_async_barriers_.count(barrier_of(s)))
      return seq({s, back::call_stmt("tl.fence_proxy_async", {}, s->loc)}, s->loc);
    // A fence already orders this thread's earlier writes (a TMA store fences for itself).
    if (is_fence(s)) {
      dirty_ = false;
      return s;
    }
    dirty_ |= writes_shared(s, ops_);
    return s;
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) override {
    dirty_ |= ops_.reachable(op->buffer.get());
    return s;
  }
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    // Writes late in the body reach the barriers early in the next iteration.
    const bool entry = dirty_;
    (void)IRMutator::mutate_For(s, op);
    dirty_ |= entry;
    return IRMutator::mutate_For(s, op);
  }
  Stmt mutate_While(const Stmt& s, const WhileNode* op) override {
    const bool entry = dirty_;
    (void)IRMutator::mutate_While(s, op);
    dirty_ |= entry;
    return IRMutator::mutate_While(s, op);
  }
  Stmt mutate_If(const Stmt& s, const IfNode* op) override {
    const bool entry = dirty_;
    Stmt then_case = mutate(op->then_case);
    const bool after_then = dirty_;
    dirty_ = entry;
    Stmt else_case = op->else_case ? mutate(op->else_case) : op->else_case;
    dirty_ |= after_then;
    if (then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return s;
    return if_then_else(op->cond, then_case, else_case, s->loc);
  }

 private:
  bool dirty_ = false;
  std::set<const BufferNode*> cp_async_barriers_;
  AsyncOperands ops_;
};

}  // namespace

Pass fence_proxy_async_pass() {
  return {"fence_proxy_async", [](const PrimFunc& f, PassContext&) {
            AsyncOperands ops = async_operands(f->body);
            if (!ops.any) return f;
            Stmt body = Fencer(cp_async_barriers(f->body), std::move(ops)).mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
