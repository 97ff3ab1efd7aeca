// warp_specialize_plan.h: the rewrite half of warp_specialize — a qualifying kernel (the
// analysis in warp_specialize.cc / _plan.cc) becomes a producer warpgroup and consumer
// warpgroups. The output form is described in warp_specialize.cc's contract header; this file
// builds it: the producer's loop (and head copies), the consumers' step (plain, GEMM-only with
// one wgmma group in flight, or rotated for attention), the persistent tile loops, and the
// kernel with its barriers and register budgets.
#include <algorithm>
#include <optional>
#include <unordered_set>

#include "ops/copy_tma.h"
#include "passes/cuda_back_util.h"
#include "passes/pipeline_body.h"
#include "passes/warp_specialize_plan.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes::ws {

namespace {

using namespace ir;
namespace pl = pipeline;

// n of a statement `tl.wgmma_wait(n)` (T.wait_wgmma), else nothing.
std::optional<int64_t> wgmma_wait_count(const Stmt& st) {
  auto* e = st.as<EvaluateNode>();
  auto* c = e ? e->value.as<CallNode>() : nullptr;
  if (!c || c->op != "tl.wgmma_wait" || c->args.size() != 1) return std::nullopt;
  const int64_t* n = as_const_int(c->args[0]);
  return n && *n >= 0 ? std::optional<int64_t>(*n) : std::nullopt;
}

// The registers a rotated consumer step needs besides its fragments (addresses, wgmma
// descriptors, loop and softmax state). With 24, the kernels that rotate without spilling keep
// rotating (head dim 64 on three warpgroups: 127 of 160; head dim 128 with 176 keys: 198 of 240).
constexpr int64_t kRotationHeadroom = 24;

// Named barriers 16 - G .. 15: the turns of G consumer warpgroups (tl.pingpong_wait/pass;
// 14 and 15 for two); the roles' own barriers count up from 1.
int64_t first_turn_barrier(int groups) { return 16 - groups; }

// Gemms left in flight in a consumer step (tilec.defer_gemm_waits), oldest first, and what a
// later statement must not touch before they are done: their accumulators and register
// operands (PTX: not even read, before the wait), and, for writes, their shared operands.
struct InFlight {
  pl::BufferSet touch, write;
  std::vector<size_t> gemms;             // consumer indices
  std::vector<const TileOpNode*> ops;    // the gemms, in issue order (one wgmma group each)
  static InFlight of(const TileOpNode* g) {
    InFlight f;
    f.add(g, 0);
    return f;
  }
  void add(const TileOpNode* g, size_t q) {
    const Buffer& a = std::get<BufferRegion>(g->args[0]).buffer;
    const Buffer& b = std::get<BufferRegion>(g->args[1]).buffer;
    const Buffer& c = std::get<BufferRegion>(g->args[2]).buffer;
    touch.insert(c.get());
    (a->scope == Scope::kFragment ? touch : write).insert(a.get());
    write.insert(b.get());
    gemms.push_back(q);
    ops.push_back(g);
  }
  // After a wait that leaves at most n groups pending: the older gemms are done. Returns
  // their consumer indices; the rest stay in flight.
  std::vector<size_t> retire_all_but(size_t n) {
    if (gemms.size() <= n) return {};
    const size_t done = gemms.size() - n;
    std::vector<size_t> retired(gemms.begin(), gemms.begin() + done);
    InFlight rest;
    for (size_t i = done; i < gemms.size(); ++i) rest.add(ops[i], gemms[i]);
    *this = std::move(rest);
    return retired;
  }
  bool hazard(const pl::Access& acc) const {
    for (const pl::BufferSet* s : {&acc.reads, &acc.writes})
      for (const BufferNode* b : *s)
        if (touch.count(b)) return true;
    for (const BufferNode* b : acc.writes)
      if (write.count(b)) return true;
    return false;
  }
};

class KernelRewrite {
 public:
  KernelRewrite(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p, int64_t threads,
                const PassContext& ctx, const ReadOnly* read_only)
      : ctx_(ctx), kernel_(kernel), sp_(sp), p_(p), threads_(threads), f_(p.loop), loc_(p.loop->loc), S_(p.stages),
        it_(p.loop->loop_var->dtype), k_(make_var(f_->loop_var->name, it_, f_->loop_var->loc)),
        tx_(kernel->thread_vars[0]) {
    // Clusters along one grid dimension: a tile every CTA of the cluster loads alike (its
    // source does not depend on that block index) is split into one band per CTA, each
    // multicast to all of them. A slot is then free only when the consumers of every CTA
    // released it, so they arrive on every CTA's empty barrier.
    const ClusterAxis axis = cluster_axis(*kernel);
    cdim_ = axis.dim;
    csize_ = axis.size;
    consumer_groups_ = static_cast<int>(threads / 128);
    // Copies ahead of the loop (attention's Q) go to the producer too: once per tile, through
    // their own full/empty pair, so that the next tile's load overlaps this tile's epilogue.
    // Not with a cluster, nor with two blocks per SM (one consumer warpgroup, below): the other
    // block's main loop already covers this one's head loads, and within the 128-register
    // launch budget the producer's extra state made ptxas spill (the backward example at d128).
    std::vector<Stmt> heads;
    if (cdim_ == -1 && ctx.get_bool("tilec.producer_head_copies")) heads = head_copies(sp, p, kernel->body, read_only);
    // A result tile staged over a copied buffer (stage_output_tiles) shares its bytes in a
    // persistent kernel when the producer can hold the buffer's next load until the tile's TMA
    // store has read it (the staged_free barrier, one phase per tile). The consumers' arrivals
    // then stay at most one tile ahead of the producer's waits (parity waits cannot tell two
    // phases apart) when every tile loads the buffer (a positive constant step count) or the
    // consumers wait for a head copy each tile (two or more consumer warpgroups keep their
    // heads); not with clusters.
    const bool steps = as_const_int(f_->extent) && *as_const_int(f_->extent) > 0;
    over_ = p.over_host && cdim_ == -1 && (steps || (consumer_groups_ > 1 && !heads.empty()));
    // Persistent: every block loops over tiles; the pipeline's slots and phases run on
    // across them (tile_i tiles of n steps each came before).
    persistent_ = want_persistent(kernel, sp, p, ctx, over_);
    tile_i_ = make_var("tile_i", it_, loc_);
    local_ = is_zero(f_->min) ? Expr(k_) : Expr(k_) - f_->min;
    // The steps of the tiles before this one: tile_i whole tiles, or, when the tiles' step
    // counts differ (uneven), a running count each role keeps in `done`.
    uneven_ = persistent_ && work_dim(kernel, sp, p) >= 0;
    done_ = make_buffer(f_->loop_var->name + "_done", {int_imm(1)}, it_, Scope::kVar, {}, loc_);
    tile_base_ = uneven_ ? buffer_load(done_, {int_imm(0)}, loc_) : Expr(tile_i_) * cast(it_, f_->extent);
    iter_ = persistent_ ? tile_base_ + local_ : local_;
    slot_ = floormod(iter_, int_imm(S_, it_));
    phase_ = floormod(floordiv(iter_, int_imm(S_, it_)), int_imm(2, it_));
    // One slot (num_stages=1) cannot stay in flight across a step: the next load needs it.
    deferred_ = S_ >= 2 && defer_release(p);
    groups_ = copy_groups(p, deferred_);
    for (size_t g = 0; g < groups_.size(); ++g) {
      const std::string suffix = groups_.size() == 1 ? "" : std::to_string(g);
      groups_[g].full = make_buffer(f_->loop_var->name + "_full" + suffix, {int_imm(S_)}, DataType::UInt(64),
                                    Scope::kBarrier, {}, loc_);
      groups_[g].empty = make_buffer(f_->loop_var->name + "_empty" + suffix, {int_imm(S_)}, DataType::UInt(64),
                                     Scope::kBarrier, {}, loc_);
    }
    rename_[f_->loop_var.get()] = k_;
    fragment_registers_ = fragment_registers(kernel, threads);
    // Two blocks per SM also need their shared memory to fit side by side (else the 128-register
    // launch budget buys nothing: one block runs, with half the registers it could have), and
    // the fragments to fit the 232 registers a consumer thread has then (past them ptxas
    // spills, and a block of its own gets 240).
    two_per_sm_ = consumer_groups_ == 1 && p.widest_atom <= 128 && fragment_registers_ <= 232 &&
                  2 * (unshared_bytes(kernel, p, over_) + 2048) <= ctx.target().shared_memory_per_sm();
    if (!two_per_sm_) heads_ = std::move(heads);
    for (const Stmt& h : heads_) head_set_.insert(h.get());
    head_full_ = make_buffer("head_full", {int_imm(1)}, DataType::UInt(64), Scope::kBarrier, {}, loc_);
    head_empty_ = make_buffer("head_empty", {int_imm(1)}, DataType::UInt(64), Scope::kBarrier, {}, loc_);
    head_phase_ = persistent_ ? floormod(Expr(tile_i_), int_imm(2, it_)) : int_imm(0, it_);
    staged_free_ = make_buffer("staged_free", {int_imm(1)}, DataType::UInt(64), Scope::kBarrier, {}, loc_);
  }

