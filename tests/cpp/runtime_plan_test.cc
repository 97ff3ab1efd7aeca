// LaunchPlan text round trip, plan checking, and eval_int.
#include <gtest/gtest.h>

#include "tilec/ir/expr.h"
#include "tilec/runtime/plan_text.h"

namespace tilec::runtime {
namespace {

using ir::Expr;

LaunchPlan sample_plan() {
  LaunchPlan p;
  p.kernel_name = "gemm_kernel";
  ir::Var m = ir::make_var("m"), n = ir::make_var("n", ir::Int64());
  p.symbols = {"m", "n"};
  p.symbol_vars = {m, n};
  TensorParam a{"A", ir::Float16(), {{-1, "m"}, {1024, ""}}, {}, 16, false};
  TensorParam b{"B", ir::DataType::BFloat16(), {{-1, "n"}, {64, ""}}, {{128, ""}, {1, ""}}, 4, false};
  TensorParam c{"C", ir::Float32(), {{-1, "m"}, {-1, "n"}}, {}, 1, true};
  p.tensors = {a, b, c};
  p.scalars = {{"alpha", ir::Float32()}, {"k", ir::Int32()}};
  p.param_order = {{true, 0}, {false, 0}, {true, 1}, {true, 2}, {false, 1}};
  KernelArg a0{KernelArg::kTensorData, 0};
  KernelArg a1{KernelArg::kTensorData, 2};
  KernelArg a2{KernelArg::kScalar, 0};
  KernelArg a3{KernelArg::kSymbol, 0, "n", ir::Int64()};
  KernelArg a4{KernelArg::kTensorData, 1};
  KernelArg a5{KernelArg::kScalar, 1};
  p.kernel_args = {a0, a1, a2, a3, a4, a5};
  p.grid = {ir::ceildiv(m, ir::int_imm(128)), ir::min(ir::cast(ir::Int32(), n), ir::int_imm(7)) + 1,
            ir::select(m > ir::int_imm(4096), ir::int_imm(2), ir::int_imm(1))};
  p.block[0] = 128;
  p.block[1] = 2;
  p.cluster[0] = 2;
  p.dynamic_shared_bytes = 98304;
  return p;
}

void expect_same_plan(const LaunchPlan& a, const LaunchPlan& b) {
  EXPECT_EQ(a.kernel_name, b.kernel_name);
  EXPECT_EQ(a.symbols, b.symbols);
  ASSERT_EQ(a.symbol_vars.size(), b.symbol_vars.size());
  for (size_t i = 0; i < a.symbol_vars.size(); ++i) EXPECT_EQ(a.symbol_vars[i]->dtype, b.symbol_vars[i]->dtype);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.alignment_bytes, y.alignment_bytes);
    EXPECT_EQ(x.is_output, y.is_output);
    ASSERT_EQ(x.shape.size(), y.shape.size());
    for (size_t d = 0; d < x.shape.size(); ++d) {
      EXPECT_EQ(x.shape[d].value, y.shape[d].value);
      EXPECT_EQ(x.shape[d].symbol, y.shape[d].symbol);
    }
    ASSERT_EQ(x.strides.size(), y.strides.size());
    for (size_t d = 0; d < x.strides.size(); ++d) EXPECT_EQ(x.strides[d].value, y.strides[d].value);
  }
  ASSERT_EQ(a.scalars.size(), b.scalars.size());
  for (size_t i = 0; i < a.scalars.size(); ++i) {
    EXPECT_EQ(a.scalars[i].name, b.scalars[i].name);
    EXPECT_EQ(a.scalars[i].dtype, b.scalars[i].dtype);
  }
  EXPECT_EQ(a.param_order, b.param_order);
  ASSERT_EQ(a.kernel_args.size(), b.kernel_args.size());
  for (size_t i = 0; i < a.kernel_args.size(); ++i) {
    EXPECT_EQ(a.kernel_args[i].kind, b.kernel_args[i].kind);
    EXPECT_EQ(a.kernel_args[i].index, b.kernel_args[i].index);
    EXPECT_EQ(a.kernel_args[i].symbol, b.kernel_args[i].symbol);
    if (a.kernel_args[i].kind == KernelArg::kSymbol) EXPECT_EQ(a.kernel_args[i].dtype, b.kernel_args[i].dtype);
  }
  ASSERT_EQ(a.grid.size(), b.grid.size());
  for (size_t i = 0; i < a.grid.size(); ++i) EXPECT_EQ(launch_expr_to_text(a.grid[i]), launch_expr_to_text(b.grid[i]));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.block[i], b.block[i]);
    EXPECT_EQ(a.cluster[i], b.cluster[i]);
  }
  EXPECT_EQ(a.dynamic_shared_bytes, b.dynamic_shared_bytes);
}

