// Pass defer_bulk_read_waits: a TMA store / reduce-add in a loop no longer waits for its
// shared-memory source right after it is issued, but at the next barrier, which is where the
// other threads' next writes of that memory get ordered after the wait anyway.
//
// The lowering of a TMA store (ops/copy_tma.cc) issues from one thread
//   if (t == c) { tl.tma_store / tl.tma_reduce_add ...; tl.tma_store_commit(); tl.tma_store_wait_read(0) }
// so that thread, and with wgmma the whole warpgroup it belongs to, stalls until TMA has read
// the tile. Nothing needs the wait before a thread writes the tile again, and insert_syncs put a
// barrier between the store (a read by thread c) and any such write.
//
// Input:  lowered IR after insert_syncs, fence_proxy_async and safe_pingpong_turns (the
//         barriers are final), shared buffers placed (arena_ranges).
// Output: for such an If inside a serial loop's body, when the statements after it — to the
//         end of the body, then from the body's start (the next step) — reach a block barrier
//         (tl.syncthreads or tl.named_barrier_sync, the loop body's own statement, not
//         nested) before any of them writes bytes of a source tile, issues or waits for bulk
//         copies, or holds such a barrier nested in other statements: the wait moves to
//         `if (t == c) tl.tma_store_wait_read(0)` right before that barrier; when the barrier
//         comes from the next step, the same wait also follows the loop (the last step's
//         stores). The If's condition must read nothing the loop binds (it is evaluated again
//         there). Otherwise the If is left alone.
// Why correct: a write of the tile by any thread of the role follows that barrier, which
//         thread c passes only after its wait; waiting at a barrier reached before any group
//         was issued (the first step) returns at once.
// Runs after: safe_pingpong_turns. Before: split_host_device.
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "passes/cuda_back_util.h"
#include "passes/insert_syncs_support.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;
using Range = std::pair<int64_t, int64_t>;  // [first byte, end)

bool is_bulk_store(const std::string& op) { return op == "tl.tma_store" || op == "tl.tma_reduce_add"; }

bool is_bulk_op(const std::string& op) {
  return is_bulk_store(op) || op == "tl.tma_store_commit" || op == "tl.tma_store_wait_read" ||
         op == "tl.tma_store_wait";
}

// The barriers a deferred wait may go before: every thread of the role takes part.
bool is_block_barrier(const Stmt& s) {
  const CallNode* c = back::evaluated_call(s);
  return c && (c->op == "tl.syncthreads" || c->op == "tl.named_barrier_sync");
}

// The buffers that asynchronous copies (TMA loads, cp.async) write: their writes are ordered
// by mbarriers or commit groups, not by the barriers this pass relies on, so a source tile
// sharing bytes with one keeps its wait.
class AsyncWritten : public IRVisitor {
 public:
  std::vector<const BufferNode*> buffers;

 protected:
  void visit_Call(const CallNode* op) override {
    if ((op->op.rfind("tl.tma_load", 0) == 0 || op->op.rfind("tl.cp_async", 0) == 0) && !op->args.empty())
      if (auto* a = op->args[0].as<CallNode>(); a && a->op == "tl.address_of" && !a->args.empty())
        if (auto* l = a->args[0].as<BufferLoadNode>()) buffers.push_back(l->buffer.get());
    IRVisitor::visit_Call(op);
  }
};

// The If of a TMA store that waits right after issuing: its condition, the buffers its stores read.
struct BulkStore {
  const IfNode* node = nullptr;
  std::vector<const BufferNode*> sources;
};

// The If itself, or the last statement of a list / the body of a swizzle annotation holding it
// (the lowering puts the store's fence before it and that annotation around it).
std::optional<BulkStore> bulk_store_if(const Stmt& s) {
  if (auto* a = s.as<AnnotateNode>()) return a->key == kSwizzle128BKey ? bulk_store_if(a->body) : std::nullopt;
  if (auto* q = s.as<SeqNode>()) return q->stmts.empty() ? std::nullopt : bulk_store_if(q->stmts.back());
  auto* i = s.as<IfNode>();
  if (!i || i->else_case) return std::nullopt;
  auto* body = i->then_case.as<SeqNode>();
  if (!body || body->stmts.size() < 3) return std::nullopt;
  const auto& st = body->stmts;
  const CallNode* commit = back::evaluated_call(st[st.size() - 2]);
  const CallNode* wait = back::evaluated_call(st.back());
  if (!commit || commit->op != "tl.tma_store_commit" || !wait || wait->op != "tl.tma_store_wait_read") return std::nullopt;
  BulkStore out{i, {}};
  for (size_t k = 0; k + 2 < st.size(); ++k) {
    const CallNode* c = back::evaluated_call(st[k]);
    if (!c || !is_bulk_store(c->op) || c->args.size() < 2) return std::nullopt;
    auto* addr = c->args[1].as<CallNode>();
    auto* load = addr && addr->op == "tl.address_of" && !addr->args.empty() ? addr->args[0].as<BufferLoadNode>() : nullptr;
    if (!load) return std::nullopt;
    out.sources.push_back(load->buffer.get());
  }
  return out;
}