  // The staged_free protocol is on: a persistent kernel whose result tile shares a copied buffer's bytes.
  bool staged_over() const { return persistent_ && over_; }

  RewriteResult run() {
    Stmt producer_body = producer_loop();
    // Two consumer warpgroups with work besides their gemms (attention: S = Q K^T, softmax,
    // O += P V) take turns at the first gemm: one's softmax runs while the other's gemm has
    // the tensor cores.
    turn_ = deferred_ ? std::nullopt : pingpong_gemm(p_, threads_, ctx_);
    // Rotated, a step holds S_k, P_{k-1} and O at once: not when the fragments and the step's
    // other values (addresses, descriptors, loop state: kRotationHeadroom) take more registers
    // than a consumer thread has. ptxas would spill in the main loop; the serial step does not
    // (head dim 256 with 128-key blocks: 226 registers of fragments, 320 bytes spilled rotated,
    // none serial, and 1.08x faster serial on the H200, 2026-12-03).
    const bool rot = !deferred_ && fragment_registers_ + kRotationHeadroom <= consumer_registers() &&
                     rotation(p_, groups_, ctx_, &rotated_);
    consumer_loop_ = rot ? rotated_consumer_loop() : consumer_loop();
    if (deferred_) consumer_loop_ = drained(consumer_loop_);
    // The consumers run the kernel body with the loop replaced and the spine's wrappers
    // taken out (they go around both roles).
    spine_.insert(sp_.wrappers.begin(), sp_.wrappers.end());
    Stmt consumer_body = strip(kernel_->body);
    if (staged_over()) consumer_body = release_staged_tile(consumer_body);
    TileLoop tiles;
    if (persistent_) {
      tiles = tile_loop_parts(kernel_, sp_, p_, loc_);
      if (uneven_) {
        // Each role counts the steps of the tiles it has done.
        Expr zero = buffer_load(done_, {int_imm(0)}, loc_);
        Stmt count = buffer_store(done_, {int_imm(0)}, zero + cast(it_, f_->extent), loc_);
        consumer_body = seq({consumer_body, count}, loc_);
        producer_body = seq({producer_body, count}, loc_);
      }
      consumer_body = wrap_in_tile_loop(tiles, consumer_body, tile_i_, false, loc_);
      producer_body = wrap_in_tile_loop(tiles, producer_body, tile_i_, true, loc_);
      if (uneven_) {
        Stmt start = buffer_store(done_, {int_imm(0)}, int_imm(0, it_), loc_);
        consumer_body = seq({start, consumer_body}, loc_);
        producer_body = seq({start, producer_body}, loc_);
      }
    }
    return assemble(producer_body, consumer_body, tiles);
  }

