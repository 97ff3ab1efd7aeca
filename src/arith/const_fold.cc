// Constant folding of scalar operations on immediates.
//
// Contract: fold_* return an immediate equal to what the operation computes at run time,
// or a null Expr when that cannot be done exactly. Inputs are IR expressions of any
// kind; only scalar immediates (IntImm, FloatImm) fold.
//  * Integers: exact math in int64 with overflow checks; the result must be
//    representable in the operation's type, otherwise nothing is folded (signed overflow
//    is undefined in the generated code; unsigned wrap-around is left to run time).
//    Div / Mod truncate (C); FloorDiv / FloorMod round toward -inf (Python). A zero
//    divisor is never folded.
//  * Floats: only float32 and float64 fold (float32 results are rounded to float); the
//    narrow formats (fp16, bf16, fp8) would need their own rounding, so they are kept.
//  * Casts follow C++20 conversions: integer -> integer wraps modulo 2^bits, float ->
//    integer truncates (folded only when the result is in range), anything -> bool is
//    "!= 0".
#include <cmath>

#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith::detail {

using ir::DataType;
using ir::NodeKind;

namespace {

bool foldable_float(const DataType& t) {
  return t.is_scalar() && t.code() == ir::TypeCode::kFloat && (t.bits() == 32 || t.bits() == 64);
}
double round_to(const DataType& t, double v) {
  return t.bits() == 32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// Integer value of a scalar integer/bool immediate that is valid for its type.
bool int_value(const Expr& e, int64_t* out) {
  auto* imm = e.as<ir::IntImmNode>();
  if (!imm || !imm->dtype.is_scalar()) return false;
  if (!imm->dtype.is_integer() && !imm->dtype.is_bool()) return false;
  if (!fits_type(imm->value, imm->dtype)) return false;
  *out = imm->value;
  return true;
}

Expr make_int(int64_t v, const DataType& t) {
  if (!fits_type(v, t)) return Expr();
  return ir::int_imm(v, t);
}

Expr fold_int(NodeKind kind, const DataType& t, int64_t x, int64_t y) {
  int64_t r = 0;
  bool ok = true;
  switch (kind) {
    case NodeKind::kAdd: ok = checked_add(x, y, &r); break;
    case NodeKind::kSub: ok = checked_sub(x, y, &r); break;
    case NodeKind::kMul: ok = checked_mul(x, y, &r); break;
    case NodeKind::kDiv: ok = checked_truncdiv(x, y, &r); break;
    case NodeKind::kMod: ok = checked_truncmod(x, y, &r); break;
    case NodeKind::kFloorDiv: ok = checked_floordiv(x, y, &r); break;
    case NodeKind::kFloorMod: ok = checked_floormod(x, y, &r); break;
    case NodeKind::kMin: r = std::min(x, y); break;
    case NodeKind::kMax: r = std::max(x, y); break;
    case NodeKind::kEQ: return ir::bool_imm(x == y);
    case NodeKind::kNE: return ir::bool_imm(x != y);
    case NodeKind::kLT: return ir::bool_imm(x < y);
    case NodeKind::kLE: return ir::bool_imm(x <= y);
    case NodeKind::kGT: return ir::bool_imm(x > y);
    case NodeKind::kGE: return ir::bool_imm(x >= y);
    case NodeKind::kAnd: return ir::bool_imm(x != 0 && y != 0);
    case NodeKind::kOr: return ir::bool_imm(x != 0 || y != 0);
    default: return Expr();
  }
  if (!ok) return Expr();
  return make_int(r, t);
}

Expr fold_float(NodeKind kind, const DataType& t, double x, double y) {
  switch (kind) {
    case NodeKind::kAdd: return ir::float_imm(round_to(t, x + y), t);
    case NodeKind::kSub: return ir::float_imm(round_to(t, x - y), t);
    case NodeKind::kMul: return ir::float_imm(round_to(t, x * y), t);
    case NodeKind::kDiv:
      if (y == 0) return Expr();  // keep inf/nan producing divisions visible
      return ir::float_imm(round_to(t, x / y), t);
    case NodeKind::kMin:
    case NodeKind::kMax:
      if (std::isnan(x) || std::isnan(y)) return Expr();
      return ir::float_imm(kind == NodeKind::kMin ? std::min(x, y) : std::max(x, y), t);
    case NodeKind::kEQ: return ir::bool_imm(x == y);
    case NodeKind::kNE: return ir::bool_imm(x != y);
    case NodeKind::kLT: return ir::bool_imm(x < y);
    case NodeKind::kLE: return ir::bool_imm(x <= y);
    case NodeKind::kGT: return ir::bool_imm(x > y);
    case NodeKind::kGE: return ir::bool_imm(x >= y);
    default: return Expr();
  }
}

}  // namespace

Expr fold_binary(NodeKind kind, const Expr& a, const Expr& b) {
  if (!a.defined() || !b.defined() || a->dtype != b->dtype || !a->dtype.is_scalar()) return Expr();
  int64_t x, y;
  if (int_value(a, &x) && int_value(b, &y)) {
    // The result type of a comparison is bool; arithmetic keeps the operand type.
    return fold_int(kind, a->dtype, x, y);
  }
  auto* fa = a.as<ir::FloatImmNode>();
  auto* fb = b.as<ir::FloatImmNode>();
  if (fa && fb && foldable_float(a->dtype)) return fold_float(kind, a->dtype, fa->value, fb->value);
  return Expr();
}

Expr fold_not(const Expr& a) {
  int64_t x;
  if (a.defined() && a->dtype.is_bool() && int_value(a, &x)) return ir::bool_imm(x == 0);
  return Expr();
}

Expr fold_cast(const DataType& t, const Expr& v) {
  if (!v.defined() || !t.is_scalar() || !v->dtype.is_scalar()) return Expr();
  if (v->dtype == t && (v.as<ir::IntImmNode>() || v.as<ir::FloatImmNode>())) return v;
  int64_t x;
  if (int_value(v, &x)) {
    if (t.is_bool()) return ir::bool_imm(x != 0);
    if (t.is_integer()) {
      if (t.bits() >= 64) return make_int(x, t);  // uint64 of a negative value: not kept in int64
      // Wrap modulo 2^bits, then read back with the target's signedness.
      uint64_t mask = (uint64_t{1} << t.bits()) - 1;
      uint64_t low = static_cast<uint64_t>(x) & mask;
      int64_t r = static_cast<int64_t>(low);
      if (t.is_int() && (low >> (t.bits() - 1)) != 0) r = static_cast<int64_t>(low | ~mask);
      return make_int(r, t);
    }
    if (foldable_float(t)) {
      double d = t.bits() == 32 ? static_cast<double>(static_cast<float>(x)) : static_cast<double>(x);
      return ir::float_imm(d, t);
    }
    return Expr();
  }
  auto* f = v.as<ir::FloatImmNode>();
  if (!f || !foldable_float(v->dtype)) return Expr();
  double d = f->value;
  if (t.is_bool()) return ir::bool_imm(d != 0);
  if (t.is_integer()) {
    if (!std::isfinite(d)) return Expr();
    double tr = std::trunc(d);
    // Only values well inside int64 are converted; the type check follows.
    if (tr < -9.0e18 || tr > 9.0e18) return Expr();
    return make_int(static_cast<int64_t>(tr), t);
  }
  if (foldable_float(t)) return ir::float_imm(round_to(t, d), t);
  return Expr();
}

}  // namespace tilec::arith::detail
