// A LaunchPlan as text: the disk cache stores plans this way, and tests and the Python
// side write plans for hand-written CUDA kernels in it. Line oriented, one item a line:
//
//   tilec-launch-plan 1
//   kernel add_kernel
//   symbol n int32                        # every symbolic dimension, with its type
//   tensor A float16 shape=[n] strides=[] align=16 output=0 index=int32
//   tensor C float16 shape=[n,64] strides=[64,1] align=1 output=1 index=int64
//   scalar alpha float32
//   param tensor 0                        # the function's parameter order
//   param scalar 0
//   arg tensor 0                          # the kernel's argument slots
//   arg scalar 0
//   arg symbol n int32
//   grid (// (+ n 255) 256)              # one line per grid dimension: an S-expression
//   block 256 1 1
//   cluster 1 1 1
//   smem 0
//   persistent 1                          # optional: at most SMs x 1 blocks (persistent kernel)
//   cooperative 1                         # optional: a cooperative launch (T.sync_grid)
//
// S-expressions: an integer (`5`, or `5:int64` for a type other than int32), a symbol
// name, or `(op args...)` with op one of + - * // % truncdiv truncmod min max == != < <=
// > >= and or not select cast:<dtype>. Without `param` lines the parameter order is the
// tensors then the scalars; without `arg` lines the arguments follow the parameter order.
// `#` starts a comment. Tensor fields may be left out: strides (row-major), align (1),
// output (0), index (the width of the kernel's offset arithmetic for the tensor: int32
// makes the runtime reject arguments spanning 2^31 elements or more; when left out, int64
// if one of the tensor's symbols is int64, else int32, so a plan written before the field
// existed, or by hand for `int i = ...` code, stays safe).
#pragma once

#include <string>

#include "tilec/runtime/launch_plan.h"

namespace tilec::runtime {

std::string launch_plan_to_text(const LaunchPlan& plan);
// Raises UserError (naming the line) on malformed text or an inconsistent plan.
LaunchPlan launch_plan_from_text(const std::string& text);

// Checks a plan's internal consistency (indices in range, symbols declared, grid rank);
// raises UserError naming the problem. The Kernel constructor runs it on every plan.
void check_launch_plan(const LaunchPlan& plan);

// An S-expression for a launch expression, and back (vars resolved among `vars` by name).
std::string launch_expr_to_text(const ir::Expr& e);
ir::Expr launch_expr_from_text(const std::string& text, const std::vector<ir::Var>& vars);

}  // namespace tilec::runtime
