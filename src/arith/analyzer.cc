// The public Analyzer API: binding facts about variables, and the queries built on the
// analyses of the other files in src/arith/.
//
// Contract:
//  * bind_range / bind_bound replace what was known about a variable's range (a loop
//    variable re-bound for a new loop gets the new range); bind_value records v == value
//    and every later query substitutes it. Facts never need to be removed: variables
//    are unique objects, so a fact about one loop's variable cannot leak into another.
//  * simplify() returns an expression of the same type and value; when nothing
//    simplifies it returns the very same object (copy-on-write callers rely on that).
//  * const_int_bound / modular_set are sound (never claim more than holds);
//    can_prove* return true only for facts that hold for every value in range.
//
// Algorithm: every query substitutes bound values, then simplify runs the bottom-up
// rewriter until it reaches a fixed point (at most kMaxPasses passes). Bounds and
// congruences are computed on both the input and its simplified form and the more
// precise answer is kept.
#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith {

using namespace detail;

namespace {
constexpr int kMaxPasses = 3;
}  // namespace

Analyzer::Analyzer() : impl_(std::make_unique<Impl>()) {}
Analyzer::~Analyzer() = default;

Expr Analyzer::Impl::resolve(const Expr& e) const {
  if (values.empty() || !e.defined()) return e;
  return ir::substitute(e, values);
}

void Analyzer::bind_range(const Var& v, const Expr& min, const Expr& extent) {
  TILEC_ICHECK(v.defined() && min.defined() && extent.defined()) << "bind_range of a null expression";
  Expr mn = simplify(min);
  Expr ex = simplify(extent);
  impl_->facts_changed();
  ConstIntBound bmin = impl_->bound(mn);
  ConstIntBound bext = impl_->bound(ex);
  Impl::VarInfo info;
  info.var = v;
  int64_t last = sat_add(bmin.max_value, sat_add(bext.max_value, -1));
  // An empty loop (extent < 1) runs no iteration; keep the range non-empty anyway.
  if (bext.max_value < 1) last = bmin.max_value;
  ConstIntBound tb = type_bound(v->dtype);
  info.bound = {std::max(bmin.min_value, tb.min_value), std::min(last, tb.max_value)};
  if (info.bound.min_value > info.bound.max_value) info.bound = tb;
  if (!ir::as_const_int(mn) || !ir::as_const_int(ex)) {
    if (mn->dtype == v->dtype && ex->dtype == v->dtype && is_linear_type(v->dtype)) {
      info.sym_min = mn;
      info.sym_max = simplify(ir::binary(ir::NodeKind::kSub, ir::binary(ir::NodeKind::kAdd, mn, ex),
                                         ir::int_imm(1, v->dtype)));
    }
  }
  info.serial = ++impl_->bind_counter;
  impl_->vars[v.get()] = std::move(info);
  impl_->facts_changed();
}

void Analyzer::bind_bound(const Var& v, int64_t min_value, int64_t max_value) {
  TILEC_ICHECK(v.defined()) << "bind_bound of a null variable";
  TILEC_ICHECK(min_value <= max_value) << "bind_bound with an empty range [" << min_value << ", " << max_value << "]";
  ConstIntBound tb = type_bound(v->dtype);
  Impl::VarInfo info;
  info.var = v;
  info.bound = {std::max(min_value, tb.min_value), std::min(max_value, tb.max_value)};
  if (info.bound.min_value > info.bound.max_value) info.bound = tb;
  impl_->vars[v.get()] = std::move(info);
  impl_->facts_changed();
}

void Analyzer::bind_value(const Var& v, const Expr& value) {
  TILEC_ICHECK(v.defined() && value.defined()) << "bind_value of a null expression";
  Expr val = simplify(value);
  // Earlier values that mention v now see its value too.
  ir::VarMap one{{v.get(), val}};
  for (auto& [key, ex] : impl_->values) ex = ir::substitute(ex, one);
  impl_->values[v.get()] = val;
  impl_->value_vars.push_back(v);
  impl_->facts_changed();
}

