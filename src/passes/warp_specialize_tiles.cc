// warp_specialize_plan.h: the persistent form of a warp-specialized kernel — when it applies
// and the tile loop each role runs (one block per SM, tiles strided by gridDim.x; uneven
// tiles in order of their work, taken in a snake; clusters of blocks taking cluster tiles) — and the kernel's register and shared
// memory sizes the rewrite plans the blocks per SM with.
#include <algorithm>

#include "passes/cuda_back_util.h"
#include "passes/warp_specialize_plan.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes::ws {

using namespace ir;

int work_dim(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p) {
  int dim = -1;
  for (size_t d = 0; d < kernel->block_vars.size(); ++d) {
    const VarNode* b = kernel->block_vars[d].get();
    if (back::uses_var(substitute(p.loop->min, sp.let_values), b)) return -2;
    if (!back::uses_var(substitute(p.loop->extent, sp.let_values), b)) continue;
    if (dim != -1) return -2;
    dim = static_cast<int>(d);
  }
  return dim;
}

// Persistent unless turned off (tilec.persistent), without a grid barrier, when the loop's step
// count depends on at most one block index (and on it only with tilec.persistent_uneven), and
// when the shared buffers fit without sharing bytes across the roles (a block's producer
// fills the next tile's stages during this tile's epilogue). A cluster must span one grid
// dimension of a constant extent that it divides, with even tiles (every block of a cluster
// runs the same steps: multicast loads and releases pair them step by step), and
// tilec.persistent_clusters on.
bool want_persistent(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p, const PassContext& ctx, bool over) {
  if (!ctx.get_bool("tilec.persistent")) return false;
  // T.sync_grid() synchronizes the grid as written; a persistent grid is another one (and
  // warp_specialize already leaves such kernels alone: this keeps the rule where it applies).
  if (contains_grid_sync(kernel->body)) return false;
  const int wd = work_dim(kernel, sp, p);
  if (wd == -2 || (wd >= 0 && !ctx.get_bool("tilec.persistent_uneven"))) return false;
  const ClusterAxis c = cluster_axis(*kernel);
  if (c.dim == -2) return false;
  if (c.dim >= 0) {
    const size_t d = static_cast<size_t>(c.dim);
    const int64_t* extent = d < kernel->grid.size() ? as_const_int(kernel->grid[d]) : nullptr;
    if (!ctx.get_bool("tilec.persistent_clusters") || wd >= 0 || !extent || *extent % c.size != 0) return false;
  }
  return unshared_bytes(kernel, p, over) + 2048 <= ctx.target().max_shared_memory_per_block();
}

int64_t fragment_registers(const KernelLaunchNode* kernel, int64_t threads) {
  int64_t bytes = 0;
  for_each_node(kernel->body, [&](const Node* node) {
    auto* a = dynamic_cast<const AllocateNode*>(node);
    if (!a || a->buffer->scope != Scope::kFragment) return;
    int64_t n = a->buffer->dtype.bytes();
    for (const auto& e : a->buffer->shape) n *= as_const_int(e) ? *as_const_int(e) : 1;
    bytes += n;
  });
  return bytes / 4 / std::max<int64_t>(threads, 1);
}

int64_t unshared_bytes(const KernelLaunchNode* kernel, const Plan& p, bool over) {
  int64_t bytes = 0;
  for_each_node(kernel->body, [&](const Node* node) {
    auto* a = dynamic_cast<const AllocateNode*>(node);
    if (!a || !is_shared(a->buffer->scope) || (over && a->buffer->name == p.over_tile)) return;
    auto v = p.versioned.find(a->buffer.get());
    bytes += back::shared_alloc_bytes(v == p.versioned.end() ? a->buffer : v->second);
  });
  return bytes;
}


TileLoop tile_loop_parts(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p, const SourceLoc& loc) {
  TileLoop t;
  t.work_dim = std::max(work_dim(kernel, sp, p), -1);
  t.start = make_var("tile_start", kernel->block_vars[0]->dtype, loc);
  t.grid = kernel->grid;
  t.block_vars = kernel->block_vars;
  if (t.work_dim < 0) t.cluster = cluster_axis(*kernel);
  for (const auto& g : kernel->grid) t.total = t.total ? t.total * g : g;
  for (const StmtNode* w : sp.wrappers)
    if (auto* l = dynamic_cast<const LetNode*>(w)) t.lets.push_back(l);
  return t;
}

