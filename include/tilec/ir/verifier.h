// The verifier: checks that a PrimFunc is well formed and raises a UserError (with the
// offending node's source location) on the first problem: wrong rank, dtype mismatch,
// a variable used where it is not defined, a buffer used outside its allocation's
// scope, an on-chip buffer used outside a kernel, a fragment touched outside a
// T.Parallel loop or tile op, kernels nested in kernels, ...
#pragma once

#include "tilec/ir/stmt.h"

namespace tilec::ir {

void verify(const PrimFunc& f);

}  // namespace tilec::ir
