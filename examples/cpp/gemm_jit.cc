// The C++ JIT path end to end: builds the GEMM + ReLU of seeds/000 section 1 with ir::Builder,
// compiles it with tilec::runtime::compile (NVRTC, for this GPU), runs it on device memory
// through tilec::runtime::Kernel and checks C = relu(A B) against a double-precision reference
// computed here (random fp16 inputs, C poisoned with NaN first).
//
//   gemm_jit [--compile-only] [M N K]     (multiples of 128, 128 and 32; default 512 512 256)
//
// Prints "ok" and exits 0 when the result matches; "no GPU: ..." (exit 0) without a driver;
// --compile-only compiles for sm_90a and sm_80 and prints the kernel signature (no GPU needed).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "host_half.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/runtime/compiler.h"
#include "tilec/runtime/driver.h"
#include "tilec/runtime/kernel.h"

namespace {

using tilec_examples::to_half;

tilec::runtime::ArgValue tensor(uint64_t ptr, const int64_t* shape) {
  tilec::runtime::ArgValue a;
  a.kind = tilec::runtime::ArgValue::kTensor;
  a.tensor.data = ptr;
  a.tensor.dtype = tilec::ir::DataType::Float(16);
  a.tensor.ndim = 2;
  a.tensor.shape = shape;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tilec;
  bool compile_only = false;
  std::vector<int64_t> mnk;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--compile-only") == 0) compile_only = true;
    else mnk.push_back(std::atoll(argv[i]));
  }
  ir::GemmExampleConfig cfg;
  cfg.M = mnk.size() == 3 ? mnk[0] : 512;
  cfg.N = mnk.size() == 3 ? mnk[1] : 512;
  cfg.K = mnk.size() == 3 ? mnk[2] : 256;
  try {
    ir::PrimFunc f = ir::build_example_gemm(cfg);
    if (compile_only) {
      for (const char* target : {"sm_90a", "sm_80"}) {
        runtime::CompileOptions opts;
        opts.target = target;
        runtime::CompiledArtifact art = runtime::compile(f, opts);
        std::printf("%s: %s, %zu bytes of cubin\n", target, runtime::Kernel(art).signature().c_str(), art.cubin.size());
      }
      return 0;
    }
    std::string why;
    if (!runtime::CudaDriver::available(&why) || runtime::CudaDriver::get().device_count() == 0) {
      std::printf("no GPU: %s\n", why.empty() ? "no CUDA device" : why.c_str());
      return 0;
    }
    runtime::Kernel kernel(runtime::compile(f, runtime::CompileOptions{}));
    const int64_t M = cfg.M, N = cfg.N, K = cfg.K;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> a(M * K), b(K * N), c(M * N, 0x7e00u);  // C poisoned: NaN
    for (auto& x : a) x = to_half(dist(rng));
    for (auto& x : b) x = to_half(dist(rng));
    auto& drv = runtime::CudaDriver::get();
    uint64_t da = drv.mem_alloc(0, a.size() * 2), db = drv.mem_alloc(0, b.size() * 2), dc = drv.mem_alloc(0, c.size() * 2);
    drv.copy_to_device(0, da, a.data(), a.size() * 2);
    drv.copy_to_device(0, db, b.data(), b.size() * 2);
    drv.copy_to_device(0, dc, c.data(), c.size() * 2);
    const int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    runtime::ArgValue args[3] = {tensor(da, sa), tensor(db, sb), tensor(dc, sc)};
    kernel(args, 3, nullptr);
    drv.synchronize_device(0);
    drv.copy_to_host(0, c.data(), dc, c.size() * 2);
    drv.mem_free(0, da);
    drv.mem_free(0, db);
    drv.mem_free(0, dc);
    if (!tilec_examples::matches_gemm_relu(a, b, c, M, N, K)) return 1;
    std::printf("ok\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
