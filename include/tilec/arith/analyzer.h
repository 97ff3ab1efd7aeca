// Arithmetic analysis of integer index expressions: simplification, constant bounds,
// and proving facts (a < b, a % 16 == 0) that bounds checks, vectorization and layout
// inference need.
//
// An Analyzer holds what is known about variables (their ranges, from loops, thread
// extents and user constraints); every query uses it.
//
// Semantics the analyses rely on:
//  * int32/int64 arithmetic is assumed not to overflow (it is undefined behaviour in the
//    generated code), so sums are reassociated and bounds clipped to the type. Unsigned,
//    int8/int16 and float arithmetic is only constant-folded (never reassociated), and
//    constants are folded only when the exact result is representable.
//  * Division by zero is undefined: a zero divisor is never folded, and bounds analysis
//    may assume divisors are nonzero.
//  * Results are deterministic: terms are ordered by a structural order that never looks
//    at addresses (variables by name).
//  * Answers are memoized per Analyzer until the next bind_* call, so repeated queries on
//    the same (shared) expression objects are cheap. An Analyzer is not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>

#include "tilec/ir/expr.h"

namespace tilec::arith {

using ir::Expr;
using ir::Var;

// Inclusive bounds; kNegInf / kPosInf when unbounded.
struct ConstIntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;
  bool is_const() const { return min_value == max_value && min_value != kNegInf; }
};

// x == coeff * k + base for some integer k (coeff == 0: x == base exactly).
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;
};

class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // Declare that min <= v < min + extent (loop variables, thread indices). Replaces what
  // was known about v. min / extent may be symbolic (e.g. a loop up to n): their constant
  // bounds give v's interval, and the symbolic bounds themselves are kept, so facts like
  // i < n are provable for i in [0, n).
  void bind_range(const Var& v, const Expr& min, const Expr& extent);
  // Declare exact bounds min <= v <= max. Replaces what was known about v.
  void bind_bound(const Var& v, int64_t min_value, int64_t max_value);
  // Declare v == value (a Let). Every later query substitutes v by value first, so
  // simplify's result no longer mentions v.
  void bind_value(const Var& v, const Expr& value);

  // Returns an equivalent, simpler expression of the same type: constants folded,
  // integer sums put in a canonical linear form, floordiv/floormod rewritten where
  // bounds allow, and comparisons decided when the bounds decide them (undecided ones
  // are normalized, e.g. x + 3 < 8 -> x < 5). When nothing simplifies, the very same
  // object is returned (copy-on-write callers can test same_as).
  Expr simplify(const Expr& e);
  // Sound interval of e's values; kNegInf / kPosInf where unbounded.
  ConstIntBound const_int_bound(const Expr& e);
  // Sound congruence of e's values: e == coeff * k + base (coeff >= 0, 0 <= base < coeff).
  ModularSet modular_set(const Expr& e);
  // True only when `cond` (a bool expression) holds for every value of its variables
  // within their known ranges. False means "could not prove", not "false".
  bool can_prove(const Expr& cond);
  bool can_prove_equal(const Expr& a, const Expr& b);
  // Shorthands.
  bool can_prove_less(const Expr& a, int64_t b);           // a < b
  bool can_prove_divisible(const Expr& a, int64_t factor);  // a % factor == 0

  // Opaque state, defined in src/arith/analyzer_impl.h (public only so the files of
  // src/arith/ can name it).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Simplify with no variable facts.
Expr simplify(const Expr& e);

}  // namespace tilec::arith
