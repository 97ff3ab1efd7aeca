// Pass lower_sparse_gemm: T.gemm_sp becomes a dense shared tile written by a T.Parallel loop
// from the 2:4 values and metadata, then a T.gemm on it; other programs are left alone.
#include <gtest/gtest.h>

#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/passes/passes.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

// A_sparse (128, 32) float16, E (128, 64 / bits) of `meta`, B (64, 64), C (128, 64) float32.
PrimFunc sparse_gemm(DataType meta, bool with_gemm_sp = true) {
  Builder b("k");
  Buffer O = b.tensor("O", {int_imm(128), int_imm(64)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_s", {int_imm(128), int_imm(32)}, DataType::Float(16));
  Buffer Es = b.alloc_shared("E_s", {int_imm(128), int_imm(64 / meta.bits())}, meta);
  Buffer Bs = b.alloc_shared("B_s", {int_imm(64), int_imm(64)}, DataType::Float(16));
  Buffer C = b.alloc_fragment("C_f", {int_imm(128), int_imm(64)}, Float32());
  if (with_gemm_sp)
    b.tile_op("gemm_sp", {BufferRegion::full(As), BufferRegion::full(Es), BufferRegion::full(Bs), BufferRegion::full(C)},
              {{"policy", std::string("FullRow")}});
  b.tile_op("copy", {BufferRegion::full(C), BufferRegion::full(O)});
  b.end_frame();
  return b.finish();
}

std::string lowered(const PrimFunc& f) {
  passes::PassContext ctx;
  return script(passes::lower_sparse_gemm_pass().run(f, ctx));
}

}  // namespace

TEST(LowerSparseGemm, DecompressesIntoASharedTileThenRunsADenseGemm) {
  std::string s = lowered(sparse_gemm(DataType::Int(16)));
  EXPECT_EQ(s.find("gemm_sp"), std::string::npos) << s;
  EXPECT_NE(s.find("A_s_dense = T.alloc_shared((128, 64), \"float16\""), std::string::npos) << s;
  EXPECT_NE(s.find("T.Parallel(128, 64)"), std::string::npos) << s;
  EXPECT_NE(s.find("T.gemm(A_s_dense, B_s, C_f"), std::string::npos) << s;
  EXPECT_NE(s.find("FullRow"), std::string::npos) << s;  // the keywords go to the gemm
  // int16: 4 groups per metadata element, E's column is k // 16, the shift 4 * ((k // 4) % 4).
  EXPECT_NE(s.find("sp_k // 16"), std::string::npos) << s;
  EXPECT_NE(s.find("sp_k // 4 % 4 * 4"), std::string::npos) << s;
}

TEST(LowerSparseGemm, Int32MetadataPacksEightGroups) {
  std::string s = lowered(sparse_gemm(DataType::Int(32)));
  EXPECT_NE(s.find("sp_k // 32"), std::string::npos) << s;
  EXPECT_NE(s.find("sp_k // 4 % 8 * 4"), std::string::npos) << s;
}

TEST(LowerSparseGemm, ProgramsWithoutGemmSpAreUnchanged) {
  PrimFunc f = sparse_gemm(DataType::Int(16), /*with_gemm_sp=*/false);
  passes::PassContext ctx;
  EXPECT_TRUE(passes::lower_sparse_gemm_pass().run(f, ctx).same_as(f));
}
