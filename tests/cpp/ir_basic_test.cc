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
