// Test helper of the gemm tests: compiles CUDA source with NVRTC (opened with dlopen, so the
// suite still builds without the toolkit) against the embedded device headers, and
// disassembles a cubin with cuobjdump when one is installed.
#pragma once

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace tilec::runtime {
const std::vector<std::pair<std::string, std::string>>& embedded_device_headers();
}

namespace gemm_test {

struct NvrtcOutput {
  bool ok = false;
  std::string log;
  std::string ptx;
  std::vector<char> cubin;
};

class Nvrtc {
 public:
  static Nvrtc* get() {
    static Nvrtc* instance = [] {
      auto* n = new Nvrtc();
      return n->lib_ ? n : nullptr;
    }();
    return instance;
  }

  // arch: "sm_80", "sm_90a", ...
  NvrtcOutput compile(const std::string& source, const std::string& arch) const {
    NvrtcOutput out;
    const auto& headers = tilec::runtime::embedded_device_headers();
    std::vector<const char*> names, texts;
    for (const auto& [n, t] : headers) names.push_back(n.c_str()), texts.push_back(t.c_str());
    void* prog = nullptr;
    if (create_(&prog, source.c_str(), "gemm_test.cu", int(names.size()), texts.data(), names.data()) != 0) {
      out.log = "nvrtcCreateProgram failed";
      return out;
    }
    std::string arch_opt = "--gpu-architecture=" + arch;
    const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device", "--ptxas-options=-v"};
    const int rc = compile_(prog, 4, opts);
    size_t n = 0;
    log_size_(prog, &n);
    out.log.resize(n);
    if (n) program_log_(prog, out.log.data());
    if (rc == 0) {
      ptx_size_(prog, &n);
      out.ptx.resize(n);
      ptx_(prog, out.ptx.data());
      cubin_size_(prog, &n);
      out.cubin.resize(n);
      cubin_(prog, out.cubin.data());
      out.ok = true;
    }
    destroy_(&prog);
    return out;
  }

 private:
  Nvrtc() {
    for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"}) {
      lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib_) break;
    }
    if (!lib_) return;
    auto sym = [&](const char* s) { return dlsym(lib_, s); };
    create_ = reinterpret_cast<decltype(create_)>(sym("nvrtcCreateProgram"));
    compile_ = reinterpret_cast<decltype(compile_)>(sym("nvrtcCompileProgram"));
    log_size_ = reinterpret_cast<decltype(log_size_)>(sym("nvrtcGetProgramLogSize"));
    program_log_ = reinterpret_cast<decltype(program_log_)>(sym("nvrtcGetProgramLog"));
    ptx_size_ = reinterpret_cast<decltype(ptx_size_)>(sym("nvrtcGetPTXSize"));
    ptx_ = reinterpret_cast<decltype(ptx_)>(sym("nvrtcGetPTX"));
    cubin_size_ = reinterpret_cast<decltype(cubin_size_)>(sym("nvrtcGetCUBINSize"));
    cubin_ = reinterpret_cast<decltype(cubin_)>(sym("nvrtcGetCUBIN"));
    destroy_ = reinterpret_cast<decltype(destroy_)>(sym("nvrtcDestroyProgram"));
    if (!create_ || !compile_ || !log_size_ || !program_log_ || !ptx_size_ || !ptx_ || !cubin_size_ || !cubin_ ||
        !destroy_)
      lib_ = nullptr;
  }
  void* lib_ = nullptr;
  int (*create_)(void**, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile_)(void*, int, const char* const*) = nullptr;
  int (*log_size_)(void*, size_t*) = nullptr;
  int (*program_log_)(void*, char*) = nullptr;
  int (*ptx_size_)(void*, size_t*) = nullptr;
  int (*ptx_)(void*, char*) = nullptr;
  int (*cubin_size_)(void*, size_t*) = nullptr;
  int (*cubin_)(void*, char*) = nullptr;
  int (*destroy_)(void**) = nullptr;
};

// The SASS of a cubin through cuobjdump, or nullopt when no cuobjdump (with its nvdisasm)
// is found on PATH or in /usr/local/cuda/bin.
inline std::optional<std::string> disassemble(const std::vector<char>& cubin) {
  std::string tool;
  for (const char* c : {"cuobjdump", "/usr/local/cuda/bin/cuobjdump"}) {
    std::string probe = std::string("command -v ") + c + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      tool = c;
      break;
    }
  }
  if (tool.empty()) return std::nullopt;
  char path[] = "/tmp/tilec_gemm_test_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return std::nullopt;
  close(fd);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(cubin.data(), std::streamsize(cubin.size()));
  }
  std::string cmd = tool + " -sass " + path + " 2>&1";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
    pclose(p);
  }
  std::remove(path);
  if (text.find("Function") == std::string::npos) return std::nullopt;  // no nvdisasm, or no kernel
  return text;
}

}  // namespace gemm_test
