// TEMPORARY: identity until implemented.
#include "tilec/passes/passes.h"
namespace tilec::passes {
Pass insert_syncs_pass() { return {"insert_syncs", [](const ir::PrimFunc& f, PassContext&) { return f; }}; }
}  // namespace tilec::passes
