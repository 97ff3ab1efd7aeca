// T.gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, ..., instruction) on CUDA:
// layouts and lowering for the mma.sync path and the FMA fallback (selection in
// src/target/cuda/gemm_isel.cc).
//
// Operands: the last two dimensions of each region are the matrix, leading dimensions
// (e.g. the version index a pipelined loop adds) must have extent 1. A is M x K (K x M when
// transposed), B is K x N (N x K when transposed), C is the whole M x N fragment.
//
// Layouts (strict: the instruction fixes them):
//   C        the accumulator fragment of tl::layout::c_frag_* (mma) or fma_frag_* (FMA),
//            the formulas the device code uses;
//   A, B     each shared tile (the buffer's last two dimensions) in the layout library's
//            widest swizzle (tl::layout::tile_offset in the device code), leading
//            dimensions one tile apart (rounded to 128 bytes). A layout the user annotated
//            is kept when it is one of these forms for some swizzle mode (row-major
//            included); any other is a UserError.
//   A        may instead be a whole 16-bit fragment (mma only, not transposed, WARP_N = 1):
//            the accumulator layout over M x K (a_fragment_layout), i.e. the mma.sync A
//            registers; a T.gemm's C cast to 16 bits has it when both use the same warp_m.
// Lowering: one call of the device library per T.gemm:
//   tl.gemm_ss("M, N, K, WARP_M, WARP_N, TA, TB, CLEAR, tl::SmemTile<R, C, bits>, ..., KIND",
//              &A[tile], a_row0, a_col0, &B[tile], b_row0, b_col0, &C[0], thread)
// (tl.gemm_fma_ss with the thread grid for the FMA path; with A in registers
//   tl.gemm_rs("M, N, K, WARP_M, 1, TB, CLEAR, tl::SmemTile<...> (B), KIND", &A[0], &B[tile],
//              b_row0, b_col0, &C[0], thread)). The mma tl.gemm_ss call sits in
// Annotate(kGemmFragmentWordsKey, registers of its operand fragments), which
// overlap_gemm_mainloop reads when it carries the fragments across a pipelined loop.
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "ops/op_util.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/layout/swizzle.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/target/cuda/gemm_isel.h"
#include "ops/gemm_operands.h"

