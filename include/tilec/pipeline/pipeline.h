// Pipelines: the per-target lists of passes, one file per target in src/pipeline/.
// A pipeline is data: read the list top to bottom to know what a kernel goes through.
// Run one with passes::run_passes(pipeline, f, ctx).
#pragma once

#include <vector>

#include "tilec/passes/pass.h"
#include "tilec/target/target.h"

namespace tilec::pipeline {

// Tile IR -> lowered IR ready for CUDA code generation (see docs/LOWERED_IR.md).
// Target-dependent steps (warp specialization, TMA, wgmma) are chosen by `target`.
std::vector<passes::Pass> cuda_pipeline(const target::Target& target);

}  // namespace tilec::pipeline
