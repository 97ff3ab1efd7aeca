// T.gemm with A in a register fragment (tl::gemm_rs): selection accepts / refuses it with
// clear reasons, the A layout layout inference demands is exactly the mma.sync A-register
// layout (checked against the PTX m16n8k16 fragment definition, independently of the
// formulas in gemm_sm80_layout.cuh), a gemm's C cast to 16 bits feeds the next gemm as A
// (T.Parallel cast or T.copy) with consistent layouts, the lowering emits tl::gemm_rs, and
// the generated CUDA compiles with NVRTC into mma.sync without spills.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "device/cuda/gemm_sm80_layout.cuh"
#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/target/cuda/gemm_isel.h"
#include "tilec/target/cuda/lower.h"
#include "codegen_test_util.h"
#include "lowered_interp.h"

using namespace tilec;
using namespace tilec::ir;
using cuda::GemmInst;
using cuda::GemmPlan;
using cuda::GemmQuery;
using cuda::WarpPolicy;

namespace {

target::Target sm(int arch, bool a = false) {
  target::Target t;
  t.arch = arch;
  t.arch_specific = a;
  return t;
}

// ---- selection ----

GemmQuery rs_query(DataType ab = DataType::Float(16), int64_t m = 64, int64_t n = 64, int64_t k = 64,
                   int threads = 128) {
  GemmQuery q;
  q.m = m, q.n = n, q.k = k;
  q.a_dtype = q.b_dtype = ab;
  q.c_dtype = DataType::Float(32);
  q.a_scope = Scope::kFragment;
  q.lda = k, q.ldb = n;
  q.num_threads = threads;
  q.loc = SourceLoc{"attn.py", 40, 17};
  return q;
}

std::string error_of(const GemmQuery& q, const target::Target& t) {
  try {
    cuda::select_gemm(q, t);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(GemmRsIsel, SixteenBitFragmentASelectsMmaWithAllWarpsAlongM) {
  for (auto t : {sm(80), sm(90, false)})
    for (DataType d : {DataType::Float(16), DataType::BFloat16()})
      for (WarpPolicy p : {WarpPolicy::kSquare, WarpPolicy::kFullRow}) {
        GemmQuery q = rs_query(d);
        q.policy = p;
        GemmPlan plan = cuda::select_gemm(q, t);
        EXPECT_EQ(plan.inst, GemmInst::kMma);
        EXPECT_TRUE(plan.a_in_registers);
        EXPECT_EQ(plan.warp_m, 4);
        EXPECT_EQ(plan.warp_n, 1);
      }
  // On sm_90a the same gemm takes wgmma with A from registers, every warpgroup along M.
  GemmQuery w = rs_query();
  GemmPlan wp = cuda::select_gemm(w, sm(90, true));
  EXPECT_EQ(wp.inst, GemmInst::kWgmma);
  EXPECT_TRUE(wp.a_in_registers);
  EXPECT_EQ(wp.wg_n, 1);
  // Shared A keeps gemm_ss (and Square's 2 x 2 split).
  GemmQuery q = rs_query();
  q.a_scope = Scope::kSharedDyn;
  GemmPlan plan = cuda::select_gemm(q, sm(80));
  EXPECT_FALSE(plan.a_in_registers);
  EXPECT_EQ(plan.warp_n, 2);
}

TEST(GemmRsIsel, RefusalsSayWhy) {
  GemmQuery q = rs_query();
  q.trans_a = true;
  q.lda = 64;
  std::string e = error_of(q, sm(80));
  EXPECT_NE(e.find("attn.py:40:17"), std::string::npos) << e;
  EXPECT_NE(e.find("A in a register fragment cannot be transposed (transpose_A=True)"), std::string::npos) << e;
  // The FMA candidate keeps its own reason.
  EXPECT_NE(e.find("fma: the FMA path reads A and B from shared memory"), std::string::npos) << e;

  q = rs_query(DataType::Float(32));
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("A in a register fragment must be float16 or bfloat16"), std::string::npos) << e;

  q = rs_query();
  q.a_scope = Scope::kLocal;
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("mma.sync reads A from shared memory (T.alloc_shared) or from a register fragment"),
            std::string::npos)
      << e;

  q = rs_query(DataType::Float(16), 32);  // 32 rows cannot go to 4 warps of 16
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("needs all 4 warps along M (WARP_N = 1): M must be a multiple of 64"), std::string::npos) << e;

