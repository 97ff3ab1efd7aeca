// Unit tests of Analyzer::simplify, one group per rule family.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "arith_test_util.h"
#include "tilec/arith/analyzer.h"
#include "tilec/ir/buffer.h"

namespace {

using namespace tilec::ir;
using arith_test::show;
using tilec::arith::Analyzer;

Expr i32(int64_t v) { return int_imm(v, DataType::Int(32)); }
Expr i64(int64_t v) { return int_imm(v, DataType::Int(64)); }
Expr u32(int64_t v) { return int_imm(v, DataType::UInt(32)); }
Expr f32(double v) { return float_imm(v, DataType::Float(32)); }
Expr bin(NodeKind k, Expr a, Expr b) { return binary(k, std::move(a), std::move(b)); }

int64_t int_of(const Expr& e) {
  auto* p = as_const_int(e);
  EXPECT_NE(p, nullptr) << "not a constant: " << show(e);
  return p ? *p : 0;
}
std::string simp(const Expr& e) { return show(tilec::arith::simplify(e)); }

// ---------------------------------------------------------------- constant folding

TEST(ArithFold, EveryIntegerBinaryKind) {
  EXPECT_EQ(int_of(tilec::arith::simplify(i32(7) + i32(5))), 12);
  EXPECT_EQ(int_of(tilec::arith::simplify(i32(7) - i32(5))), 2);
  EXPECT_EQ(int_of(tilec::arith::simplify(i32(7) * i32(-5))), -35);
  EXPECT_EQ(int_of(tilec::arith::simplify(min(i32(7), i32(-5)))), -5);
  EXPECT_EQ(int_of(tilec::arith::simplify(max(i32(7), i32(-5)))), 7);
  // C truncation vs Python flooring, for every sign combination.
  struct Case { int64_t a, b, div, mod, fdiv, fmod; };
  for (Case c : {Case{7, 2, 3, 1, 3, 1}, Case{-7, 2, -3, -1, -4, 1}, Case{7, -2, -3, 1, -4, -1},
                 Case{-7, -2, 3, -1, 3, -1}, Case{6, 3, 2, 0, 2, 0}, Case{-6, 3, -2, 0, -2, 0}}) {
    SCOPED_TRACE(std::to_string(c.a) + " / " + std::to_string(c.b));
    EXPECT_EQ(int_of(tilec::arith::simplify(bin(NodeKind::kDiv, i32(c.a), i32(c.b)))), c.div);
    EXPECT_EQ(int_of(tilec::arith::simplify(bin(NodeKind::kMod, i32(c.a), i32(c.b)))), c.mod);
    EXPECT_EQ(int_of(tilec::arith::simplify(floordiv(i32(c.a), i32(c.b)))), c.fdiv);
    EXPECT_EQ(int_of(tilec::arith::simplify(floormod(i32(c.a), i32(c.b)))), c.fmod);
  }
  struct Cmp { NodeKind k; bool lt, eq, gt; };  // results for 3 ? 5, 5 ? 5, 7 ? 5
  for (Cmp c : {Cmp{NodeKind::kLT, true, false, false}, Cmp{NodeKind::kLE, true, true, false},
                Cmp{NodeKind::kGT, false, false, true}, Cmp{NodeKind::kGE, false, true, true},
                Cmp{NodeKind::kEQ, false, true, false}, Cmp{NodeKind::kNE, true, false, true}}) {
    EXPECT_EQ(int_of(tilec::arith::simplify(bin(c.k, i32(3), i32(5)))), c.lt) << binary_symbol(c.k);
    EXPECT_EQ(int_of(tilec::arith::simplify(bin(c.k, i32(5), i32(5)))), c.eq) << binary_symbol(c.k);
    EXPECT_EQ(int_of(tilec::arith::simplify(bin(c.k, i32(7), i32(5)))), c.gt) << binary_symbol(c.k);
  }
  EXPECT_EQ(simp(bool_imm(true) && bool_imm(false)), "False");
  EXPECT_EQ(simp(bool_imm(true) || bool_imm(false)), "True");
  EXPECT_EQ(simp(logical_not(bool_imm(false))), "True");
}

TEST(ArithFold, ResultKeepsTheOperandType) {
  Expr r = tilec::arith::simplify(i64(3) * i64(4));
  EXPECT_EQ(r->dtype, DataType::Int(64));
  EXPECT_EQ(int_of(r), 12);
  EXPECT_EQ(tilec::arith::simplify(i32(3) < i32(4))->dtype, DataType::Bool());
  EXPECT_EQ(tilec::arith::simplify(u32(3) + u32(4))->dtype, DataType::UInt(32));
}

TEST(ArithFold, OverflowAndDivisionByZeroAreNotFolded) {
  Expr big = i32(std::numeric_limits<int32_t>::max()) + i32(1);
  Expr r = tilec::arith::simplify(big);
  EXPECT_EQ(as_const_int(r), nullptr) << show(r);
  EXPECT_EQ(as_const_int(tilec::arith::simplify(i32(1 << 20) * i32(1 << 12))), nullptr);
  // int64 overflow is detected too (no UB in the folder).
  Expr huge = i64(std::numeric_limits<int64_t>::max()) * i64(2);
  EXPECT_EQ(as_const_int(tilec::arith::simplify(huge)), nullptr);
  Expr min_div = bin(NodeKind::kDiv, i64(std::numeric_limits<int64_t>::min()), i64(-1));
  EXPECT_EQ(as_const_int(tilec::arith::simplify(min_div)), nullptr);
  EXPECT_EQ(show(tilec::arith::simplify(floordiv(i32(5), i32(0)))), "(5 // 0)");
  EXPECT_EQ(show(tilec::arith::simplify(bin(NodeKind::kMod, i32(5), i32(0)))), "(5 % 0)");
  // Unsigned results outside the type are left to wrap at run time.
  EXPECT_EQ(as_const_int(tilec::arith::simplify(u32(3) - u32(4))), nullptr);
  EXPECT_EQ(int_of(tilec::arith::simplify(u32(4) - u32(3))), 1);
}

TEST(ArithFold, Floats) {
  Expr r = tilec::arith::simplify(f32(1.5) * f32(2.0));
  ASSERT_TRUE(r.as<FloatImmNode>());
  EXPECT_EQ(r.as<FloatImmNode>()->value, 3.0);
  // float32 results are rounded to float32.
  Expr third = tilec::arith::simplify(bin(NodeKind::kDiv, f32(1.0), f32(3.0)));
  ASSERT_TRUE(third.as<FloatImmNode>());
  EXPECT_EQ(third.as<FloatImmNode>()->value, static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(simp(f32(1.0) < f32(2.0)), "True");
  // Half precision is not folded (it would need fp16 rounding).
  Expr h = float_imm(1.0, DataType::Float(16)) + float_imm(2.0, DataType::Float(16));
  EXPECT_FALSE(tilec::arith::simplify(h).as<FloatImmNode>());
  // x + 0.0 is not x for x = -0.0: float identities are not applied.
  Var x = make_var("x", DataType::Float(32));
  EXPECT_EQ(simp(x + f32(0.0)), "(x + 0.000000)");
}

TEST(ArithFold, Casts) {
  EXPECT_EQ(int_of(tilec::arith::simplify(cast(DataType::Int(8), i32(300)))), 44);
  EXPECT_EQ(int_of(tilec::arith::simplify(cast(DataType::Int(8), i32(200)))), -56);
  EXPECT_EQ(int_of(tilec::arith::simplify(cast(DataType::UInt(8), i32(-1)))), 255);
  EXPECT_EQ(int_of(tilec::arith::simplify(cast(DataType::Int(64), i32(-7)))), -7);
  EXPECT_EQ(simp(cast(DataType::Bool(), i32(7))), "True");
  EXPECT_EQ(int_of(tilec::arith::simplify(cast(DataType::Int(32), f32(-2.75)))), -2);
  Expr f = tilec::arith::simplify(cast(DataType::Float(32), i32(3)));
  ASSERT_TRUE(f.as<FloatImmNode>());
  EXPECT_EQ(f.as<FloatImmNode>()->value, 3.0);
  EXPECT_EQ(f->dtype, DataType::Float(32));
  // Out-of-range float -> int is undefined: kept.
  EXPECT_FALSE(as_const_int(tilec::arith::simplify(cast(DataType::Int(32), f32(1e20)))));
}

// ---------------------------------------------------------------- linear canonical form

TEST(ArithCanonical, CombinesTermsAndConstants) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_EQ(simp(x - x), "0");
  EXPECT_TRUE(tilec::arith::simplify((x + y) - x).same_as(y));
  EXPECT_EQ(simp(x + 3 + x * 2 - 5), "((x * 3) - 2)");
  EXPECT_EQ(simp((x + 1) * 4 - x * 4), "4");
  EXPECT_EQ(simp(y * 2 + x + (i32(7) - y * 2)), "(x + 7)");
  EXPECT_EQ(simp(i32(5) - x), "(5 - x)");
  EXPECT_EQ(simp(i32(0) - x * 3), "(0 - (x * 3))");
  EXPECT_EQ(simp(x * 0 + y * 1), "y");
}

TEST(ArithCanonical, OrderIsDeterministic) {
  Var a = make_var("a"), b = make_var("b"), c = make_var("c");
  std::string s1 = simp(c + a * 2 + b);
  std::string s2 = simp(b + c + a * 2);
  std::string s3 = simp(a * 2 + (b + c));
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(s1, s3);
  EXPECT_EQ(s1, "(((a * 2) + b) + c)");
  // Two distinct variables with the same name stay distinct and keep a stable order.
  Var x1 = make_var("x"), x2 = make_var("x");
  EXPECT_EQ(simp(x1 + x2 - x1), "x");
  EXPECT_EQ(simp((x1 + x2) - (x2 + x1)), "0");
}

TEST(ArithCanonical, ProductsOfVariables) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_EQ(simp(x * y - y * x), "0");
  EXPECT_EQ(simp((x * 2) * y - x * (y * 2)), "0");
  EXPECT_EQ(simp((x * 2) * y), "((x * y) * 2)");
}

