// T.alloc_barrier's initialisation (tile op barrier_init) on CUDA: one thread initialises
// every mbarrier of the buffer with its arrive count and fences the inits; then a block
// barrier makes them visible before any thread (or TMA) uses them.
//   if (t == 0) { tl.mbarrier_init(mbar[i], count_i) ...; tl.mbarrier_init_fence() }
//   tl.syncthreads()
// Inside a warp-specialized role the barrier becomes that role's named barrier
// (insert_syncs); the compiler's own pipelines initialise their barriers before the roles
// split, so every thread sees them.
#include "tilec/ir/tile_op.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

AccessRegions barrier_access(const TileOpNode&) { return {}; }

Stmt barrier_lower(const TileOpNode& op, LowerContext& ctx) {
  const BufferRegion& r = region_arg(op, 0);
  const auto& counts = std::get<std::vector<int64_t>>(*find_attr(op.attrs, "arrive_count"));
  std::vector<Stmt> init;
  for (size_t i = 0; i < counts.size(); ++i) {
    Expr bar = buffer_load(r.buffer, {int_imm(static_cast<int64_t>(i))}, op.loc);
    init.push_back(evaluate(call(DataType::Void(), "tl.mbarrier_init", {bar, int_imm(counts[i], Int32())}, op.loc),
                            op.loc));
  }
  init.push_back(evaluate(call(DataType::Void(), "tl.mbarrier_init_fence", {}, op.loc), op.loc));
  Stmt body = seq(init, op.loc);
  if (ctx.num_threads() > 1) body = if_then_else(binary(NodeKind::kEQ, ctx.thread_index(), int_imm(0, ctx.thread_index()->dtype)), body, nullptr, op.loc);
  return seq({body, evaluate(call(DataType::Void(), "tl.syncthreads", {}, op.loc), op.loc)}, op.loc);
}

}  // namespace

void register_barrier_behaviours() {
  register_op_behaviour({"barrier_init", "mbarrier", [](const target::Target& t) { return t.has_tma(); }, 0,
                         barrier_access, nullptr, barrier_lower});
}

}  // namespace tilec::ops
