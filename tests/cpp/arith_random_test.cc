// Randomized soundness tests of the analyzer: thousands of random integer expression
// trees over bounded variables (fixed seed). For every tree and many assignments within
// the bounds (all corners plus random points):
//   * simplify() keeps the type and the value, and is idempotent;
//   * the value lies within const_int_bound() and matches modular_set();
//   * can_prove() never proves a condition that some assignment falsifies.
#include <gtest/gtest.h>

#include <cstdio>

#include "arith_test_util.h"
#include "tilec/arith/analyzer.h"

namespace {

using namespace tilec::ir;
using arith_test::Env;
using arith_test::eval;
using arith_test::show;
using tilec::arith::Analyzer;

struct VarRange {
  Var var;
  int64_t lo, hi;
};

// A fixed scenario: three variables with ranges; one more (w) bound by value.
struct Scenario {
  std::vector<VarRange> ranges;
  Var w;
  Expr w_value;

  explicit Scenario(int variant) {
    Var x = make_var("x"), y = make_var("y"), z = make_var("z");
    switch (variant) {
      case 0: ranges = {{x, 0, 15}, {y, 0, 7}, {z, 1, 32}}; break;
      case 1: ranges = {{x, -8, 7}, {y, 0, 63}, {z, -3, 3}}; break;
      case 3: ranges = {{x, -9, 9}, {y, -30, 30}, {z, 1, 5}}; break;
      default: ranges = {{x, 0, 127}, {y, -20, 20}, {z, 4, 4}}; break;
    }
    w = make_var("w");
    w_value = x * 2 + y;
  }
  std::vector<Var> gen_vars() const {
    std::vector<Var> v;
    for (const auto& r : ranges) v.push_back(r.var);
    v.push_back(w);
    return v;
  }
  // use_range: bind_range; otherwise bind_bound. unbound: tell the analyzer nothing
  // about x, y, z (samples still come from the ranges), which exercises the rules that
  // hold for every value.
  void bind(Analyzer& an, bool use_range, bool unbound = false) const {
    for (const auto& r : ranges) {
      if (unbound) break;
      if (use_range) an.bind_range(r.var, int_imm(r.lo), int_imm(r.hi - r.lo + 1));
      else an.bind_bound(r.var, r.lo, r.hi);
    }
    an.bind_value(w, w_value);
  }
  // Corners first, then random points.
  std::vector<Env> samples(std::mt19937& rng, int n_random) const {
    std::vector<Env> out;
    size_t n = ranges.size();
    for (size_t mask = 0; mask < (size_t{1} << n); ++mask) {
      Env env;
      for (size_t i = 0; i < n; ++i) env[ranges[i].var.get()] = (mask >> i) & 1 ? ranges[i].hi : ranges[i].lo;
      out.push_back(env);
    }
    for (int k = 0; k < n_random; ++k) {
      Env env;
      for (const auto& r : ranges) {
        env[r.var.get()] = r.lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(r.hi - r.lo + 1));
      }
      out.push_back(env);
    }
    for (auto& env : out) env[w.get()] = *eval(w_value, env);
    return out;
  }
};

constexpr int kExprsPerScenario = 700;
constexpr int kRandomPoints = 24;

TEST(ArithRandom, SimplifyBoundAndModularAreSound) {
  std::mt19937 point_rng(1234);
  int checked_values = 0, changed = 0, divisible = 0, less = 0;
  for (int variant = 0; variant < 4; ++variant) {
    Scenario sc(variant);
    Analyzer an;
    sc.bind(an, /*use_range=*/variant != 1, /*unbound=*/variant == 3);
    arith_test::ExprGen gen(42 + variant, sc.gen_vars());
    for (int n = 0; n < kExprsPerScenario; ++n) {
      Expr e = gen.int_expr(1 + n % 5);
      Expr s = an.simplify(e);
      ASSERT_TRUE(s.defined());
      ASSERT_EQ(s->dtype, e->dtype) << show(e);
      tilec::arith::ConstIntBound b = an.const_int_bound(e);
      tilec::arith::ModularSet m = an.modular_set(e);
      Expr s2 = an.simplify(s);
      EXPECT_EQ(show(s2), show(s)) << "not idempotent: " << show(e);
      changed += !s.same_as(e);
      // Claims checked against every sample below.
      int64_t factor = int64_t{1} << (1 + n % 4);
      bool claims_divisible = an.can_prove_divisible(e, factor);
      int64_t limit = (n % 2) ? b.max_value : (gen.range(-40, 40));
      bool claims_less = an.can_prove_less(e, limit);
      divisible += claims_divisible;
      less += claims_less;
      for (const Env& env : sc.samples(point_rng, kRandomPoints)) {
        auto want = eval(e, env);
        if (!want) continue;  // undefined (int32 overflow in the original): nothing to check
        auto got = eval(s, env);
        ASSERT_TRUE(got.has_value()) << show(e) << "\n  simplified " << show(s) << " is undefined";
        ASSERT_EQ(*got, *want) << show(e) << "\n  simplified to " << show(s);
        ASSERT_GE(*want, b.min_value) << show(e) << " bound [" << b.min_value << ", " << b.max_value << "]";
        ASSERT_LE(*want, b.max_value) << show(e) << " bound [" << b.min_value << ", " << b.max_value << "]";
        if (m.coeff == 0) {
          ASSERT_EQ(*want, m.base) << show(e) << " modular set {0, " << m.base << "}";
        } else {
          ASSERT_EQ(arith_test::floormod(*want - m.base, m.coeff), 0)
              << show(e) << " modular set {" << m.coeff << ", " << m.base << "}";
        }
        if (claims_divisible) ASSERT_EQ(*want % factor, 0) << show(e) << " claimed divisible by " << factor;
        if (claims_less) ASSERT_LT(*want, limit) << show(e) << " claimed < " << limit;
        ++checked_values;
      }
    }
  }
  EXPECT_GT(checked_values, 4 * kExprsPerScenario * 10);  // most samples are defined
  // Guard against a vacuous pass: the analyzer must actually do something.
  EXPECT_GT(changed, kExprsPerScenario);
  EXPECT_GT(divisible, 100);
  EXPECT_GT(less, 100);
  std::printf("simplified %d of %d, proved %d divisibility and %d upper-bound facts\n", changed,
              4 * kExprsPerScenario, divisible, less);
}

