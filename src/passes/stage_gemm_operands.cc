// Pass stage_gemm_operands: a T.gemm whose A or B is a register fragment that no instruction
// can read from registers reads it from shared memory instead.
//
// Input:  tile IR after inject_pipeline (T.gemm tile ops, fragments without layouts yet).
// Output: every T.gemm(A_frag, B, C) without an explicit `instruction=` for which the CUDA
//         selection chain (gemm_isel) accepts no candidate, but would accept one with A in
//         shared memory, becomes
//             Allocate(A_frag_stage: shared.dyn, A's shape and dtype,
//               T.copy(A_frag, A_frag_stage); T.gemm(A_frag_stage, B, C))
//         (TileLang lowers such gemms the same way: its register-A forms take only what the
//         instructions take, e.g. a float32 A for a tf32 wgmma, an int8 A, a transposed A, or
//         an M too small to give every warp its own rows). A register B (TileLang's gemm_sr /
//         gemm_rr forms; upstream's KDA backward multiplies by one) goes the same way, since no
//         tilec gemm instruction reads B from registers: B alone is staged when that lowers,
//         else A alone, else both. Other gemms are unchanged, so
//         programs whose gemms already lower keep their generated code byte for byte.
//         insert_syncs orders the copy before the gemm's reads and the next iteration's copy
//         after them; fence_proxy_async adds the fence a wgmma reader needs.
//         A fragment that the same statement list loaded whole from a shared tile of its shape
//         and dtype (T.copy(S, F)), with no statement between that copy and the gemm touching
//         S or F, is not staged again: the gemm reads S (upstream's MLA decode writes P to
//         S_shared and loads it back into the fragment its P.V gemm reads; a second copy would
//         take it past the shared-memory limit).
//         An fp8 A fragment that wgmma could read from registers stays there only in
//         FlashAttention-3's fp8 form: every fragment copy written into it before the gemm
//         (at least one) is the float32 accumulator of a wgmma gemm of the same threads split
//         the same way along M, all along M (wg_n = 1), which T.copy turns into the register-A
//         layout within each quad (ops/copy_wgmma_a8.cc). Any other fp8 A fragment is staged,
//         as before register A existed for fp8 (a copy from a fragment of another layout
//         could not be joined with that layout).
// Runs after: inject_pipeline (the staging copy is not pipelined), lower_warp_roles (a
//         role's gemm is selected for the role's threads). Before: layout_inference.
// Algorithm: one walk tracking the threads that run each statement (the kernel's block, or
//   a role's Annotate(kThreadRangeKey)); for each gemm with a fragment operand, ask the chain
//   as written, then with the fragments in shared memory in the order above.
#include <optional>
#include <unordered_map>

#include "ops/gemm_operands.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

// Whether the chain accepts the query (a refusal that is a UserError counts as "no").
bool lowers(const cuda::GemmQuery& q, const target::Target& target) {
  try {
    for (const auto& c : cuda::gemm_candidates(q, target))
      if (c.chosen) return true;
  } catch (const UserError&) {
  }
  return false;
}

