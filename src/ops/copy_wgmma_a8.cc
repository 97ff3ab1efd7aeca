// T.copy of a float32 wgmma accumulator into an fp8 fragment that a wgmma reads as its
// register A (sm_90a): FlashAttention-3's fp8 P stays in registers on its way to P @ V.
//
// Claims: a T.copy between two whole fragments of one constant 2-D shape M x K, float32 into
//   float8_e4m3 / float8_e5m2, on a target with wgmma.
// Layouts: when the destination already has the 8-bit register-A layout
//   (wgmma_a8_fragment_layout, which the gemm reading it proposes strictly), the source must
//   have the accumulator layout of the same warpgroups: a source without a layout gets it,
//   one that has it gets no further demand (the generic copy would ask for one layout on both
//   sides, a conflict). Otherwise (another source layout too) it proposes what the generic
//   copy does, so a source of another layout is a layout conflict, never a silent copy
//   between registers that other threads hold.
// Lowering: when the source has the accumulator layout of the same warpgroups (WG_N = 1)
//   and the destination the register-A layout:
//     tl.wgmma_acc_to_a8("MA, K, E5M2", &src[0], &dst[0], thread)
//   (gemm_sm90.cuh: each value rounded to fp8, then moved within its quad). Both sides of
//   one layout: null, the generic copy lowers it.
#include <sstream>

#include "ops/gemm_operands.h"
#include "ops/op_util.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

bool is_fp8(DataType t) { return t.code() == TypeCode::kFloat8E4M3 || t.code() == TypeCode::kFloat8E5M2; }

// The copy's two fragments when it is an accumulator-to-fp8 conversion of one whole tile.
bool conversion_shaped(const TileOpNode& op) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  if (src.buffer->scope != Scope::kFragment || dst.buffer->scope != Scope::kFragment) return false;
  if (src.buffer->dtype != DataType::Float(32) || !is_fp8(dst.buffer->dtype)) return false;
  if (!region_is_full(src) || !region_is_full(dst)) return false;
  if (!has_const_shape(src.buffer) || !has_const_shape(dst.buffer)) return false;
  auto shape = const_shape(src.buffer);
  return shape.size() == 2 && shape == const_shape(dst.buffer);
}

bool claims_conversion(const TileOpNode& op, const OpEnv& env) {
  return env.target().has_wgmma() && conversion_shaped(op);
}

// The warpgroups (along M) of the register-A layout `l` of an m x k tile, or 0.
int a8_warpgroups(const Layout& l, int64_t m, int64_t k, int64_t threads) {
  if (!l || k % 32 != 0) return 0;
  for (int wg = 1; int64_t(wg) * 128 <= threads; wg *= 2)
    if (m % (64 * wg) == 0 && layout::layout_equal(l, wgmma_a8_fragment_layout(m, k, wg))) return wg;
  return 0;
}

const OpBehaviour& generic_copy(const target::Target& t) {
  for (const OpBehaviour* b : find_op_behaviours("copy", t))
    if (b->variant == "simt") return *b;
  TILEC_ICHECK(false) << "no generic copy behaviour";
  __builtin_unreachable();
}

LayoutProposals a8_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  const Buffer& src = region_arg(op, 0).buffer;
  const Buffer& dst = region_arg(op, 1).buffer;
  auto shape = const_shape(dst);
  const int wg = a8_warpgroups(state.layout_of(dst), shape[0], shape[1], state.num_threads());
  if (wg > 0 && level != InferLevel::kFree) {
    // The source must be the accumulator of those warpgroups: a source without a layout yet
    // takes it; one with another layout gets the generic demand below, which names the
    // conflict (never a copy between registers that other threads hold).
    Layout acc = wgmma_fragment_layout(shape[0], shape[1], wg, 1, 8);
    Layout have = state.layout_of(src);
    if (!have) return {{src, acc}};
    if (layout::layout_equal(have, acc)) return {};
  }
  return generic_copy(state.target()).infer_layout(op, state, level);
}

Stmt a8_lower(const TileOpNode& op, LowerContext& ctx) {
  const Buffer& src = region_arg(op, 0).buffer;
  const Buffer& dst = region_arg(op, 1).buffer;
  auto shape = const_shape(dst);
  const int64_t m = shape[0], k = shape[1];
  if (layout::layout_equal(ctx.layout_of(src), ctx.layout_of(dst))) return nullptr;  // the generic copy's case
  const int wg = a8_warpgroups(ctx.layout_of(dst), m, k, ctx.num_threads());
  TILEC_ICHECK(wg > 0 && layout::layout_equal(ctx.layout_of(src), wgmma_fragment_layout(m, k, wg, 1, 8)))
      << "T.copy from '" << src->name << "' to '" << dst->name << "': layout inference left two layouts this copy "
      << "cannot join";
  std::ostringstream t;
  t << m / wg / 64 << ", " << k << ", " << (dst->dtype.code() == TypeCode::kFloat8E5M2 ? "true" : "false");
  return evaluate(call(DataType::Void(), "tl.wgmma_acc_to_a8",
                       {string_imm(t.str()), first_element_address(src, op, ctx), first_element_address(dst, op, ctx),
                        ctx.thread_index()},
                       op.loc),
                  op.loc);
}

}  // namespace

void register_copy_wgmma_a8_behaviours() {
  OpBehaviour b{"copy", "wgmma_a8", has_wgmma, 30, nullptr, a8_infer, a8_lower};
  b.claims = claims_conversion;
  register_op_behaviour(std::move(b));
}

}  // namespace tilec::ops
