// Helpers for the codegen / lowered-IR tests: compile generated CUDA C in-process with NVRTC
// (tilec/runtime/nvrtc.h, the same path the JIT uses, device library embedded) and return
// what tests need to check the instructions chosen.
#pragma once

#include <string>

#include "tilec/runtime/nvrtc.h"
#include "tilec/support/diag.h"
#include "tilec/target/cuda/lower.h"

namespace codegen_test {

inline bool have_nvrtc() { return tilec::runtime::nvrtc_available(); }

struct CompileResult {
  bool ok = false;
  std::string log;  // compiler output or error
  std::string ptx;  // the PTX NVRTC generated
};

// Compiles `source` for `arch` ("sm_80", "sm_90a") with NVRTC.
inline CompileResult compile_cuda(const std::string& source, const std::string& arch) {
  CompileResult r;
  tilec::runtime::CudaCompileRequest req;
  req.source = source;
  req.kernel_name = "codegen_test";
  req.arch = arch;
  req.compiler = "nvrtc";
  try {
    tilec::runtime::CudaBinary bin = tilec::runtime::compile_cuda(req);
    r.ok = !bin.cubin.empty();
    r.ptx = bin.ptx;
    r.log = bin.ptxas.log;
  } catch (const tilec::UserError& e) {
    r.log = e.what();
  }
  return r;
}

// Compiles a lowered module with NVRTC for `arch` ("sm_80", "sm_90a"): the binary with
// its PTX and ptxas report. A compile error throws (the caller checks have_nvrtc()).
inline tilec::runtime::CudaBinary compile_module(const tilec::cuda::DeviceModule& mod, const std::string& arch) {
  tilec::runtime::CudaCompileRequest req;
  req.source = mod.source;
  req.kernel_name = mod.plan.kernel_name;
  req.arch = arch;
  req.compiler = "nvrtc";
  return tilec::runtime::compile_cuda(req);
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace codegen_test
