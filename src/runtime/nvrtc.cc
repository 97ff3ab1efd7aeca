// CUDA C -> cubin with NVRTC (dlopen'd, in-process) or nvcc (a child process).
//
// NVRTC is opened once per process from the candidates of cuda_paths.h; its entry
// points are looked up with dlsym. Options: -arch=sm_XX[a] (a real architecture, so
// nvrtcGetCUBIN has SASS), --std=c++17, -default-device, -lineinfo, -I<toolkit>/include
// (+ cccl/), --ptxas-options=-v. The embedded device library and extra headers are
// passed as named headers. nvcc gets the same headers written into a temporary
// directory. Compile errors become a UserError quoting the log and the source lines the
// log points at.
#include "tilec/runtime/nvrtc.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>

#include "tilec/runtime/cuda_paths.h"
#include "tilec/runtime/device_headers.h"
#include "tilec/support/diag.h"
#include "tilec/support/knobs.h"

namespace tilec::runtime {
namespace {

struct NvrtcApi {
  void* handle = nullptr;
  std::string path;
  std::string error;  // why loading failed
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
};

const NvrtcApi& nvrtc_api() {
  static NvrtcApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    for (const auto& cand : nvrtc_library_candidates()) {
      api.handle = ::dlopen(cand.c_str(), RTLD_LAZY | RTLD_LOCAL);
      if (api.handle) {
        api.path = cand;
        break;
      }
      tried += "\n  " + cand + ": " + ::dlerror();
    }
    if (!api.handle) {
      api.error = "could not load NVRTC (libnvrtc.so.13 / .12). Tried:" + tried;
      return;
    }
    bool ok = true;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(api.handle, name));
      if (!fn) {
        ok = false;
        api.error += std::string(" missing symbol ") + name;
      }
    };
    load(api.GetErrorString, "nvrtcGetErrorString");
    load(api.Version, "nvrtcVersion");
    load(api.CreateProgram, "nvrtcCreateProgram");
    load(api.DestroyProgram, "nvrtcDestroyProgram");
    load(api.CompileProgram, "nvrtcCompileProgram");
    load(api.GetProgramLogSize, "nvrtcGetProgramLogSize");
    load(api.GetProgramLog, "nvrtcGetProgramLog");
    load(api.GetCUBINSize, "nvrtcGetCUBINSize");
    load(api.GetCUBIN, "nvrtcGetCUBIN");
    load(api.GetPTXSize, "nvrtcGetPTXSize");
    load(api.GetPTX, "nvrtcGetPTX");
    if (!ok) {
      api.error = "NVRTC at " + api.path + " is unusable:" + api.error;
      ::dlclose(api.handle);
      api.handle = nullptr;
    }
  });
  return api;
}

const NvrtcApi& require_nvrtc() {
  const NvrtcApi& api = nvrtc_api();
  if (!api.handle) {
    throw_user_error(api.error, {},
                     "install the CUDA toolkit (or pip install nvidia-cuda-nvrtc) and set "
                     "TILEC_CUDA_HOME to its root, or use TILEC_COMPILER=nvcc");
  }
  return api;
}

void check_nvrtc(const NvrtcApi& api, nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) {
    throw_user_error(std::string("NVRTC ") + what + " failed: " + api.GetErrorString(r), {});
  }
}

std::string file_identity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
}

std::vector<std::pair<std::string, std::string>> all_headers(const CudaCompileRequest& req) {
  auto headers = embedded_device_headers();
  headers.insert(headers.end(), req.extra_headers.begin(), req.extra_headers.end());
  return headers;
}

std::string source_file_name(const CudaCompileRequest& req) {
  return (req.kernel_name.empty() ? std::string("kernel") : req.kernel_name) + ".cu";
}

