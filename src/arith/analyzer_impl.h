// Internal state and entry points of the Analyzer, shared by the files of src/arith/.
//
//   analyzer.cc          public API: binding facts, can_prove*, the free simplify()
//   const_int_bound.cc   Impl::bound — interval analysis
//   modular_set.cc       Impl::modular — coeff/base (congruence) analysis
//   const_fold.cc        fold_* — constant folding with exact C / Python semantics
//   expr_order.cc        ExprOrder — a deterministic total order on expressions
//   canonical_simplify.cc LinearForm — sums c1*x1 + ... + c as a canonical linear form
//   rewrite_simplify.cc  Impl::simplify_expr — the bottom-up rewriter (min/max, compare,
//                        logic, select, cast rules)
//   div_mod_simplify.cc  Impl::rewrite_div_mod — floordiv/floormod/div/mod rules
//
// Every query first substitutes the values bound with bind_value (see Impl::resolve).
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/mutator.h"

namespace tilec::arith {

namespace detail {

// A deterministic total order on expressions: by kind, type, then contents; variables
// and buffers by name, ties between distinct same-named ones broken by the order in
// which this object first saw them (never by address, so output is reproducible).
class ExprOrder {
 public:
  int compare(const Expr& a, const Expr& b);
  bool equal(const Expr& a, const Expr& b) { return a.same_as(b) || compare(a, b) == 0; }
  bool less(const Expr& a, const Expr& b) { return compare(a, b) < 0; }

 private:
  int compare_ptr_serial(const void* a, const void* b);
  std::unordered_map<const void*, int64_t> serial_;
};

// sum(coeff_i * atom_i) + constant over a signed integer type. After normalize():
// atoms are unique, sorted by ExprOrder, and every coefficient is nonzero.
struct LinearForm {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;
  bool is_const() const { return terms.empty(); }
};

// Constant folding (const_fold.cc). Each returns a null Expr when it cannot fold
// exactly (non-constant operands, overflow, division by zero, inexact float type).
Expr fold_binary(ir::NodeKind kind, const Expr& a, const Expr& b);
Expr fold_cast(const ir::DataType& t, const Expr& v);
Expr fold_not(const Expr& a);
// Whether linear canonicalization applies to this type: scalar signed integers of at
// least 32 bits (index types), where overflow is undefined and the simplifier may assume
// it does not happen. Narrow int8/int16 values wrap in practice, so they are only folded.
inline bool is_linear_type(const ir::DataType& t) { return t.is_int() && t.is_scalar() && t.bits() >= 32; }

}  // namespace detail

struct Analyzer::Impl {
  struct VarInfo {
    Var var;                 // keeps the key alive
    ConstIntBound bound;
    Expr sym_min, sym_max;   // inclusive symbolic bounds, set when not constant
    int64_t serial = 0;      // binding order: inner loops are bound after outer ones
  };
  int64_t bind_counter = 0;
  std::unordered_map<const ir::VarNode*, VarInfo> vars;
  ir::VarMap values;         // bind_value facts, already substituted into each other
  std::vector<Var> value_vars;
  detail::ExprOrder order;

  // Memos, valid while the facts above do not change (every bind_* clears them; the
  // key's node is kept alive by the stored Expr, so addresses are never reused):
  //   bound_memo     bound() of a node
  //   rewrite_memo   simplify_expr() of a binary node (one pass)
  //   simplify_memo  Analyzer::simplify() of a node (the fixed point)
  template <typename V>
  using NodeMemo = std::unordered_map<const ir::ExprNode*, std::pair<Expr, V>>;
  NodeMemo<ConstIntBound> bound_memo;
  NodeMemo<Expr> rewrite_memo;
  NodeMemo<Expr> simplify_memo;
  static constexpr size_t kMaxMemo = 1 << 14;
  int rewrite_depth = 0;     // guards rule recursion (see rewrite_simplify.cc)

  // Substitute bind_value facts.
  Expr resolve(const Expr& e) const;
  void begin_query() {
    if (bound_memo.size() > kMaxMemo) bound_memo.clear();
    if (rewrite_memo.size() > kMaxMemo) rewrite_memo.clear();
    if (simplify_memo.size() > kMaxMemo) simplify_memo.clear();
  }
  void facts_changed() {
    bound_memo.clear();
    rewrite_memo.clear();
    simplify_memo.clear();
  }

  // const_int_bound.cc: sound interval of e's values (e already resolved).
  ConstIntBound bound(const Expr& e);
  ConstIntBound var_bound(const ir::VarNode* v);
  // modular_set.cc
  ModularSet modular(const Expr& e);

  // canonical_simplify.cc
  // Add scale * e (e already simplified) to `acc` without re-simplifying e's parts.
  // Returns false on coefficient overflow.
  bool collect_simplified(const Expr& e, int64_t scale, detail::LinearForm* acc);
  // Add scale * e where e is not simplified yet: sums are walked, other parts simplified.
  bool collect_raw(const Expr& e, int64_t scale, detail::LinearForm* acc);
  // Sort and merge terms; fold floordiv(E,c)*c + floormod(E,c) back into E.
  bool normalize(detail::LinearForm* f);
  bool merge_terms(detail::LinearForm* f);
  bool substitute_floordiv(detail::LinearForm* f);
  // Build the canonical expression of f in type t; null if a constant does not fit t.
  Expr emit(const detail::LinearForm& f, const ir::DataType& t);
  // Interval of a normalized linear form.
  ConstIntBound bound_linear(const detail::LinearForm& f);
  // Simplify an Add/Sub/Mul tree of a linear type; null if canonicalization failed.
  Expr canonical_sum(const Expr& e);
  // Linear form of the simplified difference a - b; false if it overflowed.
  bool difference(const Expr& a, const Expr& b, detail::LinearForm* out);
  // Add scale * a * b (both simplified, neither constant) as one product atom.
  bool collect_product(const Expr& a, const Expr& b, int64_t scale, const ir::DataType& t,
                       detail::LinearForm* acc);

  // rewrite_simplify.cc
  Expr simplify_expr(const Expr& e);  // full bottom-up simplification (e resolved)
  // Rules on already simplified operands.
  Expr rewrite_binary(ir::NodeKind kind, const Expr& a, const Expr& b, const Expr& orig);
  // div_mod_simplify.cc: kind is Div, Mod, FloorDiv or FloorMod.
  Expr rewrite_div_mod(ir::NodeKind kind, const Expr& a, const Expr& b, const Expr& orig);
  // `result` unless it is structurally equal to `orig`, then `orig` (keeps identity, so
  // copy-on-write callers see "unchanged").
  Expr keep_identity(const Expr& result, const Expr& orig) {
    if (orig.defined() && result.defined() && order.equal(result, orig)) return orig;
    return result;
  }
  // The binary node kind(a, b), reusing `orig` when it already has these operands.
  static Expr rebuild(ir::NodeKind kind, const Expr& a, const Expr& b, const Expr& orig);
  // Depth guard for rules that simplify derived expressions.
  static constexpr int kMaxRewriteDepth = 48;
  static constexpr int kMaxSymbolicSteps = 6;  // variables substituted per sign query
  // Decide the sign of a - b: returns the proven facts as a small bit set.
  enum SignFact : unsigned { kLtZero = 1, kLeZero = 2, kGtZero = 4, kGeZero = 8, kNeZero = 16, kEqZero = 32 };
  unsigned sign_facts(const detail::LinearForm& d);
  bool prove_simplified(const Expr& cond);
};

}  // namespace tilec::arith