TEST(ArithCanonical, RecombinesFloorDivAndMod) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_TRUE(tilec::arith::simplify(floordiv(x, 8) * 8 + floormod(x, 8)).same_as(x));
  EXPECT_EQ(simp(floordiv(x + y, 4) * 12 + floormod(x + y, 4) * 3), "((x * 3) + (y * 3))");
  EXPECT_TRUE(tilec::arith::simplify(bin(NodeKind::kDiv, x, i32(4)) * 4 + bin(NodeKind::kMod, x, i32(4))).same_as(x));
  // Not the identity: different divisors.
  EXPECT_EQ(simp(floordiv(x, 8) * 4 + floormod(x, 8)), "(((x // 8) * 4) + (x %% 8))");
}

TEST(ArithCanonical, UnsignedIsNotReassociated) {
  Var u = make_var("u", DataType::UInt(32));
  // u - 1 + 1 would be fine modulo 2^32, but uint sums are only folded, never reordered.
  EXPECT_EQ(simp(u + u32(0)), "u");
  EXPECT_EQ(simp(u - u), "0");
  EXPECT_EQ(simp((u + u32(2)) + u32(3)), "((u + 2) + 3)");
}

// ---------------------------------------------------------------- floordiv / floormod

TEST(ArithDivMod, SplitsMultiplesOfTheDivisor) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_EQ(simp(floordiv(x * 8 + y, 8)), "(x + (y // 8))");
  EXPECT_EQ(simp(floormod(x * 8 + y, 8)), "(y %% 8)");
  EXPECT_EQ(simp(floordiv(x * 8 + y + 17, 8)), "((x + ((y + 1) // 8)) + 2)");
  EXPECT_EQ(simp(floormod(x * 16 + 20, 8)), "4");
  EXPECT_EQ(simp(floordiv(x * 6, 4)), "(x + (x // 2))");  // 3x = 2x + x
  EXPECT_EQ(simp(floormod(x * 6, 4)), "((x %% 2) * 2)");
  // g*A + r with 0 <= r < g: floordiv(4x + 1, 8) = floordiv(x, 2).
  EXPECT_EQ(simp(floordiv(x * 4 + 1, 8)), "(x // 2)");
  EXPECT_EQ(simp(floormod(x * 4 + 1, 8)), "(((x %% 2) * 4) + 1)");
  // Negative divisors follow Python semantics too.
  EXPECT_EQ(simp(floordiv(x * -4 + y, -4)), "(x + (y // -4))");
}

