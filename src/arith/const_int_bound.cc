// Constant integer bounds (interval analysis): Impl::bound.
//
// Contract: for an expression e (bind_value facts already substituted), bound(e)
// returns [lo, hi] such that every value e can take, for every assignment of its
// variables within their bound ranges, lies in [lo, hi]. kNegInf / kPosInf mean
// "unbounded". For vectors (Ramp / Broadcast) the interval covers every lane.
//
// Algorithm: one bottom-up walk with interval arithmetic on saturating int64 end points.
//  * Variables: the bound from bind_range / bind_bound, else the range of their type.
//  * Division: the divisor interval has zero removed (dividing by zero is undefined, so
//    a divisor of [0, n] acts as [1, n]); when it spans zero the quotient is bounded by
//    |dividend|. Quotients are monotone between sign changes, so corners suffice.
//  * Every result is finally clipped to its type: int32/int64 by intersection (signed
//    overflow is undefined, so the simplifier may assume it does not happen); unsigned
//    and narrow signed types fall back to the whole type range when the exact interval
//    leaves it (they wrap in practice).
//  * Non-integer expressions (loads of floats, calls) get their type's range.
// Results are memoized per node until the facts change (Impl::bound_memo).
#include <algorithm>

#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith {

using namespace detail;
using ir::NodeKind;

