// The expression simplifier: Impl::simplify_expr and the per-node rules.
//
// Contract: simplify_expr(e) returns an expression with the same value as e for every
// assignment of its variables within their known ranges, of the same type, whose
// subexpressions are simplified. An unchanged subtree is returned as the same object.
// Input: bind_value facts already substituted (Impl::resolve). int32/int64 overflow is
// assumed not to happen (it is undefined in the generated code); unsigned, narrow signed
// and float arithmetic is only constant-folded, never reassociated.
//
// Algorithm: one bottom-up walk (an IRMutator).
//  * Add / Sub / Mul of a signed integer type: the whole sum tree is rebuilt in the
//    canonical linear form (canonical_simplify.cc).
//  * Other binary nodes: operands first, then rewrite_binary: constant folding
//    (const_fold.cc), identities, and per-kind rules:
//      div / mod            rewrite_div_mod (div_mod_simplify.cc)
//      min / max            decided by the sign of a - b (bounds); constants last and
//                           nested constants merged, else operands sorted
//      compare              decided by the sign of a - b (bounds, congruences, symbolic
//                           loop bounds), else normalized to  P op N + c  with the gcd of
//                           the coefficients divided out
//      and / or / not       boolean identities; not(a < b) -> a >= b on integers
//  * Select with a decided condition picks a branch; casts of constants fold.
// Rules that simplify expressions they build recurse through rewrite_binary, which
// stops applying rules past kMaxRewriteDepth nested calls, so the cost stays bounded.
#include "arith/analyzer_impl.h"
#include "arith/int_math.h"

namespace tilec::arith {

using namespace detail;
using ir::NodeKind;

namespace {

// not (a op b) == a inverse(op) b, for totally ordered operands.
NodeKind inverse_compare(NodeKind k) {
  switch (k) {
    case NodeKind::kLT: return NodeKind::kGE;
    case NodeKind::kLE: return NodeKind::kGT;
    case NodeKind::kGT: return NodeKind::kLE;
    case NodeKind::kGE: return NodeKind::kLT;
    case NodeKind::kEQ: return NodeKind::kNE;
    default: return NodeKind::kEQ;
  }
}

class Simplifier : public ir::IRMutator {
 public:
  explicit Simplifier(Analyzer::Impl* impl) : impl_(impl) {}

 protected:
  Expr mutate_binary(const Expr& e, const ir::BinaryNode* op) override {
    auto& memo = impl_->rewrite_memo;
    if (auto it = memo.find(e.get()); it != memo.end()) return it->second.second;
    Expr r = rewrite(e, op);
    memo.emplace(e.get(), std::make_pair(e, r));
    return r;
  }
  Expr rewrite(const Expr& e, const ir::BinaryNode* op) {
    bool sum = op->kind == NodeKind::kAdd || op->kind == NodeKind::kSub || op->kind == NodeKind::kMul;
    if (sum && is_linear_type(e->dtype)) {
      Expr r = impl_->canonical_sum(e);
      if (r.defined()) return impl_->keep_identity(r, e);
    }
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    return impl_->rewrite_binary(op->kind, a, b, e);
  }
  // The integer bit operations (tl.bitwise_*, tl.shift_*: swizzled layouts) of constants
  // fold, so a swizzle at a constant position leaves no (0 ^ 0) behind.
  Expr mutate_Call(const Expr& e, const ir::CallNode* op) override {
    Expr n = ir::IRMutator::mutate_Call(e, op);
    auto* c = n.as<ir::CallNode>();
    if (!c || !n->dtype.is_integer() || !n->dtype.is_scalar()) return n;
    std::vector<int64_t> v;
    for (const auto& a : c->args) {
      auto* imm = a.as<ir::IntImmNode>();
      if (!imm || !a->dtype.is_integer()) return n;
      v.push_back(imm->value);
    }
    int64_t r = 0;
    if (c->op == "tl.bitwise_xor" && v.size() == 2) r = v[0] ^ v[1];
    else if (c->op == "tl.bitwise_and" && v.size() == 2) r = v[0] & v[1];
    else if (c->op == "tl.bitwise_or" && v.size() == 2) r = v[0] | v[1];
    else if (c->op == "tl.shift_left" && v.size() == 2 && v[1] >= 0 && v[1] < 62 && v[0] >= 0) r = v[0] << v[1];
    else if (c->op == "tl.shift_right" && v.size() == 2 && v[1] >= 0 && v[1] < 63 && v[0] >= 0) r = v[0] >> v[1];
    else return n;
    if (!fits_type(r, n->dtype)) return n;
    return ir::int_imm(r, n->dtype, e->loc);
  }
  Expr mutate_Not(const Expr& e, const ir::NotNode* op) override {
    Expr a = mutate(op->a);
    if (Expr f = fold_not(a)) return f;
    if (auto* inner = a.as<ir::NotNode>()) return inner->a;
    if (auto* cmp = a.as<ir::BinaryNode>(); cmp && ir::is_compare_kind(cmp->kind) && cmp->a->dtype.is_integer()) {
      // Integers are totally ordered (no NaN), so a negated comparison flips exactly.
      return impl_->rewrite_binary(inverse_compare(cmp->kind), cmp->a, cmp->b, Expr());
    }
    if (a.same_as(op->a)) return e;
    return ir::logical_not(a);
  }
  Expr mutate_Select(const Expr& e, const ir::SelectNode* op) override {
    Expr c = mutate(op->cond);
    Expr t = mutate(op->true_value);
    Expr f = mutate(op->false_value);
    if (c->dtype.is_scalar()) {
      if (ir::is_const_int(c, 1)) return t;
      if (ir::is_const_int(c, 0)) return f;
    }
    if (impl_->order.equal(t, f)) return t;
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
    return ir::select(c, t, f);
  }
  Expr mutate_Cast(const Expr& e, const ir::CastNode* op) override {
    Expr v = mutate(op->value);
    if (Expr f = fold_cast(e->dtype, v)) return f;
    if (v.same_as(op->value)) return e;
    return ir::cast(e->dtype, v);
  }

