// STUB: replaced by target parsing and detection.
#include "tilec/target/target.h"
#include "tilec/support/diag.h"
namespace tilec::target {
std::string Target::str() const { return "sm_" + std::to_string(arch) + (arch_specific ? "a" : ""); }
int Target::max_shared_memory_per_block() const { return arch >= 90 ? 227 * 1024 : 163 * 1024; }
Target parse_target(const std::string& spec) {
  Target t;
  if (spec == "sm_90a") { t.arch = 90; t.arch_specific = true; }
  return t;
}
std::optional<Target> detect_target() { return std::nullopt; }
}  // namespace tilec::target
