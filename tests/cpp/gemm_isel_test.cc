// GEMM instruction selection and warp partition (src/target/cuda/gemm_isel.cc).
#include <gtest/gtest.h>

#include "tilec/target/cuda/gemm_isel.h"

using namespace tilec;
using namespace tilec::cuda;
using ir::DataType;

namespace {

target::Target sm(int arch, bool a = false) {
  target::Target t;
  t.arch = arch;
  t.arch_specific = a;
  return t;
}

GemmQuery query(DataType ab, DataType c, int64_t m = 128, int64_t n = 128, int64_t k = 32, int threads = 128) {
  GemmQuery q;
  q.m = m, q.n = n, q.k = k;
  q.a_dtype = q.b_dtype = ab;
  q.c_dtype = c;
  q.lda = k, q.ldb = n;
  q.num_threads = threads;
  q.loc = SourceLoc{"kernel.py", 12, 9};
  return q;
}

std::string error_of(const GemmQuery& q, const target::Target& t) {
  try {
    select_gemm(q, t);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(GemmIsel, HalfAndBfloat16SelectMmaOnAmpereAndPlainSm90) {
  for (auto t : {sm(80), sm(86), sm(90, false)}) {
    GemmPlan p = select_gemm(query(DataType::Float(16), DataType::Float(32)), t);
    EXPECT_EQ(p.inst, GemmInst::kMma);
    EXPECT_EQ(p.kind, MmaKind::kF16);
    p = select_gemm(query(DataType::BFloat16(), DataType::Float(32)), t);
    EXPECT_EQ(p.inst, GemmInst::kMma);
    EXPECT_EQ(p.kind, MmaKind::kBF16);
    EXPECT_EQ(p.warp_m * p.warp_n, 4);
  }
}

TEST(GemmIsel, Float32InputsUseTf32MmaLikeTileLang) {
  GemmPlan p = select_gemm(query(DataType::Float(32), DataType::Float(32)), sm(80));
  EXPECT_EQ(p.inst, GemmInst::kMma);
  EXPECT_EQ(p.kind, MmaKind::kTF32);
  EXPECT_EQ(mma_k(p.kind), 8);
}

TEST(GemmIsel, Int8SelectsIntegerMma) {
  GemmPlan p = select_gemm(query(DataType::Int(8), DataType::Int(32), 128, 128, 64), sm(80));
  EXPECT_EQ(p.kind, MmaKind::kS8);
  p = select_gemm(query(DataType::UInt(8), DataType::Int(32), 128, 128, 64), sm(80));
  EXPECT_EQ(p.kind, MmaKind::kU8);
  EXPECT_STREQ(mma_kind_constant(p.kind), "tl::kMmaU8");
}

TEST(GemmIsel, FallsBackToFmaWhenNoMmaShapeFits) {
  // float64, float16 accumulation, K not a multiple of 16, pre-Ampere targets.
  EXPECT_EQ(select_gemm(query(DataType::Float(64), DataType::Float(64)), sm(80)).inst, GemmInst::kFma);
  EXPECT_EQ(select_gemm(query(DataType::Float(16), DataType::Float(16)), sm(80)).inst, GemmInst::kFma);
  EXPECT_EQ(select_gemm(query(DataType::Float(16), DataType::Float(32), 64, 64, 8), sm(80)).inst, GemmInst::kFma);
  EXPECT_EQ(select_gemm(query(DataType::Float(16), DataType::Float(32)), sm(75)).inst, GemmInst::kFma);
  GemmPlan p = select_gemm(query(DataType::Float(32), DataType::Float(32), 64, 64, 16, 256), sm(70));
  EXPECT_EQ(p.inst, GemmInst::kFma);
  EXPECT_EQ(p.thread_m, 16);
  EXPECT_EQ(p.thread_n, 16);
}

TEST(GemmIsel, ExplicitMmaThatCannotWorkIsAUserErrorWithTheReason) {
  auto q = query(DataType::Float(16), DataType::Float(32), 8, 64, 32);
  q.instruction = "mma";
  std::string e = error_of(q, sm(80));
  EXPECT_NE(e.find("kernel.py:12:9"), std::string::npos) << e;
  EXPECT_NE(e.find("T.gemm(instruction=\"mma\") cannot be used here"), std::string::npos) << e;
  EXPECT_NE(e.find("M % 16 == 0, N % 8 == 0 and K % 16 == 0"), std::string::npos) << e;
  EXPECT_NE(e.find("M=8 N=64 K=32"), std::string::npos) << e;

  q = query(DataType::Float(16), DataType::Float(16));
  q.instruction = "mma";
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("mma.sync supports float16/bfloat16 -> float32"), std::string::npos) << e;
  EXPECT_NE(e.find("A float16, B float16, C float16"), std::string::npos) << e;

  q = query(DataType::Float(16), DataType::Float(32));
  q.instruction = "mma";
  e = error_of(q, sm(75));
  EXPECT_NE(e.find("mma.sync needs sm_80 or newer, the target is sm_75"), std::string::npos) << e;

  q = query(DataType::Float(16), DataType::Float(32), 16, 8, 16);
  q.instruction = "mma";
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("the 16x8 C tile cannot be split over 4 warps with policy Square"), std::string::npos) << e;

  q = query(DataType::Float(16), DataType::Float(32));
  q.lda = 12;
  q.instruction = "mma";
  e = error_of(q, sm(80));
  EXPECT_NE(e.find("A_shared rows are 24 bytes"), std::string::npos) << e;
}

TEST(GemmIsel, ExplicitFmaIsHonoured) {
  auto q = query(DataType::BFloat16(), DataType::Float(32));
  q.instruction = "fma";
  EXPECT_EQ(select_gemm(q, sm(90, true)).inst, GemmInst::kFma);
}

TEST(GemmIsel, Sm90aSelectsWgmmaWithTheWarpgroupSplitThatReadsLeast) {
  // The team GEMM: 128 x 256 tile, 8 warps. Square -> the split whose atoms read the least
  // shared memory per K step: 2 x 1 warpgroups of one m64n256 each (640 elements) rather than
  // TileLang's 1 x 2 of two m64n128 each (768).
  auto q = query(DataType::BFloat16(), DataType::Float(32), 128, 256, 64, 256);
  GemmPlan p = select_gemm(q, sm(90, true));
  EXPECT_EQ(p.inst, GemmInst::kWgmma);
  EXPECT_EQ(p.wg_m, 2);
  EXPECT_EQ(p.wg_n, 1);
  EXPECT_EQ(p.atom_n, 256);
  EXPECT_STREQ(wgmma_kind_constant(p.wgmma_kind), "tl::kWgmmaBF16");
  // FullCol: both warpgroups along N, two m64n128 each; TileLang's split on request.
  q.policy = WarpPolicy::kFullCol;
  p = select_gemm(q, sm(90, true));
  EXPECT_EQ(p.wg_m, 1);
  EXPECT_EQ(p.wg_n, 2);
  EXPECT_EQ(p.atom_n, 128);
  q.policy = WarpPolicy::kSquare;
  q.wgmma_partition = "FullCol";
  EXPECT_EQ(select_gemm(q, sm(90, true)).wg_n, 2);
  // The quickstart tile on one warpgroup.
  p = select_gemm(query(DataType::Float(16), DataType::Float(32), 128, 128, 32, 128), sm(90, true));
  EXPECT_EQ(p.inst, GemmInst::kWgmma);
  EXPECT_EQ(p.wg_m * p.wg_n, 1);
  EXPECT_EQ(p.atom_n, 128);
}

TEST(GemmIsel, WgmmaPredicatesFallBackToMmaAndExplicitRequestsSayWhy) {
  // 64 threads: not a warpgroup -> mma.sync; asking for wgmma is an error that says why.
  auto q = query(DataType::BFloat16(), DataType::Float(32), 128, 128, 32, 64);
  EXPECT_EQ(select_gemm(q, sm(90, true)).inst, GemmInst::kMma);
  q.instruction = "wgmma";
  std::string e = error_of(q, sm(90, true));
  EXPECT_NE(e.find("T.gemm(instruction=\"wgmma\") cannot be used here: wgmma runs on whole warpgroups"),
            std::string::npos)
      << e;
  // M = 32: below one 64-row atom.
  q = query(DataType::Float(16), DataType::Float(32), 32, 128, 32, 128);
  EXPECT_EQ(select_gemm(q, sm(90, true)).inst, GemmInst::kMma);
  // fp8 / int8 / tf32 read K-major only: B stored K x N falls back; N x K takes wgmma.
  q = query(DataType::Float8E4M3(), DataType::Float(32), 128, 128, 64, 128);
  q.instruction = "wgmma";
  e = error_of(q, sm(90, true));
  EXPECT_NE(e.find("K-major only"), std::string::npos) << e;
  q.trans_b = true;
  GemmPlan p = select_gemm(q, sm(90, true));
  EXPECT_EQ(p.inst, GemmInst::kWgmma);
  EXPECT_EQ(wgmma_k(p.wgmma_kind), 32);
  q = query(DataType::Int(8), DataType::Int(32), 128, 128, 64, 128);
  q.trans_b = true;
  EXPECT_EQ(select_gemm(q, sm(90, true)).inst, GemmInst::kWgmma);
  // sm_90 without the 'a' features, and the pass config, keep mma.sync.
  q = query(DataType::BFloat16(), DataType::Float(32));
  EXPECT_EQ(select_gemm(q, sm(90, false)).inst, GemmInst::kMma);
  q.allow_wgmma = false;
  EXPECT_EQ(select_gemm(q, sm(90, true)).inst, GemmInst::kMma);
  q.instruction = "wgmma";
  e = error_of(q, sm(90, true));
  EXPECT_NE(e.find("tl.disable_wgmma"), std::string::npos) << e;
}

TEST(GemmIsel, Tcgen05IsASlotForALaterIssue) {
  auto q = query(DataType::BFloat16(), DataType::Float(32));
  q.instruction = "tcgen05";
  std::string e = error_of(q, sm(100, true));
  EXPECT_NE(e.find("tcgen05 lowering of T.gemm is not implemented yet"), std::string::npos) << e;
}

TEST(GemmIsel, UnknownInstructionListsTheKnownOnes) {
  auto q = query(DataType::BFloat16(), DataType::Float(32));
  q.instruction = "hmma";
  std::string e = error_of(q, sm(80));
  EXPECT_NE(e.find("T.gemm: unknown instruction \"hmma\""), std::string::npos) << e;
  EXPECT_NE(e.find("\"mma\", \"fma\""), std::string::npos) << e;
}

TEST(GemmIsel, AccumulatorMustBeAFragment) {
  auto q = query(DataType::BFloat16(), DataType::Float(32));
  q.c_scope = ir::Scope::kSharedDyn;
  std::string e = error_of(q, sm(80));
  EXPECT_NE(e.find("T.gemm: the accumulator C must be a fragment (T.alloc_fragment), not shared.dyn"),
            std::string::npos)
      << e;
}

TEST(GemmIsel, MixedOperandDtypesAreRejectedEverywhere) {
  auto q = query(DataType::Float(16), DataType::Float(32));
  q.b_dtype = DataType::BFloat16();
  for (const auto& t : {sm(80), sm(90, true)}) {
    std::string e = error_of(q, t);
    // One reason and a hint; no candidate list (tcgen05 / wgmma lines do not apply).
    EXPECT_EQ(e,
              "kernel.py:12:9: error: T.gemm: the operands A and B must have the same dtype, got A float16 and B "
              "bfloat16\n  hint: allocate both tiles with one dtype, or convert one first (T.copy into a float16 "
              "tile converts)");
  }
}

TEST(GemmIsel, CandidatesOfOtherGenerationsAreNotListed) {
  // float32 A in registers: no instruction takes it; the sm_90a error has no tcgen05 line
  // and the sm_80 one no wgmma line.
  auto q = query(DataType::Float(32), DataType::Float(32));
  q.a_scope = ir::Scope::kFragment;
  std::string hopper = error_of(q, sm(90, true));
  EXPECT_NE(hopper.find("T.gemm cannot be lowered for sm_90a"), std::string::npos) << hopper;
  EXPECT_EQ(hopper.find("tcgen05"), std::string::npos) << hopper;
  EXPECT_NE(hopper.find("wgmma:"), std::string::npos) << hopper;
  std::string ampere = error_of(q, sm(80));
  EXPECT_EQ(ampere.find("wgmma"), std::string::npos) << ampere;
  EXPECT_NE(ampere.find("T.gemm cannot be lowered for sm_80"), std::string::npos) << ampere;
  EXPECT_NE(ampere.find("\n    mma: "), std::string::npos) << ampere;
}

TEST(GemmIsel, SmallTileOverManyThreadsIsAnErrorNotAnAssert) {
  auto q = query(DataType::Float(32), DataType::Float(32), 2, 2, 4, 256);
  std::string e = error_of(q, sm(80));
  EXPECT_NE(e.find("fma: the 2x2 C tile cannot be split evenly over 256 threads"), std::string::npos) << e;
}

// ---- warp partition ----

struct PartitionCase {
  WarpPolicy policy;
  int64_t m, n;
  int warps;
  int want_m, want_n;  // 0, 0: no partition
};
class WarpPartition : public ::testing::TestWithParam<PartitionCase> {};

TEST_P(WarpPartition, FollowsThePolicy) {
  const auto c = GetParam();
  auto p = compute_warp_partition(c.policy, c.m, c.n, c.warps);
  if (c.want_m == 0) {
    EXPECT_FALSE(p.has_value());
    return;
  }
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->first, c.want_m);
  EXPECT_EQ(p->second, c.want_n);
  EXPECT_EQ(c.m % (16 * p->first), 0);
  EXPECT_EQ(c.n % (8 * p->second), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, WarpPartition,
    ::testing::Values(PartitionCase{WarpPolicy::kSquare, 128, 256, 8, 2, 4},  // 64x64 warp tiles
                      PartitionCase{WarpPolicy::kSquare, 128, 128, 4, 2, 2},
                      // TileLang's balance counts m16 and n8 tiles: 256x128 -> 128x32 per warp
                      PartitionCase{WarpPolicy::kSquare, 256, 128, 8, 2, 4},
                      PartitionCase{WarpPolicy::kSquare, 64, 64, 8, 2, 4},
                      PartitionCase{WarpPolicy::kSquare, 16, 256, 4, 1, 4},
                      PartitionCase{WarpPolicy::kFullRow, 128, 128, 4, 4, 1},
                      PartitionCase{WarpPolicy::kFullRow, 48, 64, 4, 1, 4},   // 48 rows cannot take 2 warps
                      PartitionCase{WarpPolicy::kFullCol, 128, 128, 4, 1, 4},
                      PartitionCase{WarpPolicy::kFullCol, 128, 16, 4, 2, 2},  // 16 columns take at most 2
                      PartitionCase{WarpPolicy::kSquare, 16, 8, 4, 0, 0}));

TEST(WarpPolicy, ParsesTileLangSpellings) {
  EXPECT_EQ(parse_warp_policy("Square"), WarpPolicy::kSquare);
  EXPECT_EQ(parse_warp_policy("FullRow"), WarpPolicy::kFullRow);
  EXPECT_EQ(parse_warp_policy("GemmWarpPolicy.FullCol"), WarpPolicy::kFullCol);
  EXPECT_EQ(parse_warp_policy("fullcol"), WarpPolicy::kFullCol);
  EXPECT_FALSE(parse_warp_policy("Diagonal").has_value());
}

}  // namespace