 private:
  Analyzer::Impl* impl_;
};

// Whether a - b's sign facts decide `kind`; sets *value when they do.
bool decide_compare(NodeKind kind, unsigned facts, bool* value) {
  using F = Analyzer::Impl;
  auto has = [&](unsigned f) { return (facts & f) != 0; };
  switch (kind) {
    case NodeKind::kLT:
      if (has(F::kLtZero)) return *value = true, true;
      if (has(F::kGeZero)) return *value = false, true;
      return false;
    case NodeKind::kLE:
      if (has(F::kLeZero)) return *value = true, true;
      if (has(F::kGtZero)) return *value = false, true;
      return false;
    case NodeKind::kGT:
      if (has(F::kGtZero)) return *value = true, true;
      if (has(F::kLeZero)) return *value = false, true;
      return false;
    case NodeKind::kGE:
      if (has(F::kGeZero)) return *value = true, true;
      if (has(F::kLtZero)) return *value = false, true;
      return false;
    case NodeKind::kEQ:
      if (has(F::kEqZero)) return *value = true, true;
      if (has(F::kNeZero)) return *value = false, true;
      return false;
    case NodeKind::kNE:
      if (has(F::kNeZero)) return *value = true, true;
      if (has(F::kEqZero)) return *value = false, true;
      return false;
    default:
      return false;
  }
}

unsigned facts_of_bound(ConstIntBound b) {
  using F = Analyzer::Impl;
  unsigned f = 0;
  if (b.max_value < 0) f |= F::kLtZero | F::kLeZero | F::kNeZero;
  if (b.max_value <= 0) f |= F::kLeZero;
  if (b.min_value > 0) f |= F::kGtZero | F::kGeZero | F::kNeZero;
  if (b.min_value >= 0) f |= F::kGeZero;
  if (b.min_value == 0 && b.max_value == 0) f |= F::kEqZero;
  return f;
}

NodeKind flip_sides(NodeKind k) {
  switch (k) {
    case NodeKind::kLT: return NodeKind::kGT;
    case NodeKind::kLE: return NodeKind::kGE;
    case NodeKind::kGT: return NodeKind::kLT;
    case NodeKind::kGE: return NodeKind::kLE;
    default: return k;  // EQ, NE are symmetric
  }
}

}  // namespace

Expr Analyzer::Impl::simplify_expr(const Expr& e) {
  Simplifier s(this);
  return s.mutate(e);
}

Expr Analyzer::Impl::rebuild(NodeKind kind, const Expr& a, const Expr& b, const Expr& orig) {
  if (auto* o = orig.as<ir::BinaryNode>(); o && o->kind == kind && o->a.same_as(a) && o->b.same_as(b)) return orig;
  return ir::binary(kind, a, b);
}

unsigned Analyzer::Impl::sign_facts(const LinearForm& d) {
  if (d.is_const()) {
    return facts_of_bound({d.constant, d.constant});
  }
  unsigned facts = facts_of_bound(bound_linear(d));
  // Congruence: with atom_i = m_i.coeff * k_i + m_i.base,
  //   d = sum(c_i * m_i.coeff * k_i) + (constant + sum(c_i * m_i.base)),
  // so d is never zero when the second part is not a multiple of g = gcd(c_i * m_i.coeff).
  if (!(facts & (kNeZero | kEqZero))) {
    int64_t g = 0;
    bool ok = true;
    std::vector<ModularSet> ms;
    for (const auto& [atom, c] : d.terms) {
      ms.push_back(modular(atom));
      int64_t cm;
      if (!checked_mul(c, ms.back().coeff, &cm) || cm == kNegInf) {
        ok = false;
        break;
      }
      g = gcd_i64(g, cm);
    }
    if (ok && g > 1) {
      __int128 rest = floormod_i64(d.constant, g);
      for (size_t i = 0; i < d.terms.size(); ++i) {
        rest += static_cast<__int128>(floormod_i64(d.terms[i].second, g)) * floormod_i64(ms[i].base, g);
        rest %= g;
      }
      if (rest != 0) facts |= kNeZero;
    }
  }
  // Symbolic ranges: bound d from above (below) by replacing a variable that has a
  // symbolic range with its upper (lower) bound expression, matching the sign of its
  // coefficient, one variable at a time, innermost (most recently bound) first, so an
  // inner bound's reference to an outer variable can cancel (j in [i, i + 4) proves
  // j - i < 4). Every intermediate form bounds d, so each step's interval is sound.
  const unsigned kOrderFacts = kLtZero | kLeZero | kGtZero | kGeZero;
  if ((facts & kOrderFacts) != kOrderFacts && rewrite_depth < kMaxRewriteDepth) {
    ++rewrite_depth;
    for (int side = 0; side < 2; ++side) {
      const bool upper = side == 0;
      LinearForm cur = d;
      for (int step = 0; step < kMaxSymbolicSteps; ++step) {
        int best = -1;
        int64_t best_serial = -1;
        for (size_t i = 0; i < cur.terms.size(); ++i) {
          auto* v = cur.terms[i].first.as<ir::VarNode>();
          auto it = v ? vars.find(v) : vars.end();
          if (it != vars.end() && it->second.sym_max.defined() && it->second.serial > best_serial) {
            best = static_cast<int>(i);
            best_serial = it->second.serial;
          }
        }
        if (best < 0) break;
        LinearForm next;
        next.constant = cur.constant;
        bool ok = true;
        for (size_t i = 0; i < cur.terms.size() && ok; ++i) {
          const auto& [atom, c] = cur.terms[i];
          if (static_cast<int>(i) != best) {
            next.terms.emplace_back(atom, c);
            continue;
          }
          const VarInfo& info = vars.find(atom.as<ir::VarNode>())->second;
          ok = collect_simplified(upper == (c > 0) ? info.sym_max : info.sym_min, c, &next);
        }
        if (!ok || !normalize(&next)) break;
        cur = std::move(next);
        ConstIntBound b = bound_linear(cur);
        if (upper) {
          if (b.max_value < 0) facts |= kLtZero | kLeZero | kNeZero;
          if (b.max_value <= 0) facts |= kLeZero;
        } else {
          if (b.min_value > 0) facts |= kGtZero | kGeZero | kNeZero;
          if (b.min_value >= 0) facts |= kGeZero;
        }
      }
    }
    --rewrite_depth;
  }
  return facts;
}

Expr Analyzer::Impl::rewrite_binary(NodeKind kind, const Expr& a, const Expr& b, const Expr& orig) {
  if (Expr f = fold_binary(kind, a, b)) return f;
  const ir::DataType& t = a->dtype;
  if (rewrite_depth >= kMaxRewriteDepth) return rebuild(kind, a, b, orig);
  struct DepthGuard {
    int* d;
    explicit DepthGuard(int* x) : d(x) { ++*d; }
    ~DepthGuard() { --*d; }
  } guard(&rewrite_depth);

  bool linear = is_linear_type(t);
  bool integer = t.is_integer() && t.is_scalar();
  switch (kind) {
    case NodeKind::kAdd:
    case NodeKind::kSub:
    case NodeKind::kMul: {
      if (linear) {
        LinearForm f;
        bool ok;
        if (kind == NodeKind::kMul) {
          auto* ca = ir::as_const_int(a);
          auto* cb = ir::as_const_int(b);
          ok = cb ? collect_simplified(a, *cb, &f)
                  : ca ? collect_simplified(b, *ca, &f) : collect_product(a, b, 1, t, &f);
        } else {
          ok = collect_simplified(a, 1, &f) && collect_simplified(b, kind == NodeKind::kAdd ? 1 : -1, &f);
        }
        if (ok && normalize(&f)) {
          if (Expr r = emit(f, t)) return keep_identity(r, orig);
        }
      }
      if (integer) {
        // Ring identities hold for wrapping unsigned arithmetic too.
        if (kind == NodeKind::kAdd && ir::is_zero(a)) return b;
        if ((kind == NodeKind::kAdd || kind == NodeKind::kSub) && ir::is_zero(b)) return a;
        if (kind == NodeKind::kMul && ir::is_one(a)) return b;
        if (kind == NodeKind::kMul && ir::is_one(b)) return a;
        if (kind == NodeKind::kMul && (ir::is_zero(a) || ir::is_zero(b))) return ir::int_imm(0, t);
        if (kind == NodeKind::kSub && order.equal(a, b)) return ir::int_imm(0, t);
      }
      return rebuild(kind, a, b, orig);
    }
    case NodeKind::kDiv:
    case NodeKind::kMod:
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod:
      if (integer) return rewrite_div_mod(kind, a, b, orig);
      return rebuild(kind, a, b, orig);
    case NodeKind::kMin:
    case NodeKind::kMax: {
      if (!integer) return rebuild(kind, a, b, orig);
      if (order.equal(a, b)) return a;
      bool is_min = kind == NodeKind::kMin;
      // Constants go last; min(min(x, c1), c2) -> min(x, min(c1, c2)) (same for max).
      Expr x = a, y = b;
      if (ir::as_const_int(x) && !ir::as_const_int(y)) std::swap(x, y);
      if (ir::as_const_int(y)) {
        auto* inner = x.as<ir::BinaryNode>();
        if (inner && inner->kind == kind && ir::as_const_int(inner->b)) {
          if (Expr c = fold_binary(kind, inner->b, y)) return rewrite_binary(kind, inner->a, c, Expr());
        }
      }
      unsigned facts = 0;
      LinearForm d;
      if (linear && difference(x, y, &d)) {
        facts = sign_facts(d);
      } else {
        ConstIntBound bx = bound(x), by = bound(y);
        if (bx.max_value <= by.min_value) facts |= kLeZero;
        if (bx.min_value >= by.max_value) facts |= kGeZero;
      }
      if (facts & kLeZero) return is_min ? x : y;
      if (facts & kGeZero) return is_min ? y : x;
      if (!ir::as_const_int(y) && order.less(y, x)) std::swap(x, y);
      return rebuild(kind, x, y, orig);
    }
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      if (!t.is_bool() || !t.is_scalar()) return rebuild(kind, a, b, orig);
      bool is_and = kind == NodeKind::kAnd;
      // The absorbing element (false for and, true for or) wins; the identity vanishes.
      int64_t absorbing = is_and ? 0 : 1;
      if (ir::is_const_int(a, absorbing) || ir::is_const_int(b, absorbing)) return ir::bool_imm(!is_and);
      if (ir::is_const_int(a, 1 - absorbing)) return b;
      if (ir::is_const_int(b, 1 - absorbing)) return a;
      if (order.equal(a, b)) return a;
      // a and not a -> false, a or not a -> true (negations compared after simplifying,
      // so x < y meets x >= y).
      auto negation = [&](const Expr& x) -> Expr {
        if (auto* n = x.as<ir::NotNode>()) return n->a;
        auto* cmp = x.as<ir::BinaryNode>();
        if (cmp && ir::is_compare_kind(cmp->kind) && cmp->a->dtype.is_integer() && cmp->a->dtype.is_scalar()) {
          return rewrite_binary(inverse_compare(cmp->kind), cmp->a, cmp->b, Expr());
        }
        return Expr();
      };
      Expr not_a = negation(a);
      if (not_a.defined() && order.equal(not_a, b)) return ir::bool_imm(!is_and);
      if (auto* n = b.as<ir::NotNode>(); n && order.equal(n->a, a)) return ir::bool_imm(!is_and);
      return rebuild(kind, a, b, orig);
    }
    default:
      break;
  }
  if (!ir::is_compare_kind(kind)) return rebuild(kind, a, b, orig);

