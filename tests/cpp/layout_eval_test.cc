// Whole-tile evaluation of layouts: is_separable, eval_box, and the layout queries that use
// them (sizes, injectivity, equality, digit-form fitting, ownership checks) against
// brute-force references that evaluate one point at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "layout/digit_form.h"
#include "layout/int_eval.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/stmt.h"
#include "tilec/layout/index_space.h"
#include "tilec/layout/layout.h"
#include "tilec/layout/swizzle.h"

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::layout;

namespace {

Expr xor_(const Expr& a, const Expr& b) { return call(DataType::Int(32), "tl.bitwise_xor", {a, b}); }

std::vector<Var> slots_of(const Layout& l) {
  std::vector<Var> s = l->vars;
  if (l->is_fragment()) s.push_back(l->rep_var);
  return s;
}

// Reference queries: every (element, replica), one IntProgram evaluation at a time.
struct Brute {
  const Layout& l;
  std::vector<int64_t> shape = const_shape(l);
  int64_t reps = replicate_factor(l);

  template <typename Fn>
  void each(Fn fn, bool all_replicas) const {
    std::vector<Var> slots = slots_of(l);
    IntProgram index(l->forward_index[0], slots);
    std::optional<IntProgram> thread;
    if (l->is_fragment()) thread.emplace(l->forward_thread, slots);
    std::vector<int64_t> buf(slots.size());
    for_each_index(shape, [&](const std::vector<int64_t>& idx) {
      std::copy(idx.begin(), idx.end(), buf.begin());
      for (int64_t r = 0; r < (all_replicas ? reps : 1); ++r) {
        if (l->is_fragment()) buf.back() = r;
        fn(idx, index.eval(buf.data()), thread ? thread->eval(buf.data()) : 0);
      }
    });
  }
  int64_t max_index() const {
    int64_t m = 0;
    each([&](const auto&, int64_t i, int64_t) { m = std::max(m, i); }, false);
    return m + 1;
  }
  int64_t max_thread() const {
    int64_t m = 0;
    each([&](const auto&, int64_t, int64_t t) { m = std::max(m, t); }, true);
    return m + 1;
  }
  bool injective() const {
    std::set<std::pair<int64_t, int64_t>> seen;
    bool ok = true;
    each([&](const auto&, int64_t i, int64_t t) { ok &= seen.insert({i, t}).second; }, true);
    return ok;
  }
};

void expect_queries_match_brute_force(const Layout& l) {
  Brute b{l};
  if (l->is_fragment()) {
    EXPECT_EQ(fragment_local_size(l), b.max_index());
    EXPECT_EQ(thread_extent(l), b.max_thread());
  } else {
    EXPECT_EQ(physical_size(l), b.max_index());
  }
  EXPECT_EQ(is_injective(l), b.injective());
  EXPECT_TRUE(layout_equal(l, l));
}

Layout mma_accumulator(int64_t m, int64_t n, int64_t warp_m, int64_t warp_n) {
  const int64_t wm = m / warp_m, wn = n / warp_n;
  return make_fragment(
      {m, n},
      [=](const std::vector<Var>& v, const Var&) {
        return (floordiv(v[1], wn) * warp_m + floordiv(v[0], wm)) * 32 + floormod(v[0], 8) * 4 +
               floordiv(floormod(v[1], 8), 2);
      },
      [=](const std::vector<Var>& v) {
        return (floordiv(floormod(v[0], wm), 16) * (wn / 8) + floordiv(floormod(v[1], wn), 8)) * 4 +
               floordiv(floormod(v[0], 16), 8) * 2 + floormod(v[1], 2);
      });
}

// Threads along the flattened index: not a sum of one-variable terms.
Layout flat_coalesced(int64_t m, int64_t n, int64_t threads) {
  return make_fragment(
      {m, n}, [=](const std::vector<Var>& v, const Var&) { return floormod(v[0] * n + v[1], threads); },
      [=](const std::vector<Var>& v) { return floordiv(v[0] * n + v[1], threads); });
}

}  // namespace

