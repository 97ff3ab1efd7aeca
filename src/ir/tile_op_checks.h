// Built-in argument checks of the tile ops (see TileOpSchema::check in tile_op.h).
#pragma once

#include <string>
#include <vector>

#include "tilec/ir/tile_op.h"

namespace tilec::ir {

// Sets TileOpSchema::check on the built-in schemas that have one (copy, tma_copy, gemm,
// fill, reduce_*, cumsum, atomic_*, barrier_init).
void attach_builtin_checks(std::vector<TileOpSchema>& schemas);

// T.gemm_sp's arguments (src/ir/gemm_sp_checks.cc).
void check_gemm_sp(std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc);

// Every region argument must index each dimension of its buffer exactly once.
void check_region_ranks(const std::string& op, const std::vector<TileArg>& args, const SourceLoc& loc);

// Whether attribute `key` is the bool true (absent or another type: false).
bool attr_is_true(const AttrMap& attrs, const char* key);

}  // namespace tilec::ir
