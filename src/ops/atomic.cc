// T.atomic_add / atomic_max / atomic_min(dst, value): dst[...] op= value atomically,
// elementwise over the destination region; `value` is a region of the same extents or
// a scalar. Each element is updated exactly once: when `value` is a replicated fragment
// only its first replica runs the update.
#include "ops/op_util.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

bool value_is_region(const TileOpNode& op) { return std::holds_alternative<BufferRegion>(op.args[1]); }

LayoutProposals atomic_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  if (level != InferLevel::kFree || !value_is_region(op)) return {};
  const Buffer& v = region_arg(op, 1).buffer;
  if (v->scope == Scope::kFragment && !state.has_layout(v))
    return {{v, layout::default_fragment(const_shape(v), state.num_threads(), v->dtype)}};
  return {};
}

Stmt atomic_lower(const TileOpNode& op, LowerContext& ctx) {
  const BufferRegion& dst = region_arg(op, 0);
  TILEC_USER_CHECK(dst.buffer->scope == Scope::kGlobal || is_shared(dst.buffer->scope), op.loc,
                   "atomics update global or shared memory")
      << "T." << op.op << " cannot update '" << dst.buffer->name << "' in " << scope_name(dst.buffer->scope);
  RegionLoop loop = region_loop(dst, "T." + op.op, op.loc);
  std::vector<Expr> dst_idx = region_indices(dst, loop.vars);
  Expr value;
  Layout l;
  bool first_replica_only = false;
  if (value_is_region(op)) {
    const BufferRegion& src = region_arg(op, 1);
    auto se = nonunit_extents(src, "T." + op.op, op.loc);
    TILEC_USER_CHECK(se == loop.extents, op.loc, "give the value region the destination's extents")
        << "T." << op.op << ": the value region of '" << src.buffer->name << "' has extents " << extents_str(se)
        << " but the destination region has " << extents_str(loop.extents);
    std::vector<Expr> src_idx = region_indices(src, loop.vars);
    value = buffer_load(src.buffer, src_idx, op.loc);
    ensure_nonempty(loop);
    if (src.buffer->scope == Scope::kFragment) {
      l = loop_layout_for_fragment(loop.vars, loop.extents, src.buffer, src_idx, ctx.layout_of(src.buffer));
      TILEC_USER_CHECK(l, op.loc, "use the whole fragment as the value")
          << "T." << op.op << " with this part of fragment '" << src.buffer->name << "' is not supported";
      first_replica_only = true;
    }
  } else {
    value = expr_arg(op, 1);
    ensure_nonempty(loop);
  }
  if (value->dtype != dst.buffer->dtype) value = cast(dst.buffer->dtype, value, op.loc);
  if (!l) l = layout::coalesced_layout(loop.extents, ctx.num_threads(), 1);
  Expr addr = call(DataType::Handle(), "tl.address_of", {buffer_load(dst.buffer, dst_idx, op.loc)}, op.loc);
  Stmt body = evaluate(call(dst.buffer->dtype, "tl." + op.op, {addr, value}, op.loc), op.loc);
  return ctx.lower_parallel(loop.vars, loop.extents, body, l, first_replica_only);
}

}  // namespace

AccessRegions atomic_access(const TileOpNode& op) {
  AccessRegions a;
  a.reads.push_back(region_arg(op, 0));
  if (value_is_region(op)) a.reads.push_back(region_arg(op, 1));
  a.writes.push_back(region_arg(op, 0));
  return a;
}

void register_atomic_behaviours() {
  for (const char* name : {"atomic_add", "atomic_max", "atomic_min"})
    register_op_behaviour({name, "simt", nullptr, 0, atomic_access, atomic_infer, atomic_lower});
}

}  // namespace tilec::ops
