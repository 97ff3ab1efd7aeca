// Helpers for the arith tests: a compact printer (for messages and expected forms), a
// reference evaluator with exact C / Python division semantics, and a random generator
// of integer expression trees.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilec/ir/expr.h"

namespace arith_test {

using tilec::ir::Expr;
using tilec::ir::NodeKind;
using tilec::ir::Var;

// Infix form: (a + b), (a // b), (a %% b), min(a, b), select(c, t, f), int64(x), ...
inline std::string show(const Expr& e) {
  using namespace tilec::ir;
  if (!e.defined()) return "<null>";
  if (auto* i = e.as<IntImmNode>()) {
    if (i->dtype.is_bool()) return i->value ? "True" : "False";
    return std::to_string(i->value);
  }
  if (auto* f = e.as<FloatImmNode>()) return std::to_string(f->value);
  if (auto* v = e.as<VarNode>()) return v->name;
  if (auto* b = e.as<BinaryNode>()) {
    if (b->kind == NodeKind::kMin || b->kind == NodeKind::kMax) {
      return std::string(binary_symbol(b->kind)) + "(" + show(b->a) + ", " + show(b->b) + ")";
    }
    return "(" + show(b->a) + " " + binary_symbol(b->kind) + " " + show(b->b) + ")";
  }
  if (auto* n = e.as<NotNode>()) return "not " + show(n->a);
  if (auto* s = e.as<SelectNode>()) {
    return "select(" + show(s->cond) + ", " + show(s->true_value) + ", " + show(s->false_value) + ")";
  }
  if (auto* c = e.as<CastNode>()) return c->dtype.str() + "(" + show(c->value) + ")";
  return std::string("<") + node_kind_name(e->kind) + ">";
}

using Env = std::unordered_map<const tilec::ir::VarNode*, int64_t>;

inline int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

// Evaluates a scalar int32/int64/bool expression. nullopt when the value is undefined
// (division by zero) or an int32 intermediate leaves the int32 range.
inline std::optional<int64_t> eval(const Expr& e, const Env& env) {
  using namespace tilec::ir;
  auto in_range = [&](int64_t v) -> std::optional<int64_t> {
    if (e->dtype.is_int() && e->dtype.bits() == 32 && (v < INT32_MIN || v > INT32_MAX)) return std::nullopt;
    return v;
  };
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* v = e.as<VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  if (auto* b = e.as<BinaryNode>()) {
    auto x = eval(b->a, env);
    if (!x) return std::nullopt;
    // And / Or evaluate both sides (IR expressions have no side effects).
    auto y = eval(b->b, env);
    if (!y) return std::nullopt;
    int64_t p = *x, q = *y;
    switch (b->kind) {
      case NodeKind::kAdd: return in_range(p + q);
      case NodeKind::kSub: return in_range(p - q);
      case NodeKind::kMul: return in_range(p * q);
      case NodeKind::kDiv: if (q == 0) return std::nullopt; return in_range(p / q);
      case NodeKind::kMod: if (q == 0) return std::nullopt; return in_range(p % q);
      case NodeKind::kFloorDiv: if (q == 0) return std::nullopt; return in_range(floordiv(p, q));
      case NodeKind::kFloorMod: if (q == 0) return std::nullopt; return in_range(floormod(p, q));
      case NodeKind::kMin: return std::min(p, q);
      case NodeKind::kMax: return std::max(p, q);
      case NodeKind::kEQ: return p == q;
      case NodeKind::kNE: return p != q;
      case NodeKind::kLT: return p < q;
      case NodeKind::kLE: return p <= q;
      case NodeKind::kGT: return p > q;
      case NodeKind::kGE: return p >= q;
      case NodeKind::kAnd: return (p != 0) && (q != 0);
      case NodeKind::kOr: return (p != 0) || (q != 0);
      default: return std::nullopt;
    }
  }
  if (auto* n = e.as<NotNode>()) {
    auto x = eval(n->a, env);
    if (!x) return std::nullopt;
    return *x == 0;
  }
  if (auto* s = e.as<SelectNode>()) {
    auto c = eval(s->cond, env);
    if (!c) return std::nullopt;
    return eval(*c ? s->true_value : s->false_value, env);
  }
  if (auto* c = e.as<CastNode>()) {
    auto x = eval(c->value, env);
    if (!x) return std::nullopt;
    if (c->dtype.is_bool()) return *x != 0;
    if (c->dtype.is_int() && c->dtype.bits() == 32) return static_cast<int64_t>(static_cast<int32_t>(*x));
    if (c->dtype.is_int() && c->dtype.bits() == 64) return *x;
    return std::nullopt;
  }
  return std::nullopt;
}

// Random integer expressions over a few variables, with small constants and no
// possible division by zero (divisors are nonzero constants or max(e, 1)).
class ExprGen {
 public:
  ExprGen(uint32_t seed, std::vector<Var> vars) : rng_(seed), vars_(std::move(vars)) {}