TEST(ArithDivMod, UsesBounds) {
  Var i = make_var("i"), j = make_var("j");
  Analyzer an;
  an.bind_range(i, i32(0), i32(16));
  an.bind_range(j, i32(0), i32(4));
  EXPECT_EQ(show(an.simplify(floordiv(i, 16))), "0");
  EXPECT_TRUE(an.simplify(floormod(i, 16)).same_as(i));
  EXPECT_EQ(show(an.simplify(floordiv(i, 8))), "(i // 8)");
  EXPECT_EQ(show(an.simplify(floordiv(j * 16 + i, 16))), "j");
  EXPECT_TRUE(an.simplify(floormod(j * 16 + i, 16)).same_as(i));
  EXPECT_EQ(show(an.simplify(floordiv(i + 16, 16))), "1");
  EXPECT_EQ(show(an.simplify(floormod(i + 32, 16))), "i");
  // Non-constant divisor with a known positive lower bound.
  Var n = make_var("n");
  an.bind_bound(n, 16, 1024);
  EXPECT_EQ(show(an.simplify(floordiv(i, n))), "0");
  EXPECT_TRUE(an.simplify(floormod(i, n)).same_as(i));
  // Without the bound nothing is assumed.
  EXPECT_EQ(simp(floordiv(i, 16)), "(i // 16)");
}

