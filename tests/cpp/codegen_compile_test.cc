// Hand-built lowered kernels -> lower_to_cuda -> compiled for sm_80 and sm_90a with the
// runtime's NVRTC path (PTX + cubin), checking the instructions the generated code must use.
// The three kernels go into one translation unit per architecture to keep the test fast.
#include <gtest/gtest.h>

#include <regex>

#include "codegen_test_util.h"
#include "tilec/ir/builder.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/target/cuda/lower.h"

using namespace tilec;
using namespace tilec::ir;
using codegen_test::contains;

namespace {

// C[i] = A[i] + B[i] for i < n (n symbolic), 4 elements per thread through a vectorized loop.
PrimFunc elementwise_add() {
  Builder b("elementwise_add");
  Var n = b.dynamic("n");
  Buffer A = b.tensor("A", {n}, Float32()), B = b.tensor("B", {n}, Float32()), C = b.tensor("C", {n}, Float32());
  auto bx = b.begin_kernel({ceildiv(n, int_imm(512))}, {128});
  Var tx = b.thread_vars()[0];
  Var v = b.begin_for("v", int_imm(0), int_imm(4), ForKind::kVectorized);
  Expr i = bx[0] * 512 + tx * 4 + v;
  b.store(C, {i}, buffer_load(A, {i}) + buffer_load(B, {i}));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

// out[r] = sum of row r of A[m, 1024]: per-thread partial sums, a warp shuffle reduction,
// the warp results through shared memory, and the final sum by thread 0.
PrimFunc row_sum() {
  Builder b("row_sum");
  Var m = b.dynamic("m");
  Buffer A = b.tensor("A", {m, int_imm(1024)}, Float32()), out = b.tensor("out", {m}, Float32());
  auto bx = b.begin_kernel({m}, {128});
  Var tx = b.thread_vars()[0];
  Buffer acc = b.alloc("acc", {int_imm(1)}, Float32(), Scope::kLocal);
  Buffer red = b.alloc_shared("red", {int_imm(4)}, Float32());
  b.store(acc, {int_imm(0)}, float_imm(0.0));
  Var i = b.begin_for("i", int_imm(0), int_imm(8), ForKind::kSerial);
  b.store(acc, {int_imm(0)}, buffer_load(acc, {int_imm(0)}) + buffer_load(A, {bx[0], i * 128 + tx}));
  b.end_frame();
  Expr a = buffer_load(acc, {int_imm(0)});
  b.store(acc, {int_imm(0)}, a + call(Float32(), "tl.shfl_xor", {a, int_imm(16)}));
  b.store(acc, {int_imm(0)}, call(Float32(), "tl.warp_reduce_sum", {int_imm(16), buffer_load(acc, {int_imm(0)})}));
  b.begin_if(binary(NodeKind::kEQ, floormod(tx, 32), int_imm(0)));
  b.store(red, {floordiv(tx, 32)}, buffer_load(acc, {int_imm(0)}));
  b.end_frame();
  b.begin_if(binary(NodeKind::kEQ, tx, int_imm(0)));
  b.store(out, {bx[0]}, buffer_load(red, {int_imm(0)}) + buffer_load(red, {int_imm(1)}) +
                            buffer_load(red, {int_imm(2)}) + buffer_load(red, {int_imm(3)}));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

// B[r, c] = A[r, c] for a [m, 256] half tensor: 8 rows x 256 columns per block, 8 halves
// (16 bytes) per thread and row through a vectorized loop.
PrimFunc vector_copy() {
  Builder b("vector_copy");
  Var m = b.dynamic("m");
  Buffer A = b.tensor("A", {m, int_imm(256)}, Float16()), B = b.tensor("B", {m, int_imm(256)}, Float16());
  auto bx = b.begin_kernel({ceildiv(m, int_imm(8))}, {32});
  Var tx = b.thread_vars()[0];
  Var r = b.begin_for("r", int_imm(0), int_imm(8), ForKind::kUnrolled);
  Var v = b.begin_for("v", int_imm(0), int_imm(8), ForKind::kVectorized);
  b.store(B, {bx[0] * 8 + r, tx * 8 + v}, buffer_load(A, {bx[0] * 8 + r, tx * 8 + v}));
  b.end_frame();
  b.end_frame();
  b.end_frame();
  return b.finish();
}

// Calls every device-library function of tilec/{common,math,reduce,atomic}.cuh for every
// type it promises, so an overload that does not compile is caught here.
const char* kDeviceLibraryExercise = R"(
#include "tilec/common.cuh"
#include "tilec/math.cuh"
#include "tilec/reduce.cuh"
#include "tilec/atomic.cuh"
template <typename T>
__device__ void exercise_float(T* p) {
  T x = p[0], y = p[1];
  p[2] = tl::exp(x) + tl::exp2(x) + tl::log(x) + tl::log2(x) + tl::log10(x) + tl::sqrt(x) + tl::rsqrt(x);
  p[3] = tl::tanh(x) + tl::sigmoid(x) + tl::abs(x) + tl::sin(x) + tl::cos(x) + tl::erf(x) + tl::pow(x, y);
  p[4] = tl::floor(x) + tl::ceil(x) + tl::round(x) + tl::trunc(x) + tl::max(x, y) + tl::min(x, y);
  p[5] = tl::infinity<T>() + tl::neg_inf<T>() + tl::nan<T>();
  p[6] = tl::shfl_xor(x, 1) + tl::shfl_down(x, 1) + tl::shfl_up(x, 1) + tl::shfl_idx(x, 0);
  p[7] = tl::warp_reduce_sum<32>(x) + tl::warp_reduce_max<8>(x) + tl::warp_reduce_min<2>(x);
  tl::atomic_add(p + 8, x);
  tl::atomic_max(p + 9, x);
  tl::atomic_min(p + 10, x);
  tl::vec<T, 2> v = tl::broadcast<2>(x);
  v = tl::exp(v) + tl::max(v, v) * v;
  tl::store(p + 12, tl::select(v < v, v, v));
}
template <typename T>
__device__ void exercise_int(T* p) {
  T x = p[0], y = p[1];
  p[2] = tl::max(x, y) + tl::min(x, y) + tl::floordiv(x, y) + tl::floormod(x, y);
  p[3] = tl::shfl_xor(x, 1) + tl::warp_reduce_sum<4>(x);
  tl::atomic_add(p + 4, x);
  tl::atomic_max(p + 5, x);
  tl::atomic_min(p + 6, x);
  tl::vec<T, 2> v = tl::load<2>(p + 8);
  tl::store(p + 8, tl::floordiv(v, v) + (v << v) + (v & v));
}
extern "C" __global__ void exercise_device_library(float* f, double* d, half* h, nv_bfloat16* b, int* i,
                                                   unsigned int* u, long long* l, unsigned long long* ul,
                                                   signed char* c, __nv_fp8_e4m3* f8) {
  exercise_float(f);
  exercise_float(d);
  exercise_float(h);
  exercise_float(b);
  exercise_int(i);
  exercise_int(u);
  exercise_int(l);
  exercise_int(ul);
  c[0] = tl::shfl_xor(c[1], 1) + tl::max(c[2], c[3]);
  f8[0] = tl::cast<__nv_fp8_e4m3>(tl::cast<float>(f8[1]) + 1.0f);
  f8[1] = tl::shfl_xor(f8[2], 1);
  tl::atomic_add(reinterpret_cast<__half2*>(h + 32), __half2(h[0], h[1]));
  tl::store(h + 40, tl::cast<half>(tl::cast<float>(tl::load<8>(h + 48))));
  tl::store(f + 64, tl::cast<float>(tl::load<4>(b + 64)));
  tl::print("values", f[0], d[0], h[0], b[0], i[0], u[0], l[0], ul[0], c[0], f8[0], tl::load<2>(f), true);
}
)";

std::string lower(const PrimFunc& f) {
  passes::PassContext ctx;
  return cuda::lower_to_cuda(f, ctx).source;
}

TEST(CodegenCompile, GeneratedSourcesUseTheIntendedInstructions) {
  std::string add = lower(elementwise_add()), sum = lower(row_sum()), copy = lower(vector_copy());
  // Source-level checks (independent of the toolkit).
  EXPECT_TRUE(contains(add, "tl::load<4>(&A[")) << add;
  EXPECT_TRUE(contains(add, "tl::store(&C[")) << add;
  EXPECT_TRUE(contains(sum, "tl::shfl_xor(acc[0], 16)")) << sum;
  EXPECT_TRUE(contains(sum, "#include \"tilec/reduce.cuh\"")) << sum;
  EXPECT_TRUE(contains(sum, "__syncthreads();")) << sum;
  EXPECT_TRUE(contains(sum, "extern __shared__ __align__(1024) unsigned char tilec_smem[];")) << sum;
  EXPECT_TRUE(contains(copy, "tl::load<8>(&A[")) << copy;
  if (!codegen_test::have_nvrtc()) GTEST_SKIP() << "NVRTC not found";
  const std::string unit = add + "\n" + sum + "\n" + copy + kDeviceLibraryExercise;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    auto r = codegen_test::compile_cuda(unit, arch);
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.log << "\n" << unit;
    // 16-byte global loads and stores (float x4 in elementwise_add, half x8 in vector_copy).
    EXPECT_TRUE(std::regex_search(r.ptx, std::regex(R"(ld\.global(\.nc)?\.v4\.(u32|f32|b32))"))) << arch;
    EXPECT_TRUE(std::regex_search(r.ptx, std::regex(R"(st\.global\.v4\.(u32|f32|b32))"))) << arch;
    EXPECT_TRUE(contains(r.ptx, "shfl.sync.bfly")) << arch;
    EXPECT_TRUE(contains(r.ptx, "bar.sync")) << arch;
  }
}

}  // namespace