 private:
  // Producer: one thread; per group, wait for the slot, issue its copies, arrive. The head
  // copies before the loop (or, with tilec.head_copies_after_first_step, after the first step's).
  Stmt producer_loop() {
    const int64_t cta_mask = (int64_t{1} << csize_) - 1;
    std::vector<Stmt> produce;
    for (const CopyGroup& grp : groups_) {
      Expr full_slot = buffer_load(grp.full, {slot_}, loc_);
      if (staged_over() && loads_host(grp))  // the tile's first load waits for the last tile's store
        produce.push_back(if_then_else(
            binary(NodeKind::kEQ, Expr(k_), f_->min),
            back::call_stmt("barrier_wait", {buffer_load(staged_free_, {int_imm(0)}, loc_), int_imm(1, it_) - head_phase_},
                            loc_),
            nullptr, loc_));
      produce.push_back(
          back::call_stmt("barrier_wait", {buffer_load(grp.empty, {slot_}, loc_), int_imm(1, it_) - phase_}, loc_));
      for (size_t j : grp.producers) {
        Stmt st = substitute(p_.body.stmts[j], rename_);
        st = pl::VersionAccesses(p_.versioned, slot_).mutate(st);
        auto* c = st.as<TileOpNode>();
        const std::string declined = why_not_multicast(*kernel_, *c, sp_.let_values, ctx_);
        if (declined.empty()) {
          Expr rank = ir::call(DataType::Int(32), "tl.block_rank_in_cluster", {}, loc_);
          if (auto band = ops::tma_row_band(*c, csize_, rank)) {
            produce.push_back(
                make_tile_op("tma_copy", *band, {{"barrier", full_slot}, {"cluster_mask", cta_mask}}, c->loc));
            multicast_ = true;
            continue;
          }
        }
        AttrMap attrs = {{"barrier", full_slot}};
        if (!declined.empty()) attrs.emplace_back("multicast_declined", declined);
        produce.push_back(make_tile_op("tma_copy", c->args, attrs, c->loc));
      }
      produce.push_back(back::call_stmt("barrier_arrive", {full_slot}, loc_));
    }
    Stmt loop = make_for(k_, f_->min, f_->extent, ForKind::kSerial, seq(produce, loc_), loc_);
    if (heads_.empty()) return loop;
    Expr full0 = buffer_load(head_full_, {int_imm(0)}, loc_);
    std::vector<Stmt> head_loads = {back::call_stmt(
        "barrier_wait", {buffer_load(head_empty_, {int_imm(0)}, loc_), int_imm(1, it_) - head_phase_}, loc_)};
    for (const Stmt& h : heads_) {
      auto* c = h.as<TileOpNode>();
      head_loads.push_back(make_tile_op("tma_copy", c->args, {{"barrier", full0}}, c->loc));
    }
    head_loads.push_back(back::call_stmt("barrier_arrive", {full0}, loc_));
    Stmt head = seq(head_loads, loc_);
    if (!ctx_.get_bool("tilec.head_copies_after_first_step")) return seq({head, loop}, loc_);
    // The first step's slots free up during the previous tile, the head's only at its end:
    // issue the first step's copies first (and the head alone when the loop is empty).
    std::vector<Stmt> step = produce;
    step.push_back(if_then_else(binary(NodeKind::kEQ, Expr(k_), f_->min), head, nullptr, loc_));
    loop = make_for(k_, f_->min, f_->extent, ForKind::kSerial, seq(step, loc_), loc_);
    auto steps = as_const_int(f_->extent);
    if (steps && *steps > 0) return loop;
    Expr empty = binary(NodeKind::kLE, f_->extent, int_imm(0, f_->extent->dtype));
    return seq({loop, if_then_else(empty, back::renew_bound_vars(head), nullptr, loc_)}, loc_);
  }

