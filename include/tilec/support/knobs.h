// Knobs: every environment variable tilec reads, declared in one table (src/support/knobs.cc)
// and read nowhere else. The Python mirror is python/tilec/knobs.py; a test checks that the
// two agree through `tilec --list-knobs --json`.
//
// Values are read from the environment on every call (cheap; callers on hot paths keep the
// value they read), so a test can change them with set_for_testing / ScopedKnob without
// touching the process environment. A malformed value (TILEC_COMPILER=gcc, a bool that is
// not 0/1/true/false/on/off/yes/no) is a UserError that names the variable.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tilec::knobs {

enum class KnobType { kBool, kString, kPath, kChoice };
const char* knob_type_name(KnobType t);  // "bool", "string", "path", "choice"

struct KnobSpec {
  const char* name;          // "TILEC_DUMP_IR"
  KnobType type;
  const char* default_text;  // the default as a user reads it ("0", "~/.cache/tilec", ...)
  const char* choices;       // kChoice only: "nvrtc|nvcc"; "" otherwise
  const char* help;
};

// The table, in a stable order.
const std::vector<KnobSpec>& all();
// The table as JSON (a list of objects with name/type/default/choices/help), for the CLI.
std::string table_json();

// ---- typed accessors (the only way tilec reads its environment) ----

// TILEC_DUMP_IR: "" when off. Otherwise a comma-separated list of patterns; see
// dump_ir_matches.
std::string dump_ir();
// True when TILEC_DUMP_IR asks for the IR of `kernel` after `pass`: a pattern "1"/"all"/"*"
// matches everything; any other pattern is a glob (fnmatch) tested against the kernel
// name and against the pass name.
bool dump_ir_matches(const std::string& kernel, const std::string& pass);
// True when TILEC_DUMP_IR has the pattern "diff": print each pass's change as a unified diff
// (the other patterns still choose kernels and passes; "diff" alone matches all).
bool dump_ir_diff();
// TILEC_DUMP_DIR: "" when off.
std::string dump_dir();
bool time_passes();               // TILEC_TIME_PASSES
std::string cache_dir();          // TILEC_CACHE_DIR, default $HOME/.cache/tilec
bool disable_cache();             // TILEC_DISABLE_CACHE
std::string compiler();           // TILEC_COMPILER: "nvrtc" (default) or "nvcc"
// TILEC_CUDA_HOME: the toolkit root (headers, nvcc). Default: $CUDA_HOME, else $CUDA_PATH,
// else the toolkit found when tilec was built, else /usr/local/cuda.
std::string cuda_home();
bool line_directives();           // TILEC_LINE_DIRECTIVES
bool debug_sync();                // TILEC_DEBUG_SYNC
bool launch_blocking();           // TILEC_LAUNCH_BLOCKING (read when a Kernel is created)
std::string pass_configs();        // TILEC_PASS_CONFIGS: "key=value,..." added to every compile
std::string python();             // TILEC_PYTHON, default python3 (for `tilec compile`)

// The raw value of a declared knob (nullopt when unset). An undeclared name is an
// internal error: declare it in the table first.
std::optional<std::string> raw(const std::string& name);

// ---- tests ----
// Override a declared knob for this process (nullopt: behave as if unset). Overrides
// take precedence over the environment until cleared.
void set_for_testing(const std::string& name, std::optional<std::string> value);
void clear_testing_overrides();

// RAII: sets a knob for the lifetime of the object and restores the previous override.
class ScopedKnob {
 public:
  ScopedKnob(std::string name, std::optional<std::string> value);
  ~ScopedKnob();
  ScopedKnob(const ScopedKnob&) = delete;
  ScopedKnob& operator=(const ScopedKnob&) = delete;

 private:
  std::string name_;
  bool had_override_;
  std::optional<std::string> previous_;
};

}  // namespace tilec::knobs
