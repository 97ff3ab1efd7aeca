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
//                                      thread 0 of each consumer warpgroup; when a reader
//                                      is the threads' own loads: __syncwarp, then lane 0 of
//                                      each consumer warp, and the empty barrier counts warps)
//         With a cluster along one grid dimension (T.Kernel(..., cluster_dims=)), a copy whose
//         source is the same for the blocks of a cluster (cluster_invariance.h) is split into one band of rows per CTA
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
//         Two or three consumer warpgroups (T = 256, 384) whose steps run more than gemms and
//         that own rows of the first gemm take turns at it, round robin (tilec.pingpong;
//         FlashAttention-3's ping-pong): tl.pingpong_wait on named barrier 16 - G + wg, issue
//         (wg_wait -1), tl.pingpong_pass of the next warpgroup's barrier, wgmma_wait(0); the
//         last warpgroup passes barrier 16 - G once before its first step.
//         A producer thread may run S steps ahead of the consumers; each slot's full
//         barrier completes when the producer arrived and the TMA bytes landed, its empty
//         barrier when all T consumer threads are done reading it.
//         Persistent (tilec.persistent, when the shared buffers fit side by side): grid =
//         the tile count, each role loops over its block's tiles (warp_specialize_tiles.cc);
//         with a step count that depends on one block index (tilec.persistent_uneven) that
//         index varies slowest, tiles go in a snake, and slot / phase count from a per-role
//         running step count; with a cluster (tilec.persistent_clusters, even tiles) the
//         launch's clusters of consecutive blocks take cluster tiles, one tile per rank. Head copies (tilec.producer_head_copies, not with two blocks per
//         SM): a T.copy global -> shared ahead of the loop whose tile only the loop's gemms
//         read is issued by the producer once per tile (head_full / head_empty); consumers
//         wait before the loop and release after it.
//         A result tile stage_output_tiles staged over a copied buffer (kStagedOverStagesAttr)
//         in a persistent kernel: barrier staged_free (arrive count 1); the producer waits on
//         it (phase 1 - tile_i % 2) before the buffer's group in a tile's first step, and the
//         consumers' TMA store of the tile carries release=staged_free (its issuing thread
//         arrives after the bulk read). Only without a cluster and when every tile loads the
//         buffer (a positive constant step count) or the consumers wait for a head copy each
//         tile, so that arrivals stay within one phase of the waits; otherwise the tile counts
//         in the persistence check and the attr is dropped if the kernel stays persistent.
// Qualifies when: the target has wgmma and TMA, neither tl.disable_warp_specialized nor
//   tl.disable_tma_lower is set; the block is one-dimensional, T a multiple of 128 with
//   T + 128 <= 1024; the kernel has exactly one pipelined loop (num_stages >= 1: with 1,
//   S = 1 buffer, whose slot the producer refills once its readers released it), not
//   nested in another loop or a condition, and every wrapper between the kernel and the
//   loop is a Let, an Allocate or an Annotate; the loop's stage-0
//   statements are all T.copy global -> shared that TMA can do (no disable_tma, no other
//   prefer_instruction), into distinct shared buffers without a user layout that nothing
//   outside the loop touches; every later-stage reader of those buffers is a T.gemm that
//   selects wgmma on T threads or a statement that only loads from them (a T.Parallel loop, a
//   T.copy, a reduction; at least one reader is such a gemm); the kernel calls no
//   T.sync_grid() (every thread must reach it, and the grid must stay as written); the
//   copies' regions and the wrapper Lets read no memory
//   (with tilec.ws_indirect_copies: none but global tensors the kernel never writes).
// Everything else is left to inject_pipeline (cp.async on sm_80+).
// Before: pipeline_planning.  After: inject_pipeline, layout_inference, lower_tile_ops.
// Files: the analysis (the spine, copy groups, the rotated step, ping-pong turns) is in
// warp_specialize_plan.{h,cc}, the persistent tile loop in warp_specialize_tiles.cc, the
// rewrite in warp_specialize_rewrite.cc; this file checks that a loop qualifies (plan_loop).
#include <algorithm>
#include <optional>

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


