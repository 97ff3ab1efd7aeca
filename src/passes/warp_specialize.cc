// Pass warp_specialize: a pipelined GEMM main loop on sm_90a becomes a producer warpgroup
// that issues TMA loads and consumer warpgroups that run wgmma, handing the pipeline's
// shared buffers back and forth through mbarriers (MODEL.md "Software pipelining", the
// sm_90 form; HOPPER.md section 5).
//
// Input:  tile IR after pipeline_planning (planned T.Pipelined loops: canonical bodies,
//         `stage` lists).
// Output: for each kernel that qualifies (below), with T the kernel's threads and S the
//         loop's num_stages, loop `for k in [m, m + n)`, slot = (k - m) % S and
//         phase = ((k - m) / S) % 2:
//           KernelLaunch(threads = T + 128)
//             <the wrappers around the loop: Lets, Allocates (the copied shared buffers
//              now with S versions: shape (S, ...)), Annotates>
//             full = barriers[S] (arrive count 1), empty = barriers[S] (arrive count: the
//                    consumer warpgroups, of the whole cluster when tiles are multicast)
//             barrier_init(full); barrier_init(empty)
//             if tx >= T:   Annotate(thread_range {T, 128, 2}):
//                             setmaxnreg_dec(24)                       (T = 256: 24/240; 384: 24/160)
//                             if tx == T: Annotate(thread_range {T, 1, 0}):
//                               for k: barrier_wait(empty[slot], phase ^ 1)
//                                      T.tma_copy(src, dst[slot], barrier=full[slot]) ...
//                                      barrier_arrive(full[slot])
//             else:         Annotate(thread_range {0, T, 1}):
//                             setmaxnreg_inc(240)
//                             <the kernel body, the loop replaced by>
//                               for k: barrier_wait(full[slot], phase)
//                                      <the loop's later-stage statements, dst -> dst[slot]>
//                                      barrier_arrive(empty[slot])   (after the last reader, by
//                                      thread 0 of each consumer warpgroup)
//         With a cluster along one grid dimension (T.Kernel(..., cluster_dims=)), a copy whose
//         source does not depend on that block index is split into one band of rows per CTA
//         of the cluster, each multicast to all of them (tma_copy cluster_mask); consumers
//         then release a slot on every CTA's empty barrier, and cluster barriers follow the
//         barrier initialisation and end the kernel.
//         When those statements are only gemms from shared memory (a GEMM main loop), they
//         do not wait for their wgmmas (wg_wait -1): the step ends with wgmma_wait(1) and
//         releases the previous slot (k > m), and wgmma_wait(0) follows the loop — one
//         wgmma group stays in flight across iterations (CUTLASS's mainloop).
//         Copies whose buffers are first and last read by different consumer statements get
//         their own full/empty pair (attention: K for S = Q K^T, V for O += P V): the producer
//         waits / arrives per group, consumers wait for a group's slot right before its first
//         reader and release it after its last one.
//         Two consumer warpgroups (T = 256) whose steps run more than gemms take turns at the
//         step's first gemm (tilec.pingpong; FlashAttention-3's ping-pong): tl.pingpong_wait
//         on named barrier 14 + wg, issue (wg_wait -1), tl.pingpong_pass of 15 - wg,
//         wgmma_wait(0); warpgroup 1 passes barrier 14 once before its first step.
//         A producer thread may run S steps ahead of the consumers; each slot's full
//         barrier completes when the producer arrived and the TMA bytes landed, its empty
//         barrier when all T consumer threads are done reading it.
// Qualifies when: the target has wgmma and TMA, neither tl.disable_warp_specialized nor
//   tl.disable_tma_lower is set; the block is one-dimensional, T a multiple of 128 with
//   T + 128 <= 1024; the kernel has exactly one pipelined loop (num_stages >= 2), not
//   nested in another loop or a condition, and every wrapper between the kernel and the
//   loop is a Let without memory reads, an Allocate or an Annotate; the loop's stage-0
//   statements are all T.copy global -> shared that TMA can do (no disable_tma, no other
//   prefer_instruction), into distinct shared buffers without a user layout that nothing
//   outside the loop touches; every later-stage reader of those buffers is a T.gemm that
//   selects wgmma on T threads; the copies' regions read no memory.
// Everything else is left to inject_pipeline (cp.async on sm_80+).
// Before: pipeline_planning.  After: inject_pipeline, layout_inference, lower_tile_ops.
// Files: the analysis (the spine, copy groups, the rotated step, ping-pong turns) is in
// warp_specialize_plan.{h,cc}, the persistent tile loop in warp_specialize_tiles.cc; this file
// checks that a loop qualifies (plan_loop) and rewrites the kernel (rewrite).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "ops/copy_tma.h"
#include "ops/gemm_operands.h"
#include "passes/cuda_back_util.h"
#include "passes/pipeline_body.h"
#include "passes/warp_specialize_plan.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/target/cuda/gemm_isel.h"

