// Pass infrastructure: a pass is a named function PrimFunc -> PrimFunc. A pipeline is a
// plain list of passes (src/pipeline/<target>.cc). The PassContext carries the target,
// typed config values (validated against registered keys), disabled passes and
// instruments (IR dumps, timing — driven by TILEC_DUMP_IR / TILEC_DUMP_DIR /
// TILEC_TIME_PASSES through support/knobs.h).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "tilec/ir/stmt.h"
#include "tilec/target/target.h"

namespace tilec::passes {

using ConfigValue = std::variant<bool, int64_t, double, std::string>;

struct ConfigKey {
  std::string name;        // e.g. "tl.disable_tma_lower"
  ConfigValue default_value;
  std::string help;
};
// Every accepted config key. Unknown keys in a PassContext are a UserError.
const std::vector<ConfigKey>& config_keys();

class PassContext {
 public:
  explicit PassContext(target::Target t = {}) : target_(std::move(t)) {}
  const target::Target& target() const { return target_; }
  // Raises UserError for an unknown key or a value of the wrong type.
  void set(const std::string& key, ConfigValue value);
  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  void disable_pass(const std::string& name) { disabled_.insert(name); }
  bool is_disabled(const std::string& name) const { return disabled_.count(name) > 0; }

 private:
  const ConfigValue& get(const std::string& key) const;
  target::Target target_;
  std::map<std::string, ConfigValue> values_;
  std::set<std::string> disabled_;
};

struct Pass {
  std::string name;
  std::function<ir::PrimFunc(const ir::PrimFunc&, PassContext&)> run;
};

// Runs the passes in order, honouring disabled passes and the dump/timing knobs.
ir::PrimFunc run_passes(const std::vector<Pass>& passes, ir::PrimFunc f, PassContext& ctx);

}  // namespace tilec::passes