TEST(ArithRandom, CanProveNeverProvesFalseFacts) {
  std::mt19937 point_rng(99);
  int proved = 0, refuted = 0;
  for (int variant = 0; variant < 4; ++variant) {
    Scenario sc(variant);
    Analyzer an;
    sc.bind(an, /*use_range=*/true, /*unbound=*/variant == 3);
    arith_test::ExprGen gen(7 + variant, sc.gen_vars());
    for (int n = 0; n < kExprsPerScenario; ++n) {
      Expr cond = gen.bool_expr(1 + n % 4);
      Expr s = an.simplify(cond);
      ASSERT_TRUE(s->dtype.is_bool()) << show(cond);
      bool holds = an.can_prove(cond);
      bool fails = an.can_prove(logical_not(cond));
      ASSERT_FALSE(holds && fails) << show(cond);
      proved += holds;
      refuted += fails;
      for (const Env& env : sc.samples(point_rng, kRandomPoints)) {
        auto want = eval(cond, env);
        if (!want) continue;
        auto got = eval(s, env);
        ASSERT_TRUE(got.has_value()) << show(cond) << "\n  simplified " << show(s) << " is undefined";
        ASSERT_EQ(*got != 0, *want != 0) << show(cond) << "\n  simplified to " << show(s);
        if (holds) ASSERT_TRUE(*want) << "proved a false fact: " << show(cond);
        if (fails) ASSERT_FALSE(*want) << "proved the negation of a true fact: " << show(cond);
      }
    }
  }
  // The generator makes plenty of decidable conditions; a prover that never proves
  // anything would pass the soundness checks above, so require some successes.
  EXPECT_GT(proved, 50);
  EXPECT_GT(refuted, 50);
  std::printf("proved %d, refuted %d of %d conditions\n", proved, refuted, 4 * kExprsPerScenario);
}

// Symbolic ranges: n in [1, 20], i in [0, n), j in [i, i + 4), k in [0, ceildiv(n, 4)).
// Samples respect the dependencies; every simplification and proof must hold on them.
TEST(ArithRandom, SymbolicRangesAreSound) {
  Var n = make_var("n"), i = make_var("i"), j = make_var("j"), k = make_var("k");
  Analyzer an;
  an.bind_bound(n, 1, 20);
  an.bind_range(i, int_imm(0), n);
  an.bind_range(j, i, int_imm(4));
  an.bind_range(k, int_imm(0), ceildiv(n, int_imm(4)));
  std::mt19937 rng(2024);
  auto draw = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  std::vector<Env> samples;
  for (int s = 0; s < 40; ++s) {
    Env env;
    int64_t nv = s < 2 ? (s == 0 ? 1 : 20) : draw(1, 20);
    int64_t iv = s % 3 == 0 ? nv - 1 : draw(0, nv - 1);
    env[n.get()] = nv;
    env[i.get()] = iv;
    env[j.get()] = s % 4 == 0 ? iv + 3 : draw(iv, iv + 3);
    int64_t kmax = (nv + 3) / 4 - 1;
    env[k.get()] = s % 5 == 0 ? kmax : draw(0, kmax);
    samples.push_back(env);
  }
  arith_test::ExprGen gen(555, {n, i, j, k});
  int proved = 0;
  for (int m = 0; m < 800; ++m) {
    Expr e = (m % 2) ? gen.int_expr(1 + m % 4) : gen.bool_expr(1 + m % 3);
    Expr s = an.simplify(e);
    bool holds = e->dtype.is_bool() && an.can_prove(e);
    proved += holds;
    tilec::arith::ConstIntBound b = an.const_int_bound(e);
    for (const Env& env : samples) {
      auto want = eval(e, env);
      if (!want) continue;
      auto got = eval(s, env);
      ASSERT_TRUE(got.has_value()) << show(e) << "\n  simplified " << show(s) << " is undefined";
      ASSERT_EQ(*got, *want) << show(e) << "\n  simplified to " << show(s);
      ASSERT_GE(*want, b.min_value) << show(e);
      ASSERT_LE(*want, b.max_value) << show(e);
      if (holds) ASSERT_TRUE(*want) << "proved a false fact: " << show(e);
    }
  }
  EXPECT_GT(proved, 40);
  // The facts the symbolic bounds exist for.
  EXPECT_TRUE(an.can_prove(i < n));
  EXPECT_TRUE(an.can_prove(j < i + 4));
  EXPECT_TRUE(an.can_prove(j >= i));
  EXPECT_TRUE(an.can_prove(k * 4 < n));
  EXPECT_FALSE(an.can_prove(j < n));
}

}  // namespace
