// The CUDA pipeline: from the Tile IR a front end builds to the lowered IR that CUDA
// codegen prints (docs/LOWERED_IR.md). DESIGN.md section 1 gives the intended order:
//   verify -> simplify -> plan pipeline -> warp-specialize (sm90+) -> inject pipeline
//   -> infer layouts -> lower tile ops -> bounds legalize -> vectorize -> flatten
//   -> plan shared memory -> insert syncs -> overlap gemm main loop -> split host/device
#include "tilec/passes/passes.h"
#include "tilec/pipeline/pipeline.h"

namespace tilec::pipeline {

std::vector<passes::Pass> cuda_pipeline(const target::Target& target) {
  using namespace tilec::passes;
  std::vector<Pass> list = {
      verify_pass(),
      simplify_pass(),
      split_parallel_at_grid_syncs_pass(),  // T.sync_grid inside T.Parallel: the loop split there
      check_grid_syncs_pass(),   // T.sync_grid: reached by every thread of every block
      check_fp4_buffers_pass(),  // float4_e2m1 rows pack two elements a byte: even extents
      narrow_guarded_parallel_loops_pass(),  // `if i < c` around a T.Parallel body: i in [0, c)
      unswitch_uniform_conditions_pass(),  // masks that hold on a whole nest: tested once per step
      fuse_clear_into_gemm_pass(),
      defer_row_sums_pass(),  // softmax's running row sum: threads combined after the loop
      rasterize_blocks_pass(),
      order_blocks_by_work_pass(),
      lower_warp_roles_pass(),  // T.ws(g): roles of warp groups (Ifs; planning keeps them in place)
      lower_register_budgets_pass(),  // T.set_max_nreg: setmaxnreg (unless tilec.honor_set_max_nreg=False)
      // TileLang reduces shared tiles too: through fragments shaped like them. Before the
      // pipeline passes, which give a pipelined tile one version per stage (a leading slot
      // dimension the reduction's `dim` does not count).
      stage_shared_reductions_pass(),
      pipeline_planning_pass(),
  };
  // sm_90: a GEMM's result tile leaves through shared memory and a TMA store.
  if (target.has_tma()) list.push_back(stage_output_tiles_pass());
  // sm_90a: a TMA-fed wgmma main loop becomes producer / consumer warpgroups over mbarriers.
  if (target.has_wgmma()) list.push_back(warp_specialize_pass());
  // Injection works on tile ops (T.copy -> T.async_copy, buffers get one version per
  // stage), so layout inference sees the versioned buffers and the async copies.
  list.push_back(inject_pipeline_pass());
  // Back-end passes go here, in the order above: append them to `list`, guarding
  // target-specific ones with the target's feature queries, e.g.
  //   if (target.has_tma()) list.push_back(warp_specialize_pass());
  // T.gemm_sp: dense A rebuilt in shared memory from the 2:4 values and metadata, then a
  // T.gemm (correct at dense speed; no sparse MMA yet).
  list.push_back(lower_sparse_gemm_pass());
  // A register-fragment A that no gemm instruction can read from registers goes through
  // shared memory (a tf32 / int8 / transposed A, or too few rows per warp).
  list.push_back(stage_gemm_operands_pass());
  list.push_back(layout_inference_pass());  // layoutops
  list.push_back(lower_tile_ops_pass());     // layoutops
  // ---- second half: lowered IR -> IR ready for CUDA codegen ----
  list.push_back(legalize_bounds_pass());
  list.push_back(vectorize_pass());
  list.push_back(flatten_buffers_pass());
  list.push_back(plan_shared_memory_pass());
  list.push_back(insert_syncs_pass());
  list.push_back(overlap_gemm_mainloop_pass());  // moves a barrier into the gemm: after syncs
  // sm_90: shared memory written by threads and then read by TMA stores or wgmma.
  if (target.has_tma()) list.push_back(fence_proxy_async_pass());
  // sm_90a: no barrier inside two consumer warpgroups' ping-pong turns.
  if (target.has_wgmma()) list.push_back(safe_pingpong_turns_pass());
  // sm_90: a TMA store in a loop waits for its source at the next barrier, not at once.
  if (target.has_tma()) list.push_back(defer_bulk_read_waits_pass());
  list.push_back(split_host_device_pass());
  return list;
}

}  // namespace tilec::pipeline