// Selection queries on the consumers' threads.
using ConsumerEnv = back::PassOpEnv;

// A tile op whose reads of a copied tile are the threads' own loads, done when the thread
// moves on (so a __syncwarp covers them): a copy into registers or shared memory, a reduction.
// Not a copy to global memory (a TMA store reads the tile later, asynchronously).
bool is_plain_reader(const TileOpNode& op) {
  if (op.op == "copy") return region_arg(op, 1).buffer->scope != Scope::kGlobal;
  return op.op.rfind("reduce_", 0) == 0 || op.op == "cumsum";
}


class WarpSpecializer : public IRMutator {
 public:
  // over: kStagedOverStagesAttr's (tile, buffer) names, when the function has it.
  WarpSpecializer(const PassContext& ctx, std::optional<std::pair<std::string, std::string>> over)
      : ctx_(ctx), over_(std::move(over)) {}

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
    // A grid barrier must be reached by every thread of the block (the producer warpgroup
    // would never call it), and a persistent grid would change the grid it synchronizes.
    if (contains_grid_sync(op->body)) return refuse(s, "the kernel synchronizes its grid (T.sync_grid)");
    bool own_budgets = false;  // T.set_max_nreg, honored (lower_register_budgets)
    for_each_node(op->body, [&](const Node* n) {
      auto* c = dynamic_cast<const CallNode*>(n);
      own_budgets |= c && c->op.rfind("tl.setmaxnreg", 0) == 0;
    });
    if (own_budgets) return refuse(s, "the kernel sets its own register budgets (T.set_max_nreg)");
    auto sp = find_spine(op->body);
    if (!sp)
      return refuse(s, "it needs exactly one T.Pipelined loop, not inside another loop or a condition");
    // tilec.ws_indirect_copies: values and copy regions may read global tensors the kernel never
    // writes (a paged cache's block table, varlen offsets); the producer thread reads them too.
    read_only_.reset();
    if (ctx_.get_bool("tilec.ws_indirect_copies")) read_only_ = read_only_globals(op->body);
    const ReadOnly* ro = read_only();
    for (const StmtNode* w : sp->wrappers)
      if (auto* l = dynamic_cast<const LetNode*>(w); l && !reads_only(l->value, ro))
        return refuse(s, "a value the loop depends on ('" + l->var->name + "') is read from memory" +
                             (ro ? " that the kernel also writes" : "; tilec.ws_indirect_copies allows reads of tensors "
                                                                    "the kernel does not write"));
    auto plan = plan_loop(sp->loop, op->body, threads);
    if (!plan) return s;
    RewriteResult r = rewrite_kernel(op, *sp, *plan, threads, ctx_, ro);
    min_blocks_ = r.min_blocks;
    staged_over_kept_ = r.staged_over_kept;
    persistent_ |= r.persistent;
    uneven_ |= r.uneven;
    return r.kernel;
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
    if (f->pipeline.stage.empty()) return no("the loop is not pipelined (num_stages=0, or no T.copy global -> shared)");
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
      if (std::string why = why_not_producer_copy(st, read_only()); !why.empty())
        return no(why);
      const TileOpNode* op = tile_op(st);
      const BufferNode* dst = region_arg(*op, 1).buffer.get();
      if (writer.count(dst)) return no("two copies (" + describe(st) + ") write one buffer");
      writer[dst] = j;
      p.producers.push_back(j);
    }
    if (p.producers.empty() || p.consumers.empty()) return no("the loop has no copies or nothing after them");
    // Readers: wgmma gemms, and statements that only read the tiles (the threads' own loads:
    // attention's backward reads its LSE / Delta rows); at least one gemm.
    bool gemm_reads = false;
    for (size_t j : p.consumers) {
      pl::Access acc = pl::accesses(p.body.stmts[j]);
      bool touches = false;
      for (const auto& [b, w] : writer) touches |= acc.reads.count(b) || acc.writes.count(b);
      if (!touches) continue;
      for (const auto& [b, w] : writer)
        if (acc.writes.count(b)) return no("a copied buffer is written in the loop (" + describe(p.body.stmts[j]) + ")");
      const TileOpNode* op = tile_op(p.body.stmts[j]);
      if (!op || op->op != "gemm") {
        if (op && !is_plain_reader(*op))
          return no("a copied buffer is read by a " + op->op + " (" + describe(p.body.stmts[j]) +
                    "): only T.gemm and the threads' own loads read the producer's tiles");
        continue;
      }
      gemm_reads = true;
      ops::GemmOp g = ops::analyze_gemm(*op, env);
      cuda::GemmPlan gp;
      try {
        gp = cuda::select_gemm(g.query, ctx_.target());
      } catch (const UserError&) {
        // As written no instruction takes it: stage_gemm_operands moves a register operand
        // to shared memory later (an int8 A, too few rows for wgmma), or the gemm's own error
        // comes where it is lowered.
        return no("the gemm reading the copies (" + describe(p.body.stmts[j]) +
                  ") takes a register operand no instruction reads from registers");
      }
      if (gp.inst != cuda::GemmInst::kWgmma)
        return no("the gemm reading the copies (" + describe(p.body.stmts[j]) + ") does not use wgmma");
      p.widest_atom = std::max(p.widest_atom, gp.atom_n);
    }
    if (!gemm_reads) return no("no T.gemm reads the copied buffers");
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
    // A 1-D tile becomes one row of a (stages, 1, n) buffer, not a (stages, n) tile whose
    // rows would be the versions (pipeline::VersionAccesses indexes the row with 0).
    for (const auto& [b, j] : writer) {
      std::vector<Expr> shape(b->ndim() == 1 ? 2 : 1, int_imm(1));
      shape[0] = int_imm(p.stages);
      shape.insert(shape.end(), b->shape.begin(), b->shape.end());
      p.versioned[b] = make_buffer(b->name, shape, b->dtype, b->scope, {}, b->loc);
    }
    // The result tile stage_output_tiles staged over one of these buffers.
    if (over_)
      for (const auto& [b, j] : writer)
        if (b->name == over_->second) {
          p.over_tile = over_->first;
          p.over_host = b;
        }
    return p;
  }

  const PassContext& ctx_;
  const std::optional<std::pair<std::string, std::string>> over_;
  std::optional<ReadOnly> read_only_;  // with tilec.ws_indirect_copies: the kernel's read-only globals
  const ReadOnly* read_only() const { return read_only_ ? &*read_only_ : nullptr; }

 public:
  int min_blocks_ = 0;  // blocks per SM the register budget was planned for (0: not specialized)
  std::string why_not_;  // why a kernel with a pipelined loop was left alone (for explain())
  bool persistent_ = false;
  bool uneven_ = false;
  bool staged_over_kept_ = true;
};

}  // namespace

Pass warp_specialize_pass() {
  return {"warp_specialize", [](const PrimFunc& f, PassContext& ctx) {
            const target::Target& t = ctx.target();
            if (!t.has_wgmma() || !t.has_tma() || ctx.get_bool("tl.disable_warp_specialized") ||
                ctx.get_bool("tl.disable_tma_lower"))
              return f;
            WarpSpecializer ws(ctx, back::staged_over_stages(f));
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
            AttrMap attrs;
            for (const auto& a : f->attrs)  // a staged tile the persistent kernel cannot share
              if (a.first != kStagedOverStagesAttr || ws.staged_over_kept_) attrs.push_back(a);
            attrs.emplace_back(kMinBlocksPerSmAttr, int64_t{ws.min_blocks_});
            if (ws.persistent_) {
              attrs.emplace_back(kPersistentAttr, int64_t{ws.min_blocks_});
              attrs.emplace_back(kPersistentOrderAttr, std::string(ws.uneven_ ? "snake" : "strided"));
            }
            return make_prim_func(f->name, f->params, body, std::move(attrs), f->loc);
          }};
}

}  // namespace tilec::passes
