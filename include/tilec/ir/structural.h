// Structural equality and hashing of IR: two functions are equal when they have the
// same shape up to a consistent renaming of variables and buffers (by definition
// site). Source locations and the names of variables, buffers and the function are ignored.
// In a PrimFunc, the free variables of the parameters' shapes and strides (symbolic sizes)
// count as defined by the signature; elsewhere free variables compare by identity.
#pragma once

#include <cstdint>

#include "tilec/ir/stmt.h"

namespace tilec::ir {

bool structural_equal(const PrimFunc& a, const PrimFunc& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Expr& a, const Expr& b);  // free variables compare by identity
uint64_t structural_hash(const PrimFunc& f);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const Expr& e);

}  // namespace tilec::ir
