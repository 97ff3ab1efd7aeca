// Canonical linear form of integer sums: c1*x1 + c2*x2 + ... + c.
//
// Contract: applies to scalar int32/int64 expressions (is_linear_type). An "atom" is
// any simplified subexpression that is not itself a sum, difference or product by a
// constant (a variable, floordiv(...), min(...), a product of two non-constant atoms,
// a load, ...). canonical_sum(e) returns an expression equal to e in which
//   * every Add/Sub/Mul-by-constant tree is flattened into terms coeff*atom,
//   * equal atoms (ExprOrder) are merged and zero terms dropped, so x - x -> 0 and
//     (a + b) - a -> b,
//   * floordiv(E, c)*c + floormod(E, c) -> E (also for Div/Mod, which satisfy the same
//     identity), and k*c*floordiv(E, c) -> k*E - k*floormod(E, c) when E's terms cancel
//     others so the sum gets shorter,
//   * terms are emitted in ExprOrder: positive ones added, then negative ones
//     subtracted, then the constant; a lone negative sum starts from its constant.
// Arithmetic on coefficients is checked: on int64 overflow, or when a coefficient does
// not fit the expression's type, the caller keeps the uncanonicalized expression.
//
// Non-constant products are atoms whose factors are flattened and sorted; a common
// integer factor of a factor's linear form is pulled out into the coefficient, so
// (2*x)*y and x*(2*y) meet as 2*(x*y). Products are not distributed (that can blow up).
#include <algorithm>

#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith {

using namespace detail;
using ir::NodeKind;

namespace {

// Largest positive integer dividing every coefficient and the constant (0 for zero).
int64_t content(const LinearForm& f) {
  int64_t g = gcd_i64(f.constant, 0);
  for (const auto& [atom, c] : f.terms) g = gcd_i64(g, c);
  return g;
}

void divide_exact(LinearForm* f, int64_t g) {
  for (auto& term : f->terms) term.second /= g;
  f->constant /= g;
}

bool is_div_kind(NodeKind k) { return k == NodeKind::kFloorDiv || k == NodeKind::kDiv; }
NodeKind mod_kind_of(NodeKind div_kind) {
  return div_kind == NodeKind::kFloorDiv ? NodeKind::kFloorMod : NodeKind::kMod;
}

// Flatten a product of atoms into its non-constant factors.
void flatten_product(const Expr& e, std::vector<Expr>* factors) {
  auto* m = e.as<ir::BinaryNode>();
  if (m && m->kind == NodeKind::kMul && !ir::as_const_int(m->a) && !ir::as_const_int(m->b)) {
    flatten_product(m->a, factors);
    flatten_product(m->b, factors);
    return;
  }
  factors->push_back(e);
}

}  // namespace

bool Analyzer::Impl::collect_simplified(const Expr& e, int64_t scale, LinearForm* acc) {
  if (scale == 0) return true;
  if (auto* imm = e.as<ir::IntImmNode>()) {
    int64_t v;
    return checked_mul(imm->value, scale, &v) && checked_add(acc->constant, v, &acc->constant);
  }
  if (auto* bin = e.as<ir::BinaryNode>()) {
    switch (bin->kind) {
      case NodeKind::kAdd:
        return collect_simplified(bin->a, scale, acc) && collect_simplified(bin->b, scale, acc);
      case NodeKind::kSub: {
        int64_t neg;
        return checked_neg(scale, &neg) && collect_simplified(bin->a, scale, acc) &&
               collect_simplified(bin->b, neg, acc);
      }
      case NodeKind::kMul: {
        int64_t s;
        if (auto* c = ir::as_const_int(bin->b)) return checked_mul(scale, *c, &s) && collect_simplified(bin->a, s, acc);
        if (auto* c = ir::as_const_int(bin->a)) return checked_mul(scale, *c, &s) && collect_simplified(bin->b, s, acc);
        break;
      }
      default:
        break;
    }
  }
  acc->terms.emplace_back(e, scale);
  return true;
}

