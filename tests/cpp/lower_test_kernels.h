// Kernels built with ir::Builder for the lowering tests (interpreter and NVRTC).
#pragma once

#include <string>

#include "tilec/ir/builder.h"
#include "tilec/layout/layout.h"

namespace tilec::testing {

using namespace ir;

inline PrimFunc softmax_kernel(int64_t rows_per_block, int64_t n, int64_t threads) {
  Builder b("softmax");
  Var m = b.dynamic("m");
  Buffer A = b.tensor("A", {m, int_imm(n)}, DataType::Float(32));
  Buffer O = b.tensor("O", {m, int_imm(n)}, DataType::Float(32));
  Var bx = b.begin_kernel({ceildiv(m, int_imm(rows_per_block))}, {threads})[0];
  Buffer x = b.alloc_fragment("x", {int_imm(rows_per_block), int_imm(n)}, DataType::Float(32));
  Buffer mx = b.alloc_fragment("mx", {int_imm(rows_per_block)}, DataType::Float(32));
  Buffer sm = b.alloc_fragment("sm", {int_imm(rows_per_block)}, DataType::Float(32));
  BufferRegion tile_a{A, {{bx * rows_per_block, int_imm(rows_per_block)}, {int_imm(0), int_imm(n)}}};
  BufferRegion tile_o{O, {{bx * rows_per_block, int_imm(rows_per_block)}, {int_imm(0), int_imm(n)}}};
  b.tile_op("copy", {tile_a, BufferRegion::full(x)});
  b.tile_op("reduce_max", {BufferRegion::full(x), BufferRegion::full(mx)}, {{"dim", int64_t{1}}});
  auto ij = b.begin_loop_nest({"i", "j"}, {int_imm(rows_per_block), int_imm(n)}, ForKind::kParallel);
  b.store(x, {ij[0], ij[1]}, call(DataType::Float(32), "exp", {buffer_load(x, {ij[0], ij[1]}) - buffer_load(mx, {ij[0]})}));
  b.end_frame();
  b.tile_op("reduce_sum", {BufferRegion::full(x), BufferRegion::full(sm)}, {{"dim", int64_t{1}}});
  auto ij2 = b.begin_loop_nest({"i", "j"}, {int_imm(rows_per_block), int_imm(n)}, ForKind::kParallel);
  b.store(x, {ij2[0], ij2[1]}, binary(NodeKind::kDiv, buffer_load(x, {ij2[0], ij2[1]}), buffer_load(sm, {ij2[0]})));
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(x), tile_o});
  b.end_frame();
  return b.finish();
}


// Loads X (R x C) into a fragment (optionally with an annotated layout), reduces along
// `dim` into y (starting from Init when clear=False), stores y into Y.
inline PrimFunc reduce_kernel(const std::string& op, int64_t R, int64_t C, int dim, bool clear, int64_t threads,
                              const Layout& annotated = nullptr) {
  const DataType f32 = DataType::Float(32);
  int64_t out_n = dim == 1 ? R : C;
  Builder b("reduce");
  Buffer X = b.tensor("X", {int_imm(R), int_imm(C)}, f32);
  Buffer Init = b.tensor("Init", {int_imm(out_n)}, f32);
  Buffer Y = b.tensor("Y", {int_imm(out_n)}, f32);
  b.begin_kernel({int_imm(1)}, {threads});
  Buffer x = b.alloc_fragment("x", {int_imm(R), int_imm(C)}, f32);
  Buffer y = b.alloc_fragment("y", {int_imm(out_n)}, f32);
  if (annotated) b.begin_annotate("layout_map", LayoutMap{{x, annotated}});
  b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(x)});
  if (!clear) b.tile_op("copy", {BufferRegion::full(Init), BufferRegion::full(y)});
  b.tile_op(op, {BufferRegion::full(x), BufferRegion::full(y)}, {{"dim", int64_t{dim}}, {"clear", clear}});
  b.tile_op("copy", {BufferRegion::full(y), BufferRegion::full(Y)});
  if (annotated) b.end_frame();
  b.end_frame();
  return b.finish();
}

// X -> t (shared or fragment), in-place cumsum of t, t -> Y.
inline PrimFunc cumsum_kernel(const std::vector<int64_t>& shape, int dim, bool reverse, int64_t threads,
                              bool fragment) {
  const DataType f32 = DataType::Float(32);
  Builder b("cumsum");
  std::vector<Expr> s;
  for (auto e : shape) s.push_back(int_imm(e));
  Buffer X = b.tensor("X", s, f32);
  Buffer Y = b.tensor("Y", s, f32);
  b.begin_kernel({int_imm(1)}, {threads});
  Buffer t = fragment ? b.alloc_fragment("t", s, f32) : b.alloc_shared("t", s, f32);
  b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(t)});
  b.tile_op("cumsum", {BufferRegion::full(t), BufferRegion::full(t)}, {{"dim", int64_t{dim}}, {"reverse", reverse}});
  b.tile_op("copy", {BufferRegion::full(t), BufferRegion::full(Y)});
  b.end_frame();
  return b.finish();
}

// The mma.sync m16n8k16 accumulator of one warp (a 16 x 8 tile over 32 lanes)...
Layout mma_block_layout_base();
// ... repeated over 2 x 4 tiles per warp and a 2 x 2 warp grid: a 64 x 64 block fragment over
// 128 threads.
Layout mma_block_layout();

}  // namespace tilec::testing
