// Pass narrow_guarded_parallel_loops: before / expected T-script.
#include <gtest/gtest.h>

#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/passes/passes.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

// for s in range(2): for i, j in T.Parallel(32, 8): if <guard(i, j)>: H[i, j] = F[<row(i, s)>, j]
PrimFunc half_store(const std::function<Expr(Var, Var)>& guard, const std::function<Expr(Var, Var)>& row,
                    Scope src_scope = Scope::kFragment) {
  Builder b("k");
  Buffer O = b.tensor("O", {int_imm(32), int_imm(8)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Buffer F = b.alloc("F", {int_imm(32), int_imm(8)}, Float32(), src_scope);
  Buffer H = b.alloc("H", {int_imm(16), int_imm(8)}, Float32(), Scope::kSharedDyn);
  Var s = b.begin_for("s", int_imm(0), int_imm(2), ForKind::kSerial);
  auto ij = b.begin_loop_nest({"i", "j"}, {int_imm(32), int_imm(8)}, ForKind::kParallel);
  b.begin_if(guard(ij[0], ij[1]));
  b.store(H, {ij[0], ij[1]}, buffer_load(F, {row(ij[0], s), ij[1]}));
  b.end_frame();
  b.end_frame();
  b.end_frame();
  b.store(O, {int_imm(0), int_imm(0)}, buffer_load(H, {int_imm(0), int_imm(0)}));
  b.end_frame();
  return b.finish();
}

std::string narrowed(const PrimFunc& f) {
  passes::PassContext ctx;
  return script(passes::narrow_guarded_parallel_loops_pass().run(f, ctx));
}

Expr lt(Var v, int64_t c) { return binary(NodeKind::kLT, v, int_imm(c)); }

Expr block_row(Var i, Var s) { return i + s * 16; }

TEST(NarrowGuardedParallelLoops, AGuardOnABlockReadNarrowsTheLoop) {
  std::string out = narrowed(half_store([](Var i, Var) { return lt(i, 16); }, block_row));
  EXPECT_NE(out.find("        for s in T.serial(2):\n"
                     "            for i, j in T.Parallel(16, 8):\n"
                     "                H[i, j] = F[i + s * 16, j]\n"),
            std::string::npos)
      << out;
}

TEST(NarrowGuardedParallelLoops, OtherConjunctsStayAndMirroredBoundsCount) {
  auto guard = [](Var i, Var j) { return binary(NodeKind::kAnd, binary(NodeKind::kGT, int_imm(16), i), lt(j, 4)); };
  std::string out = narrowed(half_store(guard, block_row));
  EXPECT_NE(out.find("for i, j in T.Parallel(16, 8):\n                if j < 4:\n"), std::string::npos) << out;
}

TEST(NarrowGuardedParallelLoops, LoopsThatIndexFragmentsDirectlyAreLeftAlone) {
  // F[i, j]: the loop keeps the fragment's shape (its layout follows the fragment).
  PrimFunc direct = half_store([](Var i, Var) { return lt(i, 16); }, [](Var i, Var) { return Expr(i); });
  EXPECT_EQ(narrowed(direct), script(direct));
  // A shared source: no fragment layout to follow.
  PrimFunc shared = half_store([](Var i, Var) { return lt(i, 16); }, block_row, Scope::kSharedDyn);
  EXPECT_EQ(narrowed(shared), script(shared));
  // A bound that keeps every iteration, or a block that is not a multiple of it.
  PrimFunc all = half_store([](Var i, Var) { return lt(i, 32); }, block_row);
  EXPECT_EQ(narrowed(all), script(all));
  PrimFunc odd = half_store([](Var i, Var) { return lt(i, 12); }, block_row);
  EXPECT_EQ(narrowed(odd), script(odd));
}

}  // namespace