namespace {

ConstIntBound everything() { return {kNegInf, kPosInf}; }

ConstIntBound clip_to_type(ConstIntBound b, const ir::DataType& t) {
  ConstIntBound tb = type_bound(t);
  if (!t.is_int() && !t.is_uint() && !t.is_bool()) return b;
  if (t.is_int() && t.bits() >= 32) {
    ConstIntBound r{std::max(b.min_value, tb.min_value), std::min(b.max_value, tb.max_value)};
    if (r.min_value > r.max_value) return tb;
    return r;
  }
  if (b.min_value < tb.min_value || b.max_value > tb.max_value) return tb;
  return b;
}

ConstIntBound from_corners(std::initializer_list<int64_t> vs) {
  return {std::min(vs), std::max(vs)};
}

ConstIntBound add_bound(ConstIntBound a, ConstIntBound b) {
  return {sat_add(a.min_value, b.min_value), sat_add(a.max_value, b.max_value)};
}
ConstIntBound sub_bound(ConstIntBound a, ConstIntBound b) {
  return {sat_add(a.min_value, sat_neg(b.max_value)), sat_add(a.max_value, sat_neg(b.min_value))};
}
ConstIntBound mul_bound(ConstIntBound a, ConstIntBound b) {
  return from_corners({sat_mul(a.min_value, b.min_value), sat_mul(a.min_value, b.max_value),
                       sat_mul(a.max_value, b.min_value), sat_mul(a.max_value, b.max_value)});
}

// Quotient of end points x / y (y != 0), truncating or flooring, with infinities.
int64_t div_point(int64_t x, int64_t y, bool floor) {
  if (is_inf(x)) return sign_of(x) * sign_of(y) > 0 ? kPosInf : kNegInf;
  if (is_inf(y)) {
    // |y| is unbounded: the quotient tends to 0 (or -1 when flooring a value of the
    // opposite sign).
    if (!floor || x == 0) return 0;
    return (sign_of(x) == sign_of(y)) ? 0 : -1;
  }
  int64_t q;
  bool ok = floor ? checked_floordiv(x, y, &q) : checked_truncdiv(x, y, &q);
  if (!ok) return kPosInf;  // INT64_MIN / -1
  return q;
}

// A zero divisor is undefined behaviour, so it is removed from the divisor interval;
// false when the divisor can only be zero.
bool drop_zero_divisor(ConstIntBound* b) {
  if (b->min_value == 0 && b->max_value == 0) return false;
  if (b->min_value == 0) b->min_value = 1;
  if (b->max_value == 0) b->max_value = -1;
  return true;
}

ConstIntBound magnitude_bound(ConstIntBound a) {
  int64_t m = std::max(sat_neg(a.min_value), a.max_value);
  if (m < 0) m = 0;
  return {sat_neg(m), m};
}

ConstIntBound div_bound(ConstIntBound a, ConstIntBound b, bool floor) {
  if (!drop_zero_divisor(&b)) return everything();  // always undefined
  if (b.min_value < 0 && b.max_value > 0) {
    // Divisor of either sign, |divisor| >= 1: |quotient| <= |dividend| (floor adds at
    // most one step toward -inf, which stays within the integer -|dividend|).
    return magnitude_bound(a);
  }
  return from_corners({div_point(a.min_value, b.min_value, floor), div_point(a.min_value, b.max_value, floor),
                       div_point(a.max_value, b.min_value, floor), div_point(a.max_value, b.max_value, floor)});
}

// C remainder: |r| < |divisor|, and r has the dividend's sign.
ConstIntBound truncmod_bound(ConstIntBound a, ConstIntBound b) {
  if (!drop_zero_divisor(&b)) return everything();
  int64_t max_abs_b = std::max(sat_neg(b.min_value), b.max_value);
  int64_t min_abs_b = (b.min_value > 0) ? b.min_value : (b.max_value < 0 ? sat_neg(b.max_value) : 1);
  int64_t m = max_abs_b == kPosInf ? kPosInf : max_abs_b - 1;
  if (a.min_value >= 0) {
    if (a.max_value < min_abs_b) return a;
    return {0, std::min(a.max_value, m)};
  }
  if (a.max_value <= 0) {
    if (sat_neg(a.min_value) < min_abs_b) return a;
    return {std::max(a.min_value, sat_neg(m)), 0};
  }
  return {std::max(a.min_value, sat_neg(m)), std::min(a.max_value, m)};
}

// Python remainder: the result has the divisor's sign and |r| < |divisor|.
ConstIntBound floormod_bound(ConstIntBound a, ConstIntBound b) {
  if (!drop_zero_divisor(&b)) return everything();
  if (b.min_value > 0) {
    if (a.min_value >= 0 && a.max_value < b.min_value) return a;
    int64_t hi = b.max_value == kPosInf ? kPosInf : b.max_value - 1;
    if (a.min_value >= 0) hi = std::min(hi, a.max_value);
    return {0, hi};
  }
  if (b.max_value < 0) {
    if (a.max_value <= 0 && a.min_value > b.max_value) return a;
    int64_t lo = b.min_value == kNegInf ? kNegInf : b.min_value + 1;
    if (a.max_value <= 0) lo = std::max(lo, a.min_value);
    return {lo, 0};
  }
  int64_t max_abs_b = std::max(sat_neg(b.min_value), b.max_value);
  int64_t m = max_abs_b == kPosInf ? kPosInf : max_abs_b - 1;
  return {sat_neg(m), m};
}

ConstIntBound union_bound(ConstIntBound a, ConstIntBound b) {
  return {std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
}

}  // namespace

ConstIntBound Analyzer::Impl::var_bound(const ir::VarNode* v) {
  auto it = vars.find(v);
  if (it != vars.end()) return it->second.bound;
  return type_bound(v->dtype);
}

ConstIntBound Analyzer::Impl::bound(const Expr& e) {
  if (!e.defined()) return everything();
  if (auto* imm = e.as<ir::IntImmNode>()) return {imm->value, imm->value};
  if (auto* v = e.as<ir::VarNode>()) return var_bound(v);
  auto memo = bound_memo.find(e.get());
  if (memo != bound_memo.end()) return memo->second.second;

  const ir::DataType& t = e->dtype;
  ConstIntBound r = type_bound(t);
  if (auto* bin = e.as<ir::BinaryNode>()) {
    if (ir::is_compare_kind(bin->kind) || ir::is_logic_kind(bin->kind)) {
      r = {0, 1};
    } else if (t.is_integer()) {
      ConstIntBound a = bound(bin->a);
      ConstIntBound b = bound(bin->b);
      switch (bin->kind) {
        case NodeKind::kAdd: r = add_bound(a, b); break;
        case NodeKind::kSub: r = sub_bound(a, b); break;
        case NodeKind::kMul: r = mul_bound(a, b); break;
        case NodeKind::kDiv: r = div_bound(a, b, /*floor=*/false); break;
        case NodeKind::kFloorDiv: r = div_bound(a, b, /*floor=*/true); break;
        case NodeKind::kMod: r = truncmod_bound(a, b); break;
        case NodeKind::kFloorMod: r = floormod_bound(a, b); break;
        case NodeKind::kMin: r = {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)}; break;
        case NodeKind::kMax: r = {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)}; break;
        default: break;
      }
      r = clip_to_type(r, t);
    }
  } else if (e.as<ir::NotNode>()) {
    r = {0, 1};
  } else if (auto* s = e.as<ir::SelectNode>()) {
    if (t.is_integer() || t.is_bool()) {
      ConstIntBound c = bound(s->cond);
      if (c.min_value == 1) r = bound(s->true_value);         // condition always true
      else if (c.max_value == 0) r = bound(s->false_value);   // always false
      else r = union_bound(bound(s->true_value), bound(s->false_value));
    }
  } else if (auto* c = e.as<ir::CastNode>()) {
    if (t.is_integer() || t.is_bool()) {
      const ir::DataType& from = c->value->dtype;
      if (from.is_integer() || from.is_bool()) {
        ConstIntBound v = bound(c->value);
        ConstIntBound tb = type_bound(t);
        if (t.is_bool()) {
          if (v.min_value > 0 || v.max_value < 0) r = {1, 1};
          else if (v.min_value == 0 && v.max_value == 0) r = {0, 0};
        } else if (v.min_value >= tb.min_value && v.max_value <= tb.max_value &&
                   !(from.is_uint() && from.bits() >= 64 && v.max_value == kPosInf)) {
          // (uint64 values above INT64_MAX show as +inf and would not survive the cast.)
          r = v;  // the value is representable: the cast keeps it
        }
      }
    }
  } else if (auto* ramp = e.as<ir::RampNode>()) {
    if (t.is_integer()) {
      ConstIntBound span = mul_bound(bound(ramp->stride), {0, ramp->lanes - 1});
      r = clip_to_type(add_bound(bound(ramp->base), span), t);
    }
  } else if (auto* bc = e.as<ir::BroadcastNode>()) {
    r = bound(bc->value);
  }
  bound_memo.emplace(e.get(), std::make_pair(e, r));
  return r;
}

}  // namespace tilec::arith