TEST(LayoutEval, Separability) {
  Var i = make_var("i"), j = make_var("j"), r = make_var("r");
  std::vector<Var> s = {i, j, r};
  EXPECT_TRUE(is_separable(int_imm(3), s));
  EXPECT_TRUE(is_separable(floormod(i, 8) * 4 + floordiv(floormod(j, 8), 2) - r * 32, s));
  EXPECT_TRUE(is_separable((floordiv(j, 64) * 2 + floordiv(i, 64)) * 32, s));
  EXPECT_TRUE(is_separable(xor_(floordiv(i, 8), floormod(i, 8)) * 8 + j, s));  // one variable inside the xor
  EXPECT_TRUE(is_separable(cast(DataType::Int(64), i) + j, s));
  EXPECT_FALSE(is_separable(floormod(i * 16 + j, 32), s));
  EXPECT_FALSE(is_separable(i * j, s));
  EXPECT_FALSE(is_separable(xor_(floormod(i, 8), floordiv(j, 8)), s));
  EXPECT_FALSE(is_separable(select(i < j, i, j), s));
  EXPECT_FALSE(is_separable(i + make_var("unbound"), s));  // does not compile
}

TEST(LayoutEval, EvalBoxMatchesPointwiseEvaluation) {
  Var i = make_var("i"), j = make_var("j"), r = make_var("r");
  std::vector<Var> s = {i, j, r};
  const std::vector<Expr> exprs = {
      int_imm(7),
      i * 12 + j - r,
      floordiv(i - 5, 4) + floormod(j - 7, 8),             // negative operands, power-of-two divisors
      floordiv(i * 7 - 20, 3) * 100 + floormod(j - 11, 6),  // other divisors
      binary(NodeKind::kDiv, i - 6, int_imm(4)) + binary(NodeKind::kMod, j - 9, int_imm(5)),
      xor_(floormod(floordiv(i * 8 + j, 8), 8), floormod(i, 8)),
      select(i < j, min(i, r), max(j, r)) + cast(DataType::Int(64), binary(NodeKind::kEQ, j, r)),
      floordiv(i * 8 + j, j + 1),  // a divisor that varies
  };
  for (const auto& box : std::vector<std::vector<int64_t>>{{6, 10, 3}, {1, 16, 1}, {9, 1, 2}}) {
    for (const auto& e : exprs) {
      IntProgram p(e, s);
      auto all = eval_box(e, s, box);
      ASSERT_EQ(all.size(), static_cast<size_t>(box[0] * box[1] * box[2]));
      size_t k = 0;
      for_each_index(box, [&](const std::vector<int64_t>& x) { EXPECT_EQ(all[k++], p.eval(x.data())) << k; });
    }
  }
  EXPECT_TRUE(eval_box(i + j + r, s, {4, 0, 2}).empty());
}

TEST(LayoutEval, EvalBoxOfIndependentTermsAndShiftedBoxes) {
  // A versioned swizzle: the stage term is independent of the (row, column) term, which is
  // evaluated once per (row, column); boxes may start away from 0.
  Var i = make_var("i"), j = make_var("j"), k = make_var("k");
  std::vector<Var> s = {i, j, k};
  Expr x = j * 64 + floormod(k, 64);
  Expr swizzle = floordiv(k, 64) * 4096 + floordiv(x, 64) * 64 + xor_(floormod(floordiv(x, 8), 8), floormod(floordiv(x, 64), 8)) * 8 +
                 floormod(x, 8);
  const std::vector<Expr> exprs = {i * 16384 + swizzle, swizzle - i * 7 + 3, cast(DataType::Int(64), i) * 5 - floormod(k, 3),
                                   int_imm(4) + i - j + k};
  for (const auto& e : exprs) {
    IntProgram p(e, s);
    for (const auto& [box, lo] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{3, 16, 128}, {0, 0, 0}}, {{1, 16, 128}, {2, 0, 0}}, {{2, 5, 24}, {1, 3, 40}}}) {
      auto all = eval_box(e, s, box, lo);
      size_t n = 0;
      for_each_index(box, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> at = {lo[0] + c[0], lo[1] + c[1], lo[2] + c[2]};
        EXPECT_EQ(all[n++], p.eval(at.data()));
      });
      EXPECT_EQ(n, all.size());
    }
  }
}

