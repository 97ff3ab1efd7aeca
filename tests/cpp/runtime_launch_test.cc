// Argument validation, symbol binding and parameter packing, without a GPU: the Kernel
// is fed fake tensor descriptors and never launched.
#include <gtest/gtest.h>

#include <cstring>

#include "tilec/runtime/kernel.h"
#include "tilec/runtime/plan_text.h"

namespace tilec::runtime {
namespace {

CompiledArtifact artifact_for(const std::string& plan_text) {
  CompiledArtifact a;
  a.plan = launch_plan_from_text(plan_text);
  a.target = "sm_90a";
  return a;
}

const char* kAddPlan = R"(tilec-launch-plan 1
kernel add
symbol n int32
tensor A float32 shape=[n] align=16
tensor B float32 shape=[n] align=16
tensor C float32 shape=[n] output=1
scalar alpha float32
arg tensor 0
arg tensor 1
arg tensor 2
arg scalar 0
arg symbol n int32
grid (// (+ n 255) 256)
block 256 1 1
)";

// A fake tensor that owns its shape/strides storage.
struct FakeTensor {
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  TensorView view;
  FakeTensor(std::vector<int64_t> dims, ir::DataType dtype = ir::Float32(), uint64_t data = 0x10000) {
    view.ndim = static_cast<int>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) shape[i] = dims[i];
    view.shape = shape;
    view.dtype = dtype;
    view.data = data;
  }
  FakeTensor& with_strides(std::vector<int64_t> s) {
    for (size_t i = 0; i < s.size(); ++i) strides[i] = s[i];
    view.strides = strides;
    return *this;
  }
  ArgValue arg() const {
    ArgValue a;
    a.kind = ArgValue::kTensor;
    a.tensor = view;
    return a;
  }
};

ArgValue float_arg(double v) {
  ArgValue a;
  a.kind = ArgValue::kFloat;
  a.float_value = v;
  return a;
}
ArgValue int_arg(int64_t v) {
  ArgValue a;
  a.kind = ArgValue::kInt;
  a.int_value = v;
  return a;
}

std::string bind_error(const Kernel& k, std::vector<ArgValue> args, bool outputs_optional = true) {
  BoundCall call;
  try {
    k.bind(args.data(), call, outputs_optional);
    k.finalize(args.data(), call);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST(RuntimeLaunch, Signature) {
  Kernel k(artifact_for(kAddPlan));
  EXPECT_EQ(k.signature(), "add(A: float32[n], B: float32[n], alpha: float32) -> C: float32[n]");
  EXPECT_EQ(k.num_outputs(), 1);
}

TEST(RuntimeLaunch, ArgumentCount) {
  Kernel k(artifact_for(kAddPlan));
  k.check_count(3);
  k.check_count(4);
  try {
    k.check_count(2);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_CONTAINS(e.what(), "takes 3 arguments (or 4 with the outputs), got 2");
  }
}

TEST(RuntimeLaunch, BindsSymbolsAndPacksArguments) {
  Kernel k(artifact_for(kAddPlan));
  FakeTensor a({1000}, ir::Float32(), 0x1000), b({1000}, ir::Float32(), 0x2000), c({1000}, ir::Float32(), 0x3000);
  std::vector<ArgValue> args = {a.arg(), b.arg(), ArgValue{}, float_arg(0.5)};
  BoundCall call;
  k.bind(args.data(), call, true);
  int64_t shape[kMaxRank];
  ASSERT_EQ(k.output_shape(2, call, shape), 1);
  EXPECT_EQ(shape[0], 1000);
  args[2] = c.arg();
  k.check_tensor(2, c.view, call);
  k.finalize(args.data(), call);
  EXPECT_EQ(call.dims.grid[0], 4u);
  EXPECT_EQ(call.dims.block[0], 256u);
  EXPECT_EQ(call.device, 0);
  EXPECT_EQ(*static_cast<uint64_t*>(call.arg_ptrs[0]), 0x1000u);
  EXPECT_EQ(*static_cast<uint64_t*>(call.arg_ptrs[2]), 0x3000u);
  float alpha;
  std::memcpy(&alpha, call.arg_ptrs[3], 4);
  EXPECT_EQ(alpha, 0.5f);
  int32_t n;
  std::memcpy(&n, call.arg_ptrs[4], 4);
  EXPECT_EQ(n, 1000);
  EXPECT_FALSE(call.empty_grid);
}

TEST(RuntimeLaunch, EmptyTensorGivesEmptyGrid) {
  Kernel k(artifact_for(kAddPlan));
  FakeTensor a({0}), b({0}), c({0});
  std::vector<ArgValue> args = {a.arg(), b.arg(), c.arg(), float_arg(1)};
  BoundCall call;
  k.bind(args.data(), call, false);
  k.finalize(args.data(), call);
  EXPECT_TRUE(call.empty_grid);
}

TEST(RuntimeLaunch, ErrorTexts) {
  Kernel k(artifact_for(kAddPlan));
  FakeTensor a({1000}), b({1000});
  const std::string sig = "argument 'A' of kernel add(A: float32[n], B: float32[n], alpha: float32) -> C: float32[n]: ";

  FakeTensor half({1000}, ir::Float16());
  EXPECT_CONTAINS(bind_error(k, {half.arg(), b.arg(), {}, float_arg(1)}), sig + "expected dtype float32, got float16");

  FakeTensor matrix({10, 100});
  EXPECT_CONTAINS(bind_error(k, {matrix.arg(), b.arg(), {}, float_arg(1)}),
                  "expected a 1-d tensor (A: float32[n]), got a 2-d tensor of shape [10, 100]");

  FakeTensor shorter({999});
  EXPECT_CONTAINS(bind_error(k, {a.arg(), shorter.arg(), {}, float_arg(1)}),
                  "argument 'B' of kernel add(A: float32[n], B: float32[n], alpha: float32) -> C: float32[n]: "
                  "dimension 0 is the symbol 'n' = 1000 (set by argument 'A' dimension 0), got 999 (shape [999])");

  FakeTensor strided({1000});
  strided.with_strides({2});
  EXPECT_CONTAINS(bind_error(k, {strided.arg(), b.arg(), {}, float_arg(1)}),
                  "expected a contiguous (row-major) tensor, got strides [2] for shape [1000] (contiguous strides are [1])");

  FakeTensor on_host({1000});
  on_host.view.device_type = DeviceType::kCPU;
  on_host.view.device_label = "cpu";
  std::string msg = bind_error(k, {on_host.arg(), b.arg(), {}, float_arg(1)});
  EXPECT_CONTAINS(msg, sig + "expected a CUDA tensor, got a tensor on cpu");
  EXPECT_CONTAINS(msg, "hint: move it to the GPU");

  FakeTensor other_gpu({1000});
  other_gpu.view.device_id = 1;
  EXPECT_CONTAINS(bind_error(k, {a.arg(), other_gpu.arg(), {}, float_arg(1)}),
                  "all tensors must be on one device: 'A' is on cuda:0, this one on cuda:1");

  FakeTensor misaligned({1000}, ir::Float32(), 0x1004);
  EXPECT_CONTAINS(bind_error(k, {misaligned.arg(), b.arg(), {}, float_arg(1)}),
                  sig + "the data pointer 0x1004 is not aligned to 16 bytes");

  EXPECT_CONTAINS(bind_error(k, {a.arg(), b.arg(), {}, a.arg()}), "argument 'alpha' of kernel");
  EXPECT_CONTAINS(bind_error(k, {a.arg(), b.arg(), {}, a.arg()}), "expected a scalar of type float32, got a tensor");
  EXPECT_CONTAINS(bind_error(k, {float_arg(1), b.arg(), {}, float_arg(1)}), sig + "expected a tensor, got a float");
  ArgValue other;
  other.kind = ArgValue::kOther;
  other.type_name = "str";
  EXPECT_CONTAINS(bind_error(k, {a.arg(), b.arg(), {}, other}), "expected a scalar of type float32, got str");
  // Outputs are required when not optional.
  EXPECT_CONTAINS(bind_error(k, {a.arg(), b.arg(), {}, float_arg(1)}, false), "argument 'C' of kernel");
}

TEST(RuntimeLaunch, ScalarRangesAndSymbolsFromScalars) {
  Kernel k(artifact_for(R"(tilec-launch-plan 1
kernel scale
symbol n int32
tensor X float16 shape=[64,64] strides=[128,1]
scalar n int32
scalar c int8
scalar h float16
scalar g bfloat16
grid (+ n 1)
block 32 1 1
)"));
  FakeTensor x({64, 64}, ir::Float16());
  x.with_strides({128, 1});
  EXPECT_CONTAINS(bind_error(k, {x.arg(), int_arg(5), int_arg(300), float_arg(1), float_arg(1)}),
                  "argument 'c' of kernel scale(X: float16[64, 64], n: int32, c: int8, h: float16, g: bfloat16): "
                  "the value 300 does not fit in int8");
  EXPECT_CONTAINS(bind_error(k, {x.arg(), int_arg(int64_t(1) << 40), int_arg(1), float_arg(1), float_arg(1)}),
                  "the value 1099511627776 does not fit in int32");
  FakeTensor contiguous({64, 64}, ir::Float16());
  EXPECT_CONTAINS(bind_error(k, {contiguous.arg(), int_arg(5), int_arg(1), float_arg(1), float_arg(1)}),
                  "stride 0: expected 128, got 64 (strides [64, 1])");

  std::vector<ArgValue> args = {x.arg(), int_arg(5), int_arg(-3), float_arg(1.5), float_arg(-2.0)};
  BoundCall call;
  k.bind(args.data(), call, false);
  k.finalize(args.data(), call);
  EXPECT_EQ(call.dims.grid[0], 6u);  // the scalar n binds the symbol n
  int8_t c;
  std::memcpy(&c, call.arg_ptrs[2], 1);
  EXPECT_EQ(c, -3);
  uint16_t h, g;
  std::memcpy(&h, call.arg_ptrs[3], 2);
  std::memcpy(&g, call.arg_ptrs[4], 2);
  EXPECT_EQ(h, 0x3e00);  // 1.5 in IEEE half
  EXPECT_EQ(g, 0xc000);  // -2.0 in bfloat16
}

TEST(RuntimeLaunch, UnboundOutputSymbolAndGridLimits) {
  Kernel k(artifact_for(R"(tilec-launch-plan 1
kernel pad
symbol n int64
symbol m int32
tensor A float32 shape=[n]
tensor B float32 shape=[m] output=1
grid (* n 2)
block 32 1 1
cluster 2 1 1
)"));
  FakeTensor a({8});
  std::vector<ArgValue> args = {a.arg(), ArgValue{}};
  BoundCall call;
  k.bind(args.data(), call, true);
  int64_t shape[kMaxRank];
  try {
    k.output_shape(1, call, shape);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_CONTAINS(e.what(), "cannot allocate this output: its dimension 0 is the symbol 'm', which no input determines");
  }
  FakeTensor b({3});
  args[1] = b.arg();
  EXPECT_EQ(bind_error(k, args, false), "");
  FakeTensor big({int64_t(1) << 31});
  EXPECT_CONTAINS(bind_error(k, {big.arg(), b.arg()}, false), "grid dimension 0 evaluates to 4294967296, outside CUDA's range");
}

TEST(RuntimeLaunch, SymbolValueMustFitItsType) {
  Kernel k(artifact_for(kAddPlan));
  FakeTensor a({int64_t(1) << 31}), b({int64_t(1) << 31});
  EXPECT_CONTAINS(bind_error(k, {a.arg(), b.arg(), {}, float_arg(1)}),
                  "dimension 0 = 2147483648 does not fit in the symbol 'n', which has type int32");
}

TEST(RuntimeLaunch, ClusterMustDivideGrid) {
  Kernel k(artifact_for(R"(tilec-launch-plan 1
kernel c
symbol n int32
tensor A float32 shape=[n]
grid n
block 32 1 1
cluster 2 1 1
)"));
  FakeTensor a({3});
  EXPECT_CONTAINS(bind_error(k, {a.arg()}, false), "grid dimension 0 (3) is not a multiple of the cluster dimension (2)");
}

TEST(RuntimeLaunch, ArchCompatibility) {
  EXPECT_EQ(parse_sm_arch("sm_90a"), std::make_pair(90, true));
  EXPECT_EQ(parse_sm_arch("sm_80"), std::make_pair(80, false));
  EXPECT_THROW(parse_sm_arch("compute_80"), UserError);
  EXPECT_TRUE(cubin_runs_on(80, false, 86));
  EXPECT_FALSE(cubin_runs_on(80, false, 90));
  EXPECT_FALSE(cubin_runs_on(86, false, 80));
  EXPECT_TRUE(cubin_runs_on(90, true, 90));
  EXPECT_FALSE(cubin_runs_on(90, true, 100));
}

}  // namespace
// A dimension declared as a constant times a symbol (upstream's `seq_len * heads`): the symbol is
// bound from it (size / scale), checked against other tensors, and scales an output's shape.
TEST(RuntimeLaunch, ScaledSymbolDimensions) {
  const char* plan = R"(tilec-launch-plan 1
kernel idx
symbol s int32
tensor Q float32 shape=[32*s,64]
tensor W float32 shape=[s,32]
tensor K float32 shape=[8*s]
tensor L float32 shape=[4*s] output=1
arg tensor 0
arg tensor 1
arg tensor 2
arg tensor 3
arg symbol s int32
grid s
block 128 1 1
)";
  Kernel k(artifact_for(plan));
  EXPECT_NE(launch_plan_to_text(k.plan()).find("shape=[32*s,64]"), std::string::npos);
  FakeTensor q({32 * 5, 64}), w({5, 32}), kk({40});
  std::vector<ArgValue> args = {q.arg(), w.arg(), kk.arg(), ArgValue{}};
  BoundCall call;
  k.bind(args.data(), call, true);
  EXPECT_EQ(call.symbol_values[0], 5);
  int64_t shape[kMaxRank];
  ASSERT_EQ(k.output_shape(3, call, shape), 1);
  EXPECT_EQ(shape[0], 20);

  FakeTensor ragged({33, 64});
  EXPECT_CONTAINS(bind_error(k, {ragged.arg(), w.arg(), kk.arg(), {}}),
                  "dimension 0 is 32 * s, so it must be a multiple of 32; got 33 (shape [33, 64])");
  FakeTensor q6({32 * 6, 64});
  EXPECT_CONTAINS(bind_error(k, {q6.arg(), w.arg(), kk.arg(), {}}),
                  "dimension 0 is the symbol 's' = 6 (set by argument 'Q' dimension 0), got 5");
  FakeTensor k48({48});
  EXPECT_CONTAINS(bind_error(k, {q.arg(), w.arg(), k48.arg(), {}}),
                  "dimension 0 is 8 * s with s = 5 (set by argument 'Q'), so 40; got 48");
  EXPECT_THROW(launch_plan_from_text(std::string(plan).replace(std::string(plan).find("32*s"), 4, "0*s")), UserError);
}

}  // namespace tilec::runtime
