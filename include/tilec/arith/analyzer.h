// Arithmetic analysis of integer index expressions: simplification, constant bounds,
// and proving facts (a < b, a % 16 == 0) that bounds checks, vectorization and layout
// inference need.
//
// An Analyzer holds what is known about variables (their ranges, from loops, thread
// extents and user constraints); every query uses it.
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

  // Declare that min <= v < min + extent (loop variables, thread indices).
  void bind_range(const Var& v, const Expr& min, const Expr& extent);
  // Declare exact bounds min <= v <= max.
  void bind_bound(const Var& v, int64_t min_value, int64_t max_value);
  // Declare v == value (substituted before simplifying).
  void bind_value(const Var& v, const Expr& value);

  // Returns an equivalent, simpler expression: constants folded, integer sums put in a
  // canonical linear form, floordiv/floormod rewritten where bounds allow, and
  // comparisons decided when the bounds decide them.
  Expr simplify(const Expr& e);
  ConstIntBound const_int_bound(const Expr& e);
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
