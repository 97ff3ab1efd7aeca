// Rules for integer division and remainder: Impl::rewrite_div_mod.
//
// Contract: a and b are simplified integer scalars of the same type; the result equals
// kind(a, b) (Div/Mod truncate, FloorDiv/FloorMod floor) wherever that is defined, and
// is simplified. A zero divisor is left alone.
//
// Algorithm, for a constant divisor c:
//  1. Whole range: when both ends of bound(a) give the same quotient q, a // c -> q and
//     a % c -> a - q*c (so floordiv(e, c) -> 0 and floormod(e, c) -> e for 0 <= e < c).
//  2. Floor semantics on a linear dividend (signed types) — with g > 0:
//       floordiv(g*A, g*c) = floordiv(A, c)          floormod(g*A, g*c) = g*floormod(A, c)
//       floordiv(c*Q + R, c) = Q + floordiv(R, c)     floormod(c*Q + R, c) = floormod(R, c)
//       (the constant is split too: R keeps floormod(k, c))
//       for 0 <= r < g, c > 0:  floordiv(g*A + r, g*c) = floordiv(A, c)
//                               floormod(g*A + r, g*c) = g*floormod(A, c) + r
//     then on the remainder R: rule 1 with bound(R); floormod(R, c) -> constant when
//     R's congruence fixes it; floordiv(floordiv(x, a) + k, c) -> floordiv(x + k*a, a*c)
//     and floormod(floormod(x, a), c) -> floormod(x, c) when c divides a (a, c > 0).
//     Coefficients are split as k = c*q + r with |r| < |c| (floordiv(3x, 2) ->
//     x + floordiv(x, 2)), the remainder keeping k's sign.
//  3. Truncating Div/Mod reuse rule 2 only when a >= 0 and c > 0 (then they equal the
//     floor forms), and only keep a truncating node over a remainder proven >= 0.
//     Div(Div(x, a), c) -> Div(x, a*c) and Mod(Mod(x, a), c) -> Mod(x, c) (c | a) hold
//     for any sign of x.
// For a non-constant divisor b > 0: 0 <= a < b gives a // b -> 0 and a % b -> a.
#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith {

using namespace detail;
using ir::NodeKind;

namespace {

int64_t content_of(const LinearForm& f) {
  int64_t g = gcd_i64(f.constant, 0);
  for (const auto& term : f.terms) g = gcd_i64(g, term.second);
  return g;
}

bool finite(const ConstIntBound& b) { return !is_inf(b.min_value) && !is_inf(b.max_value); }

bool quotient(int64_t x, int64_t c, bool floor, int64_t* q) {
  return floor ? checked_floordiv(x, c, q) : checked_truncdiv(x, c, q);
}

// The binary atom kind(x, c) for a constant c.
Expr div_atom(NodeKind kind, const Expr& x, int64_t c, const ir::DataType& t) {
  return ir::binary(kind, x, ir::int_imm(c, t));
}

}  // namespace