TEST(ArithDivMod, NestedDivisions) {
  Var x = make_var("x");
  EXPECT_EQ(simp(floordiv(floordiv(x, 4), 8)), "(x // 32)");
  EXPECT_EQ(simp(floormod(floormod(x, 16), 4)), "(x %% 4)");
  // 16 does not divide 24: kept.
  EXPECT_EQ(simp(floormod(floormod(x, 24), 16)), "((x %% 24) %% 16)");
  EXPECT_EQ(simp(floordiv(floordiv(x, 4) + 2, 8)), "((x + 8) // 32)");
  EXPECT_EQ(simp(bin(NodeKind::kDiv, bin(NodeKind::kDiv, x, i32(4)), i32(8))), "(x / 32)");
  EXPECT_EQ(simp(bin(NodeKind::kMod, bin(NodeKind::kMod, x, i32(16)), i32(4))), "(x % 4)");
}

TEST(ArithDivMod, CongruenceDecidesRemainders) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_EQ(simp(floormod(min(x * 16, y * 32) + 8, 8)), "0");
  EXPECT_EQ(simp(floormod(max(x * 16 + 4, y * 8 + 4), 4)), "0");
}

TEST(ArithDivMod, TruncatingDivisionKeepsCSemantics) {
  Var x = make_var("x"), i = make_var("i");
  // x may be negative: (x*8 + 7) / 8 is not x + 0 for x = -1 ( -1/8 == 0 in C).
  EXPECT_EQ(simp(bin(NodeKind::kDiv, x * 8 + 7, i32(8))), "(((x * 8) + 7) / 8)");
  EXPECT_EQ(simp(bin(NodeKind::kDiv, x, i32(1))), "x");
  EXPECT_EQ(simp(bin(NodeKind::kMod, x, i32(1))), "0");
  EXPECT_EQ(simp(bin(NodeKind::kMod, x, i32(-1))), "0");
  Analyzer an;
  an.bind_range(i, i32(0), i32(64));
  Var j = make_var("j");
  an.bind_range(j, i32(0), i32(8));
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kDiv, j * 8 + i, i32(8)))), "(j + (i / 8))");
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kMod, j * 8 + i, i32(8)))), "(i % 8)");
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kDiv, i, i32(64)))), "0");
  // |y| < 8 with y of either sign: y % 8 == y, y / 8 == 0.
  Var y = make_var("y");
  an.bind_bound(y, -7, 7);
  EXPECT_TRUE(an.simplify(bin(NodeKind::kMod, y, i32(8))).same_as(y));
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kDiv, y, i32(8)))), "0");
  EXPECT_EQ(show(an.simplify(floordiv(y, 8))), "(y // 8)");  // -1 or 0
}

