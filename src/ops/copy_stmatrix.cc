// T.copy of a whole 16-bit fragment into a shared buffer of the same dtype with stmatrix
// (sm_90): FlashAttention-3's dS store in the backward, MLA's P to shared memory.
//
// Claims (under the pass config tilec.stmatrix, off: the backward measured 1.022x cuDNN with it,
//   1.039x without, on the H200): a T.copy of one whole fragment into one whole shared buffer
//   (no view, no strides), both 2-D of one constant shape, the same 16-bit dtype, on a target
//   with wgmma (stmatrix is sm_90).
// Layouts: none of its own (the generic copy's inference decides both sides).
// Lowering: when the fragment's layout, checked element by element at compile time, holds
//   each thread's registers as 8 x 8 matrices of pairs the way stmatrix reads them (register
//   pair p of lane l: row R + l / 4, columns C + 2 (l % 4) and + 1, for every warp and pair;
//   R and C multiples of 8), every thread of the block holds elements (no replicas) and
//   every matrix row is 16 contiguous, 16-byte aligned bytes of the shared layout (the
//   128B / 64B / 32B swizzles move 16-byte chunks whole), the copy is one call,
//     tl.stmatrix_x4(&src_regs[0], &dst[row of lane l in group 0], &dst[... group 1], ...)
//   one stmatrix.x4 per group g of four register pairs
//   (lane l gives the row l % 8 of matrix l / 8, whose elements its holder, lane 4 (l % 8),
//   keeps in pair 4 g + l / 8): a quarter of the shared-store instructions of the per-pair
//   stores, and one address per lane and group. Otherwise null: the generic copy lowers it.
#include "ops/op_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

bool claims_store(const TileOpNode& op, const OpEnv& env) {
  if (!env.config_flag("tilec.stmatrix")) return false;  // the target: `applies` (has_wgmma)
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  if (src.buffer->scope != Scope::kFragment || !is_shared(dst.buffer->scope)) return false;
  if (src.buffer->dtype != dst.buffer->dtype || src.buffer->dtype.bits() != 16 || src.buffer->dtype.lanes() != 1)
    return false;
  if (dst.buffer->viewed || !dst.buffer->strides.empty() || src.buffer->viewed) return false;
  if (!region_is_full(src) || !region_is_full(dst)) return false;
  if (!has_const_shape(src.buffer) || !has_const_shape(dst.buffer)) return false;
  auto shape = const_shape(src.buffer);
  return shape.size() == 2 && shape == const_shape(dst.buffer) && shape[0] % 16 == 0 && shape[1] % 16 == 0;
}

// (row, column) of each thread's registers, or empty when some element is replicated.
using Holdings = std::vector<std::vector<std::pair<int64_t, int64_t>>>;
Holdings holdings(const Layout& frag, int64_t rows, int64_t cols, int64_t threads, int64_t regs) {
  Holdings h(threads, std::vector<std::pair<int64_t, int64_t>>(regs, {-1, -1}));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t t = layout::eval_thread(frag, {i, j});
      const int64_t r = layout::eval_index(frag, {i, j})[0];
      if (t < 0 || t >= threads || r < 0 || r >= regs || h[t][r].first != -1) return {};
      h[t][r] = {i, j};
    }
  return h;
}

// Whether the holdings are stmatrix's: pairs of adjacent columns, 8 x 8 matrices per warp.
bool stmatrix_shaped(const Holdings& h, int64_t regs) {
  const int64_t threads = static_cast<int64_t>(h.size());
  if (threads % 32 != 0 || regs % 8 != 0) return false;
  for (int64_t w = 0; w < threads / 32; ++w)
    for (int64_t p = 0; p < regs / 2; ++p) {
      const auto [r0, c0] = h[32 * w][2 * p];
      if (r0 % 8 != 0 || c0 % 8 != 0) return false;
      for (int64_t l = 0; l < 32; ++l) {
        const auto& t = h[32 * w + l];
        if (t[2 * p] != std::make_pair(r0 + l / 4, c0 + 2 * (l % 4))) return false;
        if (t[2 * p + 1] != std::make_pair(r0 + l / 4, c0 + 2 * (l % 4) + 1)) return false;
      }
    }
  return true;
}

