// T.gemm on sm_90a with wgmma (selection in src/target/cuda/gemm_isel_sm90.cc): layouts
// and lowering. The behaviour claims a gemm only when selection picks wgmma; otherwise
// the mma.sync / FMA behaviour (gemm.cc) takes it.
//
// Layouts (strict):
//   C        the wgmma accumulator fragment over WG_M x WG_N warpgroups
//            (tl::layout::wg_acc_thread / wg_acc_index, gemm_sm90_layout.cuh);
//   A        a register fragment: 16-bit, the same formulas over M x K with WG_N = 1 (what a
//            cast accumulator of an earlier wgmma gemm has, so P of attention feeds P @ V);
//            fp8, the 8-bit register-A layout (wgmma_a8_fragment_layout; tl::layout::
//            wg_a8_thread / wg_a8_index), which T.copy makes from a float32 accumulator
//            with a shuffle within each quad (copy_wgmma_a8.cc);
//   A, B     shared: smem_tile_layout (TMA's and the descriptors' form) with the widest
//            swizzle whose span fits the operand: K-major operands need rows of whole
//            spans; M/N-major ones also need every instruction's M/N columns (64 for A,
//            ATOM_N for B) to be whole spans. A layout the buffer already has must be that
//            form for some swizzle (UserError otherwise).
// Lowering: one call of the device library per T.gemm, inside
//   Annotate(kWgmmaAtomKey, {ATOM_N, KIND}) (codegen defines the instruction it needs) and
//   Annotate(kSwizzle128BKey, buffer) for each shared operand (1024-byte aligned):
//   tl.wgmma_gemm_ss("M, N, K, WG_M, WG_N, TA, TB, CLEAR, tl::WgTile<R, C, S>, tl::WgTile<...>,
//                     KIND, ATOM_N, WAIT", &A[tile], a_row0, a_col0, &B[tile], b_row0, b_col0,
//                     &C[0], thread)
//   tl.wgmma_gemm_rs("M, N, K, WG_M, 1, TB, CLEAR, tl::WgTile<...>, KIND, ATOM_N, WAIT",
//                     &A_frag[0], &B[tile], b_row0, b_col0, &C[0], thread)
//   WAIT is the gemm's wg_wait (0: the gemm has finished when the call returns; n > 0: at
//   most n groups still run; negative: not waited for). A gemm with clear_if calls
//   tl.wgmma_gemm_ss_clear_if / _rs_clear_if: the same arguments and the condition last.
#include <sstream>

#include "ops/gemm_operands.h"
#include "ops/op_util.h"
#include "ops/smem_tile.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/target/cuda/gemm_isel.h"

