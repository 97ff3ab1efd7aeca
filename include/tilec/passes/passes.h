// Every pass of tilec: one declaration and its contract each, in pipeline order.
// A pass lives in its own file under src/passes/ whose header comment holds the full
// contract; the lines here are the summary a pipeline author needs. The pipelines
// (src/pipeline/<target>_pipeline.cc) are plain lists of these.
//
// To add a pass: declare `Pass <name>_pass();` here with its contract, implement it in
// src/passes/<name>.cc, and put it in the pipeline list where its "runs after" holds.
#pragma once

#include "tilec/passes/pass.h"

namespace tilec::passes {

// verify (src/passes/verify.cc)
//   in:  any PrimFunc.   out: the same function, unchanged.
//   Raises the verifier's UserError (ir::verify) on the first malformed construct.
//   Runs first, and may run again after any pass as a check.
Pass verify_pass();

// simplify (src/passes/simplify.cc)
//   in:  a verified PrimFunc.   out: an equivalent function whose expressions are
//   simplified by arith::Analyzer, knowing loop, block and thread index ranges.
//   Structure (statements, buffers, tile ops) is untouched. Runs after verify.
Pass simplify_pass();

// check_fp4_buffers (src/passes/check_fp4_buffers.cc), CUDA only
//   in:  a verified, simplified PrimFunc.   out: the same function, unchanged.
//   Raises a UserError for a float4_e2m1 buffer (parameter or allocation) whose innermost
//   extent is an odd constant: the CUDA back end packs two elements per byte along it.
Pass check_fp4_buffers_pass();

// split_parallel_at_grid_syncs (src/passes/split_parallel_at_grid_syncs.cc), CUDA and CPU
//   in:  a verified PrimFunc.   out: T.Parallel nests whose body has T.sync_grid() calls at its
//   top level split into one nest per part, the barriers between them (fresh loop variables).
Pass split_parallel_at_grid_syncs_pass();
// The same as a function (the CPU target runs it before interpreting).
ir::PrimFunc split_parallel_at_grid_syncs(const ir::PrimFunc& f);

// check_grid_syncs (src/passes/check_grid_syncs.cc), CUDA and CPU
//   in:  a verified PrimFunc.   out: the same function, unchanged.
//   Raises a UserError for a T.sync_grid() that some thread or block could skip or reach a
//   different number of times (inside T.Parallel / T.Pipelined / T.ws, or under a branch or
//   loop that depends on the block or thread index), or in a kernel with clusters.
Pass check_grid_syncs_pass();
// The same check as a function (the CPU target runs it before interpreting).
void check_grid_syncs(const ir::PrimFunc& f);
// Whether `s` calls tl.sync_grid() anywhere: such a kernel is launched cooperatively and
// keeps its grid and its blocks whole (no persistent form, no warp specialization).
bool contains_grid_sync(const ir::Stmt& s);

// ---- passes of the other areas are declared below, in pipeline order ----

// rasterize_blocks (src/passes/rasterize_blocks.cc)
//   in:  kernels that may contain Annotate{"use_swizzle", panel}.   out: the annotation
//   consumed; the 2-D kernel's (bx, by) become Lets of fresh hardware block indices in a
//   panel-serpentine order (better L2 reuse). Runs before layout inference / lowering.
Pass rasterize_blocks_pass();

// narrow_guarded_parallel_loops (src/passes/narrow_guarded_parallel_loops.cc)
//   in:  verified tile IR.   out: a T.Parallel nest whose body is `if v < c:` (no else) on a
//   nest variable v, c a constant inside v's range, runs v over [min, c) without the if
//   (fragment reads at `v + s * c` then follow the fragment). Runs before pipeline_planning.
Pass narrow_guarded_parallel_loops_pass();

// unswitch_uniform_conditions (src/passes/unswitch_uniform_conditions.cc)
//   in:  verified tile IR.   out: a T.Parallel nest inside a sequential loop whose body tests
//   an affine integer condition on the nest's variables becomes `if <holds on the whole nest>
//   { nest with the test's true side } else { nest }` (a constant store to a whole fragment
//   becomes T.fill). Config tilec.unswitch_uniform_conditions. Runs before fuse_clear_into_gemm.
Pass unswitch_uniform_conditions_pass();
// defer_row_sums (src/passes/defer_row_sums.cc): a loop's running sum of row sums
//   (acc = acc * f + reduce_sum(src)) keeps per-thread partials; one reduction across the
//   threads follows the loop. Config tilec.defer_row_sums. CUDA targets, before the pipeline passes.
Pass defer_row_sums_pass();

// fuse_clear_into_gemm (src/passes/fuse_clear_into_gemm.cc)
//   in:  verified tile IR.   out: T.fill(C, 0) of a whole fragment immediately followed by
//   T.gemm(A, B, C) into the whole fragment becomes the gemm with clear_accum=True (config
//   tilec.fuse_clear_into_gemm). Runs before pipeline_planning.
Pass fuse_clear_into_gemm_pass();

// order_blocks_by_work (src/passes/order_blocks_by_work.cc)
//   in:  tile IR after rasterize_blocks.   out: a kernel with a spine loop whose trip count
//   depends only on block index b and grows with it gets a fresh hardware index b_hw and
//   b = Let(g - 1 - b_hw): longest blocks first (config tilec.longest_blocks_first).
Pass order_blocks_by_work_pass();

// pipeline_planning (src/passes/pipeline_planning.cc)
//   in:  verified tile IR.   out: every For of kind Pipelined with num_stages >= 2 (or an
//   explicit `stage`) has a flat Seq body (Lets inlined) and explicit `stage` / `order`
//   lists, one entry per body statement, num_stages = max(stage) + 1. Defaults: copies
//   global -> shared (and what they depend on) at stage 0, the rest at num_stages - 1.
//   Loops that need no pipelining (num_stages 0 or 1, no producer) become serial loops.
//   UserError for stage/order lists that do not fit the body. Runs before inject_pipeline.
Pass pipeline_planning_pass();

// lower_warp_roles (src/passes/lower_warp_roles.cc)
//   in:  tile IR.   out: every `with T.ws(g...)` (Annotate "ws") is an If on the thread
//   index around Annotate(kThreadRangeKey, {128 g0, 128 n, 1 + g0}): the role's ops see its
//   threads, its block barriers become named barriers. UserError on bad groups. An if / elif
//   chain of thread-index range tests over whole warp groups with a tile op in it becomes
//   the same annotations (TileLang's `if tx < 128: ... elif tx >= 256: ...` roles).
Pass lower_warp_roles_pass();

// lower_register_budgets (src/passes/lower_register_budgets.cc)
//   in:  tile IR with tl.user_setmaxnreg(n, inc) calls (T.set_max_nreg).
//   out: tl.setmaxnreg_inc / _dec at the same places on sm_90a with tilec.honor_set_max_nreg;
//        otherwise the calls removed.
Pass lower_register_budgets_pass();

// stage_output_tiles (src/passes/stage_output_tiles.cc)
//   in:  planned tile IR.   out: on targets with TMA (config tilec.stage_output_tiles), a
//   kernel's T.copy(whole fragment -> global region) after a pipelined loop with a gemm
//   becomes T.copy(fragment -> new shared buffer); T.copy(buffer -> region) when the
//   shared memory still fits (stages side by side; two blocks for 128 threads) and the
//   region's innermost extent is whole 16-byte units. Runs before warp_specialize.
Pass stage_output_tiles_pass();

// warp_specialize (src/passes/warp_specialize.cc)
//   in:  planned tile IR.   out: on sm_90a, a kernel whose one pipelined loop fills shared
//   buffers by TMA-able copies read only by wgmma gemms becomes 128 more threads: a
//   producer warpgroup (one thread issues T.tma_copy into S-versioned buffers) and the
//   original threads as consumers, handing slots over full/empty mbarrier pairs; the roles
//   are Annotate(kThreadRangeKey) regions. setmaxnreg rebalances registers (2 or 3
//   consumer warpgroups). Config tl.disable_warp_specialized / tl.disable_tma_lower.
//   Other loops are left to inject_pipeline. Runs after pipeline_planning.
Pass warp_specialize_pass();

// inject_pipeline (src/passes/inject_pipeline.cc)
//   in:  planned tile IR (pipeline_planning).   out: no For of kind Pipelined. A statement
//   of stage s runs iteration i + (S - s) in step i of a serial loop over the original
//   range, after a prologue of S steps (guarded when the trip count may be short); every
//   buffer written at one stage and read at a later one gets num_stages versions (leading
//   dimension, slot = iteration % num_stages; layout_map annotations follow); copies
//   global -> shared whose readers are all at later stages become T.async_copy
//   (cp.async) on sm_80+, each step commits one group and waits (tl.cp_async_wait) until
//   the data its readers need has landed, then tl.syncthreads (the one barrier a step
//   needs: only this pass knows a step's copies and reads touch different versions); a
//   final wait drains the groups. Runs before layout inference.
Pass inject_pipeline_pass();

// stage_shared_reductions (src/passes/stage_shared_reductions.cc)
//   in:  tile IR after inject_pipeline.   out: a T.reduce_* with a shared input or output
//   reduces fragments shaped like its regions: T.copy(src, src_frag); [T.copy(dst, dst_frag)
//   when clear=False;] T.reduce_*(src_frag, dst_frag); T.copy(dst_frag, dst). Reductions of
//   fragments are untouched. Before layout_inference.
Pass stage_shared_reductions_pass();

// lower_sparse_gemm (src/passes/lower_sparse_gemm.cc)
//   in:  tile IR after inject_pipeline.   out: no T.gemm_sp. Each becomes
//   Allocate(A_dense: shared.dyn (M, K) of A's dtype, T.Parallel(M, K) rebuilding dense A
//   from the 2:4 values and the metadata (zeros where nothing is kept);
//   T.gemm(A_dense, B, C, ...)): correct, dense speed (no sparse MMA). Before layout_inference.
Pass lower_sparse_gemm_pass();

// stage_gemm_operands (src/passes/stage_gemm_operands.cc)
//   in:  tile IR after inject_pipeline.   out: a T.gemm (no `instruction=`) whose register
//   fragment A or B no instruction reads from registers, but which lowers with it in shared
//   memory, reads a shared copy: Allocate(A_stage, T.copy(A, A_stage); T.gemm(A_stage, ..))
//   (B alone first, then A, then both); a fragment the same statement list loaded whole from
//   a shared tile (untouched since) is read from that tile instead. Gemms that lower as
//   written are untouched. Before layout_inference.
Pass stage_gemm_operands_pass();

// layout_inference (src/passes/layout_inference.cc)                         [layoutops]
//   in:  tile-level kernels (tile ops, T.Parallel nests, optional T.annotate_layout).
//   out: kernel body wrapped in Annotate{"layout_map", LayoutMap} with a layout for every
//   fragment and shared buffer; each T.Parallel nest's outer For annotated "loop_layout".
//   UserError naming both ops and the buffer on conflicting demands. A view (T.reshape,
//   BufferNode::viewed) and its buffer get each other's layout, reshaped. After pipeline
//   planning, before lower_tile_ops.
Pass layout_inference_pass();

// lower_tile_ops (src/passes/lower_tile_ops.cc)                             [layoutops]
//   in:  the output of layout_inference.   out: lowered IR (docs/LOWERED_IR.md) except
//   that T.Pipelined loops remain for pipeline injection: no tile ops, no Parallel loops,
//   fragments become Scope::kLocal register arrays, shared buffers 1-D physical; a view
//   (T.reshape) becomes its buffer's array (its Allocate disappears).
Pass lower_tile_ops_pass();

// ---- the second half of the CUDA pipeline (lowered IR -> CUDA C), in this order. ----
// Attribute keys they share with the first half and with codegen, and the LaunchPlan
// builder, are in tilec/passes/cuda_back_passes.h.

// legalize_bounds (src/passes/legalize_bounds.cc)
//   in:  lowered IR (docs/LOWERED_IR.md).   out: every global load/store that
//   arith::Analyzer cannot prove in bounds is guarded: stores by an If, loads by a Select
//   (0 out of bounds). An unrolled/vectorized loop nest whose accesses are affine in its
//   loop variables gets one hoisted check: if (all in bounds) {unguarded nest} else
//   {guarded nest, unrolled}. Config tl.disable_safe_memory_legalize turns it off.
Pass legalize_bounds_pass();

// vectorize (src/passes/vectorize.cc)
//   in:  lowered IR after legalize_bounds.   out: no For of kind Vectorized: a loop of
//   constant extent V whose body is stores of lane-wise expressions with contiguous (stride
//   1) indices at provably aligned starts, with V * element bytes of 4, 8 or 16, becomes
//   the same statements on V-lane vectors (Ramp indices); global accesses whose alignment
//   depends on symbolic strides get a runtime check (aligned: vector code, else unrolled).
//   Any other vectorized loop becomes Unrolled. Config tl.disable_vectorize.
Pass vectorize_pass();

// flatten_buffers (src/passes/flatten_buffers.cc)
//   in:  vectorized lowered IR.   out: every access of a global parameter is 1-D through
//   the parameter's strides (row-major when none; symbolic allowed); the buffer parameters
//   are replaced by 1-D buffers and the originals kept in attr kUnflattenedParamsAttr.
//   Offsets are int64 for a tensor with an int64 dimension/stride/index or whose constant
//   dimensions alone span 2^31 elements, else int32 (the runtime refuses larger arguments).
Pass flatten_buffers_pass();

// plan_shared_memory (src/passes/plan_shared_memory.cc)
//   in:  flattened lowered IR.   out: every shared.dyn Allocate moved to the top of the
//   kernel body, wrapped in Annotate(kSmemOffsetKey, byte offset) into one dynamic arena;
//   buffers whose live ranges do not overlap share bytes; 128-byte alignment (1024 for
//   buffers annotated kSwizzle128BKey); attr kDynamicSharedBytesAttr = arena size.
//   UserError naming the buffers when the target's shared memory is exceeded.
Pass plan_shared_memory_pass();

// insert_syncs (src/passes/insert_syncs.cc)
//   in:  planned lowered IR.   out: tl.syncthreads() wherever two accesses to the same
//   shared bytes by different threads (one a write) are not separated by a barrier on
//   every path, loop back edges included, placed as late as possible; cp.async writes
//   count from their issue to the next cp_async_wait. Loops whose bounds are uniform (also
//   through T.alloc_var copies of uniform values) may hold barriers. Config
//   tl.disable_thread_storage_sync.
Pass insert_syncs_pass();

// overlap_gemm_mainloop (src/passes/overlap_gemm_mainloop.cc)
//   in:  the function after insert_syncs.   out: every steady pipelined loop of the form
//   {cp_async_wait(w); syncthreads; cp.async copies; tl.gemm_ss(stage v)} keeps the gemm's
//   operand fragments in a local array across iterations: wait + barrier move into the
//   gemm call (tl.gemm_ss_overlap, before its last k-step, which then loads k-step 0 of
//   iteration v + 1), one copy of them and tl.gemm_ss_prefetch go before the loop.
//   Annotations kGemmFragmentWordsKey dropped. Config tl.disable_gemm_overlap.
Pass overlap_gemm_mainloop_pass();

// fence_proxy_async (src/passes/fence_proxy_async.cc)
//   in:  the function after insert_syncs.   out: in kernels whose shared memory the async
//   proxy reads (wgmma, TMA stores), tl.fence_proxy_async() before every barrier that
//   follows shared-memory writes, so the writers' data is visible to it. sm_90+.
Pass fence_proxy_async_pass();

// safe_pingpong_turns (src/passes/safe_pingpong_turns.cc)
//   in:  the function after fence_proxy_async.   out: no block / named barrier between a
//   tl.pingpong_wait and its tl.pingpong_pass (it would deadlock the two warpgroups): a
//   barrier preceded in the turn only by fences and mbarrier waits moves before the wait;
//   otherwise the function's turns are removed.
Pass safe_pingpong_turns_pass();

// defer_bulk_read_waits (src/passes/defer_bulk_read_waits.cc)
//   in:  the function after safe_pingpong_turns.   out: a TMA store / reduce-add in a loop
//   waits for its shared source at the next block barrier (before any write of it) instead of
//   right after it is issued (tilec.defer_bulk_read_waits). sm_90+.
Pass defer_bulk_read_waits_pass();

// split_host_device (src/passes/split_host_device.cc)
//   in:  the function after insert_syncs.   out: unchanged; checks that the LaunchPlan can
//   be built (every variable the kernel uses is a parameter or a symbolic dimension), so
//   errors name this pass. passes::build_launch_plan then gives the plan.
Pass split_host_device_pass();

}  // namespace tilec::passes