// `s` (as bulk_store_if found the If in it) with the If's trailing wait removed.
Stmt without_wait(const Stmt& s) {
  if (auto* a = s.as<AnnotateNode>()) return annotate(a->key, a->value, without_wait(a->body), a->loc);
  if (auto* q = s.as<SeqNode>()) {
    std::vector<Stmt> st = q->stmts;
    st.back() = without_wait(st.back());
    return seq(st, q->loc);
  }
  auto* i = s.as<IfNode>();
  auto* body = i->then_case.as<SeqNode>();
  std::vector<Stmt> issue(body->stmts.begin(), body->stmts.end() - 1);
  return if_then_else(i->cond, seq(issue, body->loc), nullptr, i->loc);
}

// What a statement does that matters here.
struct Effects {
  bool writes_source = false, bulk = false, nested_barrier = false;
};

class EffectScan : public IRVisitor {
 public:
  EffectScan(const std::vector<Range>& sources, const std::unordered_map<const BufferNode*, Range>& ranges)
      : sources_(sources), ranges_(ranges) {}
  Effects fx;

 protected:
  void visit_BufferStore(const BufferStoreNode* op) override {
    note_write(op->buffer.get());
    IRVisitor::visit_BufferStore(op);
  }
  void visit_Call(const CallNode* op) override {
    if (is_bulk_op(op->op)) fx.bulk = true;
    if (op->op == "tl.syncthreads" || op->op == "tl.named_barrier_sync") fx.nested_barrier = true;
    // Any other call handed a shared address may write it (cp.async, ldmatrix's peers, atomics).
    if (op->op == "tl.address_of") {
      if (auto* l = op->args.empty() ? nullptr : op->args[0].as<BufferLoadNode>()) note_write(l->buffer.get());
    }
    IRVisitor::visit_Call(op);
  }

 private:
  void note_write(const BufferNode* b) {
    if (b->scope != Scope::kSharedDyn && b->scope != Scope::kShared) return;
    auto it = ranges_.find(b);
    if (it == ranges_.end()) {  // not placed: it may be anything
      fx.writes_source = true;
      return;
    }
    for (const Range& r : sources_)
      if (it->second.first < r.second && r.first < it->second.second) fx.writes_source = true;
  }
  const std::vector<Range>& sources_;
  const std::unordered_map<const BufferNode*, Range>& ranges_;
};

// The variables `s` binds (Lets and loops inside it).
std::vector<Var> bound_vars(const Stmt& s) {
  std::vector<Var> out;
  for_each_node(s, [&](const Node* n) {
    if (auto* l = dynamic_cast<const LetNode*>(n)) out.push_back(l->var);
    if (auto* f = dynamic_cast<const ForNode*>(n)) out.push_back(f->loop_var);
  });
  return out;
}

