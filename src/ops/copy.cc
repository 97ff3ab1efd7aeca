// T.copy(src, dst): the generic (SIMT) behaviour for every target.
//
// The iteration space is the non-unit extents of the source region, paired in order with
// the destination's (TileLang's MakeIterVars); they must match. Lowering is an
// elementwise parallel nest: when a fragment is involved its holders run the iterations
// (all replicas when writing it, one replica when reading it into memory); otherwise a
// coalesced layout with 16-byte vectors along the innermost dimension (the vectorizer
// emits vector accesses where it proves alignment). Other copy instructions (cp.async,
// TMA) register higher-priority behaviours for "copy" that return null when they do not
// apply, falling back to this one. A copy with a per-thread buffer (T.alloc_local) on either
// side runs whole in every thread (TileLang's semantics: the buffer is the thread's own).
#include "ops/op_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::ops {

using namespace ir;

namespace {

struct CopyPlan {
  RegionLoop loop;
  std::vector<Expr> src_idx, dst_idx;
};

CopyPlan plan_copy(const TileOpNode& op) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  auto se = nonunit_extents(src, "T.copy", op.loc);
  auto de = nonunit_extents(dst, "T.copy", op.loc);
  TILEC_USER_CHECK(se == de, op.loc, "make both regions cover the same tile (extents of 1 are ignored)")
      << "T.copy: the source region of '" << src.buffer->name << "' has extents " << extents_str(se)
      << " but the destination region of '" << dst.buffer->name << "' has " << extents_str(de);
  CopyPlan p;
  p.loop = region_loop(src, "T.copy", op.loc);
  p.src_idx = region_indices(src, p.loop.vars);
  p.dst_idx = region_indices(dst, p.loop.vars);
  ensure_nonempty(p.loop);
  return p;
}

AccessRegions copy_access(const TileOpNode& op) { return {{region_arg(op, 0)}, {region_arg(op, 1)}}; }

LayoutProposals copy_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  bool sf = src.buffer->scope == Scope::kFragment, df = dst.buffer->scope == Scope::kFragment;
  LayoutProposals out;
  if (level == InferLevel::kCommon && sf && df && region_is_full(src) && region_is_full(dst) &&
      const_shape(src.buffer) == const_shape(dst.buffer)) {
    // A register-to-register copy keeps the thread mapping, in both directions.
    if (Layout l = state.layout_of(src.buffer)) out.push_back({dst.buffer, l});
    if (Layout l = state.layout_of(dst.buffer)) out.push_back({src.buffer, l});
  }
  if (level == InferLevel::kFree) {
    for (const Buffer& b : {dst.buffer, src.buffer})
      if (b->scope == Scope::kFragment && !state.has_layout(b))
        out.push_back({b, layout::default_fragment(const_shape(b), state.num_threads(), b->dtype)});
  }
  return out;
}

// A copy of part of a fragment (e.g. its first rows, as TileLang's T.copy(acc_o[:valid_rows, :],
// O_shared)): a nest over the whole fragment in its own layout, where the iterations inside
// the region copy their element. `frag_side` is the fragment's region, `frag_is_src` says
// which side it is, `p` the copy's plan over the region.
Stmt copy_fragment_part(const TileOpNode& op, LowerContext& ctx, const CopyPlan& p, const BufferRegion& frag_side,
                        bool frag_is_src) {
  const Buffer& frag = frag_side.buffer;
  std::vector<int64_t> shape = const_shape(frag);
  std::vector<Var> vars;
  std::vector<Expr> frag_idx;
  VarMap region_var;  // the region loop's variables in terms of the fragment's
  Expr inside;
  size_t next = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    Var v = make_var("f" + std::to_string(d), DataType::Int(32), op.loc);
    vars.push_back(v);
    frag_idx.push_back(v);
    const Range& r = frag_side.region[d];
    Expr lo = r.min, hi = r.min + r.extent;
    if (!is_one(r.extent)) region_var[p.loop.vars[next++].get()] = v - r.min;
    Expr in_dim = (lo <= v) && (v < hi);
    inside = inside ? (inside && in_dim) : in_dim;
  }
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  std::vector<Expr> other_idx;
  for (const Expr& e : frag_is_src ? p.dst_idx : p.src_idx) other_idx.push_back(substitute(e, region_var));
  Expr value = frag_is_src ? buffer_load(src.buffer, frag_idx, op.loc) : buffer_load(src.buffer, other_idx, op.loc);
  if (src.buffer->dtype != dst.buffer->dtype) value = cast(dst.buffer->dtype, value, op.loc);
  Stmt store = buffer_store(dst.buffer, frag_is_src ? other_idx : frag_idx, value, op.loc);
  Stmt body = if_then_else(inside, store, nullptr, op.loc);
  Layout loop = loop_layout_for_fragment(vars, shape, frag, frag_idx, ctx.layout_of(frag));
  TILEC_USER_CHECK(loop, op.loc, "copy the whole fragment")
      << "T.copy of this part of fragment '" << frag->name << "' is not supported";
  return ctx.lower_parallel(vars, shape, body, loop, /*first_replica_only=*/frag_is_src);
}

