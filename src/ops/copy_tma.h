// What warp specialization needs to know about TMA copies (copy_tma.cc).
#pragma once

#include <string>

#include "tilec/ir/stmt.h"

namespace tilec::ops {

// "" when the shapes of a T.copy / T.tma_copy let TMA do it (global <-> a whole shared
// tile, last dimension contiguous, rows of whole 16-byte units), else why not.
std::string why_not_tma(const ir::TileOpNode& op);

}  // namespace tilec::ops