// ---------------------------------------------------------------- min / max / select

TEST(ArithMinMax, DecidedByBoundsOfTheDifference) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_TRUE(tilec::arith::simplify(min(x, x + 1)).same_as(x));
  EXPECT_EQ(simp(max(x, x + 1)), "(x + 1)");
  EXPECT_TRUE(tilec::arith::simplify(min(x, x)).same_as(x));
  EXPECT_EQ(simp(min(min(x, i32(4)), i32(8))), "min(x, 4)");
  EXPECT_EQ(simp(max(i32(3), max(x, i32(9)))), "max(x, 9)");
  EXPECT_EQ(simp(min(i32(3), y)), "min(y, 3)");
  EXPECT_EQ(simp(max(y, x)), "max(x, y)");
  Analyzer an;
  an.bind_range(x, i32(0), i32(128));
  EXPECT_EQ(show(an.simplify(min(x, i32(128)))), "x");
  EXPECT_EQ(show(an.simplify(max(x, i32(0)))), "x");
  EXPECT_EQ(show(an.simplify(min(x, i32(100)))), "min(x, 100)");
}

TEST(ArithSelect, FoldsConditionsAndEqualBranches) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_TRUE(tilec::arith::simplify(select(bool_imm(true), x, y)).same_as(x));
  EXPECT_TRUE(tilec::arith::simplify(select(x < y, x + 0, x)).same_as(x));
  Analyzer an;
  an.bind_range(x, i32(0), i32(16));
  EXPECT_TRUE(an.simplify(select(x < i32(16), x, y)).same_as(x));
  EXPECT_TRUE(an.simplify(select(x >= i32(16), x, y)).same_as(y));
}

// ---------------------------------------------------------------- comparisons and logic

TEST(ArithCompare, DecidedByBounds) {
  Var i = make_var("i");
  Analyzer an;
  an.bind_range(i, i32(0), i32(128));
  EXPECT_EQ(show(an.simplify(i < i32(128))), "True");
  EXPECT_EQ(show(an.simplify(i < i32(127))), "(i < 127)");
  EXPECT_EQ(show(an.simplify(i >= i32(0))), "True");
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kEQ, i * 2 + 1, i32(64)))), "False");  // odd != even
  EXPECT_EQ(show(an.simplify(i + 1 > i)), "True");
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kEQ, i, i32(200)))), "False");
}