TEST(LayoutEval, QueriesMatchBruteForce) {
  expect_queries_match_brute_force(mma_accumulator(128, 256, 2, 4));
  expect_queries_match_brute_force(mma_accumulator(64, 64, 4, 1));
  expect_queries_match_brute_force(flat_coalesced(16, 24, 32));
  expect_queries_match_brute_force(coalesced_layout({100, 24}, 64, 4));  // an open top digit
  expect_queries_match_brute_force(replicate(mma_accumulator(32, 32, 1, 1), 4));
  expect_queries_match_brute_force(swizzled_layout({64, 64}, DataType::Float(16), SwizzleMode::k128B));
  expect_queries_match_brute_force(swizzled_layout({128, 32}, DataType::Float(16), SwizzleMode::k64B));
  expect_queries_match_brute_force(row_major({3, 5, 7}));
  // Not injective: two elements in one slot (separable and not).
  Layout twice = make_fragment(
      {8, 8}, [](const std::vector<Var>& v, const Var&) { return floormod(v[0], 4); },
      [](const std::vector<Var>& v) { return v[1]; });
  expect_queries_match_brute_force(twice);
  EXPECT_FALSE(is_injective(twice));
  Layout folded = make_plain({8, 8}, [](const std::vector<Var>& v) {
    return std::vector<Expr>{floormod(v[0] * 8 + v[1], 60)};
  });
  expect_queries_match_brute_force(folded);
  EXPECT_FALSE(is_injective(folded));
  // Thread and register digits that overlap but stay injective as a pair.
  Layout paired = make_fragment(
      {4, 4}, [](const std::vector<Var>& v, const Var&) { return v[0] + v[1]; },
      [](const std::vector<Var>& v) { return v[1]; });
  expect_queries_match_brute_force(paired);
  EXPECT_TRUE(is_injective(paired));
}

TEST(LayoutEval, EqualityOfDifferentExpressions) {
  Layout a = mma_accumulator(64, 64, 2, 2);
  Layout b = mma_accumulator(64, 64, 2, 2);  // same builder, fresh variables
  EXPECT_TRUE(layout_equal(a, b));
  auto form = fit_digit_form(a);
  ASSERT_TRUE(form.has_value());
  EXPECT_TRUE(layout_equal(a, to_layout(*form)));  // other expressions, same maps
  EXPECT_FALSE(layout_equal(a, mma_accumulator(64, 64, 4, 1)));
  // The same flat map written two ways (not separable), and a different one.
  Layout f1 = flat_coalesced(16, 32, 64);
  Layout f2 = make_fragment(
      {16, 32}, [](const std::vector<Var>& v, const Var&) { return floormod(v[0], 2) * 32 + v[1]; },
      [](const std::vector<Var>& v) { return floordiv(v[0], 2); });
  EXPECT_TRUE(layout_equal(f1, f2));
  EXPECT_FALSE(layout_equal(f1, flat_coalesced(16, 32, 32)));
  // Replicas: the same set of holders per element, numbered differently.
  Layout r1 = make_fragment(
      {8}, [](const std::vector<Var>& v, const Var& rep) { return v[0] + rep * 8; },
      [](const std::vector<Var>&) { return int_imm(0); }, 2);
  Layout r2 = make_fragment(
      {8}, [](const std::vector<Var>& v, const Var& rep) { return v[0] + (int_imm(1) - rep) * 8; },
      [](const std::vector<Var>&) { return int_imm(0); }, 2);
  EXPECT_TRUE(layout_equal(r1, r2));
  Layout r3 = make_fragment(
      {8}, [](const std::vector<Var>& v, const Var& rep) { return v[0] + rep * 16; },
      [](const std::vector<Var>&) { return int_imm(0); }, 2);
  EXPECT_FALSE(layout_equal(r1, r3));
  // Plain layouts: swizzles against each other.
  auto sw = [](SwizzleMode m) { return swizzled_layout({64, 64}, DataType::Float(16), m); };
  EXPECT_TRUE(layout_equal(sw(SwizzleMode::k128B), sw(SwizzleMode::k128B)));
  EXPECT_FALSE(layout_equal(sw(SwizzleMode::k128B), sw(SwizzleMode::k64B)));
}

TEST(LayoutEval, DigitFormFitChecksEveryElement) {
  // Separable: fitted from the axes.
  auto mma = fit_digit_form(mma_accumulator(128, 128, 2, 2));
  ASSERT_TRUE(mma.has_value());
  EXPECT_EQ(mma->thread_extent(), 128);
  // Not separable but of digit form.
  auto flat = fit_digit_form(flat_coalesced(16, 32, 64));
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(flat->local_size(), 8);
  // Agrees with a digit form along the axes only: rejected.
  Layout diagonal = make_fragment(
      {4, 4}, [](const std::vector<Var>& v, const Var&) { return floormod(v[0] + v[1], 4); },
      [](const std::vector<Var>& v) { return v[0]; });
  EXPECT_FALSE(fit_digit_form(diagonal).has_value());
}