  q = rs_query();
  q.b_scope = Scope::kFragment;
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("mma.sync reads B from shared memory (T.alloc_shared), not local.fragment"), std::string::npos)
      << e;

  q = rs_query();
  q.instruction = "fma";
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("T.gemm(instruction=\"fma\") cannot be used here: the FMA path reads A and B from shared memory"),
            std::string::npos)
      << e;
}

TEST(GemmRsIsel, FullColPolicyIsAUserErrorSuggestingFullRow) {
  GemmQuery q = rs_query();
  q.policy = WarpPolicy::kFullCol;
  std::string e = error_of(q, sm(80));
  EXPECT_NE(e.find("attn.py:40:17"), std::string::npos) << e;
  EXPECT_NE(e.find("T.gemm: A is a register fragment, which needs every warp along M (WARP_N = 1), but policy "
                   "FullCol splits the 64x64 C tile into 1x4 warps"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("policy=T.GemmWarpPolicy.FullRow"), std::string::npos) << e;
  // One warp: FullCol is WARP_N = 1 too, nothing to refuse.
  q = rs_query(DataType::Float(16), 16, 64, 32, 32);
  q.policy = WarpPolicy::kFullCol;
  EXPECT_TRUE(cuda::select_gemm(q, sm(80)).a_in_registers);
}

// ---- layouts ----

class FakeState : public ops::LayoutInferenceState {
 public:
  FakeState(target::Target t, int64_t threads) : t_(t), threads_(threads) {}
  const target::Target& target() const override { return t_; }
  int64_t num_threads() const override { return threads_; }
  Layout layout_of(const Buffer& b) const override {
    for (auto& [buf, l] : known)
      if (buf.same_as(b)) return l;
    return nullptr;
  }
  const std::vector<const ForNode*>& enclosing_loops() const override { return loops_; }
  LayoutMap known;

 private:
  target::Target t_;
  int64_t threads_;
  std::vector<const ForNode*> loops_;
};

// The m16n8k16 A operand straight from the PTX definition (mma.cuh's comment): for lane
// (g = lane / 4, t = lane % 4), 32-bit register q in 0..3 and half h in 0..1 of an m16 x k16
// block, the element (row, col).
std::pair<int, int> ptx_a_element(int lane, int q, int h) {
  const int g = lane / 4, t = lane % 4;
  return {g + 8 * (q & 1), 2 * t + h + 8 * (q >> 1)};
}

struct RsCase {
  int64_t m, n, k, threads;
};
class GemmRsLayout : public ::testing::TestWithParam<RsCase> {};

TEST_P(GemmRsLayout, AFragmentHoldsTheMmaARegisters) {
  const auto c = GetParam();
  Buffer A = make_buffer("P", {int_imm(c.m), int_imm(c.k)}, DataType::Float(16), Scope::kFragment);
  Buffer B = make_buffer("V_s", {int_imm(c.k), int_imm(c.n)}, DataType::Float(16), Scope::kSharedDyn);
  Buffer C = make_buffer("O", {int_imm(c.m), int_imm(c.n)}, DataType::Float(32), Scope::kFragment);
  Stmt op = make_tile_op("gemm", {BufferRegion::full(A), BufferRegion::full(B), BufferRegion::full(C)}, {});
  FakeState state(sm(80), c.threads);
  ops::LayoutProposals props = ops::infer_layout(*op.as<TileOpNode>(), state, ops::InferLevel::kStrict);
  ASSERT_EQ(props.size(), 3u);
  Layout la, lc;
  for (auto& p : props) {
    if (p.buffer.same_as(A)) la = p.layout;
    if (p.buffer.same_as(C)) lc = p.layout;
  }
  ASSERT_TRUE(la && lc);
  const int warps = int(c.threads / 32), wm = int(c.m / warps), ks_count = int(c.k / 16);
  // The accumulator layout over M x K with WARP_N = 1 ...
  for (int i = 0; i < c.m; ++i)
    for (int k = 0; k < c.k; ++k) {
      ASSERT_EQ(layout::eval_thread(la, {i, k}), tl::layout::c_frag_thread(i, k, int(c.m), int(c.k), warps, 1));
      ASSERT_EQ(layout::eval_index(la, {i, k})[0], tl::layout::c_frag_index(i, k, int(c.m), int(c.k), warps, 1));
    }
  // ... is where gemm_rs reads its A registers: word (mt * KS + ks) * 4 + q, half h of
  // thread warp * 32 + lane holds the PTX element of m tile mt, k-step ks.
  for (int w = 0; w < warps; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int mt = 0; mt < wm / 16; ++mt)
        for (int ks = 0; ks < ks_count; ++ks)
          for (int q = 0; q < 4; ++q)
            for (int h = 0; h < 2; ++h) {
              auto [r, col] = ptx_a_element(lane, q, h);
              const int64_t i = w * wm + mt * 16 + r, k = ks * 16 + col;
              ASSERT_EQ(layout::eval_thread(la, {i, k}), w * 32 + lane) << i << "," << k;
              ASSERT_EQ(layout::eval_index(la, {i, k})[0], ((mt * ks_count + ks) * 4 + q) * 2 + h) << i << "," << k;
            }
  // The same function as the C layout of a gemm with N = K over the same warps.
  Buffer S = make_buffer("S", {int_imm(c.m), int_imm(c.k)}, DataType::Float(32), Scope::kFragment);
  Buffer Qs = make_buffer("Q_s", {int_imm(c.m), int_imm(64)}, DataType::Float(16), Scope::kSharedDyn);
  Buffer Ks = make_buffer("K_s", {int_imm(c.k), int_imm(64)}, DataType::Float(16), Scope::kSharedDyn);
  Stmt first = make_tile_op("gemm", {BufferRegion::full(Qs), BufferRegion::full(Ks), BufferRegion::full(S)},
                            {{"transpose_B", true}, {"policy", std::string("FullRow")}});
  for (auto& p : ops::infer_layout(*first.as<TileOpNode>(), state, ops::InferLevel::kStrict))
    if (p.buffer.same_as(S)) EXPECT_TRUE(layout::layout_equal(p.layout, la));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmRsLayout,
                         ::testing::Values(RsCase{64, 64, 64, 128}, RsCase{64, 128, 32, 128},
                                           RsCase{128, 64, 64, 128}, RsCase{128, 32, 16, 256},
                                           RsCase{16, 8, 16, 32}));

TEST(GemmRsOp, PartOfAFragmentIsAUserError) {
  Buffer A = make_buffer("P_big", {int_imm(128), int_imm(64)}, DataType::Float(16), Scope::kFragment);
  Buffer B = make_buffer("V_s", {int_imm(64), int_imm(64)}, DataType::Float(16), Scope::kSharedDyn);
  Buffer C = make_buffer("O", {int_imm(64), int_imm(64)}, DataType::Float(32), Scope::kFragment);
  BufferRegion part = BufferRegion::full(A);
  part.region[0] = {int_imm(64), int_imm(64)};
  Stmt op = make_tile_op("gemm", {part, BufferRegion::full(B), BufferRegion::full(C)}, {}, SourceLoc{"k.py", 3, 4});
  FakeState state(sm(80), 128);
  std::string e;
  try {
    ops::infer_layout(*op.as<TileOpNode>(), state, ops::InferLevel::kStrict);
  } catch (const UserError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("T.gemm: A in registers must be a whole 2-D fragment, not a part of 'P_big'"), std::string::npos)
      << e;
}

// ---- a chain of two gemms through the pipeline ----

BufferRegion tile(const Buffer& b, Expr row, Expr col, int64_t rows, int64_t cols) {
  BufferRegion r;
  r.buffer = b;
  r.region = {{std::move(row), int_imm(rows)}, {std::move(col), int_imm(cols)}};
  return r;
}

// C2 = cast16(A * B) * D over one 64-row block (B: K1 x N1, D: N1 x N2), the cast as a
// T.Parallel loop or a T.copy.
PrimFunc chain(bool cast_with_copy, DataType dt = DataType::Float(16), int64_t n2 = 64) {
  Builder b("gemm_rs_chain");
  const int64_t m = 64, k1 = 32, n1 = 64;
  Buffer A = b.tensor("A", {int_imm(m), int_imm(k1)}, dt);
  Buffer B = b.tensor("B", {int_imm(k1), int_imm(n1)}, dt);
  Buffer D = b.tensor("D", {int_imm(n1), int_imm(n2)}, dt);
  Buffer C = b.tensor("C", {int_imm(m), int_imm(n2)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(m), int_imm(k1)}, dt);
  Buffer Bs = b.alloc_shared("B_shared", {int_imm(k1), int_imm(n1)}, dt);
  Buffer Ds = b.alloc_shared("D_shared", {int_imm(n1), int_imm(n2)}, dt);
  Buffer C1 = b.alloc_fragment("C1", {int_imm(m), int_imm(n1)}, DataType::Float(32));
  Buffer P = b.alloc_fragment("P", {int_imm(m), int_imm(n1)}, dt);
  Buffer C2 = b.alloc_fragment("C2", {int_imm(m), int_imm(n2)}, DataType::Float(32));
  b.tile_op("copy", {BufferRegion::full(A), BufferRegion::full(As)});
  b.tile_op("copy", {BufferRegion::full(B), BufferRegion::full(Bs)});
  b.tile_op("copy", {BufferRegion::full(D), BufferRegion::full(Ds)});
  b.tile_op("gemm", {BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(C1)},
            {{"clear_accum", true}, {"policy", std::string("FullRow")}});
  if (cast_with_copy) {
    b.tile_op("copy", {BufferRegion::full(C1), BufferRegion::full(P)});
  } else {
    auto ij = b.begin_loop_nest({"i", "j"}, {int_imm(m), int_imm(n1)}, ForKind::kParallel);
    b.store(P, {ij[0], ij[1]}, cast(dt, buffer_load(C1, {ij[0], ij[1]})));
    b.end_frame();
  }
  b.tile_op("gemm", {BufferRegion::full(P), BufferRegion::full(Ds), BufferRegion::full(C2)}, {{"clear_accum", true}});
  b.tile_op("copy", {BufferRegion::full(C2), tile(C, int_imm(0), int_imm(0), m, n2)});
  b.end_frame();
  return b.finish();
}

std::vector<const CallNode*> calls_of(const PrimFunc& f, const std::string& op) {
  std::vector<const CallNode*> out;
  for_each_node(f->body, [&](const Node* n) {
    auto* c = dynamic_cast<const CallNode*>(n);
    if (c && c->op == op) out.push_back(c);
  });
  return out;
}

PrimFunc first_half(const PrimFunc& f, passes::PassContext& ctx) {
  std::vector<passes::Pass> list;
  for (auto& p : pipeline::cuda_pipeline(ctx.target())) {
    list.push_back(p);
    if (p.name == "lower_tile_ops") break;
  }
  return passes::run_passes(list, f, ctx);
}

TEST(GemmRsChain, CastLoopAndCopyInferOneLayoutAndLowerToGemmRs) {
  for (bool with_copy : {false, true}) {
    passes::PassContext ctx(sm(80));
    PrimFunc f = first_half(chain(with_copy), ctx);
    auto rs = calls_of(f, "tl.gemm_rs");
    auto ss = calls_of(f, "tl.gemm_ss");
    ASSERT_EQ(rs.size(), 1u) << script(f);
    ASSERT_EQ(ss.size(), 1u) << script(f);
    EXPECT_EQ(rs[0]->args.size(), 7u);
    EXPECT_EQ(rs[0]->args[0].as<StringImmNode>()->value,
              "64, 64, 64, 4, 1, false, true, tl::SmemTile<64, 64, 3>, tl::kMmaF16");
    EXPECT_EQ(ss[0]->args[0].as<StringImmNode>()->value,
              "64, 64, 32, 4, 1, false, false, true, tl::SmemTile<64, 32, 3>, tl::SmemTile<32, 64, 3>, tl::kMmaF16");
    // Only gemm_ss carries the fragment-words annotation (overlap_gemm_mainloop's input).
    int annotated = 0, annotated_rs = 0;
    for_each_node(f->body, [&](const Node* n) {
      auto* a = dynamic_cast<const AnnotateNode*>(n);
      if (!a || a->key != passes::kGemmFragmentWordsKey) return;
      ++annotated;
      for_each_node(a->body, [&](const Node* inner) {
        auto* c = dynamic_cast<const CallNode*>(inner);
        annotated_rs += c && c->op == "tl.gemm_rs";
      });
    });
    EXPECT_EQ(annotated, 1) << script(f);
    EXPECT_EQ(annotated_rs, 0) << script(f);
  }
}

TEST(GemmRsChain, CompilesToWgmmaRs) {
  // sm_90a: both gemms are wgmma, the second with the cast accumulator as register A.
  for (DataType dt : {DataType::Float(16), DataType::BFloat16()}) {
    passes::PassContext ctx(sm(90, true));
    cuda::DeviceModule mod = cuda::lower_to_cuda(chain(false, dt, 128), ctx);
    EXPECT_NE(mod.source.find("tl::wgmma_gemm_ss<64, 64, 32, 1, 1, false, false, true, "), std::string::npos)
        << mod.source;
    EXPECT_NE(mod.source.find("tl::wgmma_gemm_rs<64, 128, 64, 1, 1, false, true, tl::WgTile<64, 128, 3>, "),
              std::string::npos)
        << mod.source;
    std::string why;
    if (!runtime::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
    runtime::CudaBinary out = codegen_test::compile_module(mod, "sm_90a");
    const std::string t = dt == DataType::Float(16) ? "f16" : "bf16";
    EXPECT_NE(out.ptx.find("wgmma.mma_async.sync.aligned.m64n64k16.f32." + t + "." + t), std::string::npos);
    // The rs form: four 32-bit registers of A in braces after the accumulators.
    EXPECT_NE(out.ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32." + t + "." + t), std::string::npos);
    EXPECT_EQ(out.ptx.find("ld.local"), std::string::npos) << "a fragment went to local memory";
    EXPECT_EQ(out.ptxas.spill_stores_bytes, 0) << out.ptxas.log;
  }
}

TEST(GemmRsChain, CompilesToMmaWithoutSpills) {
  for (DataType dt : {DataType::Float(16), DataType::BFloat16()})
    for (auto target : {sm(80), sm(90, true)}) {
      passes::PassContext ctx(target);
      ctx.set("tl.disable_wgmma", true);  // sm_90a's own form: GemmRsChain.CompilesToWgmmaRs
      cuda::DeviceModule mod = cuda::lower_to_cuda(chain(false, dt, 128), ctx);
      EXPECT_NE(mod.source.find("tl::gemm_rs<64, 128, 64, 4, 1, false, true, tl::SmemTile<64, 128, 3>, "),
                std::string::npos)
          << mod.source;
      std::string why;
      if (!runtime::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
      runtime::CudaBinary out = codegen_test::compile_module(mod, target.str());
      // 4 k-steps x 4 n-tiles for the first gemm's warp, 4 x 16 for the second: all mma.sync.
      const std::string mma = dt == DataType::Float(16) ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                                        : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
      EXPECT_NE(out.ptx.find(mma), std::string::npos) << "PTX lacks " << mma;
      EXPECT_NE(out.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans"), std::string::npos);
      EXPECT_EQ(out.ptx.find("ld.local"), std::string::npos) << "the A fragment went to local memory";
      EXPECT_EQ(out.ptxas.spill_stores_bytes, 0) << out.ptxas.log;
      EXPECT_EQ(out.ptxas.spill_loads_bytes, 0) << out.ptxas.log;
    }
}

}  // namespace

// ---- running the lowered IR on the CPU interpreter ----

namespace {

using tilec::testing::HostTensor;

HostTensor random_tensor(std::vector<int64_t> shape, uint64_t seed) {
  HostTensor t(std::move(shape));
  t.data = tilec::testing::random_values(t.data.size(), seed, -1.0, 1.0);
  return t;
}

TEST(GemmRsInterp, ChainMatchesTheReference) {
  for (bool with_copy : {false, true}) {
    passes::PassContext ctx(sm(80));
    PrimFunc g = first_half(chain(with_copy, DataType::Float(16), 128), ctx);
    HostTensor A = random_tensor({64, 32}, 1), B = random_tensor({32, 64}, 2), D = random_tensor({64, 128}, 3);
    HostTensor C({64, 128}, std::nan(""));
    tilec::testing::run_lowered(g, {{"A", &A}, {"B", &B}, {"D", &D}, {"C", &C}});
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 128; ++j) {
        double want = 0;
        for (int k = 0; k < 64; ++k) {
          double c1 = 0;
          for (int l = 0; l < 32; ++l) c1 += A.data[i * 32 + l] * B.data[l * 64 + k];
          want += double(float(c1)) * D.data[k * 128 + j];
        }
        ASSERT_NEAR(C.data[i * 128 + j], want, 1e-4 * (1 + std::fabs(want))) << i << "," << j;
      }
  }
}

// FlashAttention forward as examples/flash_attention.py writes it (non-causal, one batch),
// built with the C++ builder: Q K^T (gemm_ss), online softmax on fragments, P cast to
// 16 bits, P V (gemm_rs).
PrimFunc flash_attention(int64_t seq, int64_t heads, int64_t dim, int64_t bm, int64_t bn, int64_t threads) {
  const DataType f16 = DataType::Float(16), f32 = DataType::Float(32);
  Builder b("flash_fwd");
  std::vector<Expr> shape = {int_imm(1), int_imm(seq), int_imm(heads), int_imm(dim)};
  Buffer Q = b.tensor("Q", shape, f16), K = b.tensor("K", shape, f16), V = b.tensor("V", shape, f16),
         O = b.tensor("O", shape, f16);
  auto blk = b.begin_kernel({int_imm(seq / bm), int_imm(heads), int_imm(1)}, {threads});
  Expr bx = blk[0], by = blk[1], bz = blk[2];
  auto rows = [&](const Buffer& t, Expr row0, int64_t n) {
    BufferRegion r;
    r.buffer = t;
    r.region = {{bz, int_imm(1)}, {std::move(row0), int_imm(n)}, {by, int_imm(1)}, {int_imm(0), int_imm(dim)}};
    return r;
  };
  auto full = [](const Buffer& x) { return BufferRegion::full(x); };
  Buffer Qs = b.alloc_shared("Q_shared", {int_imm(bm), int_imm(dim)}, f16);
  Buffer Ks = b.alloc_shared("K_shared", {int_imm(bn), int_imm(dim)}, f16);
  Buffer Vs = b.alloc_shared("V_shared", {int_imm(bn), int_imm(dim)}, f16);
  Buffer S = b.alloc_fragment("acc_s", {int_imm(bm), int_imm(bn)}, f32);
  Buffer P = b.alloc_fragment("acc_s_cast", {int_imm(bm), int_imm(bn)}, f16);
  Buffer Acc = b.alloc_fragment("acc_o", {int_imm(bm), int_imm(dim)}, f32);
  Buffer mx = b.alloc_fragment("scores_max", {int_imm(bm)}, f32);
  Buffer mx_prev = b.alloc_fragment("scores_max_prev", {int_imm(bm)}, f32);
  Buffer scl = b.alloc_fragment("scores_scale", {int_imm(bm)}, f32);
  Buffer sum = b.alloc_fragment("scores_sum", {int_imm(bm)}, f32);
  Buffer logsum = b.alloc_fragment("logsum", {int_imm(bm)}, f32);
  const Expr neg_inf = float_imm(-INFINITY), scale = float_imm(1.0 / std::sqrt(double(dim)) * 1.44269504);
  b.tile_op("copy", {rows(Q, bx * bm, bm), full(Qs)});
  b.tile_op("fill", {full(Acc), float_imm(0)});
  b.tile_op("fill", {full(logsum), float_imm(0)});
  b.tile_op("fill", {full(mx), neg_inf});
  PipelineInfo pipe;
  pipe.num_stages = 2;
  Var k = b.begin_for("k", int_imm(0), int_imm(seq / bn), ForKind::kPipelined, pipe);
  b.tile_op("copy", {rows(K, k * bn, bn), full(Ks)});
  b.tile_op("fill", {full(S), float_imm(0)});
  b.tile_op("gemm", {full(Qs), full(Ks), full(S)}, {{"transpose_B", true}, {"policy", std::string("FullRow")}});
  b.tile_op("copy", {full(mx), full(mx_prev)});
  b.tile_op("fill", {full(mx), neg_inf});
  b.tile_op("reduce_max", {full(S), full(mx)}, {{"dim", int64_t{1}}, {"clear", false}});
  auto row_loop = [&](const std::function<void(Expr)>& body) {
    auto i = b.begin_loop_nest({"i"}, {int_imm(bm)}, ForKind::kParallel);
    body(i[0]);
    b.end_frame();
  };
  row_loop([&](Expr i) { b.store(mx, {i}, max(buffer_load(mx, {i}), buffer_load(mx_prev, {i}))); });
  row_loop([&](Expr i) {
    b.store(scl, {i}, call(f32, "exp2", {buffer_load(mx_prev, {i}) * scale - buffer_load(mx, {i}) * scale}));
  });
  auto ij = b.begin_loop_nest({"i", "j"}, {int_imm(bm), int_imm(bn)}, ForKind::kParallel);
  b.store(S, {ij[0], ij[1]},
          call(f32, "exp2", {buffer_load(S, {ij[0], ij[1]}) * scale - buffer_load(mx, {ij[0]}) * scale}));
  b.end_frame();
  b.tile_op("reduce_sum", {full(S), full(sum)}, {{"dim", int64_t{1}}});
  row_loop([&](Expr i) {
    b.store(logsum, {i}, buffer_load(logsum, {i}) * buffer_load(scl, {i}) + buffer_load(sum, {i}));
  });
  b.tile_op("copy", {full(S), full(P)});
  auto od = b.begin_loop_nest({"i", "j"}, {int_imm(bm), int_imm(dim)}, ForKind::kParallel);
  b.store(Acc, {od[0], od[1]}, buffer_load(Acc, {od[0], od[1]}) * buffer_load(scl, {od[0]}));
  b.end_frame();
  b.tile_op("copy", {rows(V, k * bn, bn), full(Vs)});
  b.tile_op("gemm", {full(P), full(Vs), full(Acc)}, {{"policy", std::string("FullRow")}});
  b.end_frame();
  auto fin = b.begin_loop_nest({"i", "j"}, {int_imm(bm), int_imm(dim)}, ForKind::kParallel);
  b.store(Acc, {fin[0], fin[1]}, binary(NodeKind::kDiv, buffer_load(Acc, {fin[0], fin[1]}), buffer_load(logsum, {fin[0]})));
  b.end_frame();
  b.tile_op("copy", {full(Acc), rows(O, bx * bm, bm)});
  b.end_frame();
  return b.finish();
}

TEST(GemmRsInterp, FlashAttentionMatchesSoftmaxReference) {
  const int64_t seq = 128, heads = 2, dim = 64;
  passes::PassContext ctx(sm(80));
  PrimFunc g = first_half(flash_attention(seq, heads, dim, 64, 32, 128), ctx);
  EXPECT_EQ(calls_of(g, "tl.gemm_rs").size(), 1u) << script(g);
  HostTensor Q = random_tensor({1, seq, heads, dim}, 4), K = random_tensor({1, seq, heads, dim}, 5),
             V = random_tensor({1, seq, heads, dim}, 6);
  for (auto& x : Q.data) x *= 3;  // peaked rows: the running max changes from block to block
  HostTensor O({1, seq, heads, dim}, std::nan(""));
  tilec::testing::run_lowered(g, {{"Q", &Q}, {"K", &K}, {"V", &V}, {"O", &O}});
  auto at = [&](const HostTensor& t, int64_t s, int64_t h, int64_t d) { return t.data[(s * heads + h) * dim + d]; };
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < seq; ++i) {
      std::vector<double> p(seq);
      double mxv = -INFINITY, total = 0;
      for (int64_t j = 0; j < seq; ++j) {
        double s = 0;
        for (int64_t d = 0; d < dim; ++d) s += at(Q, i, h, d) * at(K, j, h, d);
        p[j] = s / std::sqrt(double(dim));
        mxv = std::max(mxv, p[j]);
      }
      for (auto& x : p) total += (x = std::exp(x - mxv));
      for (int64_t d = 0; d < dim; ++d) {
        double want = 0;
        for (int64_t j = 0; j < seq; ++j) want += p[j] / total * at(V, j, h, d);
        ASSERT_NEAR(at(O, i, h, d), want, 1e-4) << "head " << h << " row " << i << " col " << d;
      }
    }
}

}  // namespace
