// The knob table and the only code in tilec that reads environment variables.
// Keep python/tilec/knobs.py in step with kKnobs (tests/python/test_knobs.py checks it).
#include "tilec/support/knobs.h"

#include <fnmatch.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "tilec/support/diag.h"

namespace tilec::knobs {

namespace {

const std::vector<KnobSpec> kKnobs = {
    {"TILEC_DUMP_IR", KnobType::kString, "", "",
     "Print the IR (T-script) to stderr after every pass that changed it. 1 = every "
     "kernel and pass; otherwise comma-separated globs matched against the kernel name "
     "or the pass name (e.g. gemm, 'lower_*'); with 'diff' among them (TILEC_DUMP_IR=diff or diff,gemm) "
     "a unified diff against the IR before the pass instead of the whole IR."},
    {"TILEC_DUMP_DIR", KnobType::kPath, "", "",
     "Write every compilation stage (IR after each pass as NN_<pass>.py, CUDA source, PTX, "
     "cubin, ptxas log) to <dir>/<kernel>/<target>/."},
    {"TILEC_TIME_PASSES", KnobType::kBool, "0", "",
     "Print the wall time of each pass to stderr."},
    {"TILEC_CACHE_DIR", KnobType::kPath, "~/.cache/tilec", "",
     "Directory of the on-disk kernel cache."},
    {"TILEC_DISABLE_CACHE", KnobType::kBool, "0", "",
     "Do not read or write the kernel caches (memory and disk); always compile."},
    {"TILEC_COMPILER", KnobType::kChoice, "nvrtc", "nvrtc|nvcc",
     "Device compiler: NVRTC in-process, or nvcc as a subprocess (debugging)."},
    {"TILEC_CUDA_HOME", KnobType::kPath, "$CUDA_HOME, $CUDA_PATH, the build-time toolkit, /usr/local/cuda", "",
     "CUDA toolkit root (for its headers and nvcc)."},
    {"TILEC_LINE_DIRECTIVES", KnobType::kBool, "0", "",
     "Emit #line directives in generated CUDA that point back to the kernel's source lines."},
    {"TILEC_DEBUG_SYNC", KnobType::kBool, "0", "",
     "Hang detector: every mbarrier wait traps after ~2 s, printing the kernel, barrier, parity and block."},
    {"TILEC_LAUNCH_BLOCKING", KnobType::kBool, "0", "",
     "Wait for every kernel to finish after its launch, so a fault is reported by the call of the kernel "
     "that caused it (slow; for debugging)."},
    {"TILEC_PYTHON", KnobType::kPath, "python3", "",
     "The Python interpreter that `tilec compile FILE.py::NAME` runs (the source tree's python/ is put on its path)."},
    {"TILEC_PASS_CONFIGS", KnobType::kString, "", "",
     "Pass configs added to every compile, as key=value pairs separated by commas (e.g. "
     "tilec.intra_wg_overlap=false): for trying a compiler option on programs left unmodified. A program's "
     "own pass_configs win; the values join the cache key like any pass config."},
    {"TILEC_TORCH_SHIM", KnobType::kBool, "1", "",
     "Use libtilec_torch_shim (built where torch imports) to allocate kernel outputs and read the current "
     "stream through libtorch; 0 = always through torch's Python API."},
};

std::mutex& overrides_mutex() {
  static std::mutex m;
  return m;
}
// name -> value (nullopt: unset). Only names present here are overridden.
std::map<std::string, std::optional<std::string>>& overrides() {
  static std::map<std::string, std::optional<std::string>> m;
  return m;
}

const KnobSpec* find_spec(const std::string& name) {
  for (const auto& k : kKnobs)
    if (name == k.name) return &k;
  return nullptr;
}

void check_declared(const std::string& name) {
  TILEC_ICHECK(find_spec(name) != nullptr) << "knob " << name << " is not declared in knobs.cc";
}

// The process environment, for names that tilec does not own (HOME, CUDA_HOME, ...).
std::optional<std::string> getenv_string(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool read_bool(const char* name) {
  auto v = raw(name);
  if (!v || v->empty()) return false;
  std::string s = lower(*v);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  throw_user_error(std::string("environment variable ") + name + "='" + *v + "' is not a boolean",
                   {}, "use 1/0, true/false, yes/no or on/off");
}

std::string read_string(const char* name) { return raw(name).value_or(""); }

std::string home_dir() {
  if (auto h = getenv_string("HOME"); h && !h->empty()) return *h;
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
  return "/tmp";
}

// "~" or "~/x" -> $HOME/x, so a value written with a tilde works when the shell did not expand it.
std::string expand_home(const std::string& path) {
  if (path == "~") return home_dir();
  if (path.rfind("~/", 0) == 0) return home_dir() + path.substr(1);
  return path;
}

// The toolkit root that CMake found, derived from its include directory
// (".../cuda/include" or ".../cuda/targets/<arch>/include").
std::string build_time_cuda_root() {
#ifdef TILEC_CUDA_INCLUDE_DIR
  std::string dir = TILEC_CUDA_INCLUDE_DIR;
  dir = dir.substr(0, dir.find(';'));
  if (auto t = dir.find("/targets/"); t != std::string::npos) return dir.substr(0, t);
  const std::string suffix = "/include";
  if (dir.size() > suffix.size() && dir.compare(dir.size() - suffix.size(), suffix.size(), suffix) == 0)
    return dir.substr(0, dir.size() - suffix.size());
  return dir;
#else
  return "";
#endif
}

void json_string(std::ostringstream& os, const std::string& s) {
  os << '"';
  for (char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\t': os << "\\t"; break;
      default: os << c;
    }
  }
  os << '"';
}

}  // namespace

const char* knob_type_name(KnobType t) {
  switch (t) {
    case KnobType::kBool: return "bool";
    case KnobType::kString: return "string";
    case KnobType::kPath: return "path";
    case KnobType::kChoice: return "choice";
  }
  TILEC_UNREACHABLE() << "knob type";
}

const std::vector<KnobSpec>& all() { return kKnobs; }

std::string table_json() {
  std::ostringstream os;
  os << "[\n";
  for (size_t i = 0; i < kKnobs.size(); ++i) {
    const auto& k = kKnobs[i];
    os << "  {\"name\": ";
    json_string(os, k.name);
    os << ", \"type\": ";
    json_string(os, knob_type_name(k.type));
    os << ", \"default\": ";
    json_string(os, k.default_text);
    os << ", \"choices\": ";
    json_string(os, k.choices);
    os << ", \"help\": ";
    json_string(os, k.help);
    os << "}" << (i + 1 < kKnobs.size() ? "," : "") << "\n";
  }
  os << "]\n";
  return os.str();
}

std::optional<std::string> raw(const std::string& name) {
  check_declared(name);
  {
    std::lock_guard<std::mutex> lock(overrides_mutex());
    auto it = overrides().find(name);
    if (it != overrides().end()) return it->second;
  }
  return getenv_string(name.c_str());
}

std::string dump_ir() {
  std::string v = read_string("TILEC_DUMP_IR");
  std::string l = lower(v);
  return (l == "0" || l == "false" || l == "off" || l == "no") ? "" : v;
}

bool dump_ir_diff() {
  std::istringstream is(dump_ir());
  std::string pattern;
  while (std::getline(is, pattern, ','))
    if (lower(pattern) == "diff") return true;
  return false;
}

bool dump_ir_matches(const std::string& kernel, const std::string& pass) {
  std::string spec = dump_ir();
  if (spec.empty()) return false;
  std::istringstream is(spec);
  std::string pattern;
  bool any_pattern = false;
  while (std::getline(is, pattern, ',')) {
    if (pattern.empty() || lower(pattern) == "diff") continue;
    any_pattern = true;
    std::string p = lower(pattern);
    if (p == "1" || p == "all" || p == "true" || p == "*") return true;
    if (fnmatch(pattern.c_str(), kernel.c_str(), 0) == 0) return true;
    if (fnmatch(pattern.c_str(), pass.c_str(), 0) == 0) return true;
  }
  return !any_pattern;  // "diff" alone: every kernel and pass
}

std::string dump_dir() { return expand_home(read_string("TILEC_DUMP_DIR")); }

bool time_passes() { return read_bool("TILEC_TIME_PASSES"); }

std::string cache_dir() {
  std::string v = read_string("TILEC_CACHE_DIR");
  if (!v.empty()) return expand_home(v);
  return home_dir() + "/.cache/tilec";
}

bool disable_cache() { return read_bool("TILEC_DISABLE_CACHE"); }

std::string compiler() {
  auto v = raw("TILEC_COMPILER");
  if (!v || v->empty()) return "nvrtc";
  std::string s = lower(*v);
  if (s == "nvrtc" || s == "nvcc") return s;
  throw_user_error("environment variable TILEC_COMPILER='" + *v + "' is not a known compiler", {},
                   "use TILEC_COMPILER=nvrtc (default) or TILEC_COMPILER=nvcc");
}

std::string cuda_home() {
  if (auto v = raw("TILEC_CUDA_HOME"); v && !v->empty()) return expand_home(*v);
  if (auto v = getenv_string("CUDA_HOME"); v && !v->empty()) return *v;
  if (auto v = getenv_string("CUDA_PATH"); v && !v->empty()) return *v;
  if (std::string b = build_time_cuda_root(); !b.empty()) return b;
  return "/usr/local/cuda";
}

bool line_directives() { return read_bool("TILEC_LINE_DIRECTIVES"); }
bool debug_sync() { return read_bool("TILEC_DEBUG_SYNC"); }
bool launch_blocking() { return read_bool("TILEC_LAUNCH_BLOCKING"); }

std::string pass_configs() { return raw("TILEC_PASS_CONFIGS").value_or(""); }

std::string python() {
  auto v = raw("TILEC_PYTHON");
  return v && !v->empty() ? expand_home(*v) : "python3";
}

void set_for_testing(const std::string& name, std::optional<std::string> value) {
  check_declared(name);
  std::lock_guard<std::mutex> lock(overrides_mutex());
  overrides()[name] = std::move(value);
}

void clear_testing_overrides() {
  std::lock_guard<std::mutex> lock(overrides_mutex());
  overrides().clear();
}

ScopedKnob::ScopedKnob(std::string name, std::optional<std::string> value)
    : name_(std::move(name)), had_override_(false) {
  check_declared(name_);
  std::lock_guard<std::mutex> lock(overrides_mutex());
  auto it = overrides().find(name_);
  if (it != overrides().end()) {
    had_override_ = true;
    previous_ = it->second;
  }
  overrides()[name_] = std::move(value);
}

ScopedKnob::~ScopedKnob() {
  std::lock_guard<std::mutex> lock(overrides_mutex());
  if (had_override_)
    overrides()[name_] = previous_;
  else
    overrides().erase(name_);
}

}  // namespace tilec::knobs
