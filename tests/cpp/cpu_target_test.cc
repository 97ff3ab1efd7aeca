// target="cpu" (src/target/cpu): dtype rounding and conversion, expression semantics, tile
// ops at the tile level, and the bounds / not-supported errors with their messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "target/cpu/dtype.h"
#include "tilec/ir/builder.h"
#include "tilec/target/cpu/interpreter.h"
#include "user_error_test_util.h"

namespace {

using namespace tilec;
using namespace tilec::ir;
using cpu::HostArray;
using tilec::testing::at;
using tilec::testing::user_error_of;

const DataType f16 = DataType::Float(16), bf16 = DataType::BFloat16(), f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

HostArray array_of(std::vector<float>& v, std::vector<int64_t> shape) {
  HostArray a{v.data(), f32, shape, {}};
  a.strides.assign(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) a.strides[d] = a.strides[d + 1] * shape[d + 1];
  return a;
}


// ---- dtypes ----

TEST(CpuDtype, Float16RoundsToNearestEven) {
  EXPECT_EQ(cpu::round_float(f16, 1.0 + std::ldexp(1.0, -11)), 1.0);  // tie -> even (1.0)
  EXPECT_EQ(cpu::round_float(f16, 1.0 + 3 * std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -9));  // tie -> even
  EXPECT_EQ(cpu::round_float(f16, 65504.0), 65504.0);
  EXPECT_EQ(cpu::round_float(f16, 65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(cpu::round_float(f16, 65520.0)));
  EXPECT_EQ(cpu::round_float(f16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(cpu::round_float(f16, std::ldexp(1.0, -26)), 0.0);
  EXPECT_TRUE(std::isnan(cpu::round_float(f16, std::nan(""))));
}

TEST(CpuDtype, BFloat16AndFloat8) {
  EXPECT_EQ(cpu::round_float(bf16, 1.0 + std::ldexp(1.0, -8)), 1.0);                      // tie -> even
  EXPECT_EQ(cpu::round_float(bf16, 1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(cpu::round_float(DataType::Float8E4M3(), 1000.0), 448.0);  // saturates
  EXPECT_EQ(cpu::round_float(DataType::Float8E4M3(), 0.3), 0.3125);
  EXPECT_EQ(cpu::round_float(DataType::Float8E5M2(), 1e6), 57344.0);
  EXPECT_EQ(cpu::round_float(DataType::Float4E2M1(), 2.6), 3.0);
  EXPECT_EQ(cpu::round_float(DataType::Float4E2M1(), 100.0), 6.0);
}

TEST(CpuDtype, EncodeDecodeRoundTrips) {
  for (DataType t : {f16, bf16, DataType::Float8E4M3(), DataType::Float8E5M2()}) {
    for (double x : {0.0, -0.0, 1.0, -2.5, 0.1, 3.0e-5, 300.0, -1e-3}) {
      unsigned char buf[8] = {0};
      cpu::store_element(t, buf, cpu::Value{x, 0});
      EXPECT_EQ(cpu::load_element(t, buf).f, cpu::round_float(t, x)) << t.str() << " " << x;
    }
  }
  unsigned char buf[2];
  cpu::store_element(f16, buf, cpu::Value{1.0, 0});
  uint16_t bits;
  std::memcpy(&bits, buf, 2);
  EXPECT_EQ(bits, 0x3c00);
  cpu::store_element(bf16, buf, cpu::Value{-2.0, 0});
  std::memcpy(&bits, buf, 2);
  EXPECT_EQ(bits, 0xc000);
}

TEST(CpuDtype, Conversions) {
  EXPECT_EQ(cpu::convert(cpu::Value{-2.7, 0}, f32, i32).i, -2);                // truncates
  EXPECT_EQ(cpu::convert(cpu::Value{1e20, 0}, f32, i32).i, 2147483647);        // saturates
  EXPECT_EQ(cpu::convert(cpu::Value{std::nan(""), 0}, f32, i32).i, 0);         // NaN -> 0
  EXPECT_EQ(cpu::convert(cpu::Value{0, 300}, i32, DataType::Int(8)).i, 44);     // wraps
  EXPECT_EQ(cpu::convert(cpu::Value{0, -1}, i32, DataType::UInt(8)).i, 255);
  EXPECT_EQ(cpu::convert(cpu::Value{0, 3}, i32, DataType::Bool()).i, 1);
  EXPECT_EQ(cpu::convert(cpu::Value{0.1, 0}, f32, f16).f, cpu::round_float(f16, 0.1));
}

// ---- expressions through a one-element kernel: Out[0] = expr ----

double eval_f32(const std::function<Expr(Builder&)>& make) {
  Builder b("expr");
  Buffer Out = b.tensor("Out", {int_imm(1)}, f32);
  b.begin_kernel({int_imm(1)}, {32});
  b.store(Out, {int_imm(0)}, make(b));
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> out(1, -1.0f);
  cpu::run_on_cpu(f, {array_of(out, {1})});
  return out[0];
}

TEST(CpuExpr, IntegerDivisionSemantics) {
  auto val = [](NodeKind k, int a, int b) {
    return eval_f32([&](Builder&) { return cast(f32, binary(k, int_imm(a), int_imm(b))); });
  };
  EXPECT_EQ(val(NodeKind::kDiv, -7, 2), -3);
  EXPECT_EQ(val(NodeKind::kMod, -7, 2), -1);
  EXPECT_EQ(val(NodeKind::kFloorDiv, -7, 2), -4);
  EXPECT_EQ(val(NodeKind::kFloorMod, -7, 2), 1);
  EXPECT_EQ(val(NodeKind::kFloorMod, 7, -2), -1);
}

TEST(CpuExpr, HalfArithmeticRoundsEveryOperation) {
  // 2048 + 1 in float16 is 2048 (the spacing there is 2); in float32 it is 2049.
  double h = eval_f32([](Builder&) {
    return cast(f32, binary(NodeKind::kAdd, float_imm(2048, f16), float_imm(1, f16)));
  });
  EXPECT_EQ(h, 2048.0);
  double f = eval_f32([](Builder&) { return binary(NodeKind::kAdd, float_imm(2048, f32), float_imm(1, f32)); });
  EXPECT_EQ(f, 2049.0);
}

TEST(CpuExpr, MathAndSelect) {
  EXPECT_FLOAT_EQ(eval_f32([](Builder&) { return call(f32, "exp2", {float_imm(3.0)}); }), 8.0f);
  EXPECT_FLOAT_EQ(eval_f32([](Builder&) { return call(f32, "rsqrt", {float_imm(4.0)}); }), 0.5f);
  EXPECT_EQ(eval_f32([](Builder&) { return call(f32, "round", {float_imm(2.5)}); }), 2.0f);  // half to even
  EXPECT_TRUE(std::isinf(eval_f32([](Builder&) { return call(f32, "infinity", {}); })));
  EXPECT_EQ(eval_f32([](Builder&) { return max(float_imm(1.0), float_imm(-3.0)); }), 1.0f);
  EXPECT_EQ(eval_f32([](Builder&) {
              return select(binary(NodeKind::kLT, int_imm(1), int_imm(2)), float_imm(5.0), float_imm(6.0));
            }),
            5.0f);
}

TEST(CpuExpr, SelectDoesNotEvaluateTheOtherArm) {
  // T.if_then_else(false, Buf[100], 0): the out-of-bounds load is never performed.
  Builder b("guarded");
  Buffer Out = b.tensor("Out", {int_imm(1)}, f32);
  b.begin_kernel({int_imm(1)}, {32});
  Buffer s = b.alloc_shared("s", {int_imm(4)}, f32);
  b.tile_op("fill", {BufferRegion::full(s), float_imm(1.0)});
  b.store(Out, {int_imm(0)}, select(bool_imm(false), buffer_load(s, {int_imm(100)}), float_imm(7.0)));
  b.end_frame();
  std::vector<float> out(1);
  cpu::run_on_cpu(b.finish(), {array_of(out, {1})});
  EXPECT_EQ(out[0], 7.0f);
}

// ---- tile ops ----

TEST(CpuTileOps, GemmTransposedWithPartialTile) {
  // C (3 x 5, ragged) = A^T (A: 4 x 3) * B (4 x 5) through 8 x 8 tiles; fp16 operands.
  const int64_t M = 3, N = 5, K = 4, T = 8;
  Builder b("gemm");
  Buffer A = b.tensor("A", {int_imm(K), int_imm(M)}, f32);
  Buffer B = b.tensor("B", {int_imm(K), int_imm(N)}, f32);
  Buffer C = b.tensor("C", {int_imm(M), int_imm(N)}, f32);
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("As", {int_imm(T), int_imm(T)}, f16);
  Buffer Bs = b.alloc_shared("Bs", {int_imm(T), int_imm(T)}, f16);
  Buffer Cf = b.alloc_fragment("Cf", {int_imm(T), int_imm(T)}, f32);
  BufferRegion full_tile_a{A, {{int_imm(0), int_imm(T)}, {int_imm(0), int_imm(T)}}};
  BufferRegion full_tile_b{B, {{int_imm(0), int_imm(T)}, {int_imm(0), int_imm(T)}}};
  BufferRegion full_tile_c{C, {{int_imm(0), int_imm(T)}, {int_imm(0), int_imm(T)}}};
  b.tile_op("copy", {full_tile_a, BufferRegion::full(As)});
  b.tile_op("copy", {full_tile_b, BufferRegion::full(Bs)});
  b.tile_op("fill", {BufferRegion::full(Cf), float_imm(0.0)});
  b.tile_op("gemm", {BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(Cf)},
            {{"transpose_A", true}});
  b.tile_op("copy", {BufferRegion::full(Cf), full_tile_c});
  b.end_frame();
  std::vector<float> a(K * M), bb(K * N), c(M * N, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 5) - 2.0f;
  for (size_t i = 0; i < bb.size(); ++i) bb[i] = static_cast<float>(i % 3) * 0.5f;
  cpu::run_on_cpu(b.finish(), {array_of(a, {K, M}), array_of(bb, {K, N}), array_of(c, {M, N})});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float ref = 0;
      for (int64_t k = 0; k < K; ++k) ref += a[k * M + i] * bb[k * N + j];
      EXPECT_EQ(c[i * N + j], ref) << i << "," << j;
    }
}

TEST(CpuTileOps, ReduceBothAxesAndCumsum) {
  for (int dim : {0, 1}) {
    Builder b("reduce");
    Buffer X = b.tensor("X", {int_imm(2), int_imm(3)}, f32);
    Buffer Y = b.tensor("Y", {int_imm(dim == 1 ? 2 : 3)}, f32);
    b.begin_kernel({int_imm(1)}, {32});
    Buffer x = b.alloc_fragment("x", {int_imm(2), int_imm(3)}, f32);
    Buffer y = b.alloc_fragment("y", {int_imm(dim == 1 ? 2 : 3)}, f32);
    b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(x)});
    b.tile_op("reduce_sum", {BufferRegion::full(x), BufferRegion::full(y)}, {{"dim", int64_t{dim}}});
    b.tile_op("copy", {BufferRegion::full(y), BufferRegion::full(Y)});
    b.end_frame();
    std::vector<float> xs = {1, 2, 3, 4, 5, 6}, ys(dim == 1 ? 2 : 3);
    cpu::run_on_cpu(b.finish(), {array_of(xs, {2, 3}), array_of(ys, {static_cast<int64_t>(ys.size())})});
    if (dim == 1) EXPECT_EQ(ys, (std::vector<float>{6, 15}));
    else EXPECT_EQ(ys, (std::vector<float>{5, 7, 9}));
  }
  Builder b("scan");
  Buffer X = b.tensor("X", {int_imm(4)}, f32);
  b.begin_kernel({int_imm(1)}, {32});
  Buffer s = b.alloc_shared("s", {int_imm(4)}, f32);
  b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(s)});
  b.tile_op("cumsum", {BufferRegion::full(s), BufferRegion::full(s)}, {{"reverse", true}});
  b.tile_op("copy", {BufferRegion::full(s), BufferRegion::full(X)});
  b.end_frame();
  std::vector<float> xs = {1, 2, 3, 4};
  cpu::run_on_cpu(b.finish(), {array_of(xs, {4})});
  EXPECT_EQ(xs, (std::vector<float>{10, 9, 7, 4}));
}

// ---- errors ----

TEST(CpuErrors, OnChipOutOfBoundsNamesKernelBufferIndexAndLine) {
  Builder b("oob_kernel");
  Buffer Out = b.tensor("Out", {int_imm(8)}, f32);
  b.begin_kernel({int_imm(1)}, {32});
  Buffer s = b.alloc_shared("tile", {int_imm(4)}, f32);
  auto i = b.begin_loop_nest({"i"}, {int_imm(8)}, ForKind::kParallel);
  b.store(s, {i[0]}, float_imm(1.0), at(42));
  b.end_frame();
  b.end_frame();
  std::vector<float> out(8);
  PrimFunc f = b.finish();
  std::string msg = user_error_of([&] { cpu::run_on_cpu(f, {array_of(out, {8})}); });
  EXPECT_NE(msg.find("kernel 'oob_kernel'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out-of-bounds write of 'tile'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at index (4,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel.py:42"), std::string::npos) << msg;
}

TEST(CpuErrors, GlobalOutOfBoundsIsGuardedUnlessStrict) {
  Builder b("ragged");
  Buffer A = b.tensor("A", {int_imm(3)}, f32);
  b.begin_kernel({int_imm(1)}, {32});
  Buffer s = b.alloc_shared("s", {int_imm(4)}, f32);
  b.tile_op("copy", {BufferRegion{A, {{int_imm(0), int_imm(4)}}}, BufferRegion::full(s)}, {}, at(7));
  b.tile_op("copy", {BufferRegion::full(s), BufferRegion{A, {{int_imm(0), int_imm(4)}}}}, {}, at(8));
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> a = {1, 2, 3};
  cpu::run_on_cpu(f, {array_of(a, {3})});  // reads 0 past the end, writes nothing there
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));
  cpu::CpuOptions strict;
  strict.strict_global_bounds = true;
  std::string msg = user_error_of([&] { cpu::run_on_cpu(f, {array_of(a, {3})}, strict); });
  EXPECT_NE(msg.find("out-of-bounds read of 'A'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at index (3,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel.py:7"), std::string::npos) << msg;
}

