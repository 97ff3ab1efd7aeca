// Target parsing and GPU detection (see target.h for the accepted spellings).
//
// detect_target() opens the CUDA driver with dlopen, so libtilec has no link dependency on
// libcuda and works (without a GPU) on machines that lack the driver. The result is
// computed once per process.
#include "tilec/target/target.h"

#include <dlfcn.h>

#include <mutex>

#include "tilec/support/diag.h"
#include "tilec/support/strings.h"

namespace tilec::target {

namespace {

constexpr const char* kAcceptedForms =
    "accepted targets: 'auto', 'cuda', 'sm_80', 'sm_86', 'sm_89', 'sm_90', 'sm_90a', "
    "'cuda -arch=sm_90a', 'cuda:sm_90'; 'cpu' (the tile-level interpreter) is tilec.compile(func, target='cpu') "
    "in Python";

using support::trim;

// "sm_90a" -> Target; nullopt when the spelling is not a supported architecture.
std::optional<Target> parse_arch(const std::string& s) {
  if (s.rfind("sm_", 0) != 0) return std::nullopt;
  std::string digits = s.substr(3);
  bool suffix = !digits.empty() && digits.back() == 'a';
  if (suffix) digits.pop_back();
  if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  int arch = std::stoi(digits);
  bool known = arch == 80 || arch == 86 || arch == 89 || arch == 90 || arch == 100;
  if (!known || (suffix && arch != 90 && arch != 100)) return std::nullopt;
  Target t;
  t.arch = arch;
  t.arch_specific = suffix;
  return t;
}

// The detected GPU, rejected when tilec cannot compile for it.
Target supported_gpu(const Target& gpu) {
  if (gpu.arch < 80) {
    throw_user_error("the GPU of this machine is " + gpu.str() + "; tilec needs sm_80 (Ampere) or newer", {},
                     "run on an A100/H100-class GPU, or pass an explicit target to compile without running");
  }
  return gpu;
}

// CUDA driver API, declared here so that no CUDA header or library is needed to build.
using CuInit = int (*)(unsigned int);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

std::optional<Target> query_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::nullopt;
  // The library stays loaded: the runtime uses the driver afterwards anyway.
  auto init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
  auto device_get = reinterpret_cast<CuDeviceGet>(dlsym(lib, "cuDeviceGet"));
  auto get_attribute = reinterpret_cast<CuDeviceGetAttribute>(dlsym(lib, "cuDeviceGetAttribute"));
  if (!init || !device_get || !get_attribute) return std::nullopt;
  int device = 0, major = 0, minor = 0;
  if (init(0) != 0 || device_get(&device, 0) != 0) return std::nullopt;
  if (get_attribute(&major, kComputeCapabilityMajor, device) != 0 ||
      get_attribute(&minor, kComputeCapabilityMinor, device) != 0)
    return std::nullopt;
  Target t;
  t.arch = major * 10 + minor;
  // A real sm_90 / sm_100 part has the arch-specific ('a') features.
  t.arch_specific = t.arch == 90 || t.arch == 100;
  return t;
}

}  // namespace

std::string Target::str() const { return "sm_" + std::to_string(arch) + (arch_specific ? "a" : ""); }

int Target::max_shared_memory_per_block() const {
  if (arch >= 90 && arch < 120) return 227 * 1024;
  if (arch == 80 || arch == 87) return 163 * 1024;
  return 99 * 1024;  // sm_86, sm_89, sm_120
}

int Target::shared_memory_per_sm() const {
  if (arch >= 90 && arch < 120) return 228 * 1024;
  if (arch == 80 || arch == 87) return 164 * 1024;
  return 100 * 1024;  // sm_86, sm_89, sm_120
}

Target parse_target(const std::string& spec, const std::optional<Target>& detected) {
  std::string s = trim(spec);
  if (s == "auto") {
    if (!detected) throw_user_error("no GPU found; pass an explicit target such as 'sm_90a'", {}, kAcceptedForms);
    return supported_gpu(*detected);
  }
  if (s == "cuda") return detected ? supported_gpu(*detected) : parse_arch("sm_80").value();
  std::string arch = s;
  if (s.rfind("cuda:", 0) == 0) {
    arch = trim(s.substr(5));
  } else if (s.rfind("cuda ", 0) == 0) {
    std::string rest = trim(s.substr(5));
    if (rest.rfind("-arch=", 0) == 0) arch = trim(rest.substr(6));
    else if (rest.rfind("-arch ", 0) == 0) arch = trim(rest.substr(6));
    else arch = "";
  }
  if (auto t = parse_arch(arch)) {
    // Spelled out, sm_100 would promise Blackwell code (tcgen05, tensor memory) that tilec
    // does not generate; a detected Blackwell GPU ('auto') still gets the sm_90-class code.
    if (t->arch == 100)
      throw_user_error("tilec does not support sm_100 (Blackwell) yet: target '" + trim(spec) +
                           "' would get no tcgen05 or tensor-memory code",
                       {}, "compile for 'sm_90a' (Hopper) or 'sm_80' (Ampere); " + std::string(kAcceptedForms));
    return *t;
  }
  throw_user_error("unknown target '" + spec + "'", {}, kAcceptedForms);
}

Target parse_target(const std::string& spec) { return parse_target(spec, detect_target()); }

std::optional<Target> detect_target() {
  static std::once_flag once;
  static std::optional<Target> result;
  std::call_once(once, [] { result = query_driver(); });
  return result;
}

}  // namespace tilec::target
