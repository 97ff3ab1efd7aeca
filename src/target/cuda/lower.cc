// The CUDA back end's entry point: the CUDA pass pipeline (src/pipeline/cuda_pipeline.cc),
// the LaunchPlan built from the result, then CUDA C codegen.
#include "tilec/target/cuda/lower.h"

#include "passes/cuda_back_util.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/support/knobs.h"
#include "tilec/target/cuda/codegen.h"

namespace tilec::cuda {

DeviceModule lower_to_cuda(const ir::PrimFunc& f, passes::PassContext& ctx) {
  DeviceModule m;
  m.lowered = passes::run_passes(pipeline::cuda_pipeline(ctx.target()), f, ctx);
  m.plan = passes::build_launch_plan(m.lowered);
  CodegenOptions opts;
  opts.line_directives = passes::back::config_flag(ctx, "tilec.line_directives") || knobs::line_directives();
  opts.fast_math = passes::back::config_flag(ctx, "tl.enable_fast_math");
  opts.debug_sync = passes::back::config_flag(ctx, "tilec.debug_sync") || knobs::debug_sync();
  m.source = codegen_cuda(m.lowered, m.plan, opts);
  return m;
}

}  // namespace tilec::cuda
