// Pass unswitch_uniform_conditions: the "holds on the whole nest" test is checked by brute
// force against the condition at every point, for every step of the loop around the nest.
#include <gtest/gtest.h>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"
#include "tilec/target/target.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

constexpr int64_t kSteps = 12, kRows = 8, kCols = 4, kBlocks = 5, kLens = 40;

struct Program {
  PrimFunc f;
  Var k, bx, n, i, j;
  Expr cond;
};

// for k in range(12): for i, j in T.Parallel(8, 4): S[i, j] = if_then_else(cond, 0, -inf)
// (bx a block index, n a symbolic length), or `if cond: S[i, j] = 1` with `as_if`.
Program masked(const std::function<Expr(Var k, Var bx, Var n, Var i, Var j)>& cond, bool as_if = false,
               bool in_loop = true, bool with_let = false, bool computing = false) {
  Program p;
  Builder b("k");
  p.n = b.dynamic("n");
  Buffer O = b.tensor("O", {p.n, int_imm(kCols)}, Float32());
  p.bx = b.begin_kernel({int_imm(kBlocks)}, {128})[0];
  Buffer S = b.alloc("S", {int_imm(kRows), int_imm(kCols)}, Float32(), Scope::kFragment);
  if (in_loop) p.k = b.begin_for("k", int_imm(0), int_imm(kSteps), ForKind::kSerial);
  else p.k = b.let("k", int_imm(3));
  auto ij = b.begin_loop_nest({"i", "j"}, {int_imm(kRows), int_imm(kCols)}, ForKind::kParallel);
  p.i = ij[0];
  p.j = ij[1];
  p.cond = cond(p.k, p.bx, p.n, p.i, p.j);
  Expr c = with_let ? Expr(b.let("live", p.cond)) : p.cond;
  if (as_if) {
    b.begin_if(c);
    b.store(S, {p.i, p.j}, float_imm(1.0));
    b.end_frame();
  } else {
    Expr kept = computing ? buffer_load(S, {p.i, p.j}) * float_imm(2.0) : float_imm(0.0);
    b.store(S, {p.i, p.j}, select(c, kept, float_imm(-1e30)));
  }
  b.end_frame();
  if (in_loop) b.end_frame();
  b.store(O, {int_imm(0), int_imm(0)}, buffer_load(S, {int_imm(0), int_imm(0)}));
  b.end_frame();
  p.f = b.finish();
  return p;
}

PrimFunc run(const PrimFunc& f, bool on = true, const std::string& target = "sm_90a") {
  passes::PassContext ctx(target::parse_target(target));
  ctx.set("tilec.unswitch_uniform_conditions", on);
  return passes::unswitch_uniform_conditions_pass().run(f, ctx);
}

// The condition of the first If of the body (pre-order), or null.
Expr first_if_cond(const PrimFunc& f) {
  Expr found;
  for_each_node(f->body, [&](const Node* n) {
    if (!found && n->kind == NodeKind::kIf) found = static_cast<const IfNode*>(n)->cond;
  });
  return found;
}

bool value_at(const Expr& e, const VarMap& at) {
  Expr v = arith::simplify(substitute(e, at));
  const int64_t* c = as_const_int(v);
  EXPECT_TRUE(c) << "not a constant: " << script(v);
  return c && *c != 0;
}

// For every (k, bx, n): the unswitched test implies the condition at every (i, j); with
// `exact`, it is also true whenever the condition is.
void check_sound(const Program& p, bool exact) {
  PrimFunc out = run(p.f);
  Expr test = first_if_cond(out);
  ASSERT_TRUE(test) << script(out);
  int holds_somewhere = 0;
  for (int64_t k = 0; k < kSteps; ++k)
    for (int64_t bx = 0; bx < kBlocks; ++bx)
      for (int64_t n = 0; n < kLens; n += 3) {
        VarMap at = {{p.k.get(), int_imm(k)}, {p.bx.get(), int_imm(bx)}, {p.n.get(), int_imm(n)}};
        bool all = true;
        for (int64_t i = 0; i < kRows; ++i)
          for (int64_t j = 0; j < kCols; ++j) {
            VarMap pt = at;
            pt[p.i.get()] = int_imm(i);
            pt[p.j.get()] = int_imm(j);
            all = all && value_at(p.cond, pt);
          }
        const bool u = value_at(test, at);
        EXPECT_TRUE(!u || all) << "k=" << k << " bx=" << bx << " n=" << n << ": " << script(test);
        if (exact) EXPECT_EQ(u, all) << "k=" << k << " bx=" << bx << " n=" << n << ": " << script(test);
        holds_somewhere += u;
      }
  EXPECT_GT(holds_somewhere, 0) << script(test);
}