  bool loads_host(const CopyGroup& grp) const {
    for (size_t j : grp.producers)
      if (region_arg(*tile_op(p_.body.stmts[j]), 1).buffer.get() == p_.over_host) return true;
    return false;
  }

  // The consumers' TMA store of the staged tile arrives on staged_free once TMA has read it.
  Stmt release_staged_tile(const Stmt& body) const {
    class Mark : public IRMutator {
     public:
      Mark(const std::string& tile, Expr bar) : tile_(tile), bar_(std::move(bar)) {}
      int marked = 0;

     protected:
      Stmt mutate_TileOp(const Stmt& s, const TileOpNode* op) override {
        if (op->op != "copy" || op->args.size() != 2) return s;
        auto* from = std::get_if<BufferRegion>(&op->args[0]);
        auto* to = std::get_if<BufferRegion>(&op->args[1]);
        if (!from || !to || from->buffer->name != tile_ || to->buffer->scope != Scope::kGlobal) return s;
        ++marked;
        auto n = std::make_shared<TileOpNode>(*op);
        n->attrs.emplace_back("release", bar_);
        return Stmt(std::shared_ptr<const TileOpNode>(std::move(n)));
      }

     private:
      const std::string& tile_;
      Expr bar_;
    } mark(p_.over_tile, buffer_load(staged_free_, {int_imm(0)}, loc_));
    Stmt out = mark.mutate(body);
    TILEC_ICHECK(mark.marked == 1) << "warp_specialize: the tile staged over '" << p_.over_host->name
                                   << "' has " << mark.marked << " TMA stores, not one";
    return out;
  }

  // One thread of each consumer warpgroup releases a slot (its wgmmas are done), on every
  // CTA of the cluster when tiles are multicast. When the threads read the slot themselves
  // (thread_readers), each warp syncs and its lane 0 releases: the warp's loads are done.
  Stmt release_on(const Buffer& empty, const Expr& which, bool thread_readers = false) const {
    Expr bar = buffer_load(empty, {which}, loc_);
    Stmt arrive;
    if (multicast_) {
      std::vector<Stmt> all;
      for (int64_t q = 0; q < csize_; ++q)
        all.push_back(back::call_stmt("tl.mbarrier_arrive_cluster", {bar, int_imm(q, DataType::UInt(32))}, loc_));
      arrive = seq(all, loc_);
    } else {
      arrive = back::call_stmt("barrier_arrive", {bar}, loc_);
    }
    const int64_t releaser = thread_readers ? 32 : 128;
    Stmt once = if_then_else(binary(NodeKind::kEQ, floormod(tx_, int_imm(releaser, tx_->dtype)), int_imm(0, tx_->dtype)),
                             arrive, nullptr, loc_);
    return thread_readers ? seq({back::call_stmt("tl.syncwarp", {}, loc_), once}, loc_) : once;
  }
  Stmt release(const CopyGroup& grp, const Expr& which) const {
    return release_on(grp.empty, which, grp.thread_readers);
  }

  // How many consumer statements right after the turn's gemm `q` are gemms into its
  // accumulator that the program waits for (wg_wait 0): they join the turn.
  size_t turn_chain(const std::vector<Stmt>& steps, size_t q) const {
    const TileOpNode* g = tile_op(steps[q]);
    if (!g || g->op != "gemm" || attr_int(*g, "wg_wait", 0) != 0) return 0;
    const auto acc = pl::accesses(steps[q]).writes;
    size_t n = 0;
    for (size_t c = q + 1; c < steps.size(); ++c) {
      const TileOpNode* h = tile_op(steps[c]);
      if (!h || h->op != "gemm" || attr_int(*h, "wg_wait", 0) != 0 || pl::accesses(steps[c]).writes != acc) break;
      ++n;
    }
    return n;
  }

