// tilec's own passes must stay fast (issue 11): the CUDA pass pipeline of the GEMM example
// at the benchmark tile (128x256x64, 3 stages, 256 threads, bf16) takes about 5-8 ms on a
// 2-core machine against a 10 ms target (bench/bench_compile.py reports it per program).
// This fails only far beyond the target (4x), so a loaded CI machine does not trip it, but a
// return to per-element layout work (which took ~75 ms) does. No NVRTC involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "tilec/ir/example_gemm.h"
#include "tilec/passes/pass.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/target/target.h"

using namespace tilec;

namespace {

constexpr double kGemmTargetMs = 10.0;
constexpr double kSlack = 4.0;  // what a loaded machine may cost

ir::PrimFunc benchmark_gemm() {
  ir::GemmExampleConfig c;
  c.name = "gemm_128x256x64";
  c.M = c.N = c.K = 8192;
  c.block_M = 128;
  c.block_N = 256;
  c.block_K = 64;
  c.threads = 256;
  c.num_stages = 3;
  c.in_dtype = ir::DataType::BFloat16();
  c.relu = false;
  return ir::build_example_gemm(c);
}

// The fastest of a few runs of the whole pipeline (noise only adds time).
double min_pipeline_ms(const ir::PrimFunc& f, const std::string& target_spec, int runs) {
  const target::Target target = target::parse_target(target_spec);
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    passes::PassContext ctx(target);
    auto start = std::chrono::steady_clock::now();
    ir::PrimFunc out = passes::run_passes(pipeline::cuda_pipeline(target), f, ctx);
    auto stop = std::chrono::steady_clock::now();
    EXPECT_TRUE(out.defined()) << "the pipeline returned no function";
    best = std::min(best, std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return best;
}

}  // namespace

class CompileSpeed : public ::testing::TestWithParam<std::string> {};

TEST_P(CompileSpeed, GemmExamplePassesStayNearTheTarget) {
  const double ms = min_pipeline_ms(benchmark_gemm(), GetParam(), 5);
  RecordProperty("pass_ms", std::to_string(ms));
  EXPECT_LT(ms, kSlack * kGemmTargetMs) << "tilec's passes took " << ms << " ms for the 128x256x64 GEMM on "
                                        << GetParam() << " (target " << kGemmTargetMs
                                        << " ms): profile with TILEC_TIME_PASSES=1";
}

INSTANTIATE_TEST_SUITE_P(Targets, CompileSpeed, ::testing::Values("sm_80", "sm_90a"));