namespace tilec::ops {

using namespace ir;

namespace {

// This behaviour runs when the wgmma one (gemm_sm90.cc) does not claim the op, so its own
// selection leaves wgmma out.
GemmOp analyze_ampere(const TileOpNode& op, const OpEnv& env) {
  GemmOp g = analyze_gemm(op, env);
  g.query.allow_wgmma = false;
  return g;
}

// ---- layouts ----

// The mma.sync accumulator fragment of an m x n tile over warp_m x warp_n warps:
// tl::layout::c_frag_thread / c_frag_index (src/device/cuda/gemm_sm80_layout.cuh).
Layout mma_fragment_layout(int64_t m, int64_t n, int warp_m_, int warp_n) {
  const int64_t wm = m / warp_m_, wn = n / warp_n, warp_m = warp_m_;
  return layout::make_fragment(
      {m, n},
      [=](const std::vector<Var>& v, const Var&) {
        Expr i = v[0], j = v[1];
        return (floordiv(j, wn) * warp_m + floordiv(i, wm)) * 32 + floormod(i, 8) * 4 + floordiv(floormod(j, 8), 2);
      },
      [=](const std::vector<Var>& v) {
        Expr i = v[0], j = v[1];
        return (floordiv(floormod(i, wm), 16) * (wn / 8) + floordiv(floormod(j, wn), 8)) * 4 +
               floordiv(floormod(i, 16), 8) * 2 + floormod(j, 2);
      });
}

// A in registers (tl::gemm_rs): the accumulator layout over M x K with all warps along M,
// which for 16-bit elements holds exactly the m16n8k16 A registers (see gemm_rs).
Layout a_fragment_layout(const cuda::GemmQuery& q, const cuda::GemmPlan& plan) {
  return mma_fragment_layout(q.m, q.k, plan.warp_m, 1);
}

Layout accumulator_layout(const cuda::GemmQuery& q, const cuda::GemmPlan& plan) {
  if (plan.inst == cuda::GemmInst::kMma) return mma_fragment_layout(q.m, q.n, plan.warp_m, plan.warp_n);
  const int64_t tm = plan.thread_m, tn = plan.thread_n;
  return layout::make_fragment(
      {q.m, q.n}, [=](const std::vector<Var>& v, const Var&) { return floormod(v[0], tm) * tn + floormod(v[1], tn); },
      [=](const std::vector<Var>& v) { return floordiv(v[0], tm) * (q.n / tn) + floordiv(v[1], tn); });
}

// The layout of a whole operand buffer: its last two dimensions a tile in `mode`, leading
// dimensions one tile (rounded up to 128 bytes) apart.
Layout operand_layout(const Buffer& b, layout::SwizzleMode mode) {
  std::vector<int64_t> shape = const_shape(b);
  const int nd = static_cast<int>(shape.size());
  std::vector<int64_t> tile = {shape[nd - 2], shape[nd - 1]};
  Layout t = layout::swizzled_layout(tile, b->dtype, mode);
  if (nd == 2) return t;
  const int64_t align = std::max<int64_t>(1, 128 / b->dtype.bytes());
  const int64_t stride = (tile[0] * tile[1] + align - 1) / align * align;
  return layout::make_plain(shape, [&](const std::vector<Var>& v) {
    Expr lead = nullptr;
    for (int d = 0; d + 2 < nd; ++d) lead = lead ? lead * shape[d] + v[d] : Expr(v[d]);
    std::vector<Expr> in = layout::apply_index(t, {v[nd - 2], v[nd - 1]});
    return std::vector<Expr>{lead * stride + in[0]};
  });
}

// Layouts this file made, with their swizzle mode: recognising them again (at lowering,
// or when a second T.gemm reads the buffer) needs no element-wise comparison.
class KnownLayouts {
 public:
  void remember(const Layout& l, layout::SwizzleMode m) {
    std::lock_guard<std::mutex> lock(mu_);
    if (known_.size() > 4096) known_.clear();
    known_[l.get()] = {std::weak_ptr<const LayoutNode>(l.shared()), m};
  }
  std::optional<layout::SwizzleMode> find(const Layout& l) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = known_.find(l.get());
    if (it == known_.end() || it->second.first.lock().get() != l.get()) return std::nullopt;
    return it->second.second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const LayoutNode*, std::pair<std::weak_ptr<const LayoutNode>, layout::SwizzleMode>> known_;
};
KnownLayouts& known_layouts() {
  static KnownLayouts k;
  return k;
}

// The swizzle mode in which `existing` (or, when null, the preferred layout) lays out the
// operand; nullopt when `existing` is not one the device GEMM can read.
std::optional<layout::SwizzleMode> operand_mode(const Buffer& b, const Layout& existing) {
  if (existing)
    if (auto m = known_layouts().find(existing)) return m;
  std::vector<int64_t> shape = const_shape(b);
  std::vector<int64_t> tile = {shape[shape.size() - 2], shape.back()};
  layout::SwizzleMode widest = layout::widest_swizzle(tile, b->dtype);
  if (!existing) return widest;
  for (auto m : {widest, layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B,
                 layout::SwizzleMode::kNone}) {
    if (!layout::swizzle_applicable(tile, b->dtype, m)) continue;
    if (layout::layout_equal(existing, operand_layout(b, m))) return m;
  }
  return std::nullopt;
}

cuda::GemmPlan plan_for(const GemmOp& g, const target::Target& t) { return cuda::select_gemm(g.query, t); }

AccessRegions gemm_access(const TileOpNode& op) {
  AccessRegions r;
  r.reads = {region_arg(op, 0), region_arg(op, 1)};
  if (!attr_bool(op, "clear_accum")) r.reads.push_back(region_arg(op, 2));
  r.writes = {region_arg(op, 2)};
  return r;
}

LayoutProposals gemm_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  if (level != InferLevel::kStrict) return {};
  GemmOp g = analyze_ampere(op, state);
  cuda::GemmPlan plan = plan_for(g, state.target());
  LayoutProposals out;
  out.push_back({g.c.region->buffer, accumulator_layout(g.query, plan)});
  if (plan.a_in_registers) out.push_back({g.a.region->buffer, a_fragment_layout(g.query, plan)});
  for (const Matrix* m : {&g.a, &g.b}) {
    if (m == &g.a && plan.a_in_registers) continue;
    const Buffer& b = m->region->buffer;
    Layout existing = state.layout_of(b);
    auto mode = operand_mode(b, existing);
    TILEC_USER_CHECK(mode.has_value(), op.loc,
                     "remove the T.annotate_layout of this buffer, or annotate a swizzled layout "
                     "(T.make_swizzled_layout) or a row-major one")
        << "T.gemm: the layout annotated for shared buffer '" << b->name << "' (" << layout::describe(existing)
        << ") is not one the " << cuda::gemm_inst_name(plan.inst) << " GEMM can read";
    Layout l = existing ? existing : operand_layout(b, *mode);
    known_layouts().remember(l, *mode);
    out.push_back({b, l});
  }
  return out;
}

// The operand's start and its tile type "tl::SmemTile<R, C, bits>".
OperandStart operand_args(const Matrix& m, const TileOpNode& op, LowerContext& ctx, int64_t chunk_elems) {
  const Buffer& b = m.region->buffer;
  auto mode = operand_mode(b, ctx.layout_of(b));
  TILEC_ICHECK(mode.has_value()) << "gemm operand " << b->name << " lost its layout";
  OperandStart a = operand_start(*m.region, op, ctx);
  TILEC_USER_CHECK(ctx.analyzer().can_prove_divisible(a.col0, chunk_elems), op.loc,
                   "start the operand at a column that is a multiple of 16 bytes")
      << "T.gemm: the region of '" << b->name << "' must start at a multiple of " << chunk_elems << " columns";
  std::ostringstream os;
  os << "tl::SmemTile<" << m.tile_rows << ", " << m.tile_cols << ", " << layout::swizzle_bits(*mode) << ">";
  a.tile = os.str();
  return a;
}

// The gemm with clear_if dropped and clear_accum set to `clear`.
Stmt with_clear(const TileOpNode& op, bool clear) {
  AttrMap attrs;
  for (const auto& kv : op.attrs)
    if (kv.first != "clear_if" && kv.first != "clear_accum") attrs.push_back(kv);
  attrs.emplace_back("clear_accum", clear);
  return make_tile_op(op.op, op.args, attrs, op.loc);
}

Stmt gemm_lower(const TileOpNode& op, LowerContext& ctx) {
  if (Expr clear_if = attr_expr(op, "clear_if")) {
    // mma.sync and FMA take CLEAR as a template argument: one call for each value.
    Stmt cleared = with_clear(op, true), accumulating = with_clear(op, false);
    return if_then_else(clear_if, gemm_lower(*cleared.as<TileOpNode>(), ctx),
                        gemm_lower(*accumulating.as<TileOpNode>(), ctx), op.loc);
  }
  GemmOp g = analyze_ampere(op, ctx);
  cuda::GemmPlan plan = plan_for(g, ctx.target());
  const cuda::GemmQuery& q = g.query;
  const int64_t chunk = std::max<int64_t>(1, 16 / q.a_dtype.bytes());
  auto flag = [](bool x) { return x ? "true" : "false"; };
  Expr c_addr = first_element_address(g.c.region->buffer, op, ctx);
  if (plan.a_in_registers) {
    OperandStart b = operand_args(g.b, op, ctx, chunk);
    Expr a_addr = first_element_address(g.a.region->buffer, op, ctx);
    std::ostringstream t;
    t << q.m << ", " << q.n << ", " << q.k << ", " << plan.warp_m << ", " << plan.warp_n << ", " << flag(q.trans_b)
      << ", " << flag(attr_bool(op, "clear_accum")) << ", " << b.tile << ", " << cuda::mma_kind_constant(plan.kind);
    // No kGemmFragmentWordsKey annotation: overlap_gemm_mainloop handles gemm_ss only.
    return evaluate(call(DataType::Void(), "tl.gemm_rs",
                         {string_imm(t.str()), a_addr, b.address, b.row0, b.col0, c_addr, ctx.thread_index()}, op.loc),
                    op.loc);
  }
  OperandStart a = operand_args(g.a, op, ctx, plan.inst == cuda::GemmInst::kMma ? chunk : 1);
  OperandStart b = operand_args(g.b, op, ctx, plan.inst == cuda::GemmInst::kMma ? chunk : 1);
  std::ostringstream t;
  const bool mma = plan.inst == cuda::GemmInst::kMma;
  t << q.m << ", " << q.n << ", " << q.k << ", " << (mma ? plan.warp_m : plan.thread_m) << ", "
    << (mma ? plan.warp_n : plan.thread_n) << ", " << flag(q.trans_a) << ", " << flag(q.trans_b) << ", "
    << flag(attr_bool(op, "clear_accum")) << ", " << a.tile << ", " << b.tile;
  if (mma) t << ", " << cuda::mma_kind_constant(plan.kind);
  Expr call_expr = call(DataType::Void(), mma ? "tl.gemm_ss" : "tl.gemm_fma_ss",
                        {string_imm(t.str()), a.address, a.row0, a.col0, b.address, b.row0, b.col0, c_addr,
                         ctx.thread_index()},
                        op.loc);
  if (!mma) return evaluate(call_expr, op.loc);
  // The operand fragments' registers per thread (GemmSsCore::kFragWords in the device code),
  // for overlap_gemm_mainloop.
  const int64_t mt = q.m / plan.warp_m / 16, nt = q.n / plan.warp_n / 8;
  return annotate(passes::kGemmFragmentWordsKey, int64_t{2 * (mt * 4 + nt * 2)}, evaluate(call_expr, op.loc), op.loc);
}

}  // namespace

void register_gemm_behaviours() {
  register_op_behaviour({"gemm", "mma.sync / fma",
                         [](const target::Target& t) { return t.kind == "cuda"; }, 0, gemm_access, gemm_infer,
                         gemm_lower});
}

}  // namespace tilec::ops
