// Toolkit discovery (see include/tilec/runtime/cuda_paths.h for the search order).
// Results are recomputed on each call: the calls are rare (once per compile or per
// process) and the environment or registered directories may change in between.
#include "tilec/runtime/cuda_paths.h"

#include "tilec/support/knobs.h"

#include <sys/stat.h>

#include <mutex>
#include <sstream>

namespace tilec::runtime {
namespace {

std::mutex g_dirs_mutex;
std::vector<std::string> g_extra_lib_dirs;
std::vector<std::string> g_extra_include_dirs;

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void push_unique(std::vector<std::string>& v, const std::string& s) {
  if (s.empty()) return;
  for (const auto& x : v) {
    if (x == s) return;
  }
  v.push_back(s);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Toolkit roots, best first.
std::vector<std::string> toolkit_roots() {
  std::vector<std::string> roots;
  push_unique(roots, knobs::cuda_home());  // TILEC_CUDA_HOME, CUDA_HOME, CUDA_PATH, build-time toolkit
#ifdef TILEC_CUDA_LIB_DIR
  // The toolkit CMake found: LIB_DIR is <root>/lib64 or <root>/targets/<arch>/lib.
  {
    std::string lib = TILEC_CUDA_LIB_DIR;
    for (const char* suffix : {"/lib64", "/lib"}) {
      std::string s = suffix;
      if (lib.size() > s.size() && lib.compare(lib.size() - s.size(), s.size(), s) == 0) {
        std::string root = lib.substr(0, lib.size() - s.size());
        if (auto t = root.find("/targets/"); t != std::string::npos) root = root.substr(0, t);
        push_unique(roots, root);
        break;
      }
    }
  }
#endif
  push_unique(roots, "/usr/local/cuda");
  return roots;
}

}  // namespace

void add_cuda_search_dirs(const std::vector<std::string>& lib_dirs,
                          const std::vector<std::string>& include_dirs) {
  std::lock_guard<std::mutex> lock(g_dirs_mutex);
  for (const auto& d : lib_dirs) push_unique(g_extra_lib_dirs, d);
  for (const auto& d : include_dirs) push_unique(g_extra_include_dirs, d);
}

std::vector<std::string> nvrtc_library_candidates() {
  std::vector<std::string> lib_dirs;
  for (const auto& root : toolkit_roots()) {
    push_unique(lib_dirs, root + "/lib64");
    push_unique(lib_dirs, root + "/lib");
  }
#ifdef TILEC_CUDA_LIB_DIR
  push_unique(lib_dirs, TILEC_CUDA_LIB_DIR);
#endif
  {
    std::lock_guard<std::mutex> lock(g_dirs_mutex);
    for (const auto& d : g_extra_lib_dirs) push_unique(lib_dirs, d);
  }
  static const char* kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> out;
  for (const auto& dir : lib_dirs) {
    for (const char* name : kNames) {
      std::string path = dir + "/" + name;
      if (exists(path)) push_unique(out, path);
    }
  }
  for (const char* name : kNames) push_unique(out, name);
  return out;
}

std::vector<std::string> cuda_include_dirs() {
  std::vector<std::string> candidates;
  for (const auto& root : toolkit_roots()) push_unique(candidates, root + "/include");
#ifdef TILEC_CUDA_INCLUDE_DIR
  for (const auto& d : split(TILEC_CUDA_INCLUDE_DIR, ';')) push_unique(candidates, d);
#endif
  {
    std::lock_guard<std::mutex> lock(g_dirs_mutex);
    for (const auto& d : g_extra_include_dirs) push_unique(candidates, d);
  }
  std::vector<std::string> out;
  for (const auto& dir : candidates) {
    if (!exists(dir + "/cuda_fp16.h")) continue;
    push_unique(out, dir);
    if (exists(dir + "/cccl")) push_unique(out, dir + "/cccl");
  }
  return out;
}

std::string find_nvcc() {
  for (const auto& root : toolkit_roots()) {
    if (exists(root + "/bin/nvcc")) return root + "/bin/nvcc";
  }
  return "";
}

}  // namespace tilec::runtime
