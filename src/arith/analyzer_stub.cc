// TEMPORARY stub, replaced by the real analyzer (simplifier, bounds, prover).
#include "tilec/arith/analyzer.h"

namespace tilec::arith {
struct Analyzer::Impl {};
Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;
void Analyzer::bind_range(const Var&, const Expr&, const Expr&) {}
void Analyzer::bind_bound(const Var&, int64_t, int64_t) {}
void Analyzer::bind_value(const Var&, const Expr&) {}
Expr Analyzer::simplify(const Expr& e) { return e; }
ConstIntBound Analyzer::const_int_bound(const Expr& e) {
  if (auto* p = ir::as_const_int(e)) return {*p, *p};
  return {};
}
ModularSet Analyzer::modular_set(const Expr& e) {
  if (auto* p = ir::as_const_int(e)) return {0, *p};
  return {};
}
bool Analyzer::can_prove(const Expr& c) { return ir::is_const_int(c, 1); }
bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) { return false; }
bool Analyzer::can_prove_less(const Expr& a, int64_t b) { return false; }
bool Analyzer::can_prove_divisible(const Expr& a, int64_t f) { return false; }
Expr simplify(const Expr& e) { return e; }
}  // namespace tilec::arith
