// T.make_tensor buffers (BufferNode::data): the builder's Let + Allocate, the printer's form,
// structural equality over the address, the verifier, flatten_buffers and codegen.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/structural.h"
#include "tilec/ir/verifier.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/support/diag.h"
#include "tilec/target/cuda/codegen.h"

using namespace tilec;
using namespace tilec::ir;
using codegen_test::contains;

namespace {

// ptrs: a table of addresses; A = T.make_tensor(ptrs[bx or 1 - bx], (rows, 32), float16);
// A[tx / 32, tx % 32] = 1.
PrimFunc pointer_kernel(bool swapped, Expr rows = int_imm(4)) {
  Builder b("k");
  Buffer ptrs = b.tensor("ptrs", {int_imm(2)}, DataType::Int(64));
  auto bx = b.begin_kernel({int_imm(2)}, {128});
  Expr which = swapped ? int_imm(1) - bx[0] : Expr(bx[0]);
  Buffer A = b.make_tensor("A", buffer_load(ptrs, {which}), {std::move(rows), int_imm(32)}, Float16());
  Var tx = b.thread_vars()[0];
  b.store(A, {floordiv(tx, 32), floormod(tx, 32)}, cast(Float16(), float_imm(1.0, Float32())));
  b.end_frame();
  return b.finish();
}

PrimFunc run_pass(const passes::Pass& p, const PrimFunc& f) {
  passes::PassContext ctx;
  return p.run(f, ctx);
}

TEST(PointerTensor, TheAddressIsBoundOnceAndPrintedAsMakeTensor) {
  PrimFunc f = pointer_kernel(false);
  verify(f);
  std::string text = script(f);
  EXPECT_TRUE(contains(text, "        A_ptr = ptrs[bx]\n        A = T.make_tensor(A_ptr, (4, 32), \"float16\")\n"))
      << text;
}

TEST(PointerTensor, StructuralEqualityComparesTheAddress) {
  EXPECT_TRUE(structural_equal(pointer_kernel(false), pointer_kernel(false)));
  EXPECT_FALSE(structural_equal(pointer_kernel(false), pointer_kernel(true)));
}

TEST(PointerTensor, AnAddressThatIsNot64BitsIsAUserError) {
  Var addr = make_var("addr", DataType::Int(32));
  EXPECT_THROW(make_pointer_tensor("A", {int_imm(4)}, Float32(), {}, addr), UserError);
  EXPECT_THROW(make_pointer_tensor("A", {int_imm(4)}, Float32(), {int_imm(1), int_imm(1)},
                                   make_var("p", DataType::Int(64))),
               UserError);
}

TEST(PointerTensor, FlattenKeepsTheAddressAndCodegenDeclaresATypedPointer) {
  PrimFunc out = run_pass(passes::flatten_buffers_pass(), pointer_kernel(false));
  std::string body = cuda::codegen_cuda_stmt(passes::back::find_kernel(out->body)->body);
  EXPECT_TRUE(contains(body, "half* __restrict__ A = reinterpret_cast<half*>(A_ptr);\n")) << body;
  EXPECT_TRUE(contains(body, "A[(tx >> 5) * 32 + (tx & 31)] = ")) << body;  // constant shape: int32 offsets
}

TEST(PointerTensor, ASymbolicShapeGets64BitOffsets) {
  Builder b("k");
  Var n = b.dynamic("n");
  Buffer ptrs = b.tensor("ptrs", {n}, DataType::Int(64));
  auto bx = b.begin_kernel({int_imm(2)}, {128});
  Buffer A = b.make_tensor("A", buffer_load(ptrs, {bx[0]}), {n, int_imm(32)}, Float32());
  Var tx = b.thread_vars()[0];
  b.store(A, {bx[0], floormod(tx, 32)}, float_imm(0.0, Float32()));
  b.end_frame();
  PrimFunc out = run_pass(passes::flatten_buffers_pass(), b.finish());
  std::string body = cuda::codegen_cuda_stmt(passes::back::find_kernel(out->body)->body);
  EXPECT_TRUE(contains(body, "(long long)")) << body;
}

}  // namespace
