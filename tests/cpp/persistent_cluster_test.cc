// Persistent kernels with clusters: the tile loop of warp_specialize_tiles.cc gives every tile
// to exactly one block and the blocks of a launch cluster the tiles of one cluster of the
// original grid, one per rank; cluster_invariance.h tells which copy sources one cluster
// shares, also through T.use_swizzle's block order.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "layout/int_eval.h"
#include "passes/cluster_invariance.h"
#include "passes/cuda_back_util.h"
#include "passes/warp_specialize_plan.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/mutator.h"
#include "tilec/passes/passes.h"

using namespace tilec::ir;
namespace ws = tilec::passes::ws;

namespace {

using Env = std::map<const VarNode*, int64_t>;

// The value of `e` with env's variables (layout::eval_int: floor division, selects, comparisons).
int64_t eval(const Expr& e, const Env& env) {
  std::vector<Var> vars;
  std::vector<int64_t> values;
  for (const Var& v : tilec::passes::back::free_vars(e)) {
    vars.push_back(v);
    values.push_back(env.at(v.get()));
  }
  return tilec::layout::eval_int(e, vars, values);
}

// Replaces tl.grid_dim_x by the launch's block count.
class FixGridDim : public IRMutator {
 public:
  explicit FixGridDim(int64_t n) : n_(n) {}

 protected:
  Expr mutate_Call(const Expr& e, const CallNode* op) override {
    return op->op == "tl.grid_dim_x" ? int_imm(n_, e->dtype) : IRMutator::mutate_Call(e, op);
  }

 private:
  int64_t n_;
};

// Runs the tile loop of one block; the body is Evaluate(marker(b0, b1)): records (tile_i, b0, b1).
void run(const Stmt& s, Env& env, std::vector<std::tuple<int64_t, int64_t, int64_t>>& out, const Var& ti) {
  if (auto* f = s.as<ForNode>()) {
    const int64_t lo = eval(f->min, env), n = eval(f->extent, env);
    for (int64_t i = lo; i < lo + n; ++i) {
      env[f->loop_var.get()] = i;
      run(f->body, env, out, ti);
    }
  } else if (auto* l = s.as<LetNode>()) {
    env[l->var.get()] = eval(l->value, env);
    run(l->body, env, out, ti);
  } else if (auto* c = s.as<IfNode>()) {
    if (eval(c->cond, env)) run(c->then_case, env, out, ti);
  } else if (auto* e = s.as<EvaluateNode>()) {
    auto* call = e->value.as<CallNode>();
    ASSERT_TRUE(call);
    out.emplace_back(env.at(ti.get()), eval(call->args[0], env), eval(call->args[1], env));
  } else {
    FAIL() << "unexpected statement " << node_kind_name(s->kind);
  }
}

// Every block's (tile_i, b0, b1) for a grid (g0, g1) with a cluster of `size` along `dim`,
// launched on `blocks` blocks.
std::vector<std::vector<std::tuple<int64_t, int64_t, int64_t>>> tiles_of_blocks(int64_t g0, int64_t g1, int dim,
                                                                                 int64_t size, int64_t blocks) {
  const DataType i32 = DataType::Int(32);
  ws::TileLoop t;
  t.start = make_var("start", i32, {});
  t.grid = {int_imm(g0, i32), int_imm(g1, i32)};
  t.total = int_imm(g0 * g1, i32);
  t.block_vars = {make_var("b0", i32, {}), make_var("b1", i32, {})};
  t.cluster = {dim, size};
  Var ti = make_var("tile_i", i32, {});
  Stmt body = evaluate(call(i32, "test.visit", {t.block_vars[0], t.block_vars[1]}, {}));
  Stmt loop = FixGridDim(blocks).mutate(ws::wrap_in_tile_loop(t, body, ti, false, {}));
  std::vector<std::vector<std::tuple<int64_t, int64_t, int64_t>>> per_block(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    Env env{{t.start.get(), b}};
    run(loop, env, per_block[static_cast<size_t>(b)], ti);
  }
  return per_block;
}

}  // namespace

TEST(PersistentClusters, EveryTileOnceAndEachClusterTogether) {
  // (g0, g1, cluster dim, size, launched blocks)
  for (auto [g0, g1, dim, size, blocks] : std::vector<std::tuple<int64_t, int64_t, int, int64_t, int64_t>>{
           {6, 5, 0, 2, 8}, {6, 5, 0, 2, 30}, {4, 6, 1, 2, 6}, {8, 3, 0, 4, 8}, {3, 8, 1, 4, 4}, {2, 1, 0, 2, 2}}) {
    SCOPED_TRACE(testing::Message() << g0 << "x" << g1 << " cluster " << size << " along " << dim << ", " << blocks
                                    << " blocks");
    auto per_block = tiles_of_blocks(g0, g1, dim, size, blocks);
    std::set<std::pair<int64_t, int64_t>> seen;
    for (const auto& tiles : per_block)
      for (auto [i, b0, b1] : tiles) {
        ASSERT_TRUE(0 <= b0 && b0 < g0 && 0 <= b1 && b1 < g1) << b0 << "," << b1;
        EXPECT_TRUE(seen.insert({b0, b1}).second) << "tile " << b0 << "," << b1 << " twice";
      }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), g0 * g1);
    // The blocks of a launch cluster run the same number of tiles; at each step the block of
    // rank r has the tile of rank r of one cluster of the original grid.
    for (int64_t c = 0; c < blocks / size; ++c) {
      const auto& first = per_block[static_cast<size_t>(c * size)];
      for (int64_t r = 0; r < size; ++r) {
        const auto& mine = per_block[static_cast<size_t>(c * size + r)];
        ASSERT_EQ(mine.size(), first.size());
        for (size_t s = 0; s < mine.size(); ++s) {
          auto [i0, f0, f1] = first[s];
          auto [i, b0, b1] = mine[s];
          EXPECT_EQ(i, i0);
          const int64_t along = dim == 0 ? b0 : b1, first_along = dim == 0 ? f0 : f1;
          EXPECT_EQ(along % size, r);
          EXPECT_EQ(along - r, first_along);
          EXPECT_EQ(dim == 0 ? b1 : b0, dim == 0 ? f1 : f0);
        }
      }
    }
  }
}