namespace tilec::ops {

using namespace ir;

namespace {

bool claims_wgmma(const TileOpNode& op, const OpEnv& env) {
  if (!env.target().has_wgmma()) return false;
  GemmOp g = analyze_gemm(op, env);
  return cuda::select_gemm(g.query, env.target()).inst == cuda::GemmInst::kWgmma;
}

}  // namespace

Layout wgmma_fragment_layout(int64_t m, int64_t n, int wg_m, int wg_n, int atom_n) {
  const int64_t mw = m / wg_m, nw = n / wg_n, an = atom_n, wgm = wg_m;
  return layout::make_fragment(
      {m, n},
      [=](const std::vector<Var>& v, const Var&) {
        Expr i = v[0], j = v[1];
        return (floordiv(j, nw) * wgm + floordiv(i, mw)) * 128 + floordiv(floormod(i, 64), 16) * 32 +
               floormod(i, 8) * 4 + floordiv(floormod(j, 8), 2);
      },
      [=](const std::vector<Var>& v) {
        Expr ii = floormod(v[0], mw), jj = floormod(v[1], nw);
        return (floordiv(ii, 64) * (nw / an) + floordiv(jj, an)) * (an / 2) + floordiv(floormod(jj, an), 8) * 4 +
               floordiv(floormod(ii, 16), 8) * 2 + floormod(jj, 2);
      });
}

Layout wgmma_a8_fragment_layout(int64_t m, int64_t k, int wg_m) {
  const int64_t mw = m / wg_m;
  return layout::make_fragment(
      {m, k},
      [=](const std::vector<Var>& v, const Var&) {
        Expr i = v[0], c = v[1];
        return floordiv(i, mw) * 128 + floordiv(floormod(floormod(i, mw), 64), 16) * 32 + floormod(i, 8) * 4 +
               floordiv(floormod(c, 16), 4);
      },
      [=](const std::vector<Var>& v) {
        Expr ii = floormod(v[0], mw), c = v[1];
        return floordiv(ii, 64) * (k / 2) + floordiv(c, 32) * 16 + floordiv(floormod(c, 32), 16) * 8 +
               floordiv(floormod(ii, 16), 8) * 4 + floormod(c, 4);
      });
}

namespace {

// The swizzle of a shared operand: whole spans per row and per instruction column range.
layout::SwizzleMode operand_mode(const Matrix& m, bool k_major, int64_t mn_unit) {
  const Buffer& b = m.region->buffer;
  return widest_smem_tile_mode(m.tile_rows, m.tile_cols, k_major ? m.tile_cols : mn_unit, b->dtype);
}

struct SharedOperand {
  const Matrix* m;
  bool k_major;
  int64_t mn_unit;  // M/N columns one instruction reads from an M/N-major operand
};

std::vector<SharedOperand> shared_operands(const GemmOp& g, const cuda::GemmPlan& plan) {
  std::vector<SharedOperand> out;
  if (!plan.a_in_registers) out.push_back({&g.a, !g.query.trans_a, 64});
  out.push_back({&g.b, g.query.trans_b, plan.atom_n});
  return out;
}

LayoutProposals wgmma_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  if (level != InferLevel::kStrict) return {};
  GemmOp g = analyze_gemm(op, state);
  const cuda::GemmQuery& q = g.query;
  cuda::GemmPlan plan = cuda::select_gemm(q, state.target());
  LayoutProposals out;
  out.push_back({g.c.region->buffer, wgmma_fragment_layout(q.m, q.n, plan.wg_m, plan.wg_n, plan.atom_n)});
  if (plan.a_in_registers && g.a.region->buffer->dtype.bits() == 8) {
    out.push_back({g.a.region->buffer, wgmma_a8_fragment_layout(q.m, q.k, plan.wg_m)});
  } else if (plan.a_in_registers) {
    int atom = 8;
    for (int n = 256; n >= 8; n -= 8)
      if (q.k % n == 0) {
        atom = n;
        break;
      }
    out.push_back({g.a.region->buffer, wgmma_fragment_layout(q.m, q.k, plan.wg_m, 1, atom)});
  }
  for (const SharedOperand& o : shared_operands(g, plan)) {
    const Buffer& b = o.m->region->buffer;
    const layout::SwizzleMode mode = operand_mode(*o.m, o.k_major, o.mn_unit);
    TILEC_USER_CHECK(mode != layout::SwizzleMode::kNone, op.loc,
                     "make the shared tile's rows a multiple of 32 bytes")
        << "T.gemm (wgmma): shared operand '" << b->name << "' (" << o.m->tile_rows << "x" << o.m->tile_cols << " "
        << b->dtype.str() << ") has no swizzled form wgmma can read";
    if (Layout existing = state.layout_of(b)) {
      auto form = smem_tile_form(b, existing);
      TILEC_USER_CHECK(form && form->mode != layout::SwizzleMode::kNone, op.loc,
                       "remove the T.annotate_layout of this buffer, or use instruction=\"mma\"")
          << "T.gemm (wgmma): the layout of shared buffer '" << b->name << "' (" << layout::describe(existing)
          << ") is not a swizzled tile wgmma can read";
      out.push_back({b, existing});
      continue;
    }
    out.push_back({b, smem_tile_layout(b, mode)});
  }
  return out;
}

std::string flag(bool x) { return x ? "true" : "false"; }

// The operand's start and its tile type "tl::WgTile<R, C, S>".
OperandStart operand_call(const SharedOperand& o, const TileOpNode& op, LowerContext& ctx) {
  const Buffer& b = o.m->region->buffer;
  auto form = smem_tile_form(b, ctx.layout_of(b));
  TILEC_ICHECK(form && form->mode != layout::SwizzleMode::kNone) << "wgmma operand " << b->name << " lost its layout";
  OperandStart c = operand_start(*o.m->region, op, ctx);
  const int64_t span_elems = layout::swizzle_span_bytes(form->mode) / b->dtype.bytes();
  // K-major: rows start anywhere, K at 16-byte chunks; M/N-major: M/N at whole spans, K at
  // 8-row groups.
  const int64_t row_unit = o.k_major ? 1 : 8, col_unit = o.k_major ? 16 / b->dtype.bytes() : span_elems;
  TILEC_USER_CHECK(ctx.analyzer().can_prove_divisible(c.row0, row_unit) &&
                       ctx.analyzer().can_prove_divisible(c.col0, col_unit),
                   op.loc, "start the operand region at a multiple of the swizzle unit")
      << "T.gemm (wgmma): the region of '" << b->name << "' must start at a row that is a multiple of " << row_unit
      << " and a column that is a multiple of " << col_unit;
  std::ostringstream os;
  os << "tl::WgTile<" << form->rows << ", " << form->cols << ", " << layout::swizzle_bits(form->mode) << ">";
  c.tile = os.str();
  return c;
}

Stmt wgmma_lower(const TileOpNode& op, LowerContext& ctx) {
  GemmOp g = analyze_gemm(op, ctx);
  const cuda::GemmQuery& q = g.query;
  cuda::GemmPlan plan = cuda::select_gemm(q, ctx.target());
  TILEC_ICHECK(plan.inst == cuda::GemmInst::kWgmma) << "wgmma lowering for a gemm that selected " << gemm_inst_name(plan.inst);
  const int64_t wait = attr_int(op, "wg_wait", 0);
  Expr c_addr = first_element_address(g.c.region->buffer, op, ctx);
  std::vector<SharedOperand> shared = shared_operands(g, plan);
  std::vector<OperandStart> calls;
  for (const auto& o : shared) calls.push_back(operand_call(o, op, ctx));
  std::ostringstream t;
  const std::string tail = std::string(cuda::wgmma_kind_constant(plan.wgmma_kind)) + ", " +
                           std::to_string(plan.atom_n) + ", " + std::to_string(wait);
  // clear_if (a run-time condition): the first k-step's scale-d operand, which is a register.
  const Expr clear_if = attr_expr(op, "clear_if");
  Stmt s;
  if (plan.a_in_registers) {
    Expr a_addr = first_element_address(g.a.region->buffer, op, ctx);
    const OperandStart& b = calls[0];
    t << q.m << ", " << q.n << ", " << q.k << ", " << plan.wg_m << ", " << plan.wg_n << ", " << flag(q.trans_b) << ", "
      << flag(attr_bool(op, "clear_accum")) << ", " << b.tile << ", " << tail;
    std::vector<Expr> args = {string_imm(t.str()), a_addr, b.address, b.row0, b.col0, c_addr, ctx.thread_index()};
    if (clear_if) args.push_back(clear_if);
    s = evaluate(call(DataType::Void(), clear_if ? "tl.wgmma_gemm_rs_clear_if" : "tl.wgmma_gemm_rs", args, op.loc),
                 op.loc);
  } else {
    const OperandStart &a = calls[0], &b = calls[1];
    t << q.m << ", " << q.n << ", " << q.k << ", " << plan.wg_m << ", " << plan.wg_n << ", " << flag(q.trans_a) << ", "
      << flag(q.trans_b) << ", " << flag(attr_bool(op, "clear_accum")) << ", " << a.tile << ", " << b.tile << ", "
      << tail;
    std::vector<Expr> args = {string_imm(t.str()), a.address, a.row0, a.col0, b.address, b.row0, b.col0, c_addr,
                              ctx.thread_index()};
    if (clear_if) args.push_back(clear_if);
    s = evaluate(call(DataType::Void(), clear_if ? "tl.wgmma_gemm_ss_clear_if" : "tl.wgmma_gemm_ss", args, op.loc),
                 op.loc);
  }
  s = annotate(passes::kWgmmaAtomKey, std::vector<int64_t>{plan.atom_n, plan.wgmma_kind}, s, op.loc);
  for (const auto& o : shared) s = annotate(passes::kSwizzle128BKey, ctx.lowered_buffer(o.m->region->buffer), s, op.loc);
  return s;
}

}  // namespace

void register_gemm_sm90_behaviours() {
  OpBehaviour b{"gemm", "wgmma", has_wgmma, 10, nullptr, wgmma_infer, wgmma_lower};
  b.claims = claims_wgmma;
  register_op_behaviour(std::move(b));
}

}  // namespace tilec::ops
