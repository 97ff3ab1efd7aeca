// TEMPORARY: identity until implemented.
#include "tilec/passes/passes.h"
namespace tilec::passes {
Pass vectorize_pass() { return {"vectorize", [](const ir::PrimFunc& f, PassContext&) { return f; }}; }
}  // namespace tilec::passes
