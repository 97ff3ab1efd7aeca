// CUDA C -> cubin, in-process with NVRTC (loaded with dlopen) or with nvcc as a separate
// process (TILEC_COMPILER=nvcc or CudaCompileRequest::compiler = "nvcc"). Both capture
// the ptxas report. A compile error is a UserError that quotes the compiler's log and
// the offending source lines.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tilec/runtime/compiler.h"

namespace tilec::runtime {

struct CudaCompileRequest {
  std::string source;
  std::string kernel_name;           // picks the ptxas report entry; names the source file
  std::string arch;                  // "sm_80", "sm_90a", ...
  std::string compiler;              // "nvrtc", "nvcc", or "" for TILEC_COMPILER / nvrtc
  // Headers visible to #include by name, after the embedded device library.
  std::vector<std::pair<std::string, std::string>> extra_headers;
  std::vector<std::string> extra_options;
  bool line_info = true;             // -lineinfo
};

struct CudaBinary {
  std::vector<char> cubin;
  std::string ptx;                   // empty when the compiler did not produce it (nvcc)
  PtxasInfo ptxas;
  std::string compiler;              // "nvrtc" or "nvcc", as used
};

CudaBinary compile_cuda(const CudaCompileRequest& request);
// How many times this process called compile_cuda (NVRTC or nvcc builds; tests use it to
// tell a cache hit from a build).
int64_t cuda_compile_count();

// "nvrtc" or "nvcc": `requested` when non-empty, else TILEC_COMPILER, else "nvrtc".
// Raises UserError for any other name.
std::string resolve_compiler(const std::string& requested);

// A cheap identity of the compiler for cache keys (path, size and mtime of the library
// or executable; no dlopen). Different installations give different identities.
std::string compiler_identity(const std::string& compiler);

// NVRTC's version as "major.minor" (loads NVRTC); raises UserError when not found.
std::string nvrtc_version();
// Whether NVRTC can be loaded; on failure `why` says what was searched.
bool nvrtc_available(std::string* why = nullptr);

// Parses `ptxas -v` output for the entry `kernel_name` (the first entry when empty or
// not found). registers stays -1 when the report has no entry.
PtxasInfo parse_ptxas_info(const std::string& log, const std::string& kernel_name);

}  // namespace tilec::runtime
