// The runtime on a real GPU, without Python: compile hand-written kernels, launch them
// through Kernel with device memory from the driver, check the results. Every test
// skips on machines without a CUDA driver or device (CI); the GPU job runs them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tilec/runtime/cache.h"
#include "tilec/runtime/kernel.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/runtime/plan_text.h"

namespace tilec::runtime {
namespace {

class RuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDriver::available(&why)) GTEST_SKIP() << "no GPU: " << why;
    if (CudaDriver::get().device_count() == 0) GTEST_SKIP() << "no CUDA device";
    if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
    cc_ = CudaDriver::get().compute_capability(0);
    arch_ = "sm_" + std::to_string(cc_) + (cc_ == 90 || cc_ == 100 ? "a" : "");
  }
  Kernel make(const std::string& source, const std::string& plan, const std::string& arch = "") {
    CompileOptions opts;
    opts.target = arch.empty() ? arch_ : arch;
    opts.use_cache = false;
    return Kernel(compile_source(source, launch_plan_from_text(plan), opts));
  }
  int cc_ = 0;
  std::string arch_;
};

struct DeviceBuffer {
  uint64_t ptr = 0;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { ptr = CudaDriver::get().mem_alloc(0, n); }
  ~DeviceBuffer() { CudaDriver::get().mem_free(0, ptr); }
};

ArgValue tensor_arg(uint64_t data, ir::DataType t, const int64_t* shape, int ndim) {
  ArgValue a;
  a.kind = ArgValue::kTensor;
  a.tensor.data = data;
  a.tensor.dtype = t;
  a.tensor.shape = shape;
  a.tensor.ndim = ndim;
  return a;
}

const char* kAxpySource = R"(extern "C" __global__ void axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";
const char* kAxpyPlan = R"(tilec-launch-plan 1
kernel axpy
symbol n int32
tensor X float32 shape=[n] align=4
tensor Y float32 shape=[n] align=4
scalar a float32
arg tensor 0
arg tensor 1
arg scalar 0
arg symbol n int32
grid (// (+ n 127) 128)
block 128 1 1
)";

TEST_F(RuntimeGpu, LaunchesAndComputes) {
  Kernel k = make(kAxpySource, kAxpyPlan);
  const int64_t n = 100003;  // not a multiple of the block
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 17) - 8.0f;
    y[i] = static_cast<float>(i % 5);
  }
  DeviceBuffer dx(n * 4), dy(n * 4);
  CudaDriver& d = CudaDriver::get();
  d.copy_to_device(0, dx.ptr, x.data(), n * 4);
  d.copy_to_device(0, dy.ptr, y.data(), n * 4);
  int64_t shape[1] = {n};
  ArgValue a;
  a.kind = ArgValue::kFloat;
  a.float_value = 2.5;
  std::vector<ArgValue> args = {tensor_arg(dx.ptr, ir::Float32(), shape, 1), tensor_arg(dy.ptr, ir::Float32(), shape, 1), a};
  k(args.data(), 3, nullptr);
  d.synchronize_device(0);
  std::vector<float> out(n);
  d.copy_to_host(0, out.data(), dy.ptr, n * 4);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.5f * x[i] + y[i]) << "at " << i;
}

TEST_F(RuntimeGpu, DynamicSharedMemoryAbove48KB) {
  const char* source = R"(extern "C" __global__ void reverse(const int* in, int* out) {
  extern __shared__ int buf[];  // 25600 ints = 100 KB
  for (int i = threadIdx.x; i < 25600; i += blockDim.x) buf[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < 25600; i += blockDim.x) out[i] = buf[25599 - i];
})";
  const char* plan = R"(tilec-launch-plan 1
kernel reverse
tensor In int32 shape=[25600]
tensor Out int32 shape=[25600]
grid 1
block 256 1 1
smem 102400
)";
  Kernel k = make(source, plan);
  std::vector<int> in(25600);
  for (int i = 0; i < 25600; ++i) in[i] = i * 3 + 1;
  DeviceBuffer din(in.size() * 4), dout(in.size() * 4);
  CudaDriver::get().copy_to_device(0, din.ptr, in.data(), in.size() * 4);
  int64_t shape[1] = {25600};
  std::vector<ArgValue> args = {tensor_arg(din.ptr, ir::Int32(), shape, 1), tensor_arg(dout.ptr, ir::Int32(), shape, 1)};
  k(args.data(), 2, nullptr);
  CudaDriver::get().synchronize_device(0);
  std::vector<int> out(25600);
  CudaDriver::get().copy_to_host(0, out.data(), dout.ptr, out.size() * 4);
  for (int i = 0; i < 25600; ++i) ASSERT_EQ(out[i], in[25599 - i]) << "at " << i;
}

TEST_F(RuntimeGpu, TooMuchSharedMemoryIsAClearError) {
  const char* plan = R"(tilec-launch-plan 1
kernel axpy
symbol n int32
tensor X float32 shape=[n]
tensor Y float32 shape=[n]
scalar a float32
arg tensor 0
arg tensor 1
arg scalar 0
arg symbol n int32
grid 1
block 128 1 1
smem 1048576
)";
  Kernel k = make(kAxpySource, plan);
  try {
    k.prepare(0);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 1048576 bytes of shared memory"), std::string::npos) << e.what();
  }
}

TEST_F(RuntimeGpu, WrongArchitectureIsAClearError) {
  std::string other = cc_ >= 90 ? "sm_80" : "sm_90a";
  Kernel k = make(kAxpySource, kAxpyPlan, other);
  try {
    k.prepare(0);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("was compiled for " + other + ", which cannot run on device 0"), std::string::npos)
        << e.what();
  }
}

TEST_F(RuntimeGpu, ClusterLaunch) {
  if (cc_ < 90) GTEST_SKIP() << "clusters need sm_90";
  const char* source = R"(extern "C" __global__ void ranks(int* out) {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(r);
})";
  const char* plan = R"(tilec-launch-plan 1
kernel ranks
tensor Out int32 shape=[8]
grid 8
block 32 1 1
cluster 2 1 1
)";
  Kernel k = make(source, plan);
  DeviceBuffer dout(8 * 4);
  int64_t shape[1] = {8};
  std::vector<ArgValue> args = {tensor_arg(dout.ptr, ir::Int32(), shape, 1)};
  k(args.data(), 1, nullptr);
  CudaDriver::get().synchronize_device(0);
  std::vector<int> out(8);
  CudaDriver::get().copy_to_host(0, out.data(), dout.ptr, 32);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], i % 2) << "block " << i;
}

}  // namespace
}  // namespace tilec::runtime