// The text of `file` as the compiler saw it: the main source or a named header.
const std::string* find_text(const std::string& file, const std::string& main_name, const std::string& source,
                             const std::vector<std::pair<std::string, std::string>>& headers) {
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(file, main_name)) return &source;
  for (const auto& [name, text] : headers) {
    if (ends_with(file, name)) return &text;
  }
  return nullptr;
}

// A readable compile error: the log, then each error location with two lines of context.
[[noreturn]] void throw_compile_error(const std::string& compiler, const CudaCompileRequest& req,
                                      const std::string& log) {
  std::ostringstream os;
  os << compiler << " failed to compile kernel '" << req.kernel_name << "' for " << req.arch << ":\n"
     << log;
  if (!log.empty() && log.back() != '\n') os << '\n';
  auto headers = all_headers(req);
  std::string main_name = source_file_name(req);
  std::regex location(R"(([^\s:()]+)\((\d+)\): (error|catastrophic error))");
  int shown = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), location); it != std::sregex_iterator() && shown < 5;
       ++it, ++shown) {
    std::string file = (*it)[1];
    int line = std::stoi((*it)[2]);
    const std::string* text = find_text(file, main_name, req.source, headers);
    if (!text) continue;
    std::vector<std::string> lines;
    std::istringstream in(*text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    os << "\nat " << file << ":" << line << ":\n";
    for (int l = std::max(1, line - 2); l <= std::min<int>(lines.size(), line + 2); ++l) {
      char prefix[24];
      std::snprintf(prefix, sizeof(prefix), "%s%5d | ", l == line ? ">" : " ", l);
      os << prefix << lines[l - 1] << '\n';
    }
  }
  throw_user_error(os.str(), {},
                   "this CUDA C was generated by tilec; unless it comes from inline CUDA in your "
                   "kernel, please report it as a tilec bug together with the kernel");
}

// nvcc flags that TileLang programs pass in compile_flags, as NVRTC takes them: a spelling
// NVRTC knows under another name, or "" (dropped) for a flag of the host compiler or of
// nvcc's driver that NVRTC rejects and that does not change what the kernel computes.
struct NvccFlag {
  const char* prefix;  // matches the flag itself, or its start when it ends in '='
  const char* nvrtc;
};
constexpr NvccFlag kNvccFlags[] = {
    {"-O0", ""}, {"-O1", ""}, {"-O2", ""}, {"-O3", ""},       // host optimisation levels
    {"-Wno-deprecated-declarations", ""},                       // host warnings
    // C++ dialect switches NVRTC (CUDA 13) does not know; generated kernels need neither.
    {"--expt-relaxed-constexpr", ""}, {"-expt-relaxed-constexpr", ""},
    {"--expt-extended-lambda", ""}, {"-expt-extended-lambda", ""}, {"--extended-lambda", ""},
    // ptxas hints (-v, --register-usage-level): NVRTC hands the comma list to ptxas as one
    // option, which ptxas rejects; tilec reads ptxas' report itself.
    {"--ptxas-options=", ""},
};

std::vector<std::string> nvrtc_flags(const std::vector<std::string>& flags) {
  std::vector<std::string> out;
  for (const auto& f : flags) {
    const NvccFlag* row = nullptr;
    for (const auto& r : kNvccFlags) {
      const std::string p = r.prefix;
      if (f == p || (p.back() == '=' && f.rfind(p, 0) == 0)) row = &r;
    }
    if (!row) out.push_back(f);
    else if (*row->nvrtc) out.push_back(row->nvrtc);
  }
  return out;
}

std::vector<std::string> common_options(const CudaCompileRequest& req, bool for_nvrtc) {
  std::vector<std::string> opts = {"-arch=" + req.arch, "--std=c++17"};
  if (req.line_info) opts.push_back("-lineinfo");
  for (const auto& dir : cuda_include_dirs()) opts.push_back("-I" + dir);
  const auto extra = for_nvrtc ? nvrtc_flags(req.extra_options) : req.extra_options;
  opts.insert(opts.end(), extra.begin(), extra.end());
  return opts;
}

