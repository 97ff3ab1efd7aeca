// STUB: replaced by the pass manager.
#include "tilec/passes/pass.h"
namespace tilec::passes {
const std::vector<ConfigKey>& config_keys() { static std::vector<ConfigKey> k; return k; }
ir::PrimFunc run_passes(const std::vector<Pass>& passes, ir::PrimFunc f, PassContext& ctx) {
  for (const auto& p : passes) f = p.run(f, ctx);
  return f;
}
}  // namespace tilec::passes
