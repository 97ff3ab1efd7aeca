// The CUDA pipeline: from the Tile IR a front end builds to the lowered IR that CUDA
// codegen prints (docs/LOWERED_IR.md). DESIGN.md section 1 gives the intended order:
//   verify -> simplify -> plan pipeline -> warp-specialize (sm90+) -> inject pipeline
//   -> infer layouts -> lower tile ops -> bounds legalize -> vectorize -> flatten
//   -> plan shared memory -> insert syncs
#include "tilec/passes/passes.h"
#include "tilec/pipeline/pipeline.h"

namespace tilec::pipeline {

std::vector<passes::Pass> cuda_pipeline(const target::Target& target) {
  using namespace tilec::passes;
  std::vector<Pass> list = {
      verify_pass(),
      simplify_pass(),
      rasterize_blocks_pass(),
  };
  // Back-end passes go here, in the order above: append them to `list`, guarding
  // target-specific ones with the target's feature queries, e.g.
  //   if (target.has_tma()) list.push_back(warp_specialize_pass());
  (void)target;
  return list;
}

}  // namespace tilec::pipeline
