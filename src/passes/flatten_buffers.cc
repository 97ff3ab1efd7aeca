// TEMPORARY: identity until implemented.
#include "tilec/passes/passes.h"
namespace tilec::passes {
Pass flatten_buffers_pass() { return {"flatten_buffers", [](const ir::PrimFunc& f, PassContext&) { return f; }}; }
}  // namespace tilec::passes