namespace {

// T.use_swizzle(panel)'s block order on a (gx, gy) grid: the kernel with hardware block
// indices and the user's bx, by as expressions of them.
struct Swizzled {
  PrimFunc f;
  const KernelLaunchNode* k = nullptr;
  Expr bx, by;
};

Swizzled swizzled(int64_t gx, int64_t gy, int64_t panel, std::vector<int64_t> cluster) {
  Builder b("k");
  auto out = b.tensor("out", {int_imm(gy), int_imm(gx)}, DataType::Int(32));
  auto blocks = b.begin_kernel({int_imm(gx), int_imm(gy)}, {32});
  b.begin_annotate("use_swizzle", int64_t{panel});
  b.store(out, {blocks[1], blocks[0]}, int_imm(1));
  b.end_frame();
  b.end_frame();
  tilec::passes::PassContext ctx;
  Swizzled s;
  s.f = tilec::passes::rasterize_blocks_pass().run(b.finish(), ctx);
  auto* k = s.f->body.as<KernelLaunchNode>();
  auto n = std::make_shared<KernelLaunchNode>(*k);
  n->cluster = std::move(cluster);
  s.f = with_body(s.f, Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n))));
  s.k = s.f->body.as<KernelLaunchNode>();
  auto* let_by = s.k->body.as<LetNode>();
  auto* let_bx = let_by->body.as<LetNode>();
  s.by = let_by->value;
  s.bx = let_bx->value;
  return s;
}

}  // namespace

TEST(ClusterInvariance, PlainBlockIndices) {
  Swizzled s = swizzled(8, 6, 10, {2, 1, 1});
  const Expr hx = s.k->block_vars[0], hy = s.k->block_vars[1];
  const DataType t = hx->dtype;
  EXPECT_TRUE(tilec::passes::varies_within_cluster(hx * int_imm(128, t), *s.k, 0, 2));
  EXPECT_FALSE(tilec::passes::varies_within_cluster(hy * int_imm(128, t), *s.k, 0, 2));
  // hx / 2 is the cluster's index along x: one value per cluster.
  EXPECT_FALSE(tilec::passes::varies_within_cluster(floordiv(Expr(hx), int_imm(2, t)) * int_imm(64, t), *s.k, 0, 2));
  EXPECT_TRUE(tilec::passes::varies_within_cluster(floordiv(Expr(hx), int_imm(2, t)), *s.k, 0, 4));
  // A term that also reads another variable (a loop's k): its block part alone decides.
  Var k = make_var("k", t, {});
  EXPECT_FALSE(tilec::passes::varies_within_cluster(Expr(k) * int_imm(64, t) + hy, *s.k, 0, 2));
  EXPECT_TRUE(tilec::passes::varies_within_cluster(Expr(k) * int_imm(64, t) + hx, *s.k, 0, 2));
}

TEST(ClusterInvariance, SwizzledBlocksShareTheColumnAlongX) {
  // Consecutive hardware blocks walk down a panel's rows: a pair along x has one column (B's
  // tile) and two rows (A's tiles), when every panel's height is even (64 rows in panels of 10:
  // the last has 4).
  Swizzled s = swizzled(32, 64, 10, {2, 1, 1});
  EXPECT_FALSE(tilec::passes::varies_within_cluster(s.bx, *s.k, 0, 2));
  EXPECT_TRUE(tilec::passes::varies_within_cluster(s.by, *s.k, 0, 2));
  // Along y the pair is a panel's width apart: both indices differ.
  Swizzled y = swizzled(32, 64, 10, {1, 2, 1});
  EXPECT_TRUE(tilec::passes::varies_within_cluster(y.bx, *y.k, 1, 2));
  EXPECT_TRUE(tilec::passes::varies_within_cluster(y.by, *y.k, 1, 2));
  // An odd last panel (5 rows: 65 = 6 * 10 + 5) splits some pairs across two columns.
  Swizzled odd = swizzled(32, 65, 10, {2, 1, 1});
  EXPECT_TRUE(tilec::passes::varies_within_cluster(odd.bx, *odd.k, 0, 2));
}

TEST(ClusterInvariance, UnknownGridsCountAsVarying) {
  Swizzled s = swizzled(32, 64, 10, {2, 1, 1});
  auto n = std::make_shared<KernelLaunchNode>(*s.k);
  n->grid[1] = make_var("gy", s.k->block_vars[1]->dtype, {});
  EXPECT_TRUE(tilec::passes::varies_within_cluster(s.bx, *n, 0, 2));
  // Too many blocks to check one by one.
  auto big = std::make_shared<KernelLaunchNode>(*s.k);
  big->grid = {int_imm(1024, s.k->block_vars[0]->dtype), int_imm(1024, s.k->block_vars[0]->dtype)};
  EXPECT_TRUE(tilec::passes::varies_within_cluster(s.bx, *big, 0, 2));
}