namespace tilec::passes {

namespace {

using namespace ir;
namespace pl = pipeline;
using namespace ws;

constexpr int64_t kProducerThreads = 128;
// Named barriers 14 and 15: the turns of two consumer warpgroups (tl.pingpong_wait/pass);
// the roles' own barriers count up from 1.
constexpr int64_t kPingpongBarrier = 14;

// Selection queries on the consumers' threads.
using ConsumerEnv = back::PassOpEnv;


class WarpSpecializer : public IRMutator {
 public:
  explicit WarpSpecializer(const PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    int64_t threads = 1;
    for (size_t i = 0; i < op->threads.size(); ++i)
      if (i > 0 && op->threads[i] != 1) return refuse(s, "the block is not one-dimensional");
    threads = op->threads.empty() ? 1 : op->threads[0];
    if (threads % 128 != 0)
      return refuse(s, "the block has " + std::to_string(threads) + " threads, not whole warpgroups (128)");
    if (threads + kProducerThreads > 1024)
      return refuse(s, "a producer warpgroup would take the block past 1024 threads");
    // Kernels that split their warps themselves (T.ws) keep their roles.
    bool has_roles = false;
    for_each_node(op->body, [&](const Node* n) {
      if (auto* a = dynamic_cast<const AnnotateNode*>(n); a && (a->key == kThreadRangeKey || a->key == "ws"))
        has_roles = true;
    });
    if (has_roles) return refuse(s, "the kernel splits its warps itself (T.ws)");
    auto sp = find_spine(op->body);
    if (!sp)
      return refuse(s, "it needs exactly one T.Pipelined loop, not inside another loop or a condition");
    // tilec.ws_indirect_copies: values and copy regions may read global tensors the kernel never
    // writes (a paged cache's block table, varlen offsets); the producer thread reads them too.
    read_only_.reset();
    if (ctx_.get_bool("tilec.ws_indirect_copies")) read_only_ = read_only_globals(op->body);
    const ReadOnly* ro = read_only_ ? &*read_only_ : nullptr;
    for (const StmtNode* w : sp->wrappers)
      if (auto* l = dynamic_cast<const LetNode*>(w); l && !reads_only(l->value, ro))
        return refuse(s, "a value the loop depends on ('" + l->var->name + "') is read from memory" +
                             (ro ? " that the kernel also writes" : "; tilec.ws_indirect_copies allows reads of tensors "
                                                                    "the kernel does not write"));
    auto plan = plan_loop(sp->loop, op->body, threads);
    if (!plan) return s;
    return rewrite(op, *sp, *plan, threads);
  }

 private:
  // Why the last kernel was not specialized (explain()); "" when it was.
  Stmt refuse(const Stmt& s, std::string why) {
    why_not_ = std::move(why);
    return s;
  }
  std::nullopt_t no(std::string why) {
    why_not_ = std::move(why);
    return std::nullopt;
  }

