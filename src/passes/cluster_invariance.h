// Whether an index expression takes one value across the blocks of a cluster.
//
// A copy can be multicast to a cluster only when every block of the cluster loads the same
// tile. The blocks of a cluster along grid dimension d (size c) are the blocks whose index
// along d agrees but for its last factor c (b_d = c q + r, r the rank) and whose other
// indices are equal. A source index is fine when it does not mention b_d; when it does (after
// T.use_swizzle the user's block indices are functions of both hardware indices), every
// largest subexpression that reads block indices only is evaluated at every block of a
// constant grid (layout::eval_box) and compared across the ranks of each cluster. Anything
// else (a symbolic grid, more than kMaxClusterCheckBlocks blocks) counts as varying: a copy
// that is not multicast is slower, never wrong.
#pragma once

#include <cstdint>

#include "tilec/ir/stmt.h"

namespace tilec::passes {

inline constexpr int64_t kMaxClusterCheckBlocks = int64_t{1} << 16;

// True when `e` may differ between two blocks of one cluster of `size` blocks along grid
// dimension `dim` of `kernel` (its block variables; `e` has the spine's Lets substituted).
bool varies_within_cluster(const ir::Expr& e, const ir::KernelLaunchNode& kernel, int dim, int64_t size);

}  // namespace tilec::passes