TEST(ArithCompare, NormalizesUndecidedComparisons) {
  Var x = make_var("x"), y = make_var("y");
  EXPECT_EQ(simp(x + 3 < i32(8)), "(x < 5)");
  EXPECT_EQ(simp(x - y < i32(0)), "(x < y)");
  EXPECT_EQ(simp(i32(5) < x), "(x > 5)");
  EXPECT_EQ(simp(x * 4 < i32(10)), "(x < 3)");   // 4x < 10  <=>  x <= 2
  EXPECT_EQ(simp(x * 4 <= i32(10)), "(x <= 2)");
  EXPECT_EQ(simp(x * 4 > i32(10)), "(x > 2)");
  EXPECT_EQ(simp(x * 4 >= i32(10)), "(x >= 3)");
  EXPECT_EQ(simp(bin(NodeKind::kEQ, x * 4, i32(10))), "False");
  EXPECT_EQ(simp(bin(NodeKind::kNE, x * 4, i32(12))), "(x != 3)");
  EXPECT_EQ(simp(x * 2 + y * 4 < i32(7)), "((x + (y * 2)) < 4)");
}

TEST(ArithCompare, SymbolicLoopBounds) {
  Var i = make_var("i"), n = make_var("n"), k = make_var("k");
  Analyzer an;
  an.bind_bound(n, 1, 4096);
  an.bind_range(i, i32(0), n);
  EXPECT_EQ(show(an.simplify(i < n)), "True");
  EXPECT_EQ(show(an.simplify(i <= n - 1)), "True");
  EXPECT_EQ(show(an.simplify(i >= n)), "False");
  EXPECT_EQ(show(an.simplify(i < n - 1)), "(i < (n - 1))");
  an.bind_range(k, i32(0), floordiv(n + 127, 128));
  EXPECT_TRUE(an.can_prove(k * 128 < n + 127));
}

TEST(ArithLogic, BooleanIdentities) {
  Var x = make_var("x"), y = make_var("y");
  Expr p = x < y;
  EXPECT_EQ(simp(p && bool_imm(true)), "(x < y)");
  EXPECT_EQ(simp(p && bool_imm(false)), "False");
  EXPECT_EQ(simp(p || bool_imm(true)), "True");
  EXPECT_EQ(simp(p || bool_imm(false)), "(x < y)");
  EXPECT_EQ(simp(p && p), "(x < y)");
  EXPECT_EQ(simp(p && logical_not(p)), "False");
  EXPECT_EQ(simp(logical_not(logical_not(p))), "(x < y)");
  EXPECT_EQ(simp(logical_not(p)), "(x >= y)");
  EXPECT_EQ(simp(logical_not(bin(NodeKind::kEQ, x, y))), "(x != y)");
  // Floats: not(a < b) is not a >= b when a is NaN.
  Var f = make_var("f", DataType::Float(32));
  EXPECT_EQ(simp(logical_not(f < f32(1.0))), "not (f < 1.000000)");
}

// ---------------------------------------------------------------- bindings and identity

TEST(ArithBindings, LetValuesAreSubstituted) {
  Var x = make_var("x"), t = make_var("t"), u = make_var("u");
  Analyzer an;
  an.bind_range(x, i32(0), i32(8));
  an.bind_value(t, x * 4);
  an.bind_value(u, t + 2);
  EXPECT_EQ(show(an.simplify(u - x * 4)), "2");
  EXPECT_EQ(show(an.simplify(floormod(u, 4))), "2");
  EXPECT_EQ(show(an.simplify(t < i32(32))), "True");
  EXPECT_EQ(an.const_int_bound(u).max_value, 30);
}

TEST(ArithBindings, UnchangedExpressionsKeepTheirIdentity) {
  Var x = make_var("x"), y = make_var("y");
  Expr e = floordiv(x, 4) + y * 3;
  Expr once = tilec::arith::simplify(e);
  Analyzer an;
  EXPECT_TRUE(an.simplify(once).same_as(once));
  Expr c = min(x, y);
  EXPECT_TRUE(an.simplify(c).same_as(c));
  Expr l = buffer_load(make_buffer("A", {i32(16)}, DataType::Float(32), Scope::kGlobal), {x});
  EXPECT_TRUE(an.simplify(l).same_as(l));
  Expr l2 = buffer_load(make_buffer("B", {i32(16)}, DataType::Float(32), Scope::kGlobal), {x + 0});
  Expr s2 = an.simplify(l2);
  ASSERT_TRUE(s2.as<BufferLoadNode>());
  EXPECT_TRUE(s2.as<BufferLoadNode>()->indices[0].same_as(x));
}