  std::optional<Plan> plan_loop(const ForNode* f, const Stmt& kernel_body, int64_t threads) {
    if (f->pipeline.num_stages < 2 || f->pipeline.stage.empty()) return no("the loop has fewer than 2 stages");
    Plan p;
    p.loop = f;
    p.stages = f->pipeline.num_stages;
    p.body = pl::split_body(f->body);
    const auto& stage = f->pipeline.stage;
    if (stage.size() != p.body.stmts.size()) return no("the loop's stages do not match its statements");
    ConsumerEnv env(ctx_, threads);
    std::unordered_map<const BufferNode*, size_t> writer;
    for (size_t j = 0; j < p.body.stmts.size(); ++j) {
      const Stmt& st = p.body.stmts[j];
      if (stage[j] != 0) {
        p.consumers.push_back(j);
        continue;
      }
      if (std::string why = why_not_producer_copy(st, read_only_ ? &*read_only_ : nullptr); !why.empty())
        return no(why);
      const TileOpNode* op = tile_op(st);
      const BufferNode* dst = region_arg(*op, 1).buffer.get();
      if (writer.count(dst)) return no("two copies (" + describe(st) + ") write one buffer");
      writer[dst] = j;
      p.producers.push_back(j);
    }
    if (p.producers.empty() || p.consumers.empty()) return no("the loop has no copies or nothing after them");
    // Readers: wgmma gemms only.
    for (size_t j : p.consumers) {
      pl::Access acc = pl::accesses(p.body.stmts[j]);
      bool touches = false;
      for (const auto& [b, w] : writer) touches |= acc.reads.count(b) || acc.writes.count(b);
      if (!touches) continue;
      const TileOpNode* op = tile_op(p.body.stmts[j]);
      if (!op || op->op != "gemm")
        return no("a copied buffer is read by something other than T.gemm (" + describe(p.body.stmts[j]) + ")");
      for (const auto& [b, w] : writer)
        if (acc.writes.count(b)) return no("a copied buffer is written in the loop (" + describe(p.body.stmts[j]) + ")");
      ops::GemmOp g = ops::analyze_gemm(*op, env);
      cuda::GemmPlan gp = cuda::select_gemm(g.query, ctx_.target());
      if (gp.inst != cuda::GemmInst::kWgmma)
        return no("the gemm reading the copies (" + describe(p.body.stmts[j]) + ") does not use wgmma");
      p.widest_atom = std::max(p.widest_atom, gp.atom_n);
    }
    // The copied buffers: not used outside the loop, no user layout.
    bool outside = false, user_layout = false;
    for_each_node(kernel_body, [&](const Node* n) {
      if (auto* a = dynamic_cast<const AnnotateNode*>(n); a && a->key == "layout_map")
        if (auto* m = std::get_if<LayoutMap>(&a->value))
          for (const auto& [b, l] : *m) user_layout |= writer.count(b.get()) > 0;
    });
    std::unordered_set<const Node*> inside;
    for_each_node(f->body, [&](const Node* n) { inside.insert(n); });
    for_each_node(kernel_body, [&](const Node* n) {
      if (inside.count(n)) return;
      const BufferNode* b = nullptr;
      if (auto* l = dynamic_cast<const BufferLoadNode*>(n)) b = l->buffer.get();
      if (auto* st = dynamic_cast<const BufferStoreNode*>(n)) b = st->buffer.get();
      if (b && writer.count(b)) outside = true;
      if (auto* t = dynamic_cast<const TileOpNode*>(n))
        for (const auto& a : t->args)
          if (auto* r = std::get_if<BufferRegion>(&a); r && writer.count(r->buffer.get())) outside = true;
    });
    if (outside) return no("a copied buffer is also used outside the loop");
    if (user_layout) return no("a copied buffer has a layout given by T.annotate_layout");
    // The loop's own wrappers may not allocate a copied buffer.
    for (const auto& w : p.body.wrappers)
      if (auto* a = w.as<AllocateNode>(); a && writer.count(a->buffer.get()))
        return no("a copied buffer is allocated inside the loop");
    for (const auto& [b, j] : writer) {
      std::vector<Expr> shape = {int_imm(p.stages)};
      shape.insert(shape.end(), b->shape.begin(), b->shape.end());
      p.versioned[b] = make_buffer(b->name, shape, b->dtype, b->scope, {}, b->loc);
    }
    return p;
  }

  Stmt rewrite(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p, int64_t threads) {
    const ForNode* f = p.loop;
    const SourceLoc loc = f->loc;
    const int64_t S = p.stages;
    const DataType it = f->loop_var->dtype;
    Var k = make_var(f->loop_var->name, it, f->loop_var->loc);
    // Persistent: every block loops over tiles; the pipeline's slots and phases run on
    // across them (tile_i tiles of n steps each came before).
    const bool persistent = want_persistent(kernel, sp, p, ctx_);
    Var tile_i = make_var("tile_i", it, loc);
    Expr local = is_zero(f->min) ? Expr(k) : Expr(k) - f->min;
    // The steps of the tiles before this one: tile_i whole tiles, or, when the tiles' step
    // counts differ (uneven), a running count each role keeps in `done`.
    const bool uneven = persistent && work_dim(kernel, sp, p) >= 0;
    Buffer done = make_buffer(f->loop_var->name + "_done", {int_imm(1)}, it, Scope::kVar, {}, loc);
    Expr tile_base = uneven ? buffer_load(done, {int_imm(0)}, loc) : Expr(tile_i) * cast(it, f->extent);
    Expr iter = persistent ? tile_base + local : local;
    Expr slot = floormod(iter, int_imm(S, it));
    Expr phase = floormod(floordiv(iter, int_imm(S, it)), int_imm(2, it));
    const bool deferred = defer_release(p);
    std::vector<CopyGroup> groups = copy_groups(p, deferred);
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string suffix = groups.size() == 1 ? "" : std::to_string(g);
      groups[g].full = make_buffer(f->loop_var->name + "_full" + suffix, {int_imm(S)}, DataType::UInt(64),
                                   Scope::kBarrier, {}, loc);
      groups[g].empty = make_buffer(f->loop_var->name + "_empty" + suffix, {int_imm(S)}, DataType::UInt(64),
                                    Scope::kBarrier, {}, loc);
    }
    VarMap rename;
    rename[f->loop_var.get()] = k;