class GemmOperandStager : public IRMutator {
 public:
  explicit GemmOperandStager(const PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    const int64_t saved = threads_;
    threads_ = op->block_threads();
    Stmt out = IRMutator::mutate_KernelLaunch(s, op);
    threads_ = saved;
    return out;
  }
  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key != kThreadRangeKey) return IRMutator::mutate_Annotate(s, op);
    auto* r = std::get_if<std::vector<int64_t>>(&op->value);
    if (!r || r->size() < 2) return IRMutator::mutate_Annotate(s, op);
    const int64_t saved = threads_;
    threads_ = (*r)[1];
    Stmt out = IRMutator::mutate_Annotate(s, op);
    threads_ = saved;
    return out;
  }
  // Tracks, along a statement list, fragments that hold a whole copy of a shared tile (see
  // copy_of_shared) for the gemms of the list.
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    auto saved = copies_;
    copies_.clear();
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& x : op->stmts) {
      auto* t = x.as<TileOpNode>();
      if (!t || t->op != "gemm") forget_copies_touched_by(x);
      Stmt y = mutate(x);
      changed |= !y.same_as(x);
      out.push_back(y);
      if (t && t->op == "copy") note_copy(t);
      if (t && t->op == "gemm" && t->args.size() >= 3)  // C is written
        if (auto* c = std::get_if<BufferRegion>(&t->args[2])) forget(c->buffer.get());
    }
    copies_ = std::move(saved);
    return changed ? seq(std::move(out), s->loc) : s;
  }

  Stmt mutate_TileOp(const Stmt& s, const TileOpNode* op) override {
    if (op->op == "copy") note_fragment_copy(op);
    if (op->op != "gemm" || threads_ <= 0 || op->args.size() < 3) return s;
    Stmt out = stage(s, op);
    note_accumulator(out);
    return out;
  }

 private:
  Stmt stage(const Stmt& s, const TileOpNode* op) {
    auto* a = std::get_if<BufferRegion>(&op->args[0]);
    auto* b = std::get_if<BufferRegion>(&op->args[1]);
    const bool a_frag = a && a->buffer->scope == Scope::kFragment;
    const bool b_frag = b && b->buffer->scope == Scope::kFragment;
    if (!a_frag && !b_frag) return s;
    back::PassOpEnv env(ctx_, threads_);
    ops::GemmOp g = ops::analyze_gemm(*op, env);
    if (!g.query.instruction.empty()) return s;
    if (lowers(g.query, ctx_.target()) && (!a_frag || fp8_register_a_joins(*a, g.query))) return s;
    // The fewest operands through shared memory: B alone (no instruction reads B from
    // registers), A alone, then both.
    std::vector<std::pair<bool, bool>> choices;  // (stage A, stage B)
    if (b_frag) choices.push_back({false, true});
    if (a_frag) choices.push_back({true, false});
    if (a_frag && b_frag) choices.push_back({true, true});
    for (auto [stage_a, stage_b] : choices) {
      cuda::GemmQuery staged_query = g.query;
      if (stage_a) staged_query.a_scope = Scope::kSharedDyn, staged_query.lda = g.a.tile_cols;
      if (stage_b) staged_query.b_scope = Scope::kSharedDyn, staged_query.ldb = g.b.tile_cols;
      if (!lowers(staged_query, ctx_.target())) continue;
      auto gemm = std::make_shared<TileOpNode>(*op);
      std::vector<Stmt> body;
      std::vector<Buffer> stages;
      for (int i : {0, 1}) {
        if (!(i == 0 ? stage_a : stage_b)) continue;
        const Buffer& frag = std::get<BufferRegion>(op->args[i]).buffer;
        if (auto c = copies_.find(frag.get()); c != copies_.end()) {
          gemm->args[i] = BufferRegion::full(c->second);  // the shared tile it was loaded from
          continue;
        }
        Buffer stage = make_buffer(frag->name + "_stage", frag->shape, frag->dtype, Scope::kSharedDyn, {}, op->loc);
        body.push_back(make_tile_op("copy", {BufferRegion::full(frag), BufferRegion::full(stage)}, {}, op->loc));
        gemm->args[i] = BufferRegion::full(stage);
        stages.push_back(stage);
      }
      body.push_back(Stmt(std::shared_ptr<const TileOpNode>(std::move(gemm))));
      if (stages.empty()) return body.back();
      return allocate_all(stages, seq(std::move(body), op->loc), op->loc);
    }
    return s;  // the gemm's own error says why
  }

  // The wgmma split of a gemm's query, when wgmma takes it.
  std::optional<cuda::GemmPlan> wgmma_plan(const cuda::GemmQuery& q) const {
    try {
      cuda::GemmPlan plan = cuda::select_gemm(q, ctx_.target());
      if (plan.inst == cuda::GemmInst::kWgmma) return plan;
    } catch (const UserError&) {
    }
    return std::nullopt;
  }
  // Records the split of a wgmma gemm's accumulator (the gemm as it is now, staged or not).
  void note_accumulator(const Stmt& s) {
    const TileOpNode* gemm = nullptr;
    for_each_node(s, [&](const Node* n) {
      if (auto* t = dynamic_cast<const TileOpNode*>(n); t && t->op == "gemm") gemm = t;
    });
    if (!gemm || gemm->args.size() < 3) return;
    auto* c = std::get_if<BufferRegion>(&gemm->args[2]);
    if (!c || c->buffer->dtype != DataType::Float(32)) return;  // only float32 accumulators become fp8 A
    back::PassOpEnv env(ctx_, threads_);
    auto plan = wgmma_plan(ops::analyze_gemm(*gemm, env).query);
    if (plan) accumulators_[c->buffer.get()] = {threads_, plan->wg_m, plan->wg_n};
    else accumulators_.erase(c->buffer.get());
  }
  // What the fragment copies into an 8-bit fragment were: how many, and whether each came
  // from a wgmma accumulator (its split).
  void note_fragment_copy(const TileOpNode* t) {
    auto* src = t->args.size() == 2 ? std::get_if<BufferRegion>(&t->args[0]) : nullptr;
    auto* dst = t->args.size() == 2 ? std::get_if<BufferRegion>(&t->args[1]) : nullptr;
    if (!src || !dst || src->buffer->scope != Scope::kFragment || dst->buffer->scope != Scope::kFragment) return;
    if (dst->buffer->dtype.bits() != 8) return;
    Fp8Writers& w = fp8_writers_[dst->buffer.get()];
    auto acc = accumulators_.find(src->buffer.get());
    if (acc != accumulators_.end() && src->buffer->dtype == DataType::Float(32) && whole(*src) && whole(*dst))
      w.from_accumulators.push_back(acc->second);
    else
      w.other = true;
  }
  // Whether an 8-bit register A may stay in registers (see the header): always true for
  // other dtypes and for gemms that would not read it from registers anyway.
  bool fp8_register_a_joins(const BufferRegion& a, const cuda::GemmQuery& q) const {
    if (a.buffer->dtype.bits() != 8) return true;
    auto plan = wgmma_plan(q);
    if (!plan || !plan->a_in_registers) return true;
    auto w = fp8_writers_.find(a.buffer.get());
    if (w == fp8_writers_.end() || w->second.other || w->second.from_accumulators.empty()) return false;
    for (const AccumulatorSplit& acc : w->second.from_accumulators)
      if (acc.threads != threads_ || acc.wg_n != 1 || acc.wg_m != plan->wg_m) return false;
    return true;
  }
  // `T.copy(S, F)` of a whole shared tile S into a whole fragment F of the same shape and
  // dtype: until S or F is touched again, F's values are S's (upstream's attention kernels
  // write P to shared memory and load it back into the fragment the P.V gemm reads).
  void note_copy(const TileOpNode* t) {
    auto* src = t->args.size() == 2 ? std::get_if<BufferRegion>(&t->args[0]) : nullptr;
    auto* dst = t->args.size() == 2 ? std::get_if<BufferRegion>(&t->args[1]) : nullptr;
    if (!src || !dst || !is_shared(src->buffer->scope) || dst->buffer->scope != Scope::kFragment) return;
    if (!whole(*src) || !whole(*dst) || !(src->buffer->dtype == dst->buffer->dtype)) return;
    const auto& a = src->buffer->shape;
    const auto& b = dst->buffer->shape;
    if (a.size() != b.size()) return;
    for (size_t d = 0; d < a.size(); ++d) {
      const int64_t* x = as_const_int(a[d]);
      const int64_t* y = as_const_int(b[d]);
      if (!x || !y || *x != *y) return;
    }
    copies_[dst->buffer.get()] = src->buffer;
  }
  static bool whole(const BufferRegion& r) {
    for (size_t d = 0; d < r.region.size(); ++d) {
      const int64_t* lo = as_const_int(r.region[d].min);
      const int64_t* n = as_const_int(r.region[d].extent);
      const int64_t* e = as_const_int(r.buffer->shape[d]);
      if (!lo || !n || !e || *lo != 0 || *n != *e) return false;
    }
    return true;
  }
  // A statement that mentions F or S in any way ends what copies_ knows about them.
  void forget_copies_touched_by(const Stmt& x) {
    if (copies_.empty()) return;
    for_each_node(x, [&](const Node* n) {
      const BufferNode* b = nullptr;
      if (auto* l = dynamic_cast<const BufferLoadNode*>(n)) b = l->buffer.get();
      if (auto* st = dynamic_cast<const BufferStoreNode*>(n)) b = st->buffer.get();
      if (auto* t = dynamic_cast<const TileOpNode*>(n))
        for (const auto& a : t->args)
          if (auto* r = std::get_if<BufferRegion>(&a)) forget(r->buffer.get());
      if (auto* al = dynamic_cast<const AllocateNode*>(n)) b = al->buffer.get();
      if (b) forget(b);
    });
  }
  void forget(const BufferNode* b) {
    for (auto it = copies_.begin(); it != copies_.end();)
      it = it->first == b || it->second.get() == b ? copies_.erase(it) : std::next(it);
  }

  struct AccumulatorSplit {
    int64_t threads;
    int wg_m, wg_n;
  };
  struct Fp8Writers {
    std::vector<AccumulatorSplit> from_accumulators;
    bool other = false;  // a fragment copy from anything else
  };

  const PassContext& ctx_;
  int64_t threads_ = 0;
  std::unordered_map<const BufferNode*, Buffer> copies_;  // fragment -> the shared tile it copies
  std::unordered_map<const BufferNode*, AccumulatorSplit> accumulators_;  // wgmma C -> its split
  std::unordered_map<const BufferNode*, Fp8Writers> fp8_writers_;         // 8-bit fragment -> copies into it
};

}  // namespace

Pass stage_gemm_operands_pass() {
  return {"stage_gemm_operands", [](const PrimFunc& f, PassContext& ctx) {
            Stmt body = GemmOperandStager(ctx).mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