Expr ge(Expr a, Expr b) { return binary(NodeKind::kGE, a, b); }
Expr lt(Expr a, Expr b) { return binary(NodeKind::kLT, a, b); }

TEST(UnswitchUniformConditions, CausalMaskIsExact) {
  // Attention's causal mask: query row bx * 8 + i sees key k * 4 + j.
  check_sound(masked([](Var k, Var bx, Var, Var i, Var j) { return ge(bx * 8 + i, k * 4 + j); }), true);
}

TEST(UnswitchUniformConditions, RaggedKeysAndConjunctionsAreExact) {
  auto both = [](Var k, Var bx, Var n, Var i, Var j) {
    return binary(NodeKind::kAnd, lt(k * 4 + j, n), binary(NodeKind::kLE, bx * 8 + i, k * 4 + j));
  };
  check_sound(masked(both), true);
  check_sound(masked(both, /*as_if=*/true), true);
  check_sound(masked(both, false, true, /*with_let=*/true), true);
}

TEST(UnswitchUniformConditions, NegativeCoefficientsNotAndOrAreSound) {
  check_sound(masked([](Var k, Var, Var, Var i, Var j) { return binary(NodeKind::kGT, (int_imm(7) - i) * 2 + k, j * 3); }),
              true);
  check_sound(masked([](Var k, Var bx, Var, Var i, Var j) { return logical_not(lt(bx * 8 + i, k * 4 + j)); }),
              true);
  // `or` keeps a sufficient test (either side everywhere), not an exact one.
  check_sound(masked([](Var k, Var bx, Var n, Var i, Var j) {
                return binary(NodeKind::kOr, lt(k * 4 + j, n), ge(bx * 8 + i, k * 4 + j));
              }),
              false);
}

TEST(UnswitchUniformConditions, TheUnmaskedCopyOfAClearingMaskIsAFill) {
  std::string out = script(run(masked([](Var k, Var bx, Var, Var i, Var j) { return ge(bx * 8 + i, k * 4 + j); }).f));
  EXPECT_NE(out.find("T.fill(S"), std::string::npos) << out;
  EXPECT_NE(out.find("else:"), std::string::npos) << out;
  EXPECT_NE(out.find("T.if_then_else("), std::string::npos) << out;  // the masked copy stays
}

TEST(UnswitchUniformConditions, AComputingCopyIsKeptOnWgmmaTargetsOnly) {
  // S = if_then_else(c, S * 2, -inf) (the backward's P): on sm_90a the unmasked copy computes
  // without the select; on sm_80 (no 240-register warpgroups) the nest stays as written.
  Program p = masked([](Var k, Var bx, Var, Var i, Var j) { return ge(bx * 8 + i, k * 4 + j); }, false, true, false,
                     /*computing=*/true);
  check_sound(p, true);
  std::string out = script(run(p.f));
  EXPECT_NE(out.find("S[i, j] = S[i, j] * T.float32(2)"), std::string::npos) << out;
  EXPECT_EQ(script(run(p.f, true, "sm_80")), script(p.f));
  // A copy that becomes a fill is worth it everywhere.
  Program clear = masked([](Var k, Var bx, Var, Var i, Var j) { return ge(bx * 8 + i, k * 4 + j); });
  EXPECT_NE(script(run(clear.f, true, "sm_80")).find("T.fill(S"), std::string::npos);
}

TEST(UnswitchUniformConditions, WhatCannotBeDecidedOrIsOutsideALoopIsLeftAlone) {
  auto causal = [](Var k, Var bx, Var, Var i, Var j) { return ge(bx * 8 + i, k * 4 + j); };
  // Off, outside a sequential loop, a product of two nest variables, an equality.
  Program p = masked(causal);
  EXPECT_EQ(script(run(p.f, false)), script(p.f));
  Program outside = masked(causal, false, /*in_loop=*/false);
  EXPECT_EQ(script(run(outside.f)), script(outside.f));
  Program product = masked([](Var k, Var, Var, Var i, Var j) { return lt(i * j, k); });
  EXPECT_EQ(script(run(product.f)), script(product.f));
  Program eq = masked([](Var k, Var, Var, Var i, Var) { return binary(NodeKind::kEQ, i, k); });
  EXPECT_EQ(script(run(eq.f)), script(eq.f));
}

}  // namespace
