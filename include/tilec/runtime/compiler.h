// Compile a PrimFunc to a loadable kernel: lower (tilec::cuda::lower_to_cuda), compile
// the CUDA C with NVRTC in-process (nvcc on request), and cache the result in memory and
// on disk (TILEC_CACHE_DIR, default ~/.cache/tilec; key = sha256 of the canonical IR
// text + target + options + compiler and tilec versions).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tilec/ir/stmt.h"
#include "tilec/layout/layout_maps.h"
#include "tilec/passes/pass.h"
#include "tilec/runtime/launch_plan.h"

namespace tilec::runtime {

struct CompileOptions {
  std::string target = "auto";                            // see target/target.h
  std::vector<int> out_idx;                               // outputs allocated by the runtime
  std::map<std::string, passes::ConfigValue> pass_configs;
  std::string compiler = "nvrtc";                         // or "nvcc"
  bool line_directives = false;                           // #line back to the Python source
  std::vector<std::string> compile_flags;                 // extra NVRTC / nvcc options
  bool use_cache = true;                                  // memory + disk caches
  std::string cache_dir;                                  // "": TILEC_CACHE_DIR / ~/.cache/tilec
};

struct PtxasInfo {
  int registers = -1;
  int spill_stores_bytes = 0;
  int spill_loads_bytes = 0;
  int static_shared_bytes = 0;
  int stack_frame_bytes = 0;
  std::string log;  // the raw ptxas report
};

struct CompiledArtifact {
  std::string cuda_source;
  std::string ptx;
  std::vector<char> cubin;
  PtxasInfo ptxas;
  LaunchPlan plan;
  std::string target;        // as compiled, e.g. "sm_90a"
  std::string cache_key;
  bool from_cache = false;
};

// Lowers and compiles. Raises UserError for bad programs; internal errors otherwise.
// On a cache hit (key = sha256 of the IR text, target, options, compiler and tilec
// build) the lowering is skipped too; from_cache says so.
CompiledArtifact compile(const ir::PrimFunc& f, const CompileOptions& opts);

// Compiles hand-written CUDA C with a given plan (tests, tools, inline kernels), through
// the same caches. opts.out_idx, when not empty, marks those parameters as outputs.
CompiledArtifact compile_source(const std::string& cuda_source, const LaunchPlan& plan,
                                const CompileOptions& opts);

// The cache key compile() uses for `f` (tests and tools).
std::string compile_cache_key(const ir::PrimFunc& f, const CompileOptions& opts);

// kernel.explain(): for each copy and gemm, the instruction the CUDA back end chooses under
// these options and why faster ones were ruled out (tilec/target/cuda/explain.h), as text.
std::string explain_program(const ir::PrimFunc& f, const CompileOptions& opts);

// kernel.layouts() / kernel.plot_layouts(): the layout of every fragment and shared buffer as
// layout inference chooses it under these options (the CUDA pipeline up to and including
// layout_inference), in allocation order.
std::vector<layout::InferredLayout> program_layouts(const ir::PrimFunc& f, const CompileOptions& opts);

}  // namespace tilec::runtime
