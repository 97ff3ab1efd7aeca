// Where the CUDA toolkit pieces the runtime needs live: NVRTC's shared library, the
// toolkit headers (cuda_fp16.h, cuda_bf16.h, CCCL) and nvcc. Searched in order:
// knobs::cuda_home() (TILEC_CUDA_HOME, CUDA_HOME, CUDA_PATH, the build-time toolkit), the
// toolkit CMake found at build time, /usr/local/cuda, directories registered at run time
// (the Python package adds those of the pip wheels nvidia-cuda-nvrtc / -runtime), and
// finally the dynamic loader's own search (bare sonames).
#pragma once

#include <string>
#include <vector>

namespace tilec::runtime {

// Adds directories to search (lib_dirs for libnvrtc, include_dirs for the headers).
void add_cuda_search_dirs(const std::vector<std::string>& lib_dirs,
                          const std::vector<std::string>& include_dirs);

// Existing full paths of NVRTC libraries, best first, then bare sonames for dlopen.
std::vector<std::string> nvrtc_library_candidates();
// Include directories for NVRTC/nvcc: every toolkit include dir that has cuda_fp16.h,
// followed by its cccl/ subdirectory when present.
std::vector<std::string> cuda_include_dirs();
// Full path of nvcc, or "" when none is found.
std::string find_nvcc();

}  // namespace tilec::runtime