    // Clusters along one grid dimension: a tile every CTA of the cluster loads alike (its
    // source does not depend on that block index) is split into one band per CTA, each
    // multicast to all of them. A slot is then free only when the consumers of every CTA
    // released it, so they arrive on every CTA's empty barrier.
    int cdim = -1;
    int64_t csize = 1;
    for (size_t d = 0; d < kernel->cluster.size(); ++d) {
      csize *= kernel->cluster[d];
      if (kernel->cluster[d] > 1) cdim = cdim == -1 ? static_cast<int>(d) : -2;
    }
    auto cluster_invariant = [&](const BufferRegion& r) {
      const VarNode* b = kernel->block_vars[cdim].get();
      for (const auto& rg : r.region)
        if (back::uses_var(substitute(rg.min, sp.let_values), b)) return false;
      return true;
    };
    bool multicast = false;
    const int64_t cta_mask = (int64_t{1} << csize) - 1;
    // Copies ahead of the loop (attention's Q) go to the producer too: once per tile, through
    // their own full/empty pair, so that the next tile's load overlaps this tile's epilogue.
    // Not with two blocks per SM (one consumer warpgroup, below): the other block's main loop
    // already covers this one's head loads, and within the 128-register launch budget the
    // producer's extra state made ptxas spill (the backward example at d128).
    const int consumer_groups = static_cast<int>(threads / 128);
    const bool two_per_sm = consumer_groups == 1 && p.widest_atom <= 128;
    std::vector<Stmt> heads;
    if (cdim == -1 && !two_per_sm && ctx_.get_bool("tilec.producer_head_copies"))
      heads = head_copies(sp, p, kernel->body, read_only_ ? &*read_only_ : nullptr);
    std::unordered_set<const StmtNode*> head_set;
    for (const Stmt& h : heads) head_set.insert(h.get());
    Buffer head_full = make_buffer("head_full", {int_imm(1)}, DataType::UInt(64), Scope::kBarrier, {}, loc);
    Buffer head_empty = make_buffer("head_empty", {int_imm(1)}, DataType::UInt(64), Scope::kBarrier, {}, loc);
    Expr head_phase = persistent ? floormod(Expr(tile_i), int_imm(2, it)) : int_imm(0, it);

    // Producer: one thread; per group, wait for the slot, issue its copies, arrive.
    std::vector<Stmt> produce;
    for (const CopyGroup& grp : groups) {
    Expr full_slot = buffer_load(grp.full, {slot}, loc);
    produce.push_back(back::call_stmt("barrier_wait", {buffer_load(grp.empty, {slot}, loc), int_imm(1, it) - phase}, loc));
    for (size_t j : grp.producers) {
      Stmt st = substitute(p.body.stmts[j], rename);
      st = pl::VersionAccesses(p.versioned, slot).mutate(st);
      auto* c = st.as<TileOpNode>();
      if (cdim >= 0 && csize <= 16 && ctx_.get_bool("tilec.tma_multicast") && cluster_invariant(region_arg(*c, 0))) {
        Expr rank = ir::call(DataType::Int(32), "tl.block_rank_in_cluster", {}, loc);
        if (auto band = ops::tma_row_band(*c, csize, rank)) {
          produce.push_back(make_tile_op("tma_copy", *band, {{"barrier", full_slot}, {"cluster_mask", cta_mask}}, c->loc));
          multicast = true;
          continue;
        }
      }
      produce.push_back(make_tile_op("tma_copy", c->args, {{"barrier", full_slot}}, c->loc));
    }
    produce.push_back(back::call_stmt("barrier_arrive", {full_slot}, loc));
    }
    Stmt producer_loop = make_for(k, f->min, f->extent, ForKind::kSerial, seq(produce, loc), loc);
    if (!heads.empty()) {
      Expr full0 = buffer_load(head_full, {int_imm(0)}, loc);
      std::vector<Stmt> head_loads = {
          back::call_stmt("barrier_wait", {buffer_load(head_empty, {int_imm(0)}, loc), int_imm(1, it) - head_phase}, loc)};
      for (const Stmt& h : heads) {
        auto* c = h.as<TileOpNode>();
        head_loads.push_back(make_tile_op("tma_copy", c->args, {{"barrier", full0}}, c->loc));
      }
      head_loads.push_back(back::call_stmt("barrier_arrive", {full0}, loc));
      Stmt head = seq(head_loads, loc);
      if (ctx_.get_bool("tilec.head_copies_after_first_step")) {
        // The first step's slots free up during the previous tile, the head's only at its end:
        // issue the first step's copies first (and the head alone when the loop is empty).
        std::vector<Stmt> step = produce;
        step.push_back(if_then_else(binary(NodeKind::kEQ, Expr(k), f->min), head, nullptr, loc));
        producer_loop = make_for(k, f->min, f->extent, ForKind::kSerial, seq(step, loc), loc);
        auto steps = as_const_int(f->extent);
        if (!steps || *steps <= 0) {
          Expr empty = binary(NodeKind::kLE, f->extent, int_imm(0, f->extent->dtype));
          producer_loop = seq({producer_loop, if_then_else(empty, back::renew_bound_vars(head), nullptr, loc)}, loc);
        }
      } else {
        producer_loop = seq({head, producer_loop}, loc);
      }
    }