bool Analyzer::Impl::collect_product(const Expr& a, const Expr& b, int64_t scale, const ir::DataType& t,
                                     LinearForm* acc) {
  // Pull each factor's integer content into the coefficient, then sort the flattened
  // factors, so equal products meet as equal atoms.
  int64_t coeff = scale;
  std::vector<Expr> factors;
  for (const Expr& part : {a, b}) {
    LinearForm f;
    if (!collect_simplified(part, 1, &f) || !normalize(&f)) return false;
    // Make the factor's leading coefficient positive and its content 1.
    int64_t g = content(f);
    if (!f.is_const() && f.terms[0].second < 0) g = -g;
    Expr reduced = part;
    if (g != 1 && g != 0 && !f.is_const()) {
      divide_exact(&f, g);
      Expr r = emit(f, t);
      if (!r.defined() || !checked_mul(coeff, g, &coeff)) return false;
      reduced = r;
    }
    flatten_product(reduced, &factors);
  }
  std::stable_sort(factors.begin(), factors.end(), [&](const Expr& x, const Expr& y) { return order.less(x, y); });
  Expr prod = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) prod = ir::binary(NodeKind::kMul, prod, factors[i]);
  acc->terms.emplace_back(prod, coeff);
  return true;
}

bool Analyzer::Impl::collect_raw(const Expr& e, int64_t scale, LinearForm* acc) {
  if (scale == 0) return true;
  auto* bin = e.as<ir::BinaryNode>();
  if (bin && (bin->kind == NodeKind::kAdd || bin->kind == NodeKind::kSub)) {
    int64_t sb = scale;
    if (bin->kind == NodeKind::kSub && !checked_neg(scale, &sb)) return false;
    return collect_raw(bin->a, scale, acc) && collect_raw(bin->b, sb, acc);
  }
  if (bin && bin->kind == NodeKind::kMul) {
    Expr a = simplify_expr(bin->a);
    Expr b = simplify_expr(bin->b);
    int64_t s;
    if (auto* c = ir::as_const_int(b)) return checked_mul(scale, *c, &s) && collect_simplified(a, s, acc);
    if (auto* c = ir::as_const_int(a)) return checked_mul(scale, *c, &s) && collect_simplified(b, s, acc);
    return collect_product(a, b, scale, e->dtype, acc);
  }
  if (e.as<ir::IntImmNode>()) return collect_simplified(e, scale, acc);
  // Anything else: simplify it on its own (it may come back as a sum, e.g. a floordiv
  // split into x + floordiv(y, c)), then read its terms.
  return collect_simplified(simplify_expr(e), scale, acc);
}

// Sort by atom and merge equal atoms, dropping zero terms.
bool Analyzer::Impl::merge_terms(LinearForm* f) {
  auto& t = f->terms;
  std::stable_sort(t.begin(), t.end(), [&](const auto& x, const auto& y) { return order.less(x.first, y.first); });
  std::vector<std::pair<Expr, int64_t>> merged;
  for (auto& term : t) {
    if (!merged.empty() && order.equal(merged.back().first, term.first)) {
      if (!checked_add(merged.back().second, term.second, &merged.back().second)) return false;
    } else {
      merged.push_back(std::move(term));
    }
  }
  t.clear();
  for (auto& term : merged) {
    if (term.second != 0) t.push_back(std::move(term));
  }
  return true;
}

// k*c*floordiv(E, c) -> k*E - k*floormod(E, c) when that leaves fewer terms (E's terms
// cancel others): e.g. 128*floordiv(n + 127, 128) - n -> 127 - floormod(n + 127, 128),
// which bounds analysis can then see is at most 127.
bool Analyzer::Impl::substitute_floordiv(LinearForm* f) {
  if (rewrite_depth >= kMaxRewriteDepth) return false;
  for (size_t i = 0; i < f->terms.size(); ++i) {
    auto* div = f->terms[i].first.as<ir::BinaryNode>();
    if (!div || !is_div_kind(div->kind)) continue;
    auto* c = ir::as_const_int(div->b);
    if (!c || *c == 0 || f->terms[i].second % *c != 0) continue;
    int64_t k = f->terms[i].second / *c;
    LinearForm trial = *f;
    trial.terms.erase(trial.terms.begin() + static_cast<std::ptrdiff_t>(i));
    if (!collect_simplified(div->a, k, &trial) || !merge_terms(&trial)) continue;
    if (trial.terms.size() + 1 >= f->terms.size()) continue;  // the remainder adds a term
    Expr rem = rewrite_binary(mod_kind_of(div->kind), div->a, div->b, Expr());
    int64_t neg_k;
    if (!checked_neg(k, &neg_k) || !collect_simplified(rem, neg_k, &trial) || !merge_terms(&trial)) continue;
    if (trial.terms.size() >= f->terms.size()) continue;
    *f = std::move(trial);
    return true;
  }
  return false;
}

