// The example GEMM + ReLU kernel (see include/tilec/ir/example_gemm.h), written the way
// a C++ user drives ir::Builder: one call per line of the T-script it mirrors.
#include "tilec/ir/example_gemm.h"

#include "tilec/ir/builder.h"

namespace tilec::ir {

namespace {

// The region A[row, col] of T.copy with its extents taken from the other side (rows x cols).
BufferRegion tile(const Buffer& b, Expr row, Expr col, int64_t rows, int64_t cols) {
  BufferRegion r;
  r.buffer = b;
  r.region = {{std::move(row), int_imm(rows)}, {std::move(col), int_imm(cols)}};
  return r;
}

}  // namespace

PrimFunc build_example_gemm(const GemmExampleConfig& c) {
  Builder b(c.name);
  Buffer A = b.tensor("A", {int_imm(c.M), int_imm(c.K)}, c.in_dtype);
  Buffer B = b.tensor("B", {int_imm(c.K), int_imm(c.N)}, c.in_dtype);
  Buffer C = b.tensor("C", {int_imm(c.M), int_imm(c.N)}, c.in_dtype);

  std::vector<Var> block = b.begin_kernel(
      {ceildiv(int_imm(c.N), int_imm(c.block_N)), ceildiv(int_imm(c.M), int_imm(c.block_M))}, {c.threads});
  Var bx = block[0], by = block[1];
  Buffer A_shared = b.alloc_shared("A_shared", {int_imm(c.block_M), int_imm(c.block_K)}, c.in_dtype);
  Buffer B_shared = b.alloc_shared("B_shared", {int_imm(c.block_K), int_imm(c.block_N)}, c.in_dtype);
  Buffer C_local = b.alloc_fragment("C_local", {int_imm(c.block_M), int_imm(c.block_N)}, c.accum_dtype);

  b.tile_op("fill", {BufferRegion::full(C_local), float_imm(0, c.accum_dtype)});  // T.clear(C_local)

  PipelineInfo pipeline;
  pipeline.num_stages = c.num_stages;
  Var ko = b.begin_for("ko", int_imm(0), ceildiv(int_imm(c.K), int_imm(c.block_K)), ForKind::kPipelined, pipeline);
  b.tile_op("copy", {tile(A, by * c.block_M, ko * c.block_K, c.block_M, c.block_K), BufferRegion::full(A_shared)});
  b.tile_op("copy", {tile(B, ko * c.block_K, bx * c.block_N, c.block_K, c.block_N), BufferRegion::full(B_shared)});
  b.tile_op("gemm", {BufferRegion::full(A_shared), BufferRegion::full(B_shared), BufferRegion::full(C_local)});
  b.end_frame();

  if (c.relu) {
    std::vector<Var> ij = b.begin_loop_nest({"i", "j"}, {int_imm(c.block_M), int_imm(c.block_N)}, ForKind::kParallel);
    b.store(C_local, {ij[0], ij[1]}, max(buffer_load(C_local, {ij[0], ij[1]}), float_imm(0, c.accum_dtype)));
    b.end_frame();
  }

  b.tile_op("copy", {BufferRegion::full(C_local), tile(C, by * c.block_M, bx * c.block_N, c.block_M, c.block_N)});
  b.end_frame();
  return b.finish();
}

}  // namespace tilec::ir
