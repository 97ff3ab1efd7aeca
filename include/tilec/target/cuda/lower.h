// The CUDA back end's entry point: runs the CUDA pass pipeline on a PrimFunc and prints
// the device code. The result is CUDA C source (device library included by name from
// the embedded headers, see runtime/compiler.h) plus the LaunchPlan for the host side.
#pragma once

#include <string>

#include "tilec/ir/stmt.h"
#include "tilec/passes/pass.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::cuda {

struct DeviceModule {
  std::string source;        // CUDA C: one extern "C" __global__ kernel
  runtime::LaunchPlan plan;
  ir::PrimFunc lowered;      // the IR after the last pass (for dumps and tests)
};

DeviceModule lower_to_cuda(const ir::PrimFunc& f, passes::PassContext& ctx);

}  // namespace tilec::cuda
