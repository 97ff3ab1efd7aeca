// CUDA C code generation: prints a lowered PrimFunc (docs/LOWERED_IR.md, after the whole
// CUDA pipeline) as one readable `extern "C" __global__` kernel.
//
// The kernel's parameters follow the LaunchPlan's kernel_args (tensor data pointers,
// scalars, then the symbolic dimensions the body uses), so the host side and the device
// side cannot disagree. Intrinsic calls print from include/tilec/ir/intrinsics.def.
#pragma once

#include <string>

#include "tilec/ir/stmt.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::cuda {

struct CodegenOptions {
  bool line_directives = false;  // `#line N "file"` before statements with a source location
  bool fast_math = false;        // approximate exp/log/sin/... in tilec/math.cuh (TILEC_FAST_MATH)
  bool debug_sync = false;       // mbarrier waits trap after ~2 s with a message (TILEC_DEBUG_SYNC)
};

std::string codegen_cuda(const ir::PrimFunc& lowered, const runtime::LaunchPlan& plan,
                         const CodegenOptions& opts = {});

// The C identifier codegen gives a name: invalid characters replaced, keywords and reserved
// names avoided. (Uniqueness is added per function, with _1, _2, ... suffixes.)
std::string cuda_identifier(const std::string& name);

// For tests and dumps: a statement or an expression printed as CUDA C, outside any kernel
// (variables keep their sanitized names; buffers print as arrays/pointers by name).
std::string codegen_cuda_stmt(const ir::Stmt& s);
std::string codegen_cuda_expr(const ir::Expr& e);

}  // namespace tilec::cuda