TEST(CpuErrors, ThreadIndexIsNotSupported) {
  Builder b("per_thread");
  Buffer Out = b.tensor("Out", {int_imm(128)}, f32);
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  b.store(Out, {tx}, float_imm(1.0), at(3));
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> out(128);
  std::string msg = user_error_of([&] { cpu::run_on_cpu(f, {array_of(out, {128})}); });
  EXPECT_NE(msg.find("not supported on target=cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("thread index"), std::string::npos) << msg;
}

TEST(CpuErrors, ArgumentsAreChecked) {
  Builder b("args");
  Var n = b.dynamic("n");
  Buffer A = b.tensor("A", {n, int_imm(2)}, f32);
  b.begin_kernel({int_imm(1)}, {32});
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> a(6);
  EXPECT_NO_THROW(cpu::run_on_cpu(f, {array_of(a, {3, 2})}));
  EXPECT_NE(user_error_of([&] { cpu::run_on_cpu(f, {array_of(a, {2, 3})}); }).find("dimension 1 must be 2"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { cpu::run_on_cpu(f, {}); }).find("expected 1 arguments, got 0"), std::string::npos);
  HostArray wrong = array_of(a, {3, 2});
  wrong.dtype = f16;
  EXPECT_NE(user_error_of([&] { cpu::run_on_cpu(f, {wrong}); }).find("must be float32, got float16"),
            std::string::npos);
}

}  // namespace

namespace {

TEST(CpuErrors, WarpSpecializationIsNotSupported) {
  Builder b("ws_kernel");
  Buffer Out = b.tensor("Out", {int_imm(4)}, f32);
  b.begin_kernel({int_imm(1)}, {256});
  b.begin_annotate("ws", std::vector<int64_t>{1}, at(11));
  b.tile_op("fill", {BufferRegion::full(Out), float_imm(0.0)});
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> out(4);
  std::string msg = user_error_of([&] { cpu::run_on_cpu(f, {array_of(out, {4})}); });
  EXPECT_NE(msg.find("T.ws (a warp-group role) is not supported on target=cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel.py:11"), std::string::npos) << msg;
}

TEST(CpuHooks, OnBlockSeesEveryBlockInOrder) {
  Builder b("grid");
  Buffer Out = b.tensor("Out", {int_imm(6)}, f32);
  auto bxy = b.begin_kernel({int_imm(3), int_imm(2)}, {32});
  b.store(Out, {bxy[1] * 3 + bxy[0]}, cast(f32, bxy[0] * 10 + bxy[1]));
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> out(6);
  std::vector<std::vector<int64_t>> seen;
  cpu::CpuOptions options;
  options.on_block = [&](const std::vector<int64_t>& blk) { seen.push_back(blk); };
  cpu::run_on_cpu(f, {array_of(out, {6})}, options);
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[1], (std::vector<int64_t>{1, 0}));  // x fastest
  EXPECT_EQ(out, (std::vector<float>{0, 10, 20, 1, 11, 21}));
}

}  // namespace
