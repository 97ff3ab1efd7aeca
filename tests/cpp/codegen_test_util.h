// Helpers for the codegen / lowered-IR tests: compile generated CUDA C with the toolkit's
// nvcc (to PTX or a cubin) against the embedded device library.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tilec::runtime {
const std::vector<std::pair<std::string, std::string>>& embedded_device_headers();
}

namespace codegen_test {

inline std::string nvcc_path() {
  for (const char* p : {"/usr/local/cuda/bin/nvcc"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

struct CompileResult {
  bool ok = false;
  std::string log;  // compiler output
  std::string ptx;  // when compiled to PTX
};

// Compiles `source` for `arch` ("sm_80", "sm_90a") to PTX, then assembles it with ptxas so
// errors at both levels show up. The device library comes from the embedded copy, exactly
// what NVRTC gets at run time.
inline CompileResult compile_cuda(const std::string& source, const std::string& arch) {
  CompileResult r;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tilec_codegen_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "include" / "tilec");
  for (const auto& [name, text] : tilec::runtime::embedded_device_headers()) {
    std::ofstream(dir / "include" / name) << text;
  }
  fs::path cu = dir / "kernel.cu", ptx = dir / "kernel.ptx", log = dir / "log.txt";
  std::ofstream(cu) << source;
  std::string cmd = nvcc_path() + " -std=c++17 -arch=" + arch + " -I" + (dir / "include").string() + " -ptx " +
                    cu.string() + " -o " + ptx.string() + " > " + log.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc == 0) {
    std::string ptxas = nvcc_path().substr(0, nvcc_path().size() - 4) + "ptxas";
    std::string cmd2 = ptxas + " -arch=" + arch + " " + ptx.string() + " -o " + (dir / "kernel.cubin").string() +
                       " >> " + log.string() + " 2>&1";
    rc = std::system(cmd2.c_str());
  }
  std::stringstream ls;
  ls << std::ifstream(log).rdbuf();
  r.log = ls.str();
  if (fs::exists(ptx)) {
    std::stringstream ps;
    ps << std::ifstream(ptx).rdbuf();
    r.ptx = ps.str();
  }
  r.ok = rc == 0;
  fs::remove_all(dir);
  return r;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace codegen_test
