// target="cpu": runs a tile program on the host, at the tile level.
//
// The program is the Tile IR as the front end builds it (before any pass): T.Kernel runs
// its blocks one after another (a kernel that calls T.sync_grid() runs them in turns that
// meet at each grid barrier, each block keeping its state; check_grid_syncs runs first); inside a block, statements have TileLang's whole-block
// meaning (a T.Parallel nest runs all its iterations, a T.copy copies the whole region,
// a T.gemm computes the whole tile), and T.Parallel / T.serial / T.Pipelined are serial
// loops. Shared memory, fragments, locals and vars are plain arrays of their logical
// shape. Nothing of the GPU lowering (layout inference, tile-op lowering) is used: this
// target is the reference that judges it.
//
// Memory semantics follow the GPU pipeline's contract: a global access outside the tensor
// (a partial tile) reads 0 and writes nothing (legalize_bounds); with
// CpuOptions::strict_global_bounds (pass config tl.disable_safe_memory_legalize) it is an
// error, as is every out-of-bounds access of an on-chip buffer. The error names the kernel,
// the buffer, the index and the source line. On-chip memory starts as NaN (floats) so that
// reading what was never written shows in the result.
//
// Thread-level constructs (thread indices, T.ws, barriers, warp shuffles, explicit
// cp.async / TMA / wgmma calls) raise "not supported on target=cpu".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "tilec/ir/stmt.h"

namespace tilec::cpu {

// A tensor argument: memory the caller owns, `strides` in elements.
struct HostArray {
  void* data = nullptr;
  ir::DataType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

// One positional argument: a tensor, or the value of a scalar parameter.
using CpuArg = std::variant<HostArray, int64_t, double>;

struct CpuOptions {
  bool strict_global_bounds = false;
  // Called before each block runs with the block indices (a hook for tracing, fuzzing and
  // progress reports); may be empty.
  std::function<void(const std::vector<int64_t>& block)> on_block;
};

// Checks the arguments against the parameters (count, dtype, rank, shape; symbolic
// dimensions are bound from the tensors) and runs `f`. Errors are UserErrors.
void run_on_cpu(const ir::PrimFunc& f, const std::vector<CpuArg>& args, const CpuOptions& options = {});

// The shape of each tensor parameter of `f` given values of its symbolic dimensions and
// scalar parameters by name (for allocating outputs); throws a UserError naming a missing
// symbol.
std::vector<int64_t> param_shape(const ir::PrimFunc& f, size_t param_index,
                                 const std::vector<std::pair<std::string, int64_t>>& symbols);

}  // namespace tilec::cpu
