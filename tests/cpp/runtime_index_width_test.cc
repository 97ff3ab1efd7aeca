// 32-bit index arithmetic never wraps silently: flatten_buffers picks int64 offsets for a
// tensor whose constant dimensions already reach 2^31 elements, the LaunchPlan records
// the width per tensor (index=int32|int64 in its text), and the runtime rejects an
// argument of an int32-indexed tensor whose offsets span 2^31 elements or more, before
// anything is allocated or launched. No GPU: fake tensor descriptors, lowering only.
#include <gtest/gtest.h>

#include <cstdint>

#include "codegen_test_util.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/builder.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/runtime/kernel.h"
#include "tilec/runtime/plan_text.h"
#include "tilec/target/cuda/codegen.h"
#include "tilec/target/cuda/lower.h"

namespace tilec::runtime {
namespace {

using codegen_test::contains;

constexpr int64_t k2to31 = int64_t{1} << 31;

// ---------------------------------------------------------------- tensor_span

TEST(RuntimeIndexWidth, TensorSpan) {
  int64_t shape[] = {3, 4, 5};
  EXPECT_EQ(tensor_span(3, shape, nullptr), 60);  // row-major: the element count
  int64_t rm[] = {20, 5, 1};
  EXPECT_EQ(tensor_span(3, shape, rm), 60);
  int64_t transposed[] = {1, 15, 3};  // 1 + 2*1 + 3*15 + 4*3
  EXPECT_EQ(tensor_span(3, shape, transposed), 60);
  int64_t padded[] = {100, 10, 1};  // 1 + 2*100 + 3*10 + 4*1
  EXPECT_EQ(tensor_span(3, shape, padded), 235);
  int64_t negative[] = {-100, 10, 1};  // |stride| counts
  EXPECT_EQ(tensor_span(3, shape, negative), 235);
  int64_t broadcast[] = {0, 0, 1};
  EXPECT_EQ(tensor_span(3, shape, broadcast), 5);
  int64_t empty[] = {3, 0, 5};
  EXPECT_EQ(tensor_span(3, empty, nullptr), 0);
  EXPECT_EQ(tensor_span(3, empty, padded), 0);
  EXPECT_EQ(tensor_span(0, shape, nullptr), 1);  // a 0-d tensor: one element
  int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(tensor_span(2, huge, nullptr), INT64_MAX);  // saturates
  int64_t huge_strides[] = {int64_t{1} << 40, 1};
  EXPECT_EQ(tensor_span(2, huge, huge_strides), INT64_MAX);
}

// ---------------------------------------------------------------- runtime check

CompiledArtifact artifact_for(const std::string& plan_text) {
  CompiledArtifact a;
  a.plan = launch_plan_from_text(plan_text);
  a.target = "sm_90a";
  return a;
}

struct FakeTensor {
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  TensorView view;
  explicit FakeTensor(std::vector<int64_t> dims, std::vector<int64_t> s = {}) {
    view.ndim = static_cast<int>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) shape[i] = dims[i];
    view.shape = shape;
    view.dtype = ir::Float32();
    view.data = 0x10000;
    if (!s.empty()) {
      for (size_t i = 0; i < s.size(); ++i) strides[i] = s[i];
      view.strides = strides;
    }
  }
  ArgValue arg() const {
    ArgValue a;
    a.kind = ArgValue::kTensor;
    a.tensor = view;
    return a;
  }
};

// Binds (outputs optional) and finalizes; returns the error text or "".
std::string call_error(const Kernel& k, std::vector<ArgValue> args) {
  BoundCall call;
  try {
    k.bind(args.data(), call, true);
    for (int pos = 0; pos < k.num_params(); ++pos) {
      if (args[pos].kind != ArgValue::kMissing) continue;
      int64_t shape[kMaxRank];
      k.output_shape(pos, call, shape);
      return "";  // the output would be allocated now; nothing else to check here
    }
    k.finalize(args.data(), call);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

std::string copy_plan(const std::string& a_index, const std::string& c_index) {
  return "tilec-launch-plan 1\nkernel copy\nsymbol m int32\nsymbol n int32\n"
         "tensor A float32 shape=[m,n]" + a_index + "\n"
         "tensor C float32 shape=[m,n] output=1" + c_index + "\n"
         "arg tensor 0\narg tensor 1\narg symbol n int32\ngrid (// (+ m 3) 4)\nblock 128 1 1\n";
}

TEST(RuntimeIndexWidth, Int32TensorSpanningTwoToThe31IsRejected) {
  Kernel k(artifact_for(copy_plan("", "")));  // no index field: int32
  ASSERT_EQ(k.plan().tensors[0].index_bits, 32);
  FakeTensor a({65536, 32768}), c({65536, 32768});  // 2^31 elements; m and n fit int32
  std::string e = call_error(k, {a.arg(), c.arg()});
  EXPECT_CONTAINS(e, "argument 'A' of kernel copy(A: float32[m, n]) -> C: float32[m, n]: expected a tensor whose "
                     "element offsets span at most 2147483647 elements (2^31 - 1), since the kernel indexes 'A' with "
                     "int32 arithmetic; got one spanning 2147483648 elements (shape [65536, 32768])");
  EXPECT_CONTAINS(e, "hint: split the tensor into pieces of fewer than 2^31 elements, or compile the kernel with "
                     "64-bit indexing for it: declare its dimensions 64-bit, m = T.dynamic(\"m\", \"int64\"), "
                     "n = T.dynamic(\"n\", \"int64\")");
  // One row less passes, and so does the largest span, 2^31 - 1.
  FakeTensor a2({65535, 32768}), c2({65535, 32768});
  EXPECT_EQ(call_error(k, {a2.arg(), c2.arg()}), "");
  FakeTensor a3({k2to31 - 1, 1}), c3({k2to31 - 1, 1});
  EXPECT_EQ(call_error(k, {a3.arg(), c3.arg()}), "");
}

TEST(RuntimeIndexWidth, Int64TensorsAreNotLimited) {
  Kernel k(artifact_for(copy_plan(" index=int64", " index=int64")));
  FakeTensor a({65536, 65536}), c({65536, 65536});
  EXPECT_EQ(call_error(k, {a.arg(), c.arg()}), "");
}

TEST(RuntimeIndexWidth, OutputIsRefusedBeforeItIsAllocated) {
  // A is indexed with int64, the output C with int32: the runtime must not allocate C.
  Kernel k(artifact_for(copy_plan(" index=int64", "")));
  FakeTensor a({65536, 65536});
  std::string e = call_error(k, {a.arg(), ArgValue{}});
  EXPECT_CONTAINS(e, "argument 'C' of kernel");
  EXPECT_CONTAINS(e, "got one spanning 4294967296 elements (shape [65536, 65536])");
}

TEST(RuntimeIndexWidth, ExplicitStridesCountWithTheirMagnitude) {
  const char* plan = R"(tilec-launch-plan 1
kernel rows
symbol m int32
symbol s int32
tensor A float32 shape=[m,4] strides=[s,1]
grid m
block 32 1 1
)";
  Kernel k(artifact_for(plan));
  // 1 + 3 * 2^29 + 3 * 1 < 2^31: fine. 1 + 4 * 2^29 + 3 > 2^31: rejected.
  FakeTensor ok({4, 4}, {int64_t{1} << 29, 1}), bad({5, 4}, {int64_t{1} << 29, 1});
  EXPECT_EQ(call_error(k, {ok.arg()}), "");
  std::string e = call_error(k, {bad.arg()});
  EXPECT_CONTAINS(e, "got one spanning 2147483652 elements (shape [5, 4], strides [536870912, 1])");
  EXPECT_CONTAINS(e, "m = T.dynamic(\"m\", \"int64\"), s = T.dynamic(\"s\", \"int64\")");
  // A size-1 dimension's stride is never multiplied by a nonzero index.
  FakeTensor unit({1, 4}, {int64_t{1} << 30, 1});
  EXPECT_EQ(call_error(k, {unit.arg()}), "");
}

TEST(RuntimeIndexWidth, SymbolTooWideForItsTypeSuggestsInt64) {
  Kernel k(artifact_for(copy_plan("", "")));
  FakeTensor a({k2to31, 1}), c({k2to31, 1});
  std::string e = call_error(k, {a.arg(), c.arg()});
  EXPECT_CONTAINS(e, "dimension 0 = 2147483648 does not fit in the symbol 'm', which has type int32");
  EXPECT_CONTAINS(e, "hint: declare it 64-bit, m = T.dynamic(\"m\", \"int64\"), or split the tensor");
}

TEST(RuntimeIndexWidth, HandWrittenPlanHintNamesThePlanField) {
  const char* plan = "tilec-launch-plan 1\nkernel k\ntensor A float32 shape=[65536,32768]\ngrid 1\nblock 32 1 1\n";
  Kernel k(artifact_for(plan));
  FakeTensor a({65536, 32768});
  EXPECT_CONTAINS(call_error(k, {a.arg()}), "for it (launch plan text: index=int64)");
}

// ---------------------------------------------------------------- grid extents

TEST(RuntimeIndexWidth, GridExtentsAreExactNotWrappedToInt32) {
  ir::Var m = ir::make_var("m");  // int32
  // T.ceildiv(m, 128) near 2^31: m + 127 would wrap negative in int32.
  EXPECT_EQ(eval_int(ir::ceildiv(m, ir::int_imm(128)), {m}, {kMaxInt32Span}), int64_t{1} << 24);
  // Casts still wrap (they say so).
  EXPECT_EQ(eval_int(ir::cast(ir::DataType::Int(16), m * 4), {m}, {int64_t{1} << 14}), 0);
  try {
    eval_int(m * m * m, {m}, {int64_t{1} << 30});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_CONTAINS(e.what(), "a launch-grid expression overflows 64-bit arithmetic with the given arguments");
  }
  // n * 4 with n = 2^30 wrapped to 0 in int32: an empty grid, the kernel silently skipped.
  Kernel k(artifact_for("tilec-launch-plan 1\nkernel k\nsymbol n int32\ntensor A float32 shape=[n] "
                        "strides=[0]\ngrid (* n 4)\nblock 32 1 1\n"));
  FakeTensor a({int64_t{1} << 30}, {0});
  EXPECT_CONTAINS(call_error(k, {a.arg()}), "grid dimension 0 evaluates to 4294967296, outside CUDA's range");
}

// ---------------------------------------------------------------- plan text

TEST(RuntimeIndexWidth, PlanTextField) {
  LaunchPlan p = launch_plan_from_text(copy_plan(" index=int64", ""));
  EXPECT_EQ(p.tensors[0].index_bits, 64);
  EXPECT_EQ(p.tensors[1].index_bits, 32);
  std::string text = launch_plan_to_text(p);
  EXPECT_TRUE(contains(text, "tensor A float32 shape=[m,n] strides=[] align=1 output=0 index=int64\n")) << text;
  EXPECT_TRUE(contains(text, "tensor C float32 shape=[m,n] strides=[] align=1 output=1 index=int32\n")) << text;
  EXPECT_EQ(launch_plan_to_text(launch_plan_from_text(text)), text);
  try {
    launch_plan_from_text(copy_plan(" index=int16", ""));
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_CONTAINS(e.what(), "launch plan text, line 5: index is int32 or int64, got 'int16'");
  }
  // Without the field: int64 when one of the tensor's symbols is int64.
  LaunchPlan mixed = launch_plan_from_text(
      "tilec-launch-plan 1\nkernel k\nsymbol m int32\nsymbol n int64\ntensor A float32 shape=[m,4]\n"
      "tensor B float32 shape=[m,n]\ntensor C float32 shape=[4,4] strides=[n,1]\ngrid 1\nblock 32 1 1\n");
  EXPECT_EQ(mixed.tensors[0].index_bits, 32);
  EXPECT_EQ(mixed.tensors[1].index_bits, 64);
  EXPECT_EQ(mixed.tensors[2].index_bits, 64);
  p.tensors[0].index_bits = 16;
  try {
    check_launch_plan(p);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_CONTAINS(e.what(), "tensor 'A' index width must be int32 or int64, got 16 bits");
  }
}

// ---------------------------------------------------------------- compile time

using namespace ir;

// C[r, c] = A[r, c] over a (rows, cols) tensor pair; one block per row, 128 threads
// striding over the columns.
PrimFunc copy_kernel(Expr rows, Expr cols, std::vector<Expr> a_strides = {}) {
  Builder b("copy");
  Buffer A = b.tensor("A", {rows, cols}, Float32(), std::move(a_strides));
  Buffer C = b.tensor("C", {rows, cols}, Float32());
  auto bx = b.begin_kernel({rows}, {128});
  Var tx = b.thread_vars()[0];
  b.loop("j", ceildiv(cols, int_imm(128)), ForKind::kSerial, [&](Var j) {
    Var c = b.let("c", j * 128 + tx);
    b.begin_if(c < cols);
    b.store(C, {bx[0], c}, buffer_load(A, {bx[0], c}));
    b.end_frame();
  });
  b.end_frame();
  return b.finish();
}

cuda::DeviceModule lower(const PrimFunc& f) {
  passes::PassContext ctx;
  return cuda::lower_to_cuda(f, ctx);
}

TEST(RuntimeIndexWidth, SymbolicInt32DimsGiveInt32IndicesAndAPlanThatSaysSo) {
  Builder dims("dims");
  auto m = lower(copy_kernel(dims.dynamic("m"), dims.dynamic("n")));
  EXPECT_EQ(m.plan.tensors[0].index_bits, 32);
  EXPECT_EQ(m.plan.tensors[1].index_bits, 32);
  EXPECT_FALSE(contains(m.source, "long long")) << m.source;
  EXPECT_TRUE(contains(launch_plan_to_text(m.plan), "index=int32"));
}

TEST(RuntimeIndexWidth, Int64SymbolsGiveInt64Indices) {
  Builder dims("dims");
  auto m = lower(copy_kernel(dims.dynamic("m", Int64()), dims.dynamic("n", Int64())));
  EXPECT_EQ(m.plan.tensors[0].index_bits, 64);
  EXPECT_EQ(m.plan.tensors[1].index_bits, 64);
  EXPECT_TRUE(contains(m.source, "long long n")) << m.source;
}

TEST(RuntimeIndexWidth, ConstantDimsReachingTwoToThe31GiveInt64Indices) {
  // 65536 x 32768 = 2^31 elements: int64. One row less: int32.
  auto big = lower(copy_kernel(int_imm(65536), int_imm(32768)));
  EXPECT_EQ(big.plan.tensors[0].index_bits, 64);
  EXPECT_TRUE(contains(big.source, "(long long)bx * 32768ll")) << big.source;
  auto small = lower(copy_kernel(int_imm(65535), int_imm(32768)));
  EXPECT_EQ(small.plan.tensors[0].index_bits, 32);
  EXPECT_FALSE(contains(small.source, "long long")) << small.source;
}

TEST(RuntimeIndexWidth, ConstantPartOfASymbolicTensorDecidesToo) {
  // A has a symbolic row count but a constant row stride of 2^31: any second row is out
  // of int32 reach, so its offsets are int64 at compile time; C (row-major, symbolic rows
  // of 1024) stays int32 and is checked at run time.
  Builder dims("dims");
  Var rows = dims.dynamic("m");
  auto m = lower(copy_kernel(rows, int_imm(1024), {int_imm(k2to31, Int64()), int_imm(1)}));
  EXPECT_EQ(m.plan.tensors[0].index_bits, 64);
  EXPECT_EQ(m.plan.tensors[1].index_bits, 32);
  // A constant stride that fits int32 but makes a constant-size dimension reach 2^31.
  Builder b("wide_rows");
  Buffer A = b.tensor("A", {int_imm(3), b.dynamic("n")}, Float32(), {int_imm(1 << 30), int_imm(1)});
  auto bx = b.begin_kernel({int_imm(3)}, {32});
  b.store(A, {bx[0], b.thread_vars()[0]}, float_imm(0.0));
  b.end_frame();
  passes::PassContext ctx;
  PrimFunc flat = passes::flatten_buffers_pass().run(b.finish(), ctx);
  EXPECT_EQ(cuda::codegen_cuda_stmt(passes::back::find_kernel(flat->body)->body),
            "A[(long long)bx * 1073741824ll + (long long)tx] = 0.0f;\n");
  EXPECT_EQ(passes::build_launch_plan(flat).tensors[0].index_bits, 64);
}

}  // namespace
}  // namespace tilec::runtime