TEST(ArithPerformance, LongSumsStayFast) {
  // A 2000-term sum and a deep nest of floordiv/floormod must simplify quickly
  // (linear-form collection is done once per sum tree, not per node).
  std::vector<Var> vs;
  for (int k = 0; k < 50; ++k) vs.push_back(make_var("v" + std::to_string(k)));
  Expr sum = i32(0);
  for (int k = 0; k < 2000; ++k) sum = sum + vs[k % 50] * (k % 7 + 1) - i32(1);
  Expr s = tilec::arith::simplify(sum);
  std::string text = show(s);
  EXPECT_NE(text.find("v49"), std::string::npos);
  Expr deep = vs[0];
  for (int k = 0; k < 60; ++k) deep = floordiv(floormod(deep * 3 + vs[k % 50], 1024) + 5, 2);
  Analyzer an;
  for (const auto& v : vs) an.bind_range(v, i32(0), i32(64));
  Expr d = an.simplify(deep);
  EXPECT_TRUE(d.defined());
}

TEST(ArithRobustness, EveryNodeKindAndTypeIsAccepted) {
  Var x = make_var("x"), l = make_var("l", DataType::Int(64));
  Var u8 = make_var("u8", DataType::UInt(8)), f = make_var("f", DataType::Float(16));
  Var p = make_var("p", DataType::Bool());
  Expr vec = ramp(x * 4, i32(1), 4);
  Expr loaded = buffer_load(make_buffer("A", {i32(64)}, DataType::Float(16), Scope::kGlobal), {vec});
  std::vector<Expr> exprs = {
      vec + broadcast(i32(2), 4),
      bin(NodeKind::kLT, vec, broadcast(x, 4)),
      select(broadcast(p, 4), vec, vec),
      logical_not(bin(NodeKind::kEQ, vec, vec)),
      loaded * broadcast(f, 4),
      cast(DataType::Int(64), x) * l + l,
      floordiv(l * 8 + 3, int_imm(8, DataType::Int(64))),
      u8 + int_imm(250, DataType::UInt(8)),
      floordiv(u8, int_imm(4, DataType::UInt(8))),
      bin(NodeKind::kLT, u8, int_imm(255, DataType::UInt(8))),
      min(f, float_imm(1.0, DataType::Float(16))),
      p && logical_not(p),
      bin(NodeKind::kEQ, p, bool_imm(true)),
      call(DataType::Int(32), "tilec.thread_idx", {}) + i32(0),
      string_imm("s"),
      cast(DataType::Float(32), x + i32(1)),
  };
  Analyzer an;
  an.bind_range(x, i32(0), i32(16));
  for (const Expr& e : exprs) {
    SCOPED_TRACE(show(e));
    Expr s = an.simplify(e);
    ASSERT_TRUE(s.defined());
    EXPECT_EQ(s->dtype, e->dtype);
    an.const_int_bound(e);
    an.modular_set(e);
    an.can_prove_divisible(e, 4);
    if (e->dtype.is_bool()) an.can_prove(e);
  }
  EXPECT_EQ(show(an.simplify(floordiv(l * 8 + 3, int_imm(8, DataType::Int(64))))), "l");
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kLT, u8, int_imm(255, DataType::UInt(8))))), "(u8 < 255)");
  EXPECT_EQ(show(an.simplify(bin(NodeKind::kLE, u8, int_imm(255, DataType::UInt(8))))), "True");
  EXPECT_EQ(show(an.simplify(p && logical_not(p))), "False");
  EXPECT_EQ(an.const_int_bound(vec).max_value, 63);
  EXPECT_EQ(an.modular_set(vec).coeff, 1);
  EXPECT_TRUE(an.can_prove_divisible(ramp(x * 4, i32(4), 4), 4));
}

}  // namespace