  // Warpgroup w waits on barrier first + w and passes the turn to w + 1 (round robin; with two
  // warpgroups, first + 1 - w).
  Stmt turn_wait() const {
    const Expr wg = floordiv(tx_, int_imm(128, tx_->dtype));
    return back::call_stmt("tl.pingpong_wait", {int_imm(first_turn_barrier(consumer_groups_), tx_->dtype) + wg}, loc_);
  }
  Stmt turn_pass() const {
    const Expr wg = floordiv(tx_, int_imm(128, tx_->dtype));
    const int64_t first = first_turn_barrier(consumer_groups_);
    const Expr next = consumer_groups_ == 2 ? int_imm(first + 1, tx_->dtype) - wg
                                            : int_imm(first, tx_->dtype) +
                                                  floormod(wg + int_imm(1, tx_->dtype), int_imm(consumer_groups_, tx_->dtype));
    return back::call_stmt("tl.pingpong_pass", {next}, loc_);
  }

  // Consumers: the later stages, with the slot's handshake. Each group's slot is awaited right
  // before its first reader and released after its last. A main loop of gemms only (deferred)
  // keeps one wgmma group in flight: slot k is released once its gemms are done, which is
  // checked one iteration later (wgmma_wait(1)), so the tensor cores never idle while a step
  // waits for its own MMAs.
  Stmt consumer_loop() {
    std::vector<Stmt> consume;
    auto wait_full = [&](size_t q) {
      for (const CopyGroup& grp : groups_)
        if (grp.first_reader == q)
          consume.push_back(back::call_stmt("barrier_wait", {buffer_load(grp.full, {slot_}, loc_), phase_}, loc_));
    };
    // `done`: a wait just retired the step's gemms up to q (and so every earlier reader).
    auto release_done = [&](size_t q, bool done = false) {
      for (const CopyGroup& grp : groups_)
        if (grp.last_reader == q) {
          // The slot is free once its readers' wgmmas finished.
          if (grp.waits_pending && !done) consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_));
          consume.push_back(release(grp, slot_));
        }
    };
    // tilec.defer_gemm_waits: a gemm whose next statement leaves its wgmmas alone stays in
    // flight (wg_wait -1) until the first statement that reads or writes its accumulator or
    // its register operand, or writes its shared operands; one wgmma_wait(0) goes there (or at
    // the step's end), and the slots the gemms in flight read are released after it. Gemms
    // the program leaves running (wg_wait=-1) are in flight too, and its T.wait_wgmma(n)
    // retires all but the n newest (their slots are released there).
    std::vector<Stmt> steps;
    for (size_t q = 0; q < p_.consumers.size(); ++q)
      steps.push_back(pl::VersionAccesses(p_.versioned, slot_).mutate(substitute(p_.body.stmts[p_.consumers[q]], rename_)));
    const bool defer = !deferred_ && ctx_.get_bool("tilec.defer_gemm_waits");
    InFlight flight;
    auto settled = [&](bool wait) {  // the gemms in flight are done (after a wait, or a sync gemm)
      if (flight.gemms.empty()) return;
      if (wait) consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_));
      for (size_t r : flight.gemms) release_done(r, true);
      flight = InFlight{};
    };
    for (size_t q = 0; q < p_.consumers.size(); ++q) {
      Stmt st = steps[q];
      if (!flight.gemms.empty() && flight.hazard(pl::accesses(st))) settled(true);
      wait_full(q);
      const TileOpNode* g = tile_op(st);
      const bool gemm = g && g->op == "gemm";
      if (turn_ && q == *turn_) {
        // The turn passes once the gemm is issued (the other warpgroup's gemm queues behind
        // it); then this warpgroup waits for its own — unless the program leaves that gemm
        // running (wg_wait=-1, waited for by its own T.wait_wgmma: the backward issues
        // K Q^T and V dO^T back to back), which then stays in flight like outside a turn.
        // Gemms right after it into the same accumulator (MLA's S = Q K^T in a latent and a
        // rope part) are issued in the same turn, behind it, and one wait covers them all.
        const size_t chain = turn_chain(steps, q);
        consume.push_back(turn_wait());
        consume.push_back(with_wg_wait(st, -1));
        for (size_t c = q + 1; c <= q + chain; ++c) {
          wait_full(c);
          consume.push_back(with_wg_wait(steps[c], -1));
        }
        consume.push_back(turn_pass());
        if (chain > 0) {
          consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_));
          settled(false);
          for (size_t c = q; c <= q + chain; ++c) release_done(c, true);
          q += chain;
          continue;
        }
        if (gemm && attr_int(*g, "wg_wait", 0) < 0) {
          if (defer) flight.add(g, q);
          else release_done(q);  // waits first where the slot's readers may still run
          continue;
        }
        consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_));
        settled(false);
        release_done(q, true);
        continue;
      }
      if (defer && gemm && q + 1 < steps.size() && !InFlight::of(g).hazard(pl::accesses(steps[q + 1]))) {
        consume.push_back(with_wg_wait(st, -1));
        flight.add(g, q);
        continue;
      }
      // The program's own waits: a gemm it leaves running (wg_wait=-1) is in flight like a
      // deferred one; after T.wait_wgmma(n) only the n newest gemms in flight still run.
      if (defer && gemm && attr_int(*g, "wg_wait", 0) < 0) {
        consume.push_back(st);
        flight.add(g, q);
        continue;
      }
      if (std::optional<int64_t> n = defer ? wgmma_wait_count(st) : std::nullopt; n && !flight.gemms.empty()) {
        consume.push_back(st);
        for (size_t r : flight.retire_all_but(static_cast<size_t>(*n))) release_done(r, true);
        release_done(q);
        continue;
      }
      if (deferred_) st = with_wg_wait(st, -1);
      consume.push_back(st);
      if (gemm && !deferred_) settled(false);  // its own wait covers the earlier ones
      if (deferred_) {
        if (q + 1 == p_.consumers.size()) {
          // The previous slot's gemms are done when at most this step's group runs.
          Expr prev = floormod(iter_ + int_imm(S_ - 1, it_), int_imm(S_, it_));
          consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(1)}, loc_));
          consume.push_back(
              if_then_else(binary(NodeKind::kGT, local_, int_imm(0, it_)), release(groups_[0], prev), nullptr, loc_));
        }
        continue;
      }
      release_done(q);
    }
    settled(true);
    return make_for(k_, f_->min, f_->extent, ForKind::kSerial, pl::join_body(p_.body.wrappers, std::move(consume)),
                    loc_, {}, "", f_->annotations);
  }

  // The rotated step (attention, tilec.intra_wg_overlap): step k issues S_k and then
  // P_{k-1} V_{k-1} (one turn), runs the softmax of S_k while P V runs, and only then touches
  // P and O: the prologue is step m's first half, the epilogue the last P V.
  Stmt rotated_consumer_loop() {
    const CopyGroup& gk = groups_[rotated_.first_group];
    const CopyGroup& gv = groups_[rotated_.second_group];
    auto at = [&](const Expr& e, const Expr& kval) { return substitute(e, VarMap{{k_.get(), kval}}); };
    auto stmt_at = [&](size_t q, const Expr& kval, bool fresh) {
      Stmt st = substitute(p_.body.stmts[p_.consumers[q]], rename_);
      st = pl::VersionAccesses(p_.versioned, slot_).mutate(st);
      if (kval) st = substitute(st, VarMap{{k_.get(), kval}});
      return fresh ? back::renew_bound_vars(st) : st;
    };
    auto wait_on = [&](const CopyGroup& g, const Expr& kval) {
      return back::call_stmt("barrier_wait", {buffer_load(g.full, {at(slot_, kval)}, loc_), at(phase_, kval)}, loc_);
    };
    const Expr first = f_->min, prev = Expr(k_) - int_imm(1, it_);
    const Expr last = f_->min + f_->extent - int_imm(1, it_);
    const size_t q1 = rotated_.first_gemm, q2 = p_.consumers.size() - 1;
    // Prologue: step m up to its P V.
    std::vector<Stmt> pro = {wait_on(gk, first)};
    for (size_t q = 0; q < q1; ++q) pro.push_back(stmt_at(q, first, true));
    if (turn_) pro.push_back(turn_wait());
    pro.push_back(with_wg_wait(stmt_at(q1, first, true), -1));
    if (turn_) pro.push_back(turn_pass());
    pro.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_));
    pro.push_back(release(gk, at(slot_, first)));
    auto deferred = [&](size_t q) {
      return std::find(rotated_.deferred.begin(), rotated_.deferred.end(), q) != rotated_.deferred.end();
    };
    for (size_t q = q1 + 1; q < q2; ++q)
      if (!deferred(q)) pro.push_back(stmt_at(q, first, true));
    // Steps m+1 ...: S_k and P_{k-1} V_{k-1} in flight together (step k-1's deferred updates
    // of O between the two issues).
    std::vector<Stmt> step = {wait_on(gk, k_)};
    for (size_t q = 0; q < q1; ++q) step.push_back(stmt_at(q, nullptr, false));
    if (turn_) step.push_back(turn_wait());
    step.push_back(with_wg_wait(stmt_at(q1, nullptr, false), -1));
    for (size_t q : rotated_.deferred) step.push_back(stmt_at(q, prev, true));
    step.push_back(wait_on(gv, prev));
    step.push_back(with_wg_wait(stmt_at(q2, prev, true), -1));
    if (turn_) step.push_back(turn_pass());
    step.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(1)}, loc_));
    step.push_back(release(gk, slot_));
    for (size_t q = q1 + 1; q < rotated_.touches_second; ++q) step.push_back(stmt_at(q, nullptr, false));
    step.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_));
    step.push_back(release(gv, at(slot_, prev)));
    for (size_t q = rotated_.touches_second; q < q2; ++q)
      if (!deferred(q)) step.push_back(stmt_at(q, nullptr, false));
    Stmt loop = make_for(k_, f_->min + int_imm(1, it_), f_->extent - int_imm(1, it_), ForKind::kSerial,
                         seq(step, loc_), loc_, {}, "", f_->annotations);
    // Epilogue: the last P V.
    std::vector<Stmt> epi;
    for (size_t q : rotated_.deferred) epi.push_back(stmt_at(q, last, true));
    for (Stmt s : {wait_on(gv, last), stmt_at(q2, last, true), release(gv, at(slot_, last))}) epi.push_back(s);
    Expr any = binary(NodeKind::kGT, f_->extent, int_imm(0, it_));
    return seq({if_then_else(any, seq(pro, loc_), nullptr, loc_), loop, if_then_else(any, seq(epi, loc_), nullptr, loc_)},
               loc_);
  }

  // A GEMM-only loop ends by waiting for its last wgmmas; a persistent block's next tile needs
  // the last slot back too.
  Stmt drained(const Stmt& loop) const {
    std::vector<Stmt> drain = {loop, back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_)};
    if (persistent_) {
      Expr last = floormod(tile_base_ + cast(it_, f_->extent) - int_imm(1, it_), int_imm(S_, it_));
      drain.push_back(if_then_else(binary(NodeKind::kGT, cast(it_, f_->extent), int_imm(0, it_)),
                                   release(groups_[0], last), nullptr, loc_));
    }
    return seq(drain, loc_);
  }

  // The kernel body for the consumers: the loop replaced, the head copies dropped, the spine's
  // wrappers taken out.
  Stmt strip(const Stmt& s) const {
    if (s.get() == f_) {
      if (heads_.empty()) return consumer_loop_;
      // The head tiles are read by the loop's gemms only: awaited before it, released after
      // its last wgmma.
      return seq({back::call_stmt("barrier_wait", {buffer_load(head_full_, {int_imm(0)}, loc_), head_phase_}, loc_),
                  consumer_loop_, back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc_),
                  release_on(head_empty_, int_imm(0, it_))},
                 loc_);
    }
    if (head_set_.count(s.get())) return seq(std::vector<Stmt>{}, s->loc);
    if (spine_.count(s.get())) {
      if (auto* l = s.as<LetNode>()) return strip(l->body);
      if (auto* a = s.as<AllocateNode>()) return strip(a->body);
      if (auto* a = s.as<AnnotateNode>()) return strip(a->body);
    }
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const auto& x : q->stmts) out.push_back(strip(x));
      return seq(out, s->loc);
    }
    return s;
  }

  // A consumer thread's registers after setmaxnreg (0: no rebalancing). Launch budget: 65536
  // per SM. One consumer warpgroup runs two CTAs per SM (256 x 128 registers each: 24 producer
  // + 232 consumer per thread) or one (24 / 240); two take the whole SM (384 x 168: 24 / 240);
  // three, 24 / 160. (Two CTAs only when every wgmma compiles within the 128-register launch
  // budget: ptxas places one instruction's accumulators within it, so atoms up to N = 128.)
  int consumer_registers() const {
    return consumer_groups_ == 1 ? (two_per_sm_ ? 232 : 240)
           : consumer_groups_ == 2 ? 240
           : consumer_groups_ == 3 ? 160
                                   : 0;
  }

  // The roles with their register budgets, the barriers, the spine's wrappers, the launch.
  RewriteResult assemble(const Stmt& producer_body, const Stmt& consumer_body, const TileLoop& tiles) const {
    const int consumer_regs = consumer_registers();
    RewriteResult out;
    out.min_blocks = two_per_sm_ ? 2 : 1;
    std::vector<Stmt> producer_stmts, consumer_stmts;
    if (consumer_regs) {
      producer_stmts.push_back(back::call_stmt("tl.setmaxnreg_dec", {int_imm(24)}, loc_));
      consumer_stmts.push_back(back::call_stmt("tl.setmaxnreg_inc", {int_imm(consumer_regs)}, loc_));
    }
    // Warpgroup 0 takes the first turn: the last warpgroup passes it once.
    if (turn_)
      consumer_stmts.push_back(if_then_else(
          tx_ >= int_imm(128 * (consumer_groups_ - 1), tx_->dtype),
          back::call_stmt("tl.pingpong_pass", {int_imm(first_turn_barrier(consumer_groups_), tx_->dtype)}, loc_),
          nullptr, loc_));
    producer_stmts.push_back(
        if_then_else(binary(NodeKind::kEQ, tx_, int_imm(threads_, tx_->dtype)),
                     annotate(kThreadRangeKey, std::vector<int64_t>{threads_, 1, 0}, producer_body, loc_), nullptr, loc_));
    consumer_stmts.push_back(consumer_body);
    Stmt roles = if_then_else(
        tx_ >= int_imm(threads_, tx_->dtype),
        annotate(kThreadRangeKey, std::vector<int64_t>{threads_, kProducerThreads, 2}, seq(producer_stmts, loc_), loc_),
        annotate(kThreadRangeKey, std::vector<int64_t>{0, threads_, 1}, seq(consumer_stmts, loc_), loc_), loc_);
    auto whole = [](const Buffer& b) {
      BufferRegion r;
      r.buffer = b;
      for (const auto& e : b->shape) r.region.push_back(Range{int_imm(0), e});
      return r;
    };
    // Empty barriers: one arrival per consumer warpgroup (of every CTA of the cluster).
    const int64_t releases = (threads_ / 128) * (multicast_ ? csize_ : 1);
    std::vector<Stmt> top;
    if (staged_over())  // one arrival: the thread that issued the store
      top.push_back(make_tile_op("barrier_init", {whole(staged_free_)}, {{"arrive_count", std::vector<int64_t>{1}}}, loc_));
    if (!heads_.empty()) {
      top.push_back(make_tile_op("barrier_init", {whole(head_full_)}, {{"arrive_count", std::vector<int64_t>{1}}}, loc_));
      top.push_back(
          make_tile_op("barrier_init", {whole(head_empty_)}, {{"arrive_count", std::vector<int64_t>{releases}}}, loc_));
    }
    for (const CopyGroup& grp : groups_) {
      // A group the threads read themselves: one arrival per consumer warp.
      const int64_t arrivals = grp.thread_readers ? releases * (128 / 32) : releases;
      top.push_back(make_tile_op("barrier_init", {whole(grp.full)}, {{"arrive_count", std::vector<int64_t>(S_, 1)}}, loc_));
      top.push_back(
          make_tile_op("barrier_init", {whole(grp.empty)}, {{"arrive_count", std::vector<int64_t>(S_, arrivals)}}, loc_));
    }
    // The other CTAs arrive on these barriers and write into this CTA's shared memory: the
    // barriers are initialised cluster-wide before, and no CTA exits before all are done.
    if (multicast_) top.push_back(back::call_stmt("tl.cluster_sync", {}, loc_));
    top.push_back(roles);
    if (multicast_) top.push_back(back::call_stmt("tl.cluster_sync", {}, loc_));
    Stmt body = seq(top, loc_);
    for (auto g = groups_.rbegin(); g != groups_.rend(); ++g)
      body = allocate(g->full, allocate(g->empty, body, loc_), loc_);
    if (!heads_.empty()) body = allocate(head_full_, allocate(head_empty_, body, loc_), loc_);
    if (staged_over()) body = allocate(staged_free_, body, loc_);
    if (uneven_) body = allocate(done_, body, loc_);
    // The spine's wrappers around everything, the copied buffers with their versions.
    for (auto w = sp_.wrappers.rbegin(); w != sp_.wrappers.rend(); ++w) {
      if (auto* l = dynamic_cast<const LetNode*>(*w)) {
        if (!persistent_) body = let(l->var, l->value, body, l->loc);  // else inside the tile loops
      } else if (auto* a = dynamic_cast<const AllocateNode*>(*w)) {
        auto v = p_.versioned.find(a->buffer.get());
        body = allocate(v == p_.versioned.end() ? a->buffer : v->second, body, a->loc);
      } else if (auto* a = dynamic_cast<const AnnotateNode*>(*w)) {
        body = annotate(a->key, a->value, body, a->loc);
      }
    }
    auto n = std::make_shared<KernelLaunchNode>(*kernel_);
    n->threads[0] = threads_ + kProducerThreads;
    n->body = body;
    if (persistent_) {
      n->grid = {tiles.total};
      n->block_vars = {tiles.start};
      // Clusters of consecutive blocks of the one-dimensional grid (wrap_in_tile_loop).
      if (tiles.cluster.size > 1) n->cluster = {tiles.cluster.size, 1, 1};
      out.persistent = true;
      out.uneven = uneven_;
    }
    out.kernel = Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
    out.staged_over_kept = !persistent_ || over_;
    return out;
  }

  const PassContext& ctx_;
  const KernelLaunchNode* kernel_;
  const Spine& sp_;
  const Plan& p_;
  const int64_t threads_;
  const ForNode* f_;
  const SourceLoc loc_;
  const int64_t S_;
  const DataType it_;
  const Var k_;
  const Var tx_;
  bool persistent_ = false, uneven_ = false, deferred_ = false, multicast_ = false, two_per_sm_ = false;
  Var tile_i_;
  Expr local_, tile_base_, iter_, slot_, phase_;
  Buffer done_;
  std::vector<CopyGroup> groups_;
  VarMap rename_;
  int64_t fragment_registers_ = 0;  // the kernel's fragments, per consumer thread
  int cdim_ = -1;
  int64_t csize_ = 1;
  int consumer_groups_ = 0;
  std::vector<Stmt> heads_;
  std::unordered_set<const StmtNode*> head_set_;
  Buffer head_full_, head_empty_;
  Expr head_phase_;
  bool over_ = false;    // the result tile staged over a copied buffer may share its bytes
  Buffer staged_free_;   // ... then the producer waits on this barrier before the buffer's first load of a tile
  std::optional<size_t> turn_;
  Rotation rotated_;
  Stmt consumer_loop_;
  std::unordered_set<const StmtNode*> spine_;
};

}  // namespace

RewriteResult rewrite_kernel(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p, int64_t threads,
                             const PassContext& ctx, const ReadOnly* read_only) {
  return KernelRewrite(kernel, sp, p, threads, ctx, read_only).run();
}

}  // namespace tilec::passes::ws
