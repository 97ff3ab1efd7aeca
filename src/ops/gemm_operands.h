// The operands of a T.gemm as the CUDA GEMM behaviours (gemm.cc: mma.sync / FMA,
// gemm_sm90.cc: wgmma) see them: the matrices of A, B and C with their tile shapes, and
// the selection query. Shared so that both behaviours read one op the same way.
#pragma once

#include "tilec/ir/stmt.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/target/cuda/gemm_isel.h"

namespace tilec::ops {

struct Matrix {
  const ir::BufferRegion* region = nullptr;
  int64_t rows = 0, cols = 0;            // extents of the region's last two dimensions
  int64_t tile_rows = 0, tile_cols = 0;  // the buffer's last two dimensions
};

struct GemmOp {
  Matrix a, b, c;
  cuda::GemmQuery query;
};

// Reads the operands and attributes of a T.gemm (UserError on shapes that do not fit).
// The query runs on `env.num_threads()` threads; wgmma is allowed unless the pass config
// tl.disable_wgmma is set.
GemmOp analyze_gemm(const ir::TileOpNode& op, const OpEnv& env);

// Where a shared-memory operand region starts: the address of its tile (the region's
// leading indices at row 0, column 0) and the region's first row and column in that tile;
// `tile` is the device-side tile type, filled in by the behaviour that lowers the gemm.
struct OperandStart {
  ir::Expr address, row0, col0;
  std::string tile;
};
OperandStart operand_start(const ir::BufferRegion& r, const ir::TileOpNode& op, LowerContext& ctx);

// The address of the first element of a (register) buffer as lowered.
ir::Expr first_element_address(const ir::Buffer& b, const ir::TileOpNode& op, LowerContext& ctx);

// The wgmma accumulator fragment of an m x n tile over wg_m x wg_n warpgroups with
// instructions atom_n wide (gemm_sm90.cc; tl::layout::wg_acc_thread / wg_acc_index).
ir::Layout wgmma_fragment_layout(int64_t m, int64_t n, int wg_m, int wg_n, int atom_n);
// The 8-bit register-A fragment of an m x k tile over wg_m warpgroups along M (gemm_sm90.cc;
// tl::layout::wg_a8_thread / wg_a8_index).
ir::Layout wgmma_a8_fragment_layout(int64_t m, int64_t k, int wg_m);

}  // namespace tilec::ops