  uint32_t pick(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }

  Expr constant() {
    static const int64_t kNice[] = {0, 1, 2, 3, 4, 8, 16, -1, -2, -4, 5, 7, 32, 64};
    if (pick(3) == 0) return tilec::ir::int_imm(range(-20, 20));
    return tilec::ir::int_imm(kNice[pick(sizeof(kNice) / sizeof(kNice[0]))]);
  }
  Expr divisor(int depth) {
    static const int64_t kDiv[] = {1, 2, 3, 4, 8, 16, 5, 7, -1, -2, -3, -4, -8, 32};
    if (depth > 0 && pick(6) == 0) return tilec::ir::max(int_expr(depth - 1), tilec::ir::int_imm(range(1, 4)));
    return tilec::ir::int_imm(kDiv[pick(sizeof(kDiv) / sizeof(kDiv[0]))]);
  }
  Expr leaf() {
    if (pick(5) < 3) return vars_[pick(static_cast<uint32_t>(vars_.size()))];
    return constant();
  }
  Expr int_expr(int depth) {
    using namespace tilec::ir;
    if (depth <= 0 || pick(8) == 0) return leaf();
    switch (pick(14)) {
      case 0: case 1: return int_expr(depth - 1) + int_expr(depth - 1);
      case 2: return int_expr(depth - 1) - int_expr(depth - 1);
      case 3: return int_expr(depth - 1) * constant();
      case 4: return pick(3) == 0 ? int_expr(depth - 1) * int_expr(depth - 1) : constant() * int_expr(depth - 1);
      case 5: return floordiv(int_expr(depth - 1), divisor(depth - 1));
      case 6: return floormod(int_expr(depth - 1), divisor(depth - 1));
      case 7: return binary(NodeKind::kDiv, int_expr(depth - 1), divisor(depth - 1));
      case 8: return binary(NodeKind::kMod, int_expr(depth - 1), divisor(depth - 1));
      case 9: return min(int_expr(depth - 1), int_expr(depth - 1));
      case 10: return max(int_expr(depth - 1), int_expr(depth - 1));
      case 11: return select(bool_expr(depth - 1), int_expr(depth - 1), int_expr(depth - 1));
      case 12: {  // the floordiv/floormod recombination pattern
        Expr inner = int_expr(depth - 1);
        Expr c = int_imm(range(1, 8));
        return floordiv(inner, c) * c + floormod(inner, c);
      }
      default: return int_expr(depth - 1) + constant();
    }
  }
  Expr bool_expr(int depth) {
    using namespace tilec::ir;
    if (depth > 1) {
      switch (pick(8)) {
        case 0: return bool_expr(depth - 1) && bool_expr(depth - 1);
        case 1: return bool_expr(depth - 1) || bool_expr(depth - 1);
        case 2: return logical_not(bool_expr(depth - 1));
        default: break;
      }
    }
    static const NodeKind kCmp[] = {NodeKind::kLT, NodeKind::kLE, NodeKind::kGT,
                                    NodeKind::kGE, NodeKind::kEQ, NodeKind::kNE};
    int d = depth > 0 ? depth - 1 : 0;
    return binary(kCmp[pick(6)], int_expr(d), pick(3) == 0 ? constant() : int_expr(d));
  }

 private:
  std::mt19937 rng_;
  std::vector<Var> vars_;
};

}  // namespace arith_test