CudaBinary compile_with_nvrtc(const CudaCompileRequest& req) {
  const NvrtcApi& api = require_nvrtc();
  auto headers = all_headers(req);
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  std::string file_name = source_file_name(req);
  nvrtcProgram prog = nullptr;
  check_nvrtc(api,
              api.CreateProgram(&prog, req.source.c_str(), file_name.c_str(), static_cast<int>(headers.size()),
                                header_texts.data(), header_names.data()),
              "nvrtcCreateProgram");
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram* prog;
    ~Destroy() { api.DestroyProgram(prog); }
  } destroy{api, &prog};

  std::vector<std::string> opts = common_options(req, /*for_nvrtc=*/true);
  opts.push_back("-default-device");
  opts.push_back("--ptxas-options=-v");
  std::vector<const char*> opt_ptrs;
  for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
  nvrtcResult compiled = api.CompileProgram(prog, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());

  size_t log_size = 0;
  check_nvrtc(api, api.GetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize");
  std::string log(log_size, '\0');
  if (log_size > 0) check_nvrtc(api, api.GetProgramLog(prog, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (compiled != NVRTC_SUCCESS) throw_compile_error("NVRTC", req, log);

  CudaBinary out;
  out.compiler = "nvrtc";
  size_t cubin_size = 0;
  check_nvrtc(api, api.GetCUBINSize(prog, &cubin_size), "nvrtcGetCUBINSize");
  TILEC_USER_CHECK(cubin_size > 0, SourceLoc{}, "use a real architecture such as sm_90a")
      << "NVRTC produced no cubin for '" << req.arch << "'";
  out.cubin.resize(cubin_size);
  check_nvrtc(api, api.GetCUBIN(prog, out.cubin.data()), "nvrtcGetCUBIN");
  size_t ptx_size = 0;
  if (api.GetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 0) {
    out.ptx.resize(ptx_size);
    if (api.GetPTX(prog, out.ptx.data()) != NVRTC_SUCCESS) out.ptx.clear();
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  out.ptxas = parse_ptxas_info(log, req.kernel_name);
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

CudaBinary compile_with_nvcc(const CudaCompileRequest& req) {
  std::string nvcc = find_nvcc();
  TILEC_USER_CHECK(!nvcc.empty(), SourceLoc{}, "set TILEC_CUDA_HOME to the CUDA toolkit root, or use NVRTC")
      << "nvcc was requested (TILEC_COMPILER=nvcc) but was not found";
  std::error_code tmp_ec;
  std::filesystem::path tmp_base = std::filesystem::temp_directory_path(tmp_ec);
  std::string pattern = (tmp_ec ? std::string("/tmp") : tmp_base.string()) + "/tilec-nvcc-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  TILEC_USER_CHECK(::mkdtemp(buf.data()) != nullptr, SourceLoc{}, "set TMPDIR to a writable directory")
      << "cannot create a temporary directory from '" << pattern << "'";
  std::filesystem::path dir(buf.data());
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};

  for (const auto& [name, text] : all_headers(req)) {
    std::filesystem::path p = dir / "include" / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  std::filesystem::path src = dir / source_file_name(req);
  std::ofstream(src, std::ios::binary) << req.source;
  std::filesystem::path cubin = dir / "kernel.cubin", log_file = dir / "log.txt";

  std::string cmd = shell_quote(nvcc) + " -cubin -Xptxas -v -I" + shell_quote((dir / "include").string());
  for (const auto& o : common_options(req, /*for_nvrtc=*/false)) cmd += " " + shell_quote(o);
  cmd += " -o " + shell_quote(cubin.string()) + " " + shell_quote(src.string()) + " > " +
         shell_quote(log_file.string()) + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::string log = read_file(log_file);
  if (rc != 0) throw_compile_error("nvcc", req, log);

  CudaBinary out;
  out.compiler = "nvcc";
  std::string bytes = read_file(cubin);
  TILEC_USER_CHECK(!bytes.empty(), SourceLoc{}, "") << "nvcc wrote no cubin; its output:\n" << log;
  out.cubin.assign(bytes.begin(), bytes.end());
  out.ptxas = parse_ptxas_info(log, req.kernel_name);
  return out;
}

int capture_int(const std::string& text, const std::regex& re) {
  std::smatch m;
  if (std::regex_search(text, m, re)) return std::stoi(m[1]);
  return 0;
}

}  // namespace

std::string resolve_compiler(const std::string& requested) {
  std::string c = requested.empty() ? knobs::compiler() : requested;
  TILEC_USER_CHECK(c == "nvrtc" || c == "nvcc", SourceLoc{}, "use \"nvrtc\" (default) or \"nvcc\"")
      << "unknown CUDA compiler '" << c << "'";
  return c;
}

std::string compiler_identity(const std::string& compiler) {
  if (resolve_compiler(compiler) == "nvcc") {
    std::string nvcc = find_nvcc();
    return "nvcc:" + (nvcc.empty() ? std::string("missing") : file_identity(nvcc));
  }
  for (const auto& cand : nvrtc_library_candidates()) {
    if (cand.find('/') != std::string::npos) return "nvrtc:" + file_identity(cand);
  }
  // Found only through the loader's search path: ask the library itself.
  const NvrtcApi& api = nvrtc_api();
  if (!api.handle) return "nvrtc:missing";
  return "nvrtc:" + api.path + ":" + nvrtc_version();
}

bool nvrtc_available(std::string* why) {
  const NvrtcApi& api = nvrtc_api();
  if (!api.handle && why) *why = api.error;
  return api.handle != nullptr;
}

std::string nvrtc_version() {
  const NvrtcApi& api = require_nvrtc();
  int major = 0, minor = 0;
  check_nvrtc(api, api.Version(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {
std::atomic<int64_t> g_cuda_compiles{0};
}  // namespace

int64_t cuda_compile_count() { return g_cuda_compiles.load(std::memory_order_relaxed); }

CudaBinary compile_cuda(const CudaCompileRequest& req) {
  TILEC_ICHECK(!req.arch.empty()) << "compile_cuda without an architecture";
  g_cuda_compiles.fetch_add(1, std::memory_order_relaxed);
  if (resolve_compiler(req.compiler) == "nvcc") return compile_with_nvcc(req);
  return compile_with_nvrtc(req);
}

PtxasInfo parse_ptxas_info(const std::string& log, const std::string& kernel_name) {
  PtxasInfo info;
  info.log = log;
  // Split the report into per-entry sections: "Compiling entry function 'NAME' for 'sm_XX'".
  std::regex entry_re(R"(Compiling entry function '([^']+)')");
  std::vector<std::pair<std::string, size_t>> entries;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), entry_re); it != std::sregex_iterator(); ++it) {
    entries.emplace_back((*it)[1], static_cast<size_t>(it->position()));
  }
  if (entries.empty()) return info;
  size_t pick = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first == kernel_name) pick = i;
  }
  size_t begin = entries[pick].second;
  size_t end = pick + 1 < entries.size() ? entries[pick + 1].second : log.size();
  std::string section = log.substr(begin, end - begin);
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex stack(R"((\d+) bytes stack frame)");
  static const std::regex spill_stores(R"((\d+) bytes spill stores)");
  static const std::regex spill_loads(R"((\d+) bytes spill loads)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::smatch m;
  if (std::regex_search(section, m, registers)) info.registers = std::stoi(m[1]);
  info.stack_frame_bytes = capture_int(section, stack);
  info.spill_stores_bytes = capture_int(section, spill_stores);
  info.spill_loads_bytes = capture_int(section, spill_loads);
  info.static_shared_bytes = capture_int(section, smem);
  return info;
}

}  // namespace tilec::runtime
