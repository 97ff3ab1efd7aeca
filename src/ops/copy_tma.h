// What warp specialization needs to know about TMA copies (copy_tma.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilec/ir/stmt.h"

namespace tilec::ops {

// "" when the shapes of a T.copy / T.tma_copy let TMA do it (global <-> a whole shared
// tile, last dimension contiguous, rows of whole 16-byte units), else why not.
std::string why_not_tma(const ir::TileOpNode& op);

// The arguments of the same copy restricted to band `part` of `parts` equal bands of the
// tile's rows (global rows and shared rows alike): a TMA multicast slice. Nullopt when the
// rows do not split into bands of whole 8-row groups.
std::optional<std::vector<ir::TileArg>> tma_row_band(const ir::TileOpNode& op, int64_t parts, const ir::Expr& part);

}  // namespace tilec::ops
