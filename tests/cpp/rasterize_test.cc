#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tilec/ir/builder.h"
#include "tilec/passes/passes.h"

using namespace tilec::ir;

namespace {

// Evaluates the integer expressions the pass produces.
int64_t eval(const Expr& e, const std::map<const VarNode*, int64_t>& env) {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* v = e.as<VarNode>()) return env.at(v);
  if (auto* c = e.as<CastNode>()) return eval(c->value, env);
  if (auto* s = e.as<SelectNode>()) return eval(s->cond, env) ? eval(s->true_value, env) : eval(s->false_value, env);
  auto* b = e.as<BinaryNode>();
  EXPECT_TRUE(b) << node_kind_name(e->kind);
  int64_t x = eval(b->a, env), y = eval(b->b, env);
  auto fdiv = [](int64_t a, int64_t d) { return a / d - ((a % d != 0) && ((a < 0) != (d < 0))); };
  switch (e->kind) {
    case NodeKind::kAdd: return x + y;
    case NodeKind::kSub: return x - y;
    case NodeKind::kMul: return x * y;
    case NodeKind::kFloorDiv: return fdiv(x, y);
    case NodeKind::kFloorMod: return x - fdiv(x, y) * y;
    case NodeKind::kMin: return std::min(x, y);
    case NodeKind::kMax: return std::max(x, y);
    case NodeKind::kEQ: return x == y;
    default: ADD_FAILURE() << "unexpected " << node_kind_name(e->kind); return 0;
  }
}

PrimFunc swizzled_kernel(int64_t gx, int64_t gy, int64_t panel) {
  Builder b("k");
  auto out = b.tensor("out", {int_imm(gy), int_imm(gx)}, DataType::Int(32));
  auto blocks = b.begin_kernel({int_imm(gx), int_imm(gy)}, {32});
  b.begin_annotate("use_swizzle", int64_t{panel});
  b.store(out, {blocks[1], blocks[0]}, int_imm(1));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

}  // namespace

TEST(RasterizeBlocks, IsABijectionForManyGrids) {
  for (int64_t gx : {1, 3, 8, 13}) {
    for (int64_t gy : {1, 2, 7, 16, 33}) {
      for (int64_t panel : {1, 4, 10}) {
        PrimFunc f = swizzled_kernel(gx, gy, panel);
        tilec::passes::PassContext ctx;
        PrimFunc g = tilec::passes::rasterize_blocks_pass().run(f, ctx);
        auto* k = g->body.as<KernelLaunchNode>();
        ASSERT_TRUE(k);
        auto* let_by = k->body.as<LetNode>();
        ASSERT_TRUE(let_by);
        auto* let_bx = let_by->body.as<LetNode>();
        ASSERT_TRUE(let_bx);
        EXPECT_FALSE(let_bx->body.as<AnnotateNode>()) << "annotation must be consumed";
        std::set<std::pair<int64_t, int64_t>> seen;
        for (int64_t y = 0; y < gy; ++y) {
          for (int64_t x = 0; x < gx; ++x) {
            std::map<const VarNode*, int64_t> env{{k->block_vars[0].get(), x}, {k->block_vars[1].get(), y}};
            int64_t by = eval(let_by->value, env), bx = eval(let_bx->value, env);
            ASSERT_GE(bx, 0);
            ASSERT_LT(bx, gx);
            ASSERT_GE(by, 0);
            ASSERT_LT(by, gy);
            seen.insert({bx, by});
          }
        }
        EXPECT_EQ(static_cast<int64_t>(seen.size()), gx * gy) << gx << "x" << gy << " panel " << panel;
      }
    }
  }
}

TEST(RasterizeBlocks, RejectsOneDimensionalGrid) {
  Builder b("k");
  b.begin_kernel({int_imm(8)}, {32});
  b.begin_annotate("use_swizzle", int64_t{4});
  b.evaluate(int_imm(0));
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  tilec::passes::PassContext ctx;
  try {
    tilec::passes::rasterize_blocks_pass().run(f, ctx);
    FAIL() << "expected a UserError";
  } catch (const tilec::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a kernel with a 2-D grid"), std::string::npos) << e.what();
  }
}

namespace {
std::string rasterize_error(const PrimFunc& f) {
  tilec::passes::PassContext ctx;
  try {
    tilec::passes::rasterize_blocks_pass().run(f, ctx);
  } catch (const tilec::UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(RasterizeBlocks, RejectsNonPositivePanel) {
  PrimFunc f = swizzled_kernel(4, 4, 0);
  EXPECT_NE(rasterize_error(f).find("T.use_swizzle needs a positive integer panel size"), std::string::npos)
      << rasterize_error(f);
}

TEST(RasterizeBlocks, RejectsSwizzleOutsideAKernel) {
  Builder b("k");
  b.begin_annotate("use_swizzle", int64_t{4});
  b.begin_kernel({int_imm(4), int_imm(4)}, {32});
  b.evaluate(int_imm(0));
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  EXPECT_NE(rasterize_error(f).find("T.use_swizzle outside a kernel"), std::string::npos) << rasterize_error(f);
}
