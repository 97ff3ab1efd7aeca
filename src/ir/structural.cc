// STUB: replaced by structural equality / hashing.
#include "tilec/ir/structural.h"
namespace tilec::ir {
bool structural_equal(const PrimFunc& a, const PrimFunc& b) { return a.same_as(b); }
bool structural_equal(const Stmt& a, const Stmt& b) { return a.same_as(b); }
bool structural_equal(const Expr& a, const Expr& b) { return a.same_as(b); }
uint64_t structural_hash(const PrimFunc&) { return 0; }
uint64_t structural_hash(const Stmt&) { return 0; }
uint64_t structural_hash(const Expr&) { return 0; }
}  // namespace tilec::ir
