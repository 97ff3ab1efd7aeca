// TEMPORARY: identity until implemented.
#include "tilec/passes/passes.h"
namespace tilec::passes {
Pass plan_shared_memory_pass() { return {"plan_shared_memory", [](const ir::PrimFunc& f, PassContext&) { return f; }}; }
}  // namespace tilec::passes