    // Consumers: the later stages, with the slot's handshake. A main loop of gemms only
    // keeps one wgmma group in flight: slot k is released once its gemms are done, which
    // is checked one iteration later (wgmma_wait(1)), so the tensor cores never idle
    // while a step waits for its own MMAs.
    // One thread of each consumer warpgroup releases a slot (its wgmmas are done), on every
    // CTA of the cluster when tiles are multicast.
    const Var tx = kernel->thread_vars[0];
    auto release_on = [&](const Buffer& empty, const Expr& which) -> Stmt {
      Expr bar = buffer_load(empty, {which}, loc);
      Stmt arrive;
      if (multicast) {
        std::vector<Stmt> all;
        for (int64_t q = 0; q < csize; ++q)
          all.push_back(back::call_stmt("tl.mbarrier_arrive_cluster", {bar, int_imm(q, DataType::UInt(32))}, loc));
        arrive = seq(all, loc);
      } else {
        arrive = back::call_stmt("barrier_arrive", {bar}, loc);
      }
      return if_then_else(binary(NodeKind::kEQ, floormod(tx, int_imm(128, tx->dtype)), int_imm(0, tx->dtype)), arrive,
                          nullptr, loc);
    };
    auto release = [&](const CopyGroup& grp, const Expr& which) { return release_on(grp.empty, which); };
    // Each group's slot is awaited right before its first reader and released after its last.
    std::vector<Stmt> consume;
    auto wait_full = [&](size_t q) {
      for (const CopyGroup& grp : groups)
        if (grp.first_reader == q)
          consume.push_back(back::call_stmt("barrier_wait", {buffer_load(grp.full, {slot}, loc), phase}, loc));
    };
    auto release_done = [&](size_t q) {
      for (const CopyGroup& grp : groups)
        if (grp.last_reader == q) {
          // The slot is free once its readers' wgmmas finished.
          if (grp.waits_pending) consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc));
          consume.push_back(release(grp, slot));
        }
    };
    // Two consumer warpgroups with work besides their gemms (attention: S = Q K^T, softmax,
    // O += P V) take turns at the first gemm: one's softmax runs while the other's gemm has
    // the tensor cores.
    const std::optional<size_t> turn = deferred ? std::nullopt : pingpong_gemm(p, threads, ctx_);
    const Expr wg = floordiv(tx, int_imm(128, tx->dtype));
    auto turn_wait = [&] {
      return back::call_stmt("tl.pingpong_wait", {int_imm(kPingpongBarrier, tx->dtype) + wg}, loc);
    };
    auto turn_pass = [&] {
      return back::call_stmt("tl.pingpong_pass", {int_imm(kPingpongBarrier + 1, tx->dtype) - wg}, loc);
    };
    Rotation rotated;
    const bool rot = !deferred && rotation(p, groups, ctx_, &rotated);
    for (size_t q = 0; q < p.consumers.size() && !rot; ++q) {
      Stmt st = substitute(p.body.stmts[p.consumers[q]], rename);
      st = pl::VersionAccesses(p.versioned, slot).mutate(st);
      wait_full(q);
      if (turn && q == *turn) {
        // The turn passes once the gemm is issued (the other warpgroup's gemm queues behind
        // it); then this warpgroup waits for its own.
        consume.push_back(turn_wait());
        consume.push_back(with_wg_wait(st, -1));
        consume.push_back(turn_pass());
        consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc));
        release_done(q);
        continue;
      }
      if (deferred) st = with_wg_wait(st, -1);
      consume.push_back(st);
      if (deferred) {
        if (q + 1 == p.consumers.size()) {
          // The previous slot's gemms are done when at most this step's group runs.
          Expr prev = floormod(iter + int_imm(S - 1, it), int_imm(S, it));
          consume.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(1)}, loc));
          consume.push_back(
              if_then_else(binary(NodeKind::kGT, local, int_imm(0, it)), release(groups[0], prev), nullptr, loc));
        }
        continue;
      }
      release_done(q);
    }
    Stmt consumer_loop = make_for(k, f->min, f->extent, ForKind::kSerial,
                                  pl::join_body(p.body.wrappers, std::move(consume)), loc, {}, "", f->annotations);
    if (rot) {
      // Step k issues S_k and then P_{k-1} V_{k-1} (one turn), runs the softmax of S_k while
      // P V runs, and only then touches P and O: the prologue is step m's first half, the
      // epilogue the last P V.
      const CopyGroup& gk = groups[rotated.first_group];
      const CopyGroup& gv = groups[rotated.second_group];
      auto at = [&](const Expr& e, const Expr& kval) { return substitute(e, VarMap{{k.get(), kval}}); };
      auto stmt_at = [&](size_t q, const Expr& kval, bool fresh) {
        Stmt st = substitute(p.body.stmts[p.consumers[q]], rename);
        st = pl::VersionAccesses(p.versioned, slot).mutate(st);
        if (kval) st = substitute(st, VarMap{{k.get(), kval}});
        return fresh ? back::renew_bound_vars(st) : st;
      };
      auto wait_on = [&](const CopyGroup& g, const Expr& kval) {
        return back::call_stmt("barrier_wait", {buffer_load(g.full, {at(slot, kval)}, loc), at(phase, kval)}, loc);
      };
      const Expr first = f->min, prev = Expr(k) - int_imm(1, it);
      const Expr last = f->min + f->extent - int_imm(1, it);
      const size_t q1 = rotated.first_gemm, q2 = p.consumers.size() - 1;
      // Prologue: step m up to its P V.
      std::vector<Stmt> pro = {wait_on(gk, first)};
      for (size_t q = 0; q < q1; ++q) pro.push_back(stmt_at(q, first, true));
      if (turn) pro.push_back(turn_wait());
      pro.push_back(with_wg_wait(stmt_at(q1, first, true), -1));
      if (turn) pro.push_back(turn_pass());
      pro.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc));
      pro.push_back(release(gk, at(slot, first)));
      for (size_t q = q1 + 1; q < q2; ++q) pro.push_back(stmt_at(q, first, true));
      // Steps m+1 ...: S_k and P_{k-1} V_{k-1} in flight together.
      std::vector<Stmt> step = {wait_on(gk, k)};
      for (size_t q = 0; q < q1; ++q) step.push_back(stmt_at(q, nullptr, false));
      if (turn) step.push_back(turn_wait());
      step.push_back(with_wg_wait(stmt_at(q1, nullptr, false), -1));
      step.push_back(wait_on(gv, prev));
      step.push_back(with_wg_wait(stmt_at(q2, prev, true), -1));
      if (turn) step.push_back(turn_pass());
      step.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(1)}, loc));
      step.push_back(release(gk, slot));
      for (size_t q = q1 + 1; q < rotated.touches_second; ++q) step.push_back(stmt_at(q, nullptr, false));
      step.push_back(back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc));
      step.push_back(release(gv, at(slot, prev)));
      for (size_t q = rotated.touches_second; q < q2; ++q) step.push_back(stmt_at(q, nullptr, false));
      Stmt loop = make_for(k, f->min + int_imm(1, it), f->extent - int_imm(1, it), ForKind::kSerial, seq(step, loc),
                           loc, {}, "", f->annotations);
      // Epilogue: the last P V.
      std::vector<Stmt> epi = {wait_on(gv, last), stmt_at(q2, last, true), release(gv, at(slot, last))};
      Expr any = binary(NodeKind::kGT, f->extent, int_imm(0, it));
      consumer_loop = seq({if_then_else(any, seq(pro, loc), nullptr, loc), loop,
                           if_then_else(any, seq(epi, loc), nullptr, loc)},
                          loc);
    }
    if (deferred) {
      std::vector<Stmt> drain = {consumer_loop, back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc)};
      // A persistent block's next tile needs the last slot back too.
      if (persistent) {
        Expr last = floormod(tile_base + cast(it, f->extent) - int_imm(1, it), int_imm(S, it));
        drain.push_back(if_then_else(binary(NodeKind::kGT, cast(it, f->extent), int_imm(0, it)),
                                     release(groups[0], last), nullptr, loc));
      }
      consumer_loop = seq(drain, loc);
    }

    // The consumers run the kernel body with the loop replaced and the spine's wrappers
    // taken out (they go around both roles).
    std::unordered_set<const StmtNode*> spine(sp.wrappers.begin(), sp.wrappers.end());
    std::function<Stmt(const Stmt&)> strip = [&](const Stmt& s) -> Stmt {
      if (s.get() == f) {
        if (heads.empty()) return consumer_loop;
        // The head tiles are read by the loop's gemms only: awaited before it, released after
        // its last wgmma.
        return seq({back::call_stmt("barrier_wait", {buffer_load(head_full, {int_imm(0)}, loc), head_phase}, loc),
                    consumer_loop, back::call_stmt("tl.wgmma_wait", {int_imm(0)}, loc),
                    release_on(head_empty, int_imm(0, it))},
                   loc);
      }
      if (head_set.count(s.get())) return seq(std::vector<Stmt>{}, s->loc);
      if (spine.count(s.get())) {
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
    };
    Stmt consumer_body = strip(kernel->body);
    Stmt producer_body = producer_loop;
    TileLoop tiles;
    if (persistent) {
      tiles = tile_loop_parts(kernel, sp, p, loc);
      if (uneven) {
        // Each role counts the steps of the tiles it has done.
        Expr zero = buffer_load(done, {int_imm(0)}, loc);
        Stmt count = buffer_store(done, {int_imm(0)}, zero + cast(it, f->extent), loc);
        consumer_body = seq({consumer_body, count}, loc);
        producer_body = seq({producer_body, count}, loc);
      }
      consumer_body = wrap_in_tile_loop(tiles, consumer_body, tile_i, false, loc);
      producer_body = wrap_in_tile_loop(tiles, producer_body, tile_i, true, loc);
      if (uneven) {
        Stmt start = buffer_store(done, {int_imm(0)}, int_imm(0, it), loc);
        consumer_body = seq({start, consumer_body}, loc);
        producer_body = seq({start, producer_body}, loc);
      }
    }

    // Register budgets (launch budget: 65536 per SM): one consumer warpgroup runs two CTAs per
    // SM (256 x 128 registers each: 24 producer + 232 consumer per thread); two take the whole
    // SM (384 x 168: 24 / 240); three, 24 / 160.
    // (Two CTAs only when every wgmma compiles within the 128-register launch budget: ptxas
    // places one instruction's accumulators within it, so atoms up to N = 128.)
    const int consumer_regs = consumer_groups == 1 ? (two_per_sm ? 232 : 240)
                              : consumer_groups == 2 ? 240
                              : consumer_groups == 3 ? 160
                                                     : 0;
    min_blocks_ = two_per_sm ? 2 : 1;
    std::vector<Stmt> producer_stmts, consumer_stmts;
    if (consumer_regs) {
      producer_stmts.push_back(back::call_stmt("tl.setmaxnreg_dec", {int_imm(24)}, loc));
      consumer_stmts.push_back(back::call_stmt("tl.setmaxnreg_inc", {int_imm(consumer_regs)}, loc));
    }
    // Warpgroup 0 takes the first turn: warpgroup 1 passes it once.
    if (turn)
      consumer_stmts.push_back(if_then_else(tx >= int_imm(128, tx->dtype),
                                            back::call_stmt("tl.pingpong_pass", {int_imm(kPingpongBarrier, tx->dtype)}, loc),
                                            nullptr, loc));
    producer_stmts.push_back(
        if_then_else(binary(NodeKind::kEQ, tx, int_imm(threads, tx->dtype)),
                     annotate(kThreadRangeKey, std::vector<int64_t>{threads, 1, 0}, producer_body, loc), nullptr, loc));
    consumer_stmts.push_back(consumer_body);
    Stmt roles = if_then_else(
        tx >= int_imm(threads, tx->dtype),
        annotate(kThreadRangeKey, std::vector<int64_t>{threads, kProducerThreads, 2}, seq(producer_stmts, loc), loc),
        annotate(kThreadRangeKey, std::vector<int64_t>{0, threads, 1}, seq(consumer_stmts, loc), loc), loc);
    auto whole = [](const Buffer& b) {
      BufferRegion r;
      r.buffer = b;
      for (const auto& e : b->shape) r.region.push_back(Range{int_imm(0), e});
      return r;
    };
    // Empty barriers: one arrival per consumer warpgroup (of every CTA of the cluster).
    const int64_t releases = (threads / 128) * (multicast ? csize : 1);
    std::vector<Stmt> top;
    if (!heads.empty()) {
      top.push_back(make_tile_op("barrier_init", {whole(head_full)}, {{"arrive_count", std::vector<int64_t>{1}}}, loc));
      top.push_back(
          make_tile_op("barrier_init", {whole(head_empty)}, {{"arrive_count", std::vector<int64_t>{releases}}}, loc));
    }
    for (const CopyGroup& grp : groups) {
      top.push_back(make_tile_op("barrier_init", {whole(grp.full)}, {{"arrive_count", std::vector<int64_t>(S, 1)}}, loc));
      top.push_back(
          make_tile_op("barrier_init", {whole(grp.empty)}, {{"arrive_count", std::vector<int64_t>(S, releases)}}, loc));
    }
    // The other CTAs arrive on these barriers and write into this CTA's shared memory: the
    // barriers are initialised cluster-wide before, and no CTA exits before all are done.
    if (multicast) top.push_back(back::call_stmt("tl.cluster_sync", {}, loc));
    top.push_back(roles);
    if (multicast) top.push_back(back::call_stmt("tl.cluster_sync", {}, loc));
    Stmt body = seq(top, loc);
    for (auto g = groups.rbegin(); g != groups.rend(); ++g) body = allocate(g->full, allocate(g->empty, body, loc), loc);
    if (!heads.empty()) body = allocate(head_full, allocate(head_empty, body, loc), loc);
    if (uneven) body = allocate(done, body, loc);
    // The spine's wrappers around everything, the copied buffers with their versions.
    for (auto w = sp.wrappers.rbegin(); w != sp.wrappers.rend(); ++w) {
      if (auto* l = dynamic_cast<const LetNode*>(*w)) {
        if (!persistent) body = let(l->var, l->value, body, l->loc);  // else inside the tile loops
      } else if (auto* a = dynamic_cast<const AllocateNode*>(*w)) {
        auto v = p.versioned.find(a->buffer.get());
        body = allocate(v == p.versioned.end() ? a->buffer : v->second, body, a->loc);
      } else if (auto* a = dynamic_cast<const AnnotateNode*>(*w)) {
        body = annotate(a->key, a->value, body, a->loc);
      }
    }
    auto n = std::make_shared<KernelLaunchNode>(*kernel);
    n->threads[0] = threads + kProducerThreads;
    n->body = body;
    if (persistent) {
      n->grid = {tiles.total};
      n->block_vars = {tiles.start};
      persistent_ = true;
    }
    return Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
  }

  const PassContext& ctx_;
  std::optional<ReadOnly> read_only_;  // with tilec.ws_indirect_copies: the kernel's read-only globals

 public:
  int min_blocks_ = 0;  // blocks per SM the register budget was planned for (0: not specialized)
  std::string why_not_;  // why a kernel with a pipelined loop was left alone (for explain())
  bool persistent_ = false;
};

}  // namespace