Expr Analyzer::simplify(const Expr& e) {
  if (!e.defined()) return e;
  impl_->begin_query();
  if (auto it = impl_->simplify_memo.find(e.get()); it != impl_->simplify_memo.end()) return it->second.second;
  Expr cur = impl_->resolve(e);
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    Expr next = impl_->simplify_expr(cur);
    if (next.same_as(cur) || impl_->order.equal(next, cur)) break;
    cur = next;
  }
  Expr result = impl_->keep_identity(cur, e);
  impl_->simplify_memo.emplace(e.get(), std::make_pair(e, result));
  return result;
}

ConstIntBound Analyzer::const_int_bound(const Expr& e) {
  if (!e.defined()) return {};
  impl_->begin_query();
  Expr r = impl_->resolve(e);
  ConstIntBound raw = impl_->bound(r);
  ConstIntBound simp = impl_->bound(simplify(r));
  ConstIntBound both{std::max(raw.min_value, simp.min_value), std::min(raw.max_value, simp.max_value)};
  // Both are sound, so they overlap unless e is undefined everywhere (e.g. x // 0).
  return both.min_value <= both.max_value ? both : raw;
}

ModularSet Analyzer::modular_set(const Expr& e) {
  if (!e.defined()) return {};
  impl_->begin_query();
  Expr r = impl_->resolve(e);
  ModularSet simp = impl_->modular(simplify(r));
  if (simp.coeff == 0) return simp;
  ModularSet raw = impl_->modular(r);
  if (raw.coeff == 0) return raw;
  // Both hold; the larger modulus says more (when one divides the other it is strictly
  // more precise; otherwise either is a valid answer).
  return raw.coeff > simp.coeff ? raw : simp;
}

bool Analyzer::can_prove(const Expr& cond) {
  if (!cond.defined() || !cond->dtype.is_bool() || !cond->dtype.is_scalar()) return false;
  return impl_->prove_simplified(simplify(cond));
}

bool Analyzer::can_prove_equal(const Expr& a, const Expr& b) {
  if (!a.defined() || !b.defined() || a->dtype != b->dtype) return false;
  Expr sa = simplify(a);
  Expr sb = simplify(b);
  if (impl_->order.equal(sa, sb)) return true;
  if (is_linear_type(a->dtype)) {
    detail::LinearForm d;
    if (impl_->difference(sa, sb, &d) && d.is_const() && d.constant == 0) return true;
  }
  if (a->dtype.is_scalar() && (a->dtype.is_integer() || a->dtype.is_bool())) {
    return can_prove(ir::binary(ir::NodeKind::kEQ, a, b));
  }
  return false;
}

bool Analyzer::can_prove_less(const Expr& a, int64_t b) {
  if (!a.defined() || !a->dtype.is_scalar() || !(a->dtype.is_integer() || a->dtype.is_bool())) return false;
  if (!fits_type(b, a->dtype)) return const_int_bound(a).max_value < b;
  return can_prove(ir::binary(ir::NodeKind::kLT, a, ir::int_imm(b, a->dtype)));
}

bool Analyzer::can_prove_divisible(const Expr& a, int64_t factor) {
  if (!a.defined() || !a->dtype.is_integer() || factor == 0 || factor == kNegInf) return false;
  if (factor < 0) factor = -factor;
  if (factor == 1) return true;
  ModularSet m = modular_set(a);
  if (m.coeff == 0) return m.base % factor == 0;
  if (m.coeff % factor == 0 && m.base % factor == 0) return true;
  if (!a->dtype.is_scalar() || !fits_type(factor, a->dtype)) return false;
  return ir::is_zero(simplify(ir::binary(ir::NodeKind::kFloorMod, a, ir::int_imm(factor, a->dtype))));
}

Expr simplify(const Expr& e) {
  Analyzer analyzer;
  return analyzer.simplify(e);
}

}  // namespace tilec::arith