TEST(RuntimePlanText, RoundTrip) {
  LaunchPlan p = sample_plan();
  std::string text = launch_plan_to_text(p);
  LaunchPlan q = launch_plan_from_text(text);
  expect_same_plan(p, q);
  EXPECT_EQ(launch_plan_to_text(q), text);  // a fixed point
  // Grid expressions evaluate the same before and after.
  for (int64_t m : {1, 128, 129, 5000}) {
    for (int64_t n : {0, 3, 100}) {
      for (size_t i = 0; i < p.grid.size(); ++i) {
        EXPECT_EQ(eval_int(p.grid[i], p.symbol_vars, {m, n}), eval_int(q.grid[i], q.symbol_vars, {m, n}));
      }
    }
  }
}

TEST(RuntimePlanText, ReadsHandWrittenDefaults) {
  LaunchPlan p = launch_plan_from_text(R"(tilec-launch-plan 1
# elementwise add over a dynamic length
kernel add
symbol n int32
tensor A float32 shape=[n] align=16
tensor B float32 shape=[n]
tensor C float32 shape=[n] output=1
grid (// (+ n 255) 256)
block 256 1 1
)");
  EXPECT_EQ(p.kernel_name, "add");
  ASSERT_EQ(p.param_order.size(), 3u);
  EXPECT_EQ(p.param_order[2], std::make_pair(true, 2));
  ASSERT_EQ(p.kernel_args.size(), 3u);
  EXPECT_EQ(p.kernel_args[1].kind, KernelArg::kTensorData);
  EXPECT_EQ(p.kernel_args[1].index, 1);
  EXPECT_TRUE(p.tensors[2].is_output);
  EXPECT_EQ(p.tensors[0].alignment_bytes, 16);
  EXPECT_EQ(eval_int(p.grid[0], p.symbol_vars, {1000}), 4);
  EXPECT_EQ(p.cluster[0], 1);
}

void expect_text_error(const std::string& text, const std::string& needle) {
  try {
    launch_plan_from_text(text);
    FAIL() << "no error for:\n" << text;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(RuntimePlanText, ErrorsNameTheLine) {
  const std::string head = "tilec-launch-plan 1\nkernel k\n";
  expect_text_error("kernel k\n", "line 1: expected 'tilec-launch-plan 1' first");
  expect_text_error(head + "tensor A float99 shape=[4]\n", "line 3: unknown type 'float99'");
  expect_text_error(head + "tensor A float32 shape=[4]\ngrid (+ x 1)\nblock 1 1 1\n",
                    "line 4: unknown symbol 'x' (declare it with a 'symbol' line)");
  expect_text_error(head + "grid (+ 1)\n", "line 3: '+' takes 2 operands, got 1");
  expect_text_error(head + "frobnicate 3\n", "line 3: unknown item 'frobnicate'");
  expect_text_error(head + "tensor A float32 shape=[m]\ngrid 1\n", "tensor 'A' shape uses undeclared symbol 'm'");
  expect_text_error(head + "grid 1\nblock 64 32 1\n", "a block of 2048 threads exceeds CUDA's limit of 1024");
  expect_text_error(head + "block 1 1 1\n", "the grid must have 1 to 3 dimensions, got 0");
  expect_text_error(head + "tensor A float32 shape=[4]\nparam tensor 0\nparam tensor 0\ngrid 1\n",
                    "parameter order lists a parameter twice");
  expect_text_error(head + "tensor A float32 shape=[4] align=3\ngrid 1\n", "alignment 3 is not a power of two");
}

TEST(RuntimeEvalInt, Arithmetic) {
  ir::Var m = ir::make_var("m"), n = ir::make_var("n");
  std::vector<ir::Var> vars = {m, n};
  auto ev = [&](const Expr& e, int64_t mv, int64_t nv) { return eval_int(e, vars, {mv, nv}); };
  EXPECT_EQ(ev(ir::ceildiv(m, ir::int_imm(128)), 1000, 0), 8);
  EXPECT_EQ(ev(ir::ceildiv(m, ir::int_imm(128)), 1024, 0), 8);
  EXPECT_EQ(ev(ir::floordiv(m, n), -7, 2), -4);
  EXPECT_EQ(ev(ir::floormod(m, n), -7, 2), 1);
  EXPECT_EQ(ev(ir::binary(ir::NodeKind::kDiv, m, n), -7, 2), -3);
  EXPECT_EQ(ev(ir::binary(ir::NodeKind::kMod, m, n), -7, 2), -1);
  EXPECT_EQ(ev(ir::min(m, n) * 3 - 1, 4, 9), 11);
  EXPECT_EQ(ev(ir::max(m, n), 4, 9), 9);
  EXPECT_EQ(ev(ir::select(m < n, m, n), 4, 9), 4);
  EXPECT_EQ(ev(ir::select((m < n) && (n < ir::int_imm(5)), m, n), 4, 9), 9);
  EXPECT_EQ(ev(ir::cast(ir::DataType::Int(8), m), 300, 0), 44);
  EXPECT_EQ(ev(ir::cast(ir::DataType::Int(8), m), 200, 0), -56);
  EXPECT_EQ(ev(ir::cast(ir::Int64(), m) * ir::cast(ir::Int64(), n), 100000, 100000), 10000000000);
  EXPECT_EQ(ev(ir::int_imm(42), 0, 0), 42);
}

TEST(RuntimeEvalInt, DivisionByZeroIsAUserError) {
  ir::Var m = ir::make_var("m");
  try {
    eval_int(ir::floordiv(ir::int_imm(10), m), {m}, {0});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("divides by zero"), std::string::npos) << e.what();
  }
}

TEST(RuntimeEvalInt, ResolvesVarsByNameAfterRoundTrip) {
  ir::Var m = ir::make_var("m");
  ir::Var other_m = ir::make_var("m");
  EXPECT_EQ(eval_int(m + 1, {other_m}, {41}), 42);
}

}  // namespace
}  // namespace tilec::runtime