Pass warp_specialize_pass() {
  return {"warp_specialize", [](const PrimFunc& f, PassContext& ctx) {
            const target::Target& t = ctx.target();
            if (!t.has_wgmma() || !t.has_tma() || ctx.get_bool("tl.disable_warp_specialized") ||
                ctx.get_bool("tl.disable_tma_lower"))
              return f;
            WarpSpecializer ws(ctx);
            Stmt body = ws.mutate(f->body);
            if (body.same_as(f->body)) {
              bool pipelined = false;
              for_each_node(f->body, [&](const Node* n) {
                auto* l = dynamic_cast<const ForNode*>(n);
                pipelined |= l && l->for_kind == ForKind::kPipelined;
              });
              if (!pipelined || ws.why_not_.empty()) return f;
              AttrMap attrs = f->attrs;
              attrs.emplace_back(kNotWarpSpecializedAttr, ws.why_not_);
              return make_prim_func(f->name, f->params, f->body, std::move(attrs), f->loc);
            }
            AttrMap attrs = f->attrs;
            attrs.emplace_back(kMinBlocksPerSmAttr, int64_t{ws.min_blocks_});
            if (ws.persistent_) attrs.emplace_back(kPersistentAttr, int64_t{ws.min_blocks_});
            return make_prim_func(f->name, f->params, body, std::move(attrs), f->loc);
          }};
}

}  // namespace tilec::passes
