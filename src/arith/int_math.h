// Exact integer helpers shared by the arithmetic analyses.
//
// Contract: every function here is free of undefined behaviour for every int64 input.
// Operations that could overflow report it (checked_*) or saturate to the infinities of
// ConstIntBound (sat_*); division helpers require a nonzero divisor and treat
// INT64_MIN / -1 as an overflow.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <numeric>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/type.h"

namespace tilec::arith::detail {

constexpr int64_t kNegInf = ConstIntBound::kNegInf;
constexpr int64_t kPosInf = ConstIntBound::kPosInf;

inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool checked_sub(int64_t a, int64_t b, int64_t* out) { return !__builtin_sub_overflow(a, b, out); }
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_neg(int64_t a, int64_t* out) { return checked_sub(0, a, out); }

// C semantics: truncate toward zero. Requires b != 0; false on INT64_MIN / -1.
inline bool checked_truncdiv(int64_t a, int64_t b, int64_t* out) {
  if (b == 0 || (a == kNegInf && b == -1)) return false;
  *out = a / b;
  return true;
}
inline bool checked_truncmod(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return false;
  *out = (b == -1) ? 0 : a % b;
  return true;
}
// Python semantics: round toward -inf; the remainder has the divisor's sign.
inline bool checked_floordiv(int64_t a, int64_t b, int64_t* out) {
  int64_t q;
  if (!checked_truncdiv(a, b, &q)) return false;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;  // cannot overflow: q > INT64_MIN here
  *out = q;
  return true;
}
inline bool checked_floormod(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return false;
  if (b == -1) {
    *out = 0;
    return true;
  }
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *out = r;
  return true;
}
// Unchecked versions for callers that know b != 0 and b != -1 or a != INT64_MIN.
inline int64_t floordiv_i64(int64_t a, int64_t b) {
  int64_t q = 0;
  checked_floordiv(a, b, &q);
  return q;
}
inline int64_t floormod_i64(int64_t a, int64_t b) {
  int64_t r = 0;
  checked_floormod(a, b, &r);
  return r;
}

// gcd of absolute values; gcd(0, 0) == 0. Returns 0 when |x| does not fit (INT64_MIN).
inline int64_t gcd_i64(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return 0;
  return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b);
}

// ---- saturating arithmetic on interval end points (kNegInf / kPosInf are infinities) ----
inline bool is_inf(int64_t v) { return v == kNegInf || v == kPosInf; }
inline int sign_of(int64_t v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

inline int64_t sat_add(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) {
    // -inf + +inf has no meaning for an end point; callers never form it for a lower
    // bound, but stay conservative by answering the infinity of the first operand.
    return (a == kPosInf || b == kPosInf) ? a : kNegInf;
  }
  if (a == kPosInf || b == kPosInf) return kPosInf;
  int64_t r;
  if (checked_add(a, b, &r)) return r;
  return a > 0 ? kPosInf : kNegInf;
}
inline int64_t sat_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}
inline int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  int s = sign_of(a) * sign_of(b);
  if (is_inf(a) || is_inf(b)) return s > 0 ? kPosInf : kNegInf;
  int64_t r;
  if (checked_mul(a, b, &r) && !is_inf(r)) return r;
  return s > 0 ? kPosInf : kNegInf;
}

// ---- value ranges of IR types ----
// The range of integer values an expression of type t can hold. uint64 is capped at
// INT64_MAX (shown as +inf); bool is [0, 1]; non-integer types are unbounded.
inline ConstIntBound type_bound(const ir::DataType& t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_int()) {
    if (t.bits() >= 64) return {kNegInf, kPosInf};
    int64_t hi = (int64_t{1} << (t.bits() - 1)) - 1;
    return {-hi - 1, hi};
  }
  if (t.is_uint()) {
    if (t.bits() >= 64) return {0, kPosInf};
    return {0, (int64_t{1} << t.bits()) - 1};
  }
  return {kNegInf, kPosInf};
}
// Whether the exact value v is representable in t (for constant folding). int64 values
// equal to INT64_MIN/MAX are representable even though they double as infinities.
inline bool fits_type(int64_t v, const ir::DataType& t) {
  if (t.is_int() && t.bits() >= 64) return true;
  if (t.is_uint() && t.bits() >= 64) return v >= 0;
  ConstIntBound b = type_bound(t);
  return v >= b.min_value && v <= b.max_value;
}

}  // namespace tilec::arith::detail
