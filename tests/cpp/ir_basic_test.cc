#include <gtest/gtest.h>

#include "tilec/ir/builder.h"

using namespace tilec::ir;

TEST(IrBasic, BuildsAKernel) {
  Builder b("add");
  auto A = b.tensor("A", {int_imm(1024)}, DataType::Float(32));
  auto vars = b.begin_kernel({int_imm(8)}, {128});
  auto s = b.alloc_shared("s", {int_imm(128)}, DataType::Float(32));
  // Block bx copies its 128 elements of A (a whole-A copy into s would be a shape mismatch).
  BufferRegion tile{A, {{vars[0] * 128, int_imm(128)}}, {}};
  b.tile_op("copy", {tile, BufferRegion::full(s)});
  b.end_frame();
  PrimFunc f = b.finish();
  ASSERT_TRUE(f->body.as<KernelLaunchNode>());
  EXPECT_EQ(vars.size(), 1u);
}

TEST(IrBasic, BinaryPromotesMixedTypes) {
  Var h = make_var("h", DataType::Float(16));
  Var f = make_var("f", DataType::Float(32));
  Var b = make_var("b", DataType::BFloat16());
  Var i = make_var("i", DataType::Int(32));
  Var l = make_var("l", DataType::Int(64));
  EXPECT_EQ((h * f)->dtype, DataType::Float(32));
  EXPECT_EQ((h * b)->dtype, DataType::Float(32));
  EXPECT_EQ((i * h)->dtype, DataType::Float(16));
  EXPECT_EQ((i + l)->dtype, DataType::Int(64));
  Expr product = h * f;
  auto* mul = product.as<BinaryNode>();
  ASSERT_TRUE(mul);
  EXPECT_TRUE(mul->a.as<CastNode>());  // the float16 side is cast up
  EXPECT_TRUE(mul->b.same_as(f));
}

TEST(IrBasic, BinaryRejectsBoolArithmetic) {
  Var p = make_var("p", DataType::Bool());
  Var i = make_var("i", DataType::Int(32));
  try {
    (void)(p + i);
    FAIL() << "expected a UserError";
  } catch (const tilec::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("have different types: bool and int32"), std::string::npos) << e.what();
  }
}

TEST(IrBasic, ReorderParamsRestoresTheGivenOrder) {
  Builder b("f");
  b.tensor("C", {int_imm(4)}, DataType::Float(32));
  b.scalar_param("n", DataType::Int(32));
  b.tensor("A", {int_imm(4)}, DataType::Float(32));
  b.reorder_params({"A", "n", "C"});
  PrimFunc f = b.finish();
  ASSERT_EQ(f->params.size(), 3u);
  EXPECT_EQ(f->params[0].name(), "A");
  EXPECT_EQ(f->params[1].name(), "n");
  EXPECT_EQ(f->params[2].name(), "C");
}

TEST(IrBasic, ReorderParamsRejectsAnUnknownName) {
  Builder b("f");
  b.tensor("A", {int_imm(4)}, DataType::Float(32));
  EXPECT_THROW(b.reorder_params({"B"}), tilec::UserError);
  EXPECT_THROW(b.reorder_params({"A", "A"}), tilec::UserError);
}
