// Unit tests of const_int_bound, modular_set and the can_prove family.
#include <gtest/gtest.h>

#include <limits>

#include "arith_test_util.h"
#include "tilec/arith/analyzer.h"

namespace {

using namespace tilec::ir;
using arith_test::show;
using tilec::arith::Analyzer;
using tilec::arith::ConstIntBound;
using tilec::arith::ModularSet;

Expr i32(int64_t v) { return int_imm(v, DataType::Int(32)); }
Expr bin(NodeKind k, Expr a, Expr b) { return binary(k, std::move(a), std::move(b)); }

#define EXPECT_BOUND(an, e, lo, hi)                              \
  do {                                                           \
    ConstIntBound b_ = (an).const_int_bound(e);                  \
    EXPECT_EQ(b_.min_value, (lo)) << show(e);                    \
    EXPECT_EQ(b_.max_value, (hi)) << show(e);                    \
  } while (0)

TEST(ArithBound, DefaultsToTheTypeRange) {
  Analyzer an;
  Var x = make_var("x");
  EXPECT_BOUND(an, x, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  Var u = make_var("u", DataType::UInt(8));
  EXPECT_BOUND(an, u, 0, 255);
  Var l = make_var("l", DataType::Int(64));
  EXPECT_BOUND(an, l, ConstIntBound::kNegInf, ConstIntBound::kPosInf);
  EXPECT_BOUND(an, i32(7), 7, 7);
  EXPECT_BOUND(an, x < i32(3), 0, 1);
}

TEST(ArithBound, ArithmeticOnRanges) {
  Analyzer an;
  Var x = make_var("x"), y = make_var("y");
  an.bind_range(x, i32(0), i32(16));  // [0, 15]
  an.bind_bound(y, -4, 3);
  EXPECT_BOUND(an, x, 0, 15);
  EXPECT_BOUND(an, x + y, -4, 18);
  EXPECT_BOUND(an, x - y, -3, 19);
  EXPECT_BOUND(an, x * y, -60, 45);
  EXPECT_BOUND(an, x * i32(-2) + i32(1), -29, 1);
  EXPECT_BOUND(an, min(x, y), -4, 3);
  EXPECT_BOUND(an, max(x, y), 0, 15);
  EXPECT_BOUND(an, select(x < i32(4), y, x), -4, 15);
}

TEST(ArithBound, Division) {
  Analyzer an;
  Var x = make_var("x"), y = make_var("y"), d = make_var("d"), s = make_var("s");
  an.bind_bound(x, -9, 17);
  an.bind_bound(y, 0, 100);
  an.bind_bound(d, 2, 4);
  an.bind_bound(s, -3, 3);  // a divisor of either sign (zero is excluded as undefined)
  EXPECT_BOUND(an, floordiv(x, i32(4)), -3, 4);
  EXPECT_BOUND(an, bin(NodeKind::kDiv, x, i32(4)), -2, 4);
  EXPECT_BOUND(an, floormod(x, i32(4)), 0, 3);
  EXPECT_BOUND(an, bin(NodeKind::kMod, x, i32(4)), -3, 3);
  EXPECT_BOUND(an, floordiv(x, i32(-4)), -5, 2);
  EXPECT_BOUND(an, floormod(x, i32(-4)), -3, 0);
  EXPECT_BOUND(an, floordiv(y, d), 0, 50);
  EXPECT_BOUND(an, floormod(y, d), 0, 3);
  EXPECT_BOUND(an, floordiv(x, s), -17, 17);
  EXPECT_BOUND(an, floormod(y + 1, i32(128)), 1, 101);  // already below the divisor
}

TEST(ArithBound, CastsAndVectors) {
  Analyzer an;
  Var x = make_var("x");
  an.bind_bound(x, -5, 300);
  EXPECT_BOUND(an, cast(DataType::Int(64), x), -5, 300);
  // 300 does not fit int8: the whole int8 range.
  EXPECT_BOUND(an, cast(DataType::Int(8), x), -128, 127);
  EXPECT_BOUND(an, ramp(x * i32(4), i32(1), 4), -20, 1203);
  EXPECT_BOUND(an, broadcast(x, 8), -5, 300);
}

TEST(ArithBound, WrappingTypes) {
  Analyzer an;
  Var a = make_var("a", DataType::UInt(32)), b = make_var("b", DataType::UInt(32));
  an.bind_bound(a, 0, 10);
  an.bind_bound(b, 0, 10);
  // a - b may wrap around: nothing better than the type range.
  EXPECT_BOUND(an, a - b, 0, 4294967295LL);
  EXPECT_BOUND(an, a + b, 0, 20);
  // int8 arithmetic wraps in practice too: 100..127 doubled leaves int8.
  Var c = make_var("c", DataType::Int(8));
  an.bind_bound(c, 100, 127);
  EXPECT_BOUND(an, c + c, -128, 127);
  Expr one = int_imm(1, DataType::Int(8));
  EXPECT_EQ(show(an.simplify((c + one) - one)), "((c + 1) - 1)");
}

TEST(ArithBound, SymbolicRangeAndSimplifiedForm) {
  Analyzer an;
  Var n = make_var("n"), i = make_var("i"), x = make_var("x");
  an.bind_bound(n, 1, 1024);
  an.bind_range(i, i32(0), n);
  EXPECT_BOUND(an, i, 0, 1023);
  // x - x is 0 although x is unbounded: the simplified form is used as well.
  EXPECT_BOUND(an, x - x + i32(3), 3, 3);
}

TEST(ArithModular, CoeffAndBase) {
  Analyzer an;
  Var x = make_var("x"), y = make_var("y");
  auto ms = [&](const Expr& e) { return an.modular_set(e); };
  ModularSet m = ms(x * 16 + 8);
  EXPECT_EQ(m.coeff, 16);
  EXPECT_EQ(m.base, 8);
  m = ms(x * 16 + y * 24 + 4);
  EXPECT_EQ(m.coeff, 8);
  EXPECT_EQ(m.base, 4);
  m = ms(x * 16 - 4);
  EXPECT_EQ(m.coeff, 16);
  EXPECT_EQ(m.base, 12);
  m = ms((x * 4 + 2) * (y * 6));
  EXPECT_EQ(m.coeff, 12);
  EXPECT_EQ(m.base, 0);
  m = ms(floordiv(x * 32 + 16, 8));
  EXPECT_EQ(m.coeff, 4);
  EXPECT_EQ(m.base, 2);
  m = ms(floormod(x * 6 + 1, 4));  // x*6 + 1 is odd, so is its remainder mod 4
  EXPECT_EQ(m.coeff, 2);
  EXPECT_EQ(m.base, 1);
  m = ms(min(x * 8, y * 12 + 4));
  EXPECT_EQ(m.coeff, 4);
  EXPECT_EQ(m.base, 0);
  m = ms(i32(7));
  EXPECT_EQ(m.coeff, 0);
  EXPECT_EQ(m.base, 7);
  m = ms(x);
  EXPECT_EQ(m.coeff, 1);
}

TEST(ArithProve, Comparisons) {
  Analyzer an;
  Var i = make_var("i"), j = make_var("j");
  an.bind_range(i, i32(0), i32(128));
  an.bind_range(j, i32(0), i32(4));
  EXPECT_TRUE(an.can_prove(i < i32(128)));
  EXPECT_FALSE(an.can_prove(i < i32(127)));
  EXPECT_TRUE(an.can_prove(j * 128 + i < i32(512)));
  EXPECT_FALSE(an.can_prove(j * 128 + i < i32(511)));
  EXPECT_TRUE(an.can_prove(i + 1 > i));
  EXPECT_TRUE(an.can_prove((i >= i32(0)) && (j < i32(4))));
  EXPECT_FALSE(an.can_prove((i >= i32(0)) && (j < i32(3))));
  EXPECT_TRUE(an.can_prove((i < i32(0)) || (j < i32(4))));
  EXPECT_TRUE(an.can_prove(floordiv(i, 16) < i32(8)));
  EXPECT_TRUE(an.can_prove(bin(NodeKind::kEQ, floormod(i * 4 + j, 4), j + 0)));
  EXPECT_TRUE(an.can_prove_less(i, 128));
  EXPECT_FALSE(an.can_prove_less(i, 100));
  EXPECT_TRUE(an.can_prove_less(i, int64_t{1} << 40));  // beyond int32: decided by bounds
  EXPECT_FALSE(an.can_prove(i32(5)  < i32(3)));
  // Not a bool: never "proved".
  EXPECT_FALSE(an.can_prove(i32(1)));
}

TEST(ArithProve, EqualAndDivisible) {
  Analyzer an;
  Var x = make_var("x"), y = make_var("y"), tx = make_var("tx");
  EXPECT_TRUE(an.can_prove_equal(x * 2 + y, y + x + x));
  EXPECT_TRUE(an.can_prove_equal(floordiv(x, 4) * 4 + floormod(x, 4), x));
  EXPECT_FALSE(an.can_prove_equal(floordiv(x, 4) * 4, x));
  EXPECT_TRUE(an.can_prove_divisible(x * 16 + 32, 16));
  EXPECT_TRUE(an.can_prove_divisible(x * 16 + 32, 8));
  EXPECT_FALSE(an.can_prove_divisible(x * 16 + 8, 16));
  EXPECT_TRUE(an.can_prove_divisible(x * 16 + 8, 8));
  EXPECT_TRUE(an.can_prove_divisible(x * 16 + 8, -8));
  EXPECT_FALSE(an.can_prove_divisible(x, 2));
  EXPECT_FALSE(an.can_prove_divisible(x, 0));
  an.bind_range(tx, i32(0), i32(128));
  // A typical vectorized access: row * 64 + (tx % 8) * 8 is 8-aligned.
  EXPECT_TRUE(an.can_prove_divisible(floordiv(tx, 8) * 64 + floormod(tx, 8) * 8, 8));
  EXPECT_FALSE(an.can_prove_divisible(floordiv(tx, 8) * 64 + floormod(tx, 8) * 8, 16));
}

TEST(ArithProve, TiledBoundsCheck) {
  // for bx in range(ceildiv(n, 128)): for tx in range(128): guard bx*128 + tx < n
  // is needed (not provable); bx*128 + tx < n + 127 always holds.
  Analyzer an;
  Var n = make_var("n"), bx = make_var("bx"), tx = make_var("tx");
  an.bind_bound(n, 1, 1 << 20);
  an.bind_range(bx, i32(0), ceildiv(n, i32(128)));
  an.bind_range(tx, i32(0), i32(128));
  EXPECT_FALSE(an.can_prove(bx * 128 + tx < n));
  EXPECT_TRUE(an.can_prove(bx * 128 + tx < n + 127));
  EXPECT_TRUE(an.can_prove(bx * 128 < n));
}

TEST(ArithProve, LetValues) {
  Analyzer an;
  Var i = make_var("i"), off = make_var("off");
  an.bind_range(i, i32(0), i32(32));
  an.bind_value(off, i * 4);
  EXPECT_TRUE(an.can_prove(off < i32(128)));
  EXPECT_TRUE(an.can_prove_divisible(off, 4));
  EXPECT_EQ(an.const_int_bound(off).max_value, 124);
}

}  // namespace