// for tile_i in [0, ceildiv(total - start, gridDim.x)):
//   tile = start + tile_i * gridDim.x; b0 = tile % G0; b1 = tile / G0 % G1; ...; <spine Lets>; body
// A cluster of c blocks along dimension d: the same over cluster tiles (total / c of them,
// gridDim.x / c clusters, start / c this block's cluster, G_d / c along d), and the block of
// rank r = start % c takes b_d = (cluster tile's index along d) * c + r.
// Uneven tiles (t.work_dim = w): the dimensions other than w vary fastest, w slowest, and
// for tile_i in [0, ceildiv(total, gridDim.x)):
//   tile = tile_i * gridDim.x + (tile_i odd ? gridDim.x - 1 - start : start); if tile < total: ...
// The producer's copy binds fresh variables (each variable is bound once in the function).
Stmt wrap_in_tile_loop(const TileLoop& t, const Stmt& body, const Var& tile_i, bool fresh, const SourceLoc& loc) {
  const DataType dt = t.start->dtype;
  VarMap rename;
  auto bind = [&](const Var& v) {
    if (!fresh) return v;
    Var nv = make_var(v->name, v->dtype, v->loc);
    rename[v.get()] = nv;
    return nv;
  };
  Var ti = bind(tile_i);
  Var tile = make_var("tile", dt, loc);
  const bool clustered = t.cluster.size > 1;
  const Expr csize = int_imm(t.cluster.size, dt);
  Expr stride = ir::call(dt, "tl.grid_dim_x", {}, loc);
  Expr start = t.start, total = cast(dt, t.total);
  if (clustered) {
    stride = floordiv(stride, csize);
    start = floordiv(start, csize);
    total = floordiv(total, csize);
  }
  // Block d of the original grid: (tile / (the grid extents of the dimensions before d in
  // order)) % G_d (the % is a no-op for the last dimension, tile < total, but tells the
  // analyzer its range).
  std::vector<size_t> order;
  for (size_t d = 0; d < t.block_vars.size(); ++d)
    if (static_cast<int>(d) != t.work_dim) order.push_back(d);
  if (t.work_dim >= 0) order.push_back(static_cast<size_t>(t.work_dim));
  std::vector<std::pair<Var, Expr>> lets(t.block_vars.size());
  Expr below = nullptr;
  for (size_t d : order) {
    const bool split = clustered && static_cast<int>(d) == t.cluster.dim;
    Expr g = cast(dt, t.grid[d]);
    if (split) g = int_imm(*as_const_int(t.grid[d]) / t.cluster.size, dt);
    Expr q = below ? floordiv(Expr(tile), below) : Expr(tile);
    Expr b = floormod(q, g);
    if (split) b = b * csize + floormod(Expr(t.start), csize);
    lets[d] = {bind(t.block_vars[d]), b};
    below = below ? below * g : g;
  }
  for (const LetNode* l : t.lets) lets.emplace_back(bind(l->var), fresh ? substitute(l->value, rename) : l->value);
  Stmt inner = fresh ? substitute(body, rename) : body;
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) inner = let(it->first, it->second, inner, loc);
  const Expr one = int_imm(1, dt);
  if (t.work_dim < 0) {
    inner = let(tile, start + Expr(ti) * stride, inner, loc);
    Expr count = floordiv(total - start + stride - one, stride);
    return make_for(ti, int_imm(0, dt), count, ForKind::kSerial, inner, loc);
  }
  Expr odd = binary(NodeKind::kEQ, floormod(Expr(ti), int_imm(2, dt)), one);
  Expr in_round = select(odd, stride - one - t.start, Expr(t.start));
  inner = if_then_else(binary(NodeKind::kLT, Expr(tile), cast(dt, t.total)), inner, nullptr, loc);
  inner = let(tile, Expr(ti) * stride + in_round, inner, loc);
  Expr count = floordiv(cast(dt, t.total) + stride - one, stride);
  return make_for(ti, int_imm(0, dt), count, ForKind::kSerial, inner, loc);
}

}  // namespace tilec::passes::ws