  // ---- comparisons ----
  if (!integer) {
    // Bools compare as 0/1; floats are only folded (NaN breaks every identity).
    if (!(t.is_bool() && t.is_scalar())) return rebuild(kind, a, b, orig);
  }
  unsigned facts = 0;
  LinearForm d;
  bool have_linear = linear && difference(a, b, &d);
  if (have_linear) {
    facts = sign_facts(d);
  } else {
    ConstIntBound ba = bound(a), bb = bound(b);
    if (ba.max_value < bb.min_value) facts |= kLtZero | kLeZero | kNeZero;
    if (ba.max_value <= bb.min_value) facts |= kLeZero;
    if (ba.min_value > bb.max_value) facts |= kGtZero | kGeZero | kNeZero;
    if (ba.min_value >= bb.max_value) facts |= kGeZero;
    if (order.equal(a, b)) facts |= kEqZero | kLeZero | kGeZero;
  }
  bool value;
  if (decide_compare(kind, facts, &value)) return ir::bool_imm(value);
  if (!have_linear) return rebuild(kind, a, b, orig);

  // Normalize d op 0: divide out the gcd g of the coefficients, rounding the constant
  // the way each comparison needs, then move negative terms and the constant right.
  int64_t g = 0;
  for (const auto& term : d.terms) g = gcd_i64(g, term.second);
  int64_t c = d.constant;
  if (g > 1) {
    int64_t nc;
    switch (kind) {
      case NodeKind::kLE:  // g*E + c <= 0  <=>  E <= floor(-c/g)
      case NodeKind::kGT:  // g*E + c > 0   <=>  E > floor(-c/g)
        if (!checked_neg(c, &nc)) return rebuild(kind, a, b, orig);
        nc = -floordiv_i64(nc, g);
        break;
      case NodeKind::kLT:  // g*E + c < 0   <=>  E < ceil(-c/g) = -floor(c/g)
      case NodeKind::kGE:  // g*E + c >= 0  <=>  E >= ceil(-c/g)
        nc = floordiv_i64(c, g);
        break;
      default:  // EQ / NE: g*E == -c has a solution only when g divides c
        if (c % g != 0) return ir::bool_imm(kind == NodeKind::kNE);
        nc = c / g;
        break;
    }
    for (auto& term : d.terms) term.second /= g;
    d.constant = nc;
    c = nc;
  }
  LinearForm left, right;
  for (const auto& [atom, coeff] : d.terms) {
    if (coeff > 0) left.terms.emplace_back(atom, coeff);
    else if (coeff == kNegInf) return rebuild(kind, a, b, orig);
    else right.terms.emplace_back(atom, -coeff);
  }
  NodeKind out_kind = kind;
  if (left.terms.empty()) {
    // 0 op N - c  <=>  N flip(op) c
    std::swap(left, right);
    left.constant = 0;
    right.constant = c;
    out_kind = flip_sides(kind);
  } else {
    if (!checked_neg(c, &right.constant)) return rebuild(kind, a, b, orig);
  }
  Expr l = emit(left, t);
  Expr r = emit(right, t);
  if (!l.defined() || !r.defined()) return rebuild(kind, a, b, orig);
  return keep_identity(ir::binary(out_kind, l, r), orig);
}

bool Analyzer::Impl::prove_simplified(const Expr& cond) {
  if (!cond.defined() || !cond->dtype.is_bool() || !cond->dtype.is_scalar()) return false;
  if (auto* imm = cond.as<ir::IntImmNode>()) return imm->value != 0;
  if (auto* bin = cond.as<ir::BinaryNode>()) {
    if (bin->kind == NodeKind::kAnd) return prove_simplified(bin->a) && prove_simplified(bin->b);
    if (bin->kind == NodeKind::kOr) return prove_simplified(bin->a) || prove_simplified(bin->b);
  }
  return false;
}

}  // namespace tilec::arith