// The shared layout's element offset of (i, j): row-major without a layout.
int64_t shared_offset(const Layout& l, int64_t i, int64_t j, int64_t cols) {
  if (!l) return i * cols + j;
  std::vector<int64_t> phys = layout::eval_index(l, {i, j});
  return phys.size() == 1 ? phys[0] : -1;
}

// Every matrix row of the holdings (8 elements from a column multiple of 8) is 16 contiguous,
// aligned bytes in shared memory.
bool rows_contiguous(const Holdings& h, const Layout& shared, int64_t cols) {
  for (const auto& t : h)
    for (size_t r = 0; r < t.size(); r += 2) {
      const auto [i, j] = t[r];
      if (j % 8 != 0) continue;
      const int64_t base = shared_offset(shared, i, j, cols);
      if (base < 0 || base % 8 != 0) return false;
      for (int64_t k = 1; k < 8; ++k)
        if (shared_offset(shared, i, j + k, cols) != base + k) return false;
    }
  return true;
}

Stmt stmatrix_lower(const TileOpNode& op, LowerContext& ctx) {
  const Buffer& src = region_arg(op, 0).buffer;
  const Buffer& dst = region_arg(op, 1).buffer;
  const Layout frag = ctx.layout_of(src);
  if (!frag || layout::replicate_factor(frag) != 1) return nullptr;
  auto shape = const_shape(src);
  const int64_t threads = ctx.num_threads();
  const int64_t regs = layout::fragment_local_size(frag);
  if (layout::thread_extent(frag) != threads) return nullptr;
  const Holdings h = holdings(frag, shape[0], shape[1], threads, regs);
  if (h.empty() || !stmatrix_shaped(h, regs) || !rows_contiguous(h, ctx.layout_of(dst), shape[1])) return nullptr;
  // Lane l of warp w: row l % 8 of matrix l / 8 of group g, held by lane 4 (l % 8) in its
  // register pair 4 g + l / 8.
  const Expr tx = ctx.thread_index();
  const DataType it = tx->dtype;
  Var g = make_var("g", it, op.loc);
  const Expr lane = floormod(tx, int_imm(32, it));
  const Expr holder = floordiv(tx, int_imm(32, it)) * int_imm(32, it) + floormod(lane, int_imm(8, it)) * int_imm(4, it);
  const Expr reg = (Expr(g) * int_imm(4, it) + floordiv(lane, int_imm(8, it))) * int_imm(2, it);
  std::optional<layout::InverseMap> at = layout::inverse(frag, holder, reg, threads);
  if (!at || at->valid || at->indices.size() != 2) return nullptr;
  // One call for all groups (the registers, then each group's row address): the sync pass sees
  // the copy as one write, as it sees the per-pair stores' loop; separate statements would each
  // need proving disjoint from the others through the swizzle's XOR, which it cannot.
  std::vector<Expr> args{
      call(DataType::Handle(), "tl.address_of", {buffer_load(ctx.lowered_buffer(src), {int_imm(0, it)}, op.loc)}, op.loc)};
  for (int64_t k = 0; k < regs / 8; ++k) {
    std::vector<Expr> idx;
    for (const Expr& e : at->indices) idx.push_back(substitute(e, VarMap{{g.get(), int_imm(k, it)}}));
    args.push_back(call(DataType::Handle(), "tl.address_of",
                        {buffer_load(ctx.lowered_buffer(dst), ctx.physical_index(dst, idx), op.loc)}, op.loc));
  }
  return evaluate(call(DataType::Void(), "tl.stmatrix_x4", std::move(args), op.loc), op.loc);
}

}  // namespace

void register_copy_stmatrix_behaviours() {
  OpBehaviour b{"copy", "stmatrix", has_wgmma, 25, nullptr, nullptr, stmatrix_lower};
  b.claims = claims_store;
  register_op_behaviour(std::move(b));
}

}  // namespace tilec::ops