namespace tilec::runtime {
namespace {

// TMA tensor maps and persistence survive the plan's text form (the disk cache).
TEST(RuntimePlanText, TensorMapsAndPersistenceRoundTrip) {
  LaunchPlan p = sample_plan();
  p.tma_descs = {{0, {64, 128}, 3}, {1, {64, 64}, 2}};
  p.kernel_args.push_back({KernelArg::kTmaDesc, 0});
  p.kernel_args.push_back({KernelArg::kTmaDesc, 1});
  p.persistent_blocks_per_sm = 2;
  LaunchPlan q = launch_plan_from_text(launch_plan_to_text(p));
  ASSERT_EQ(q.tma_descs.size(), 2u);
  EXPECT_TRUE(q.tma_descs[0] == p.tma_descs[0]);
  EXPECT_TRUE(q.tma_descs[1] == p.tma_descs[1]);
  EXPECT_EQ(q.kernel_args.back().kind, KernelArg::kTmaDesc);
  EXPECT_EQ(q.kernel_args.back().index, 1);
  EXPECT_EQ(q.persistent_blocks_per_sm, 2);
  EXPECT_EQ(launch_plan_to_text(q), launch_plan_to_text(p));
}

TEST(RuntimePlanText, BadTensorMapsAreRejected) {
  LaunchPlan p = sample_plan();
  p.tma_descs = {{0, {64, 300}, 3}};  // box extent above 256
  EXPECT_THROW(check_launch_plan(p), UserError);
  p.tma_descs = {{0, {64}, 3}};  // rank 1 box for a rank-2 tensor
  EXPECT_THROW(check_launch_plan(p), UserError);
  p.tma_descs = {{7, {64, 64}, 3}};
  EXPECT_THROW(check_launch_plan(p), UserError);
}

}  // namespace
}  // namespace tilec::runtime
