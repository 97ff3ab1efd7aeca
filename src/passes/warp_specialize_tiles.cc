// warp_specialize_plan.h: the persistent form of a warp-specialized kernel — when it applies
// and the tile loop each role runs (one block per SM, tiles strided by gridDim.x).
#include "passes/cuda_back_util.h"
#include "passes/warp_specialize_plan.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"

namespace tilec::passes::ws {

using namespace ir;

// Persistent unless turned off (tilec.persistent), without clusters, with the same number of
// steps for every tile, and when the shared buffers fit without sharing bytes across the
// roles (a block's producer fills the next tile's stages during this tile's epilogue).
bool want_persistent(const KernelLaunchNode* kernel, const Spine& sp, const Plan& p, const PassContext& ctx) {
  if (!ctx.get_bool("tilec.persistent")) return false;
  for (int64_t c : kernel->cluster)
    if (c > 1) return false;
  for (const auto& b : kernel->block_vars)
    if (back::uses_var(substitute(p.loop->extent, sp.let_values), b.get()) ||
        back::uses_var(substitute(p.loop->min, sp.let_values), b.get()))
      return false;
  int64_t bytes = 0;
  for_each_node(kernel->body, [&](const Node* node) {
    auto* a = dynamic_cast<const AllocateNode*>(node);
    if (!a || !is_shared(a->buffer->scope)) return;
    auto v = p.versioned.find(a->buffer.get());
    bytes += back::shared_alloc_bytes(v == p.versioned.end() ? a->buffer : v->second);
  });
  return bytes + 2048 <= ctx.target().max_shared_memory_per_block();
}


TileLoop tile_loop_parts(const KernelLaunchNode* kernel, const Spine& sp, const SourceLoc& loc) {
  TileLoop t;
  t.start = make_var("tile_start", kernel->block_vars[0]->dtype, loc);
  t.grid = kernel->grid;
  t.block_vars = kernel->block_vars;
  for (const auto& g : kernel->grid) t.total = t.total ? t.total * g : g;
  for (const StmtNode* w : sp.wrappers)
    if (auto* l = dynamic_cast<const LetNode*>(w)) t.lets.push_back(l);
  return t;
}

// for tile_i in [0, ceildiv(total - start, gridDim.x)):
//   tile = start + tile_i * gridDim.x; b0 = tile % G0; b1 = tile / G0 % G1; ...; <spine Lets>; body
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
  Expr stride = ir::call(dt, "tl.grid_dim_x", {}, loc);
  // Block d of the original grid: (tile / (G0 ... G_{d-1})) % G_d (the % is a no-op for the
  // last dimension, tile < total, but tells the analyzer its range).
  std::vector<std::pair<Var, Expr>> lets;
  Expr below = nullptr;
  for (size_t d = 0; d < t.block_vars.size(); ++d) {
    Expr g = cast(dt, t.grid[d]);
    Expr q = below ? floordiv(Expr(tile), below) : Expr(tile);
    Expr v = floormod(q, g);
    lets.emplace_back(bind(t.block_vars[d]), v);
    below = below ? below * g : g;
  }
  for (const LetNode* l : t.lets) lets.emplace_back(bind(l->var), fresh ? substitute(l->value, rename) : l->value);
  Stmt inner = fresh ? substitute(body, rename) : body;
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) inner = let(it->first, it->second, inner, loc);
  inner = let(tile, Expr(t.start) + Expr(ti) * stride, inner, loc);
  Expr count = floordiv(cast(dt, t.total) - t.start + stride - int_imm(1, dt), stride);
  return make_for(ti, int_imm(0, dt), count, ForKind::kSerial, inner, loc);
}

}  // namespace tilec::passes::ws
