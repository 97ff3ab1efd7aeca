// T.fill(buffer, value): every element of a region gets `value` (T.clear is fill 0).
// Lowered as an elementwise nest: a fragment's holders (all replicas) write their
// registers; shared/global regions use a coalesced, vectorized layout.
#include "ops/op_util.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

AccessRegions fill_access(const TileOpNode& op) { return {{}, {region_arg(op, 0)}}; }

LayoutProposals fill_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  const Buffer& b = region_arg(op, 0).buffer;
  if (level == InferLevel::kFree && b->scope == Scope::kFragment && !state.has_layout(b))
    return {{b, layout::default_fragment(const_shape(b), state.num_threads(), b->dtype)}};
  return {};
}

bool is_unspecified(const Expr& v) {
  auto* c = v.as<CallNode>();
  return c && c->op == "tl.unspecified";
}

Stmt fill_lower(const TileOpNode& op, LowerContext& ctx) {
  const BufferRegion& r = region_arg(op, 0);
  if (is_unspecified(expr_arg(op, 1))) {
    // Nothing to store. A whole float / int32 fragment is marked undefined for the compiler
    // (fuse_clear_into_gemm's branch before a clearing gemm: the old values die there).
    const Buffer lb = ctx.lowered_buffer(r.buffer);
    const int64_t* regs = lb->shape.size() == 1 ? as_const_int(lb->shape[0]) : nullptr;
    const DataType t = r.buffer->dtype;
    if (r.buffer->scope != Scope::kFragment || !region_is_full(r) || !regs ||
        !(t == DataType::Float(32) || t == DataType::Int(32)))
      return evaluate(int_imm(0), op.loc);
    Expr first = call(DataType::Handle(), "tl.address_of", {buffer_load(lb, {int_imm(0)})}, op.loc);
    return evaluate(call(DataType::Void(), "tl.wgmma_undefine_operands", {int_imm(*regs), first}, op.loc), op.loc);
  }
  RegionLoop loop = region_loop(r, "T.fill", op.loc);
  std::vector<Expr> idx = region_indices(r, loop.vars);
  ensure_nonempty(loop);
  Expr value = expr_arg(op, 1);
  if (value->dtype != r.buffer->dtype) value = cast(r.buffer->dtype, value, op.loc);
  Stmt body = buffer_store(r.buffer, idx, value, op.loc);
  Layout l;
  if (r.buffer->scope == Scope::kFragment) {
    l = loop_layout_for_fragment(loop.vars, loop.extents, r.buffer, idx, ctx.layout_of(r.buffer));
    TILEC_USER_CHECK(l, op.loc, "fill the whole fragment")
        << "T.fill of this part of fragment '" << r.buffer->name << "' is not supported";
  } else {
    l = ctx.coalesced_loop_layout(loop.extents, {r.buffer});
  }
  return ctx.lower_parallel(loop.vars, loop.extents, body, l, false);
}

}  // namespace

void register_fill_behaviours() {
  register_op_behaviour({"fill", "simt", nullptr, 0, fill_access, fill_infer, fill_lower});
}

}  // namespace tilec::ops