bool Analyzer::Impl::normalize(LinearForm* f) {
  for (int round = 0; round < 8; ++round) {
    if (!merge_terms(f)) return false;
    auto& t = f->terms;
    // floordiv(E, c) * (k*c) + floormod(E, c) * k  ->  E * k.
    bool changed = false;
    for (size_t i = 0; i < t.size() && !changed; ++i) {
      auto* div = t[i].first.as<ir::BinaryNode>();
      if (!div || !is_div_kind(div->kind)) continue;
      auto* c = ir::as_const_int(div->b);
      if (!c || *c == 0) continue;
      for (size_t j = 0; j < t.size(); ++j) {
        auto* mod = t[j].first.as<ir::BinaryNode>();
        if (!mod || mod->kind != mod_kind_of(div->kind) || !ir::is_const_int(mod->b, *c)) continue;
        int64_t want;
        if (!checked_mul(t[j].second, *c, &want) || want != t[i].second) continue;
        if (!order.equal(div->a, mod->a)) continue;
        int64_t k = t[j].second;
        Expr inner = div->a;
        size_t hi = std::max(i, j), lo = std::min(i, j);
        t.erase(t.begin() + static_cast<std::ptrdiff_t>(hi));
        t.erase(t.begin() + static_cast<std::ptrdiff_t>(lo));
        if (!collect_simplified(inner, k, f)) return false;
        changed = true;
        break;
      }
    }
    if (!changed) changed = substitute_floordiv(f);
    if (!changed) return true;
  }
  return true;
}

Expr Analyzer::Impl::emit(const LinearForm& f, const ir::DataType& t) {
  if (!fits_type(f.constant, t)) return Expr();
  std::vector<Expr> added, subtracted;
  for (const auto& [atom, c] : f.terms) {
    int64_t mag = c;
    if (c < 0 && !checked_neg(c, &mag)) return Expr();
    if (!fits_type(mag, t)) return Expr();
    Expr te = mag == 1 ? atom : ir::binary(NodeKind::kMul, atom, ir::int_imm(mag, t));
    (c > 0 ? added : subtracted).push_back(te);
  }
  Expr out;
  bool constant_used = false;
  if (!added.empty()) {
    out = added[0];
    for (size_t i = 1; i < added.size(); ++i) out = ir::binary(NodeKind::kAdd, out, added[i]);
  } else {
    // No positive term: start from the constant ("5 - x", "0 - x", or just "5").
    out = ir::int_imm(f.constant, t);
    constant_used = true;
  }
  for (const Expr& te : subtracted) out = ir::binary(NodeKind::kSub, out, te);
  if (constant_used || f.constant == 0) return out;
  if (f.constant > 0) return ir::binary(NodeKind::kAdd, out, ir::int_imm(f.constant, t));
  int64_t mag;
  if (!checked_neg(f.constant, &mag) || !fits_type(mag, t)) return Expr();
  return ir::binary(NodeKind::kSub, out, ir::int_imm(mag, t));
}

ConstIntBound Analyzer::Impl::bound_linear(const LinearForm& f) {
  ConstIntBound r{f.constant, f.constant};
  for (const auto& [atom, c] : f.terms) {
    ConstIntBound b = bound(atom);
    int64_t p = sat_mul(b.min_value, c), q = sat_mul(b.max_value, c);
    r.min_value = sat_add(r.min_value, std::min(p, q));
    r.max_value = sat_add(r.max_value, std::max(p, q));
  }
  return r;
}

Expr Analyzer::Impl::canonical_sum(const Expr& e) {
  LinearForm f;
  if (!collect_raw(e, 1, &f) || !normalize(&f)) return Expr();
  return emit(f, e->dtype);
}

bool Analyzer::Impl::difference(const Expr& a, const Expr& b, LinearForm* out) {
  *out = LinearForm();
  return collect_simplified(a, 1, out) && collect_simplified(b, -1, out) && normalize(out);
}

}  // namespace tilec::arith
