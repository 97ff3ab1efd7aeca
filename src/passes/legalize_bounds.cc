// TEMPORARY: identity until implemented.
#include "tilec/passes/passes.h"
namespace tilec::passes {
Pass legalize_bounds_pass() { return {"legalize_bounds", [](const ir::PrimFunc& f, PassContext&) { return f; }}; }
}  // namespace tilec::passes
