// Pass "verify": checks that the function is well formed.
//
// Input:  any PrimFunc.
// Output: the same object (the pass never rewrites), so the pass manager sees no change.
// Before: nothing; it is the first pass of every pipeline and can be repeated anywhere.
// Algorithm: ir::verify, which raises a UserError with the offending node's location.
#include "tilec/ir/verifier.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

Pass verify_pass() {
  return {"verify", [](const ir::PrimFunc& f, PassContext&) {
            ir::verify(f);
            return f;
          }};
}

}  // namespace tilec::passes
