// NVRTC (and nvcc) compile hand-written kernels to cubins for sm_80 and sm_90a; the
// ptxas report is parsed; compile errors quote the offending source line. Skips only
// when no NVRTC library can be found at all.
#include <gtest/gtest.h>

#include "tilec/runtime/device_headers.h"
#include "tilec/runtime/nvrtc.h"

namespace tilec::runtime {
namespace {

#define SKIP_WITHOUT_NVRTC()                                                   \
  do {                                                                         \
    std::string why;                                                           \
    if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;   \
  } while (0)

// Includes one embedded device-library header when the library has any, plus a header
// passed by name; uses shared memory so the report has an smem figure.
CudaCompileRequest sample_request(const std::string& arch) {
  CudaCompileRequest req;
  req.kernel_name = "scale_kernel";
  req.arch = arch;
  std::string include_lib;
  if (!embedded_device_headers().empty()) include_lib = "#include \"" + embedded_device_headers().front().first + "\"\n";
  req.extra_headers = {{"tilec_test/scale.cuh", "#pragma once\n__device__ inline float scale_of(float x) { return 2.0f * x; }\n"}};
  req.source = include_lib + R"(#include <cuda_fp16.h>
#include "tilec_test/scale.cuh"
extern "C" __global__ void __launch_bounds__(128) scale_kernel(const half* __restrict__ x, half* __restrict__ y, int n) {
  __shared__ float tile[128];
  int i = blockIdx.x * 128 + threadIdx.x;
  tile[threadIdx.x] = i < n ? __half2float(x[i]) : 0.0f;
  __syncthreads();
  if (i < n) y[i] = __float2half(scale_of(tile[127 - threadIdx.x]));
}
)";
  return req;
}

class RuntimeNvrtc : public ::testing::TestWithParam<std::string> {};

TEST_P(RuntimeNvrtc, CompilesToCubinWithPtxasReport) {
  SKIP_WITHOUT_NVRTC();
  CudaBinary bin = compile_cuda(sample_request(GetParam()));
  EXPECT_EQ(bin.compiler, "nvrtc");
  ASSERT_GT(bin.cubin.size(), 4u);
  EXPECT_EQ(std::string(bin.cubin.data() + 1, 3), "ELF");
  EXPECT_NE(bin.ptx.find(".entry scale_kernel"), std::string::npos);
  EXPECT_GT(bin.ptxas.registers, 0) << bin.ptxas.log;
  EXPECT_EQ(bin.ptxas.static_shared_bytes, 512) << bin.ptxas.log;
  EXPECT_EQ(bin.ptxas.spill_stores_bytes, 0);
  EXPECT_NE(bin.ptxas.log.find("for '" + GetParam() + "'"), std::string::npos) << bin.ptxas.log;
}

INSTANTIATE_TEST_SUITE_P(Archs, RuntimeNvrtc, ::testing::Values("sm_80", "sm_90a"));

TEST(RuntimeNvrtcErrors, CompileErrorQuotesTheSource) {
  SKIP_WITHOUT_NVRTC();
  CudaCompileRequest req;
  req.kernel_name = "broken";
  req.arch = "sm_80";
  req.source = "extern \"C\" __global__ void broken(float* y) {\n  float a = 1.0f;\n  y[0] = a + undefined_name;\n}\n";
  try {
    compile_cuda(req);
    FAIL() << "expected a compile error";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("NVRTC failed to compile kernel 'broken' for sm_80"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undefined_name"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at broken.cu:3:"), std::string::npos) << msg;
    EXPECT_NE(msg.find(">    3 |   y[0] = a + undefined_name;"), std::string::npos) << msg;
    EXPECT_NE(msg.find("    2 |   float a = 1.0f;"), std::string::npos) << msg;
  }
}

TEST(RuntimeNvrtcErrors, UnknownCompilerName) {
  try {
    resolve_compiler("clang");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown CUDA compiler 'clang'"), std::string::npos) << e.what();
  }
}

TEST(RuntimeNvcc, CompilesWithNvccToo) {
  if (compiler_identity("nvcc") == "nvcc:missing") GTEST_SKIP() << "nvcc not found";
  CudaCompileRequest req = sample_request("sm_90a");
  req.compiler = "nvcc";
  CudaBinary bin = compile_cuda(req);
  EXPECT_EQ(bin.compiler, "nvcc");
  ASSERT_GT(bin.cubin.size(), 4u);
  EXPECT_EQ(std::string(bin.cubin.data() + 1, 3), "ELF");
  EXPECT_GT(bin.ptxas.registers, 0) << bin.ptxas.log;
  EXPECT_EQ(bin.ptxas.static_shared_bytes, 512) << bin.ptxas.log;
}

TEST(RuntimePtxas, ParsesTheReportOfTheNamedEntry) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Function properties for other\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
      "ptxas info    : Function properties for gemm\n"
      "    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n";
  PtxasInfo info = parse_ptxas_info(log, "gemm");
  EXPECT_EQ(info.registers, 255);
  EXPECT_EQ(info.stack_frame_bytes, 48);
  EXPECT_EQ(info.spill_stores_bytes, 40);
  EXPECT_EQ(info.spill_loads_bytes, 36);
  EXPECT_EQ(info.static_shared_bytes, 1024);
  PtxasInfo first = parse_ptxas_info(log, "");
  EXPECT_EQ(first.registers, 8);
  EXPECT_EQ(first.static_shared_bytes, 0);
  EXPECT_EQ(parse_ptxas_info("", "x").registers, -1);
}

}  // namespace
}  // namespace tilec::runtime