class DeferWaits : public IRMutator {
 public:
  DeferWaits(std::unordered_map<const BufferNode*, Range> ranges, const std::vector<const BufferNode*>& async_written)
      : ranges_(std::move(ranges)) {
    for (const BufferNode* b : async_written) {
      auto it = ranges_.find(b);
      async_.push_back(it == ranges_.end() ? Range{0, int64_t{1} << 40} : it->second);
    }
  }

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    Stmt inner = IRMutator::mutate_For(s, op);
    auto* f = inner.as<ForNode>();
    if (!f || f->for_kind != ForKind::kSerial) return inner;
    Stmt after_loop;
    // The store's condition is evaluated again where the wait goes (the next step, after the
    // loop): only when it reads nothing the loop binds (the issuing thread's index does not).
    std::unordered_set<const VarNode*> bound = {f->loop_var.get()};
    for (const Var& v : bound_vars(f->body)) bound.insert(v.get());
    Stmt body = in_body_seq(f->body, [&](const SeqNode* seq) { return defer(seq, bound, &after_loop); });
    if (body.same_as(f->body)) return inner;
    auto n = std::make_shared<ForNode>(*f);
    n->body = body;
    Stmt loop = Stmt(std::shared_ptr<const ForNode>(std::move(n)));
    return after_loop ? seq({loop, after_loop}, f->loc) : loop;
  }

 private:
  // Applies `fn` to the statement list of a loop body under its Lets (null: unchanged).
  template <class Fn>
  Stmt in_body_seq(const Stmt& body, Fn fn) {
    if (auto* l = body.as<LetNode>()) {
      Stmt b = in_body_seq(l->body, fn);
      return b.same_as(l->body) ? body : let(l->var, l->value, b, l->loc);
    }
    if (auto* q = body.as<SeqNode>()) {
      Stmt out = fn(q);
      return out ? out : body;
    }
    return body;
  }

  // The statements of nested lists, in order: a list inside a list runs as its statements; a
  // swizzle annotation only told plan_shared_memory where to place its buffer; a wgmma atom
  // annotation tells codegen which instruction to define, whichever statement it wraps.
  static void flatten(const Stmt& s, std::vector<Stmt>* out) {
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts) flatten(x, out);
      return;
    }
    auto* a = s.as<AnnotateNode>();
    if (a && a->key == kSwizzle128BKey) return flatten(a->body, out);
    if (a && a->key == kWgmmaAtomKey) {
      std::vector<Stmt> inner;
      flatten(a->body, &inner);
      for (const Stmt& x : inner) out->push_back(is_block_barrier(x) ? x : annotate(a->key, a->value, x, a->loc));
      return;
    }
    out->push_back(s);
  }

  // The statement list with one bulk store's wait deferred (null when none can be).
  Stmt defer(const SeqNode* list, const std::unordered_set<const VarNode*>& bound, Stmt* after_loop) {
    std::vector<Stmt> st;
    for (const Stmt& x : list->stmts) flatten(x, &st);
    for (size_t i = 0; i < st.size(); ++i) {
      auto store = bulk_store_if(st[i]);
      if (!store) continue;
      if (back::uses_any_var(store->node->cond, bound)) return Stmt();
      std::vector<Range> sources;
      for (const BufferNode* b : store->sources) {
        auto it = ranges_.find(b);
        if (it == ranges_.end()) return Stmt();
        for (const Range& r : async_)
          if (r.first < it->second.second && it->second.first < r.second) return Stmt();
        sources.push_back(it->second);
      }
      // Scan on from the store, then from the start of the next step.
      std::optional<size_t> at;
      bool next_step = false;
      for (size_t step = 1; step < st.size() && !at; ++step) {
        const size_t j = (i + step) % st.size();
        if (is_block_barrier(st[j])) {
          at = j;
          next_step = j < i;
          break;
        }
        EffectScan scan(sources, ranges_);
        scan.visit(st[j]);
        if (scan.fx.writes_source || scan.fx.bulk || scan.fx.nested_barrier) return Stmt();
      }
      if (!at) return Stmt();
      const Stmt wait = if_then_else(store->node->cond,
                                     back::call_stmt("tl.tma_store_wait_read", {int_imm(0)}, store->node->loc),
                                     nullptr, store->node->loc);
      std::vector<Stmt> out;
      for (size_t j = 0; j < st.size(); ++j) {
        if (j == *at) out.push_back(wait);
        if (j != i) {
          out.push_back(st[j]);
          continue;
        }
        out.push_back(without_wait(st[j]));
      }
      if (next_step) *after_loop = back::renew_bound_vars(wait);
      return seq(out, list->loc);
    }
    return Stmt();
  }

  std::unordered_map<const BufferNode*, Range> ranges_;
  std::vector<Range> async_;
};

}  // namespace

Pass defer_bulk_read_waits_pass() {
  return {"defer_bulk_read_waits", [](const PrimFunc& f, PassContext& ctx) {
            if (!back::config_flag(ctx, "tilec.defer_bulk_read_waits", true)) return f;
            AsyncWritten async;
            async.visit(f->body);
            Stmt body = DeferWaits(syncs::arena_ranges(f->body), async.buffers).mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