Expr Analyzer::Impl::rewrite_div_mod(NodeKind kind, const Expr& a, const Expr& b, const Expr& orig) {
  const ir::DataType& t = a->dtype;
  const bool is_div = kind == NodeKind::kDiv || kind == NodeKind::kFloorDiv;
  const bool floor = kind == NodeKind::kFloorDiv || kind == NodeKind::kFloorMod;
  const int64_t* cp = ir::as_const_int(b);

  if (!cp) {
    // Non-constant divisor: only the "dividend smaller than divisor" rule.
    ConstIntBound bb = bound(b);
    ConstIntBound ba = bound(a);
    bool small = bb.min_value > 0 && ba.max_value < bb.min_value;
    bool fits = floor ? (ba.min_value >= 0) : (ba.min_value > -bb.min_value);
    if (small && fits) return is_div ? ir::int_imm(0, t) : a;
    return rebuild(kind, a, b, orig);
  }
  const int64_t c = *cp;
  if (c == 0) return rebuild(kind, a, b, orig);
  if (c == 1) return is_div ? a : ir::int_imm(0, t);
  if (c == -1 && !is_div) return ir::int_imm(0, t);  // x % -1 == 0 in both semantics

  // 1. Whole range.
  ConstIntBound ba = bound(a);
  if (finite(ba)) {
    int64_t qlo, qhi;
    if (quotient(ba.min_value, c, floor, &qlo) && quotient(ba.max_value, c, floor, &qhi) && qlo == qhi) {
      if (is_div) {
        if (fits_type(qlo, t)) return ir::int_imm(qlo, t);
      } else if (qlo == 0) {
        return a;
      } else if (is_linear_type(t)) {
        LinearForm f;
        int64_t qc;
        if (checked_mul(qlo, c, &qc) && collect_simplified(a, 1, &f) && checked_sub(f.constant, qc, &f.constant) &&
            normalize(&f)) {
          if (Expr r = emit(f, t)) return r;
        }
      }
    }
  }
  if (!is_linear_type(t)) return rebuild(kind, a, b, orig);

  // 3. Truncating forms.
  if (!floor) {
    if (auto* inner = a.as<ir::BinaryNode>(); inner && inner->kind == kind && c > 0) {
      auto* a1 = ir::as_const_int(inner->b);
      if (a1 && *a1 > 0) {
        int64_t prod;
        if (is_div && checked_mul(*a1, c, &prod) && fits_type(prod, t)) {
          return rewrite_binary(kind, inner->a, ir::int_imm(prod, t), Expr());
        }
        if (!is_div && *a1 % c == 0) return rewrite_binary(kind, inner->a, b, Expr());
      }
    }
    if (ba.min_value < 0 || c < 0) return rebuild(kind, a, b, orig);
  }

  // 2. Floor rules on the linear form of a (also valid for trunc: a >= 0, c > 0 here).
  LinearForm f;
  if (!collect_simplified(a, 1, &f) || !normalize(&f)) return rebuild(kind, a, b, orig);
  int64_t cc = c;
  int64_t mod_scale = 1, mod_offset = 0;  // a % c == mod_scale * (R % cc) + mod_offset
  if (int64_t g = gcd_i64(content_of(f), cc); g > 1) {
    for (auto& term : f.terms) term.second /= g;
    f.constant /= g;
    cc /= g;
    mod_scale = g;
  }
  LinearForm q, r;
  for (const auto& [atom, k] : f.terms) {
    // k = cc*kq + kr with kr of k's sign and |kr| < |cc| (so negative terms stay small).
    int64_t kq;
    if (!checked_truncdiv(k, cc, &kq)) return rebuild(kind, a, b, orig);
    int64_t kr = k - kq * cc;
    if (kq != 0) q.terms.emplace_back(atom, kq);
    if (kr != 0) r.terms.emplace_back(atom, kr);
  }
  if (!checked_floordiv(f.constant, cc, &q.constant)) return rebuild(kind, a, b, orig);
  r.constant = floormod_i64(f.constant, cc);
  if (cc > 0 && !r.terms.empty()) {
    int64_t g2 = cc;
    for (const auto& term : r.terms) g2 = gcd_i64(g2, term.second);
    if (g2 > 1 && r.constant < g2) {
      int64_t off, scale;
      if (!checked_mul(mod_scale, r.constant, &off) || !checked_add(mod_offset, off, &mod_offset) ||
          !checked_mul(mod_scale, g2, &scale)) {
        return rebuild(kind, a, b, orig);
      }
      mod_scale = scale;
      for (auto& term : r.terms) term.second /= g2;
      r.constant = 0;
      cc /= g2;
    }
  }

  // The result: q + R_part for division, mod_scale * R_part + mod_offset for remainder.
  auto finish = [&](const Expr& r_part, int64_t r_const) -> Expr {
    LinearForm out;
    bool ok = true;
    if (is_div) {
      out = q;
      if (checked_add(out.constant, r_const, &out.constant)) {
        if (r_part.defined()) ok = collect_simplified(r_part, 1, &out);
      } else {
        ok = false;
      }
    } else {
      int64_t k;
      ok = checked_mul(mod_scale, r_const, &k) && checked_add(mod_offset, k, &out.constant);
      if (ok && r_part.defined()) ok = collect_simplified(r_part, mod_scale, &out);
    }
    if (!ok || !normalize(&out)) return rebuild(kind, a, b, orig);
    Expr e = emit(out, t);
    return e.defined() ? keep_identity(e, orig) : rebuild(kind, a, b, orig);
  };

  if (cc == 1) {
    // floordiv(R, 1) = R and floormod(R, 1) = 0.
    if (!is_div) return finish(Expr(), 0);
    Expr re = emit(r, t);
    return re.defined() ? finish(re, 0) : rebuild(kind, a, b, orig);
  }
  if (r.terms.empty()) {
    // |R| < |cc| with the divisor's sign: quotient 0, remainder R.
    return is_div ? finish(Expr(), 0) : finish(Expr(), r.constant);
  }
  ConstIntBound br = bound_linear(r);
  if (finite(br)) {
    int64_t qlo, qhi;
    if (checked_floordiv(br.min_value, cc, &qlo) && checked_floordiv(br.max_value, cc, &qhi) && qlo == qhi) {
      if (is_div) return finish(Expr(), qlo);
      int64_t qc;
      if (!checked_mul(qlo, cc, &qc) || !checked_sub(r.constant, qc, &r.constant)) return rebuild(kind, a, b, orig);
      Expr re = emit(r, t);
      return re.defined() ? finish(re, 0) : rebuild(kind, a, b, orig);
    }
  }
  Expr re = emit(r, t);
  if (!re.defined()) return rebuild(kind, a, b, orig);
  if (!is_div) {
    ModularSet m = modular(re);
    if (m.coeff != 0 && m.coeff % cc == 0) return finish(Expr(), floormod_i64(m.base, cc));
  }
  if (floor && cc > 0 && r.terms.size() == 1 && r.terms[0].second == 1) {
    // Nested floor division / remainder (a1, cc > 0):
    //   floordiv(floordiv(x, a1) + k, cc) = floordiv(x + k*a1, a1*cc)
    //   floormod(floormod(x, a1), cc) = floormod(x, cc)  when cc divides a1
    auto* inner = r.terms[0].first.as<ir::BinaryNode>();
    auto* a1 = inner ? ir::as_const_int(inner->b) : nullptr;
    if (inner && a1 && *a1 > 0 && inner->kind == kind) {
      int64_t prod, shift;
      if (is_div && checked_mul(*a1, cc, &prod) && fits_type(prod, t) && checked_mul(r.constant, *a1, &shift)) {
        LinearForm x;
        if (collect_simplified(inner->a, 1, &x) && checked_add(x.constant, shift, &x.constant) && normalize(&x)) {
          if (Expr xe = emit(x, t)) return finish(rewrite_binary(kind, xe, ir::int_imm(prod, t), Expr()), 0);
        }
      }
      if (!is_div && r.constant == 0 && *a1 % cc == 0) {
        return finish(rewrite_binary(kind, inner->a, ir::int_imm(cc, t), Expr()), 0);
      }
    }
  }
  if (!floor && br.min_value < 0) return rebuild(kind, a, b, orig);  // keep C semantics exact
  if (!fits_type(cc, t)) return rebuild(kind, a, b, orig);
  return finish(div_atom(kind, re, cc, t), 0);
}

}  // namespace tilec::arith
