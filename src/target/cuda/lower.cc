// The CUDA back end's entry point: the CUDA pass pipeline, the LaunchPlan, then codegen.
#include "tilec/target/cuda/lower.h"

#include "passes/cuda_back_util.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/target/cuda/codegen.h"

namespace tilec::passes {

std::vector<Pass> cuda_back_passes() {
  return {
      {"legalize_bounds", legalize_bounds},
      {"vectorize", vectorize},
      {"flatten_buffers", flatten_buffers},
      {"plan_shared_memory", plan_shared_memory},
      {"insert_syncs", insert_syncs},
      {"split_host_device", split_host_device},
  };
}

}  // namespace tilec::passes

namespace tilec::cuda {

DeviceModule lower_to_cuda(const ir::PrimFunc& f, passes::PassContext& ctx) {
  DeviceModule m;
  m.lowered = passes::run_passes(passes::cuda_back_passes(), f, ctx);
  m.plan = passes::build_launch_plan(m.lowered);
  CodegenOptions opts;
  opts.line_directives = passes::back::config_flag(ctx, "tilec.line_directives");
  m.source = codegen_cuda(m.lowered, m.plan, opts);
  return m;
}

}  // namespace tilec::cuda
