// Modular (congruence) analysis: Impl::modular.
//
// Contract: for an integer expression e (bind_value facts already substituted),
// modular(e) returns {coeff, base} such that every value of e equals coeff * k + base
// for some integer k. coeff == 0 means e == base exactly; coeff == 1 says nothing.
// The result is normalized: coeff >= 0 and 0 <= base < coeff when coeff > 0.
// Used to prove alignment (a % 16 == 0) for vectorization and async copies.
//
// Algorithm: bottom-up with the rules of the congruence lattice
//   x + y:  gcd(cx, cy),            bx + by
//   x * y:  gcd(cx*cy, cx*by, cy*bx), bx * by
//   x // c, x % c (c > 0 constant): exact when c divides cx; a remainder keeps the
//           congruence modulo gcd(cx, c)
//   min / max / select: gcd of both sides and the difference of their bases.
// Any int64 overflow gives up to {1, 0}. A variable bound to a single value is exact.
#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith {

using namespace detail;
using ir::NodeKind;

namespace {

const ModularSet kNothing{1, 0};

ModularSet make(int64_t coeff, int64_t base) {
  if (coeff == kNegInf) return kNothing;
  if (coeff < 0) coeff = -coeff;
  if (coeff == 0) return {0, base};
  return {coeff, floormod_i64(base, coeff)};
}

ModularSet add_ms(ModularSet x, ModularSet y, int64_t sign) {
  int64_t yb;
  if (!checked_mul(y.base, sign, &yb)) return kNothing;
  int64_t base;
  if (!checked_add(x.base, yb, &base)) return kNothing;
  int64_t coeff = gcd_i64(x.coeff, y.coeff);
  if (coeff == 0 && (x.coeff != 0 || y.coeff != 0)) return kNothing;
  return make(coeff, base);
}

ModularSet mul_ms(ModularSet x, ModularSet y) {
  int64_t cc, cb, bc, bb;
  if (!checked_mul(x.coeff, y.coeff, &cc) || !checked_mul(x.coeff, y.base, &cb) ||
      !checked_mul(y.coeff, x.base, &bc) || !checked_mul(x.base, y.base, &bb)) {
    return kNothing;
  }
  int64_t coeff = gcd_i64(gcd_i64(cc, cb), bc);
  if (coeff == 0 && (cc != 0 || cb != 0 || bc != 0)) return kNothing;
  return make(coeff, bb);
}

ModularSet union_ms(ModularSet x, ModularSet y) {
  int64_t diff;
  if (!checked_sub(x.base, y.base, &diff)) return kNothing;
  int64_t coeff = gcd_i64(gcd_i64(x.coeff, y.coeff), diff);
  if (coeff == 0) return x.coeff == 0 && y.coeff == 0 && diff == 0 ? x : kNothing;
  return make(coeff, x.base);
}

// x // c and x % c for a constant divisor c != 0.
ModularSet div_ms(ModularSet x, int64_t c, bool floor) {
  if (x.coeff == 0) {
    int64_t q;
    bool ok = floor ? checked_floordiv(x.base, c, &q) : checked_truncdiv(x.base, c, &q);
    return ok ? make(0, q) : kNothing;
  }
  // x = coeff*k + base with c | coeff: x // c = (coeff/c)*k + base // c, exactly, for
  // floor division (coeff*k/c is an integer). Truncation mixes signs: give up.
  if (floor && c > 0 && x.coeff % c == 0) return make(x.coeff / c, floordiv_i64(x.base, c));
  return kNothing;
}
ModularSet mod_ms(ModularSet x, int64_t c, bool floor) {
  if (x.coeff == 0) {
    int64_t r;
    bool ok = floor ? checked_floormod(x.base, c, &r) : checked_truncmod(x.base, c, &r);
    return ok ? make(0, r) : kNothing;
  }
  // x % c == x - c*q is congruent to x modulo any g dividing c (both semantics).
  int64_t g = gcd_i64(x.coeff, c);
  if (g == 0) return kNothing;
  if (floor && c > 0 && x.coeff % c == 0) return make(0, floormod_i64(x.base, c));
  return make(g, x.base);
}

}  // namespace

ModularSet Analyzer::Impl::modular(const Expr& e) {
  if (!e.defined() || !e->dtype.is_integer()) return kNothing;
  if (auto* imm = e.as<ir::IntImmNode>()) return make(0, imm->value);
  if (auto* v = e.as<ir::VarNode>()) {
    ConstIntBound b = var_bound(v);
    if (b.is_const() && b.max_value != kPosInf) return make(0, b.min_value);
    return kNothing;
  }
  if (auto* bin = e.as<ir::BinaryNode>()) {
    switch (bin->kind) {
      case NodeKind::kAdd: return add_ms(modular(bin->a), modular(bin->b), 1);
      case NodeKind::kSub: return add_ms(modular(bin->a), modular(bin->b), -1);
      case NodeKind::kMul: return mul_ms(modular(bin->a), modular(bin->b));
      case NodeKind::kMin:
      case NodeKind::kMax: return union_ms(modular(bin->a), modular(bin->b));
      case NodeKind::kFloorDiv:
      case NodeKind::kDiv:
      case NodeKind::kFloorMod:
      case NodeKind::kMod: {
        auto* c = ir::as_const_int(bin->b);
        if (!c || *c == 0) return kNothing;
        bool floor = bin->kind == NodeKind::kFloorDiv || bin->kind == NodeKind::kFloorMod;
        bool is_div = bin->kind == NodeKind::kFloorDiv || bin->kind == NodeKind::kDiv;
        ModularSet x = modular(bin->a);
        return is_div ? div_ms(x, *c, floor) : mod_ms(x, *c, floor);
      }
      default: return kNothing;
    }
  }
  if (auto* s = e.as<ir::SelectNode>()) return union_ms(modular(s->true_value), modular(s->false_value));
  if (auto* c = e.as<ir::CastNode>()) {
    // A cast keeps the value when it is representable in the target type.
    const ir::DataType& from = c->value->dtype;
    if (from.is_integer()) {
      ConstIntBound v = bound(c->value);
      ConstIntBound tb = type_bound(e->dtype);
      if (v.min_value >= tb.min_value && v.max_value <= tb.max_value && !is_inf(v.max_value) &&
          !is_inf(v.min_value)) {
        return modular(c->value);
      }
      if (from == ir::DataType::Int(32) && e->dtype == ir::DataType::Int(64)) return modular(c->value);
    }
    return kNothing;
  }
  if (auto* r = e.as<ir::RampNode>()) {
    // Lanes are base + i * stride for i = 0 .. lanes-1.
    return add_ms(modular(r->base), mul_ms(modular(r->stride), kNothing), 1);
  }
  if (auto* b = e.as<ir::BroadcastNode>()) return modular(b->value);
  return kNothing;
}

}  // namespace tilec::arith
