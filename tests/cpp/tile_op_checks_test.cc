// Tile-op argument checks (src/ir/tile_op_checks.cc): region completion and shape errors.
#include <gtest/gtest.h>

#include "tilec/ir/builder.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

struct Kernel {
  Builder b{"k"};
  Buffer A, As, Bs, C;
  std::vector<Var> blocks;
  PrimFunc f;  // keeps the nodes last_op() points into alive
  Kernel() {
    A = b.tensor("A", {int_imm(1024), int_imm(1024)}, DataType::Float(16));
    blocks = b.begin_kernel({int_imm(8), int_imm(8)}, {128});
    As = b.alloc_shared("A_shared", {int_imm(128), int_imm(32)}, DataType::Float(16));
    Bs = b.alloc_shared("B_shared", {int_imm(32), int_imm(64)}, DataType::Float(16));
    C = b.alloc_fragment("C_local", {int_imm(128), int_imm(64)}, DataType::Float(32));
  }
  BufferRegion point(const Buffer& buf, Expr i, Expr j) { return BufferRegion{buf, {{i, int_imm(1)}, {j, int_imm(1)}}, {}}; }
  const TileOpNode* last_op() {
    b.end_frame();
    f = b.finish();
    const Stmt* s = &f->body.as<KernelLaunchNode>()->body;
    while (auto* a = s->as<AllocateNode>()) s = &a->body;
    if (auto* q = s->as<SeqNode>()) s = &q->stmts.back();
    return s->as<TileOpNode>();
  }
};

std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST(TileOpChecks, CopyTakesPointExtentsFromTheOtherSide) {
  Kernel k;
  k.b.tile_op("copy", {k.point(k.A, k.blocks[1] * 128, int_imm(64)), BufferRegion::full(k.As)});
  const TileOpNode* op = k.last_op();
  ASSERT_NE(op, nullptr);
  const BufferRegion& src = region_arg(*op, 0);
  EXPECT_TRUE(is_const_int(src.region[0].extent, 128));
  EXPECT_TRUE(is_const_int(src.region[1].extent, 32));
  EXPECT_TRUE(is_const_int(src.region[1].min, 64));
}

TEST(TileOpChecks, CopyShapeMismatchNamesBothSides) {
  Kernel k;
  BufferRegion src{k.A, {{int_imm(0), int_imm(64)}, {int_imm(0), int_imm(32)}}, {}};
  std::string msg = user_error_of([&] { k.b.tile_op("copy", {src, BufferRegion::full(k.As)}); });
  EXPECT_EQ(msg, "T.copy: the source 'A' has shape (64, 32) but the destination 'A_shared' has shape (128, 32)");
}

TEST(TileOpChecks, GemmKMismatch) {
  Kernel k;
  std::string msg = user_error_of([&] {
    k.b.tile_op("gemm", {BufferRegion::full(k.As), BufferRegion::full(k.Bs), BufferRegion::full(k.C)},
                {{"transpose_B", true}});
  });
  EXPECT_EQ(msg, "T.gemm: the K extents differ: 'A_shared' has K = 32 but 'B_shared' has K = 64");
}

TEST(TileOpChecks, GemmAcceptsMatchingShapes) {
  Kernel k;
  k.b.tile_op("gemm", {BufferRegion::full(k.As), BufferRegion::full(k.Bs), BufferRegion::full(k.C)});
  EXPECT_NE(k.last_op(), nullptr);
}

TEST(TileOpChecks, GemmMMismatch) {
  Kernel k;
  auto C2 = k.b.alloc_fragment("C2", {int_imm(64), int_imm(64)}, DataType::Float(32));
  std::string msg = user_error_of([&] {
    k.b.tile_op("gemm", {BufferRegion::full(k.As), BufferRegion::full(k.Bs), BufferRegion::full(C2)});
  });
  EXPECT_EQ(msg, "T.gemm: the M extents differ: 'A_shared' has M = 128 but 'C2' has M = 64");
}

TEST(TileOpChecks, FillValueTakesTheBufferDtype) {
  Kernel k;
  k.b.tile_op("fill", {BufferRegion::full(k.C), int_imm(0)});
  const TileOpNode* op = k.last_op();
  const Expr& v = expr_arg(*op, 1);
  ASSERT_TRUE(v.as<FloatImmNode>());
  EXPECT_EQ(v->dtype, DataType::Float(32));
}

TEST(TileOpChecks, ReduceDimOutOfRange) {
  Kernel k;
  auto out = k.b.alloc_fragment("m", {int_imm(128)}, DataType::Float(32));
  std::string msg = user_error_of([&] {
    k.b.tile_op("reduce_max", {BufferRegion::full(k.C), BufferRegion::full(out)}, {{"dim", int64_t{2}}});
  });
  EXPECT_EQ(msg, "T.reduce_max: dim=2 is out of range for 'C_local' of 2 dimensions");
}

TEST(TileOpChecks, ReduceOutputShape) {
  Kernel k;
  auto out = k.b.alloc_fragment("m", {int_imm(64)}, DataType::Float(32));
  std::string msg = user_error_of([&] {
    k.b.tile_op("reduce_max", {BufferRegion::full(k.C), BufferRegion::full(out)}, {{"dim", int64_t{1}}});
  });
  EXPECT_EQ(msg, "T.reduce_max: reducing 'C_local' of shape (128, 64) over dim 1 gives shape (128,), but 'm' has shape (64,)");
  Kernel ok;
  auto rows = ok.b.alloc_fragment("m", {int_imm(128)}, DataType::Float(32));
  ok.b.tile_op("reduce_max", {BufferRegion::full(ok.C), BufferRegion::full(rows)}, {{"dim", int64_t{1}}});
  EXPECT_NE(ok.last_op(), nullptr);
}

TEST(TileOpChecks, RegionRankMustMatchBuffer) {
  Kernel k;
  BufferRegion bad{k.A, {{int_imm(0), int_imm(128)}}, {}};
  std::string msg = user_error_of([&] { k.b.tile_op("copy", {bad, BufferRegion::full(k.As)}); });
  EXPECT_EQ(msg, "T.copy: buffer 'A' has 2 dimensions but is indexed with 1");
}

TEST(TileOpChecks, BarrierInitCountsMatchBarriers) {
  Kernel k;
  auto bar = k.b.alloc("mbar", {int_imm(2)}, DataType::UInt(64), Scope::kBarrier);
  std::string msg = user_error_of([&] {
    k.b.tile_op("barrier_init", {BufferRegion::full(bar)}, {{"arrive_count", std::vector<int64_t>{128}}});
  });
  EXPECT_EQ(msg, "T.barrier_init: 'mbar' holds 2 barriers but 1 arrive counts were given");
}