// A copy to or from a per-thread buffer (T.alloc_local) is each thread's own, as in
// TileLang: every thread runs the whole nest over the region (no partition over threads);
// small nests are unrolled so that the local array stays in registers.
Stmt copy_in_each_thread(const CopyPlan& p, Stmt body, const SourceLoc& loc) {
  int64_t total = 1;
  for (int64_t e : p.loop.extents) total *= e;
  const ForKind kind = total <= 256 ? ForKind::kUnrolled : ForKind::kSerial;
  for (size_t d = p.loop.vars.size(); d-- > 0;)
    body = make_for(p.loop.vars[d], int_imm(0), int_imm(p.loop.extents[d]), kind, body, loc);
  return body;
}

Stmt copy_lower(const TileOpNode& op, LowerContext& ctx) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  CopyPlan p = plan_copy(op);
  Expr value = buffer_load(src.buffer, p.src_idx, op.loc);
  if (src.buffer->dtype != dst.buffer->dtype) value = cast(dst.buffer->dtype, value, op.loc);
  Stmt body = buffer_store(dst.buffer, p.dst_idx, value, op.loc);

  const bool local = src.buffer->scope == Scope::kLocal || dst.buffer->scope == Scope::kLocal;
  const bool fragment = src.buffer->scope == Scope::kFragment || dst.buffer->scope == Scope::kFragment;
  if (local && !fragment) return copy_in_each_thread(p, body, op.loc);

  if (fragment && src.buffer->scope == Scope::kFragment && dst.buffer->scope == Scope::kFragment &&
      region_is_full(src) && region_is_full(dst) && const_shape(src.buffer) == const_shape(dst.buffer)) {
    // Each thread copies its own elements of dst from its own registers: it must hold them in
    // src too (layout inference joins the two layouts; nothing may leave them apart).
    Layout ls = ctx.layout_of(src.buffer), ld = ctx.layout_of(dst.buffer);
    TILEC_USER_CHECK(ls && ld && layout::threads_hold(ld, ls), op.loc,
                     "copy the fragment through a shared tile (T.alloc_shared) instead")
        << "T.copy from fragment '" << src.buffer->name << "' to fragment '" << dst.buffer->name
        << "': their layouts put elements in different threads (" << layout::describe(ls) << " and "
        << layout::describe(ld) << ")";
  }
  Layout loop;
  bool first_replica_only = false;
  const Buffer* frag = nullptr;
  if (dst.buffer->scope == Scope::kFragment) {
    frag = &dst.buffer;
    loop = loop_layout_for_fragment(p.loop.vars, p.loop.extents, dst.buffer, p.dst_idx, ctx.layout_of(dst.buffer));
  } else if (src.buffer->scope == Scope::kFragment) {
    frag = &src.buffer;
    first_replica_only = true;
    loop = loop_layout_for_fragment(p.loop.vars, p.loop.extents, src.buffer, p.src_idx, ctx.layout_of(src.buffer));
  }
  if (frag && !loop) {
    const bool frag_is_src = frag == &src.buffer;
    Stmt s = copy_fragment_part(op, ctx, p, frag_is_src ? src : dst, frag_is_src);
    return src.buffer.get() != dst.buffer.get() ? mark_disjoint_nest(s) : s;
  }
  if (!loop) {
    int64_t width = attr_int(op, "coalesced_width", 0);
    if (width > 0) {
      int64_t inner = p.loop.extents.back();
      while (width > 1 && inner % width != 0) width /= 2;
      loop = layout::coalesced_layout(p.loop.extents, ctx.num_threads(), width);
    } else {
      loop = ctx.coalesced_loop_layout(p.loop.extents, {src.buffer, dst.buffer});
    }
  }
  Stmt s = ctx.lower_parallel(p.loop.vars, p.loop.extents, body, loop, first_replica_only);
  // Between two buffers, each (thread, register) pair of the nest copies its own element:
  // the register loop's iterations never touch one element twice (insert_syncs then needs
  // no barrier between them, which it could not prove for swizzled indices).
  // The loops nested directly in it (the vector lanes of one register) too: the slow path of
  // legalize_bounds turns a vector loop into an unrolled one that insert_syncs then sees.
  if (src.buffer.get() != dst.buffer.get()) s = mark_disjoint_nest(s);
  return s;
}

}  // namespace

void register_copy_behaviours() {
  register_op_behaviour({"copy", "simt", nullptr, 0, copy_access, copy_infer, copy_lower});
}

}  // namespace tilec::ops
