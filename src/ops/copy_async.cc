// T.async_copy(src, dst, no_implicit_commit_wait): a global -> shared copy with cp.async
// (sm_80+). inject_pipeline turns the copies of pipelined loops into this op; written by
// hand it commits its group and waits for it.
//
// Lowering: the copy is cut into chunks of W bytes (16, else 8, else 4) along the
// innermost dimension; chunk c of the tile goes to thread c % threads (consecutive
// threads take consecutive chunks of a row: coalesced global reads), each chunk one
// cp.async (16 bytes: .cg, L2 only; 8 / 4: .ca) into the destination's physical
// (swizzled) position. A chunk that may lie outside the source tensor uses the zero-fill
// form (reads nothing, writes zeros): T.copy semantics for partial tiles.
// A width W is used when it can be proven that every chunk is W-aligned and contiguous on
// both sides and lies entirely inside or outside the tensor: innermost extent a multiple
// of the chunk, source rows a multiple of the chunk apart (a symbolic row pitch becomes a
// runtime check with the SIMT copy as the other branch), the innermost start a multiple of
// the chunk, the destination layout contiguous and aligned per chunk (checked element by
// element). Otherwise the generic SIMT copy lowers it (still correct in a pipeline: the
// data is in place before the step's barrier). The base pointer's alignment is assumed
// (tilec.assume_aligned:<W>) and checked by the runtime at launch.
#include <memory>
#include <optional>
#include <sstream>

#include "layout/int_eval.h"
#include "ops/op_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::ops {

using namespace ir;

namespace {

struct AsyncPlan {
  int bytes = 0;             // chunk width W
  int64_t elems = 0;         // elements per chunk V
  Expr runtime_condition;    // null: none needed
};

Expr conj(Expr a, Expr b) { return a ? (b ? (a && b) : a) : b; }

// Element offsets of the destination layout at every chunk: its first element must be at
// a multiple of V and its last V - 1 further (the layouts here permute whole chunks, so the
// two ends decide contiguity). Leading dimensions of extent 1 whose index is not a
// constant are tried with every value. False when it cannot be decided.
bool dst_chunks_contiguous(const BufferRegion& dst, const Layout& layout, int64_t v) {
  if (!layout || layout->forward_index.size() != 1 || layout->is_fragment()) return false;
  if (!layout::IntProgram::compiles(layout->forward_index[0], layout->vars)) return false;
  layout::IntProgram prog(layout->forward_index[0], layout->vars);
  std::vector<int64_t> shape = const_shape(dst.buffer);
  const int nd = static_cast<int>(shape.size());
  std::vector<std::vector<int64_t>> values(nd);  // chunk starts only in the last dimension
  for (int d = 0; d < nd; ++d) {
    const int64_t* mn = as_const_int(dst.region[d].min);
    const int64_t* ex = as_const_int(dst.region[d].extent);
    if (!ex) return false;
    const int64_t step = d == nd - 1 ? v : 1;
    if (mn) {
      if (d == nd - 1 && (*ex % v != 0)) return false;
      for (int64_t i = 0; i < *ex; i += step) values[d].push_back(*mn + i);
    } else if (*ex == 1) {
      for (int64_t i = 0; i < shape[d]; ++i) values[d].push_back(i);
    } else {
      return false;
    }
  }
  int64_t total = 1;
  for (auto& x : values) total *= static_cast<int64_t>(x.size());
  if (total > (int64_t{1} << 22)) return false;
  // Inside the buffer (the usual case), every offset comes from one evaluation over the
  // region's box: lo[d] + [0, box[d]).
  bool inside = nd > 0 && layout->vars.size() == static_cast<size_t>(nd);
  std::vector<int64_t> lo(nd), box(nd), strides(nd, 1), offsets;
  for (int d = 0; d < nd && inside; ++d) {
    lo[d] = values[d].front();
    box[d] = values[d].back() + (d == nd - 1 ? v : 1) - lo[d];
    inside = lo[d] >= 0 && lo[d] + box[d] <= shape[d];
  }
  if (inside) {
    offsets = layout::eval_box(layout->forward_index[0], layout->vars, box, lo);
    for (int d = nd - 1; d > 0; --d) strides[d - 1] = strides[d] * box[d];
  }
  std::vector<int64_t> idx(nd);
  for (int64_t k = 0; k < total; ++k) {
    int64_t rem = k;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = values[d][rem % values[d].size()];
      rem /= static_cast<int64_t>(values[d].size());
    }
    int64_t first = 0, last = 0;
    if (inside) {
      int64_t flat = 0;
      for (int d = 0; d < nd; ++d) flat += (idx[d] - lo[d]) * strides[d];
      first = offsets[flat];
      last = offsets[flat + v - 1];
    } else {
      first = prog.eval(idx.data());
      idx[nd - 1] += v - 1;
      last = prog.eval(idx.data());
    }
    if (first % v != 0 || last != first + v - 1) return false;
  }
  return true;
}

std::optional<AsyncPlan> plan_async(const TileOpNode& op, LowerContext& ctx, const RegionLoop& loop) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  if (src.buffer->dtype != dst.buffer->dtype || loop.extents.empty()) return std::nullopt;
  // float4_e2m1 is packed two a byte; cp.async addresses elements by byte: SIMT copies it.
  if (src.buffer->dtype.bits() % 8 != 0) return std::nullopt;
  const int e = src.buffer->dtype.bytes();
  const int ns = src.buffer->ndim(), nd = dst.buffer->ndim();
  // The innermost iteration dimension must be the last dimension of both buffers.
  if (!as_const_int(src.region[ns - 1].extent) || *as_const_int(src.region[ns - 1].extent) != loop.extents.back())
    return std::nullopt;
  if (!as_const_int(dst.region[nd - 1].extent) || *as_const_int(dst.region[nd - 1].extent) != loop.extents.back())
    return std::nullopt;
  std::vector<Expr> strides = buffer_strides(src.buffer);
  if (!is_one(strides.back())) return std::nullopt;
  arith::Analyzer& an = ctx.analyzer();
  for (int w : {16, 8, 4}) {
    if (w < e || w % e != 0) continue;
    const int64_t v = w / e;
    if (loop.extents.back() % v != 0) continue;
    if (!an.can_prove_divisible(src.region[ns - 1].min, v)) continue;
    if (!dst_chunks_contiguous(dst, ctx.layout_of(dst.buffer), v)) continue;
    // Rows v-aligned and chunks entirely in or out of the tensor: static or checked at run time.
    Expr runtime;
    bool impossible = false;
    auto need_divisible = [&](const Expr& x) {
      if (const int64_t* c = as_const_int(x)) {
        impossible |= *c % v != 0;
      } else if (!an.can_prove_divisible(x, v)) {
        runtime = conj(runtime, binary(NodeKind::kEQ, floormod(x, v), int_imm(0, x->dtype)));
      }
    };
    for (int d = 0; d + 1 < ns; ++d) need_divisible(strides[d]);
    need_divisible(src.buffer->shape[ns - 1]);
    if (impossible) continue;
    return AsyncPlan{w, v, runtime};
  }
  return std::nullopt;
}

Expr guard_of(const TileOpNode& op) {
  const AttrValue* g = find_attr(op.attrs, "guard");
  return g && std::holds_alternative<Expr>(*g) ? std::get<Expr>(*g) : Expr();
}

// A guard `v + c < bound` (v an enclosing loop's variable, bound constant) tightens v's range.
void tighten_with_guard(const Expr& guard, LowerContext& ctx, arith::Analyzer& an) {
  auto* lt = guard.as<BinaryNode>();
  if (!lt || guard->kind != NodeKind::kLT) return;
  Expr bound = an.simplify(lt->b);
  const int64_t* b = as_const_int(bound);
  if (!b) return;
  Expr lhs = lt->a;
  int64_t c = 0;
  if (auto* add = lhs.as<BinaryNode>(); add && lhs->kind == NodeKind::kAdd && as_const_int(add->b)) {
    c = *as_const_int(add->b);
    lhs = add->a;
  }
  auto* v = lhs.as<VarNode>();
  if (!v) return;
  for (const ForNode* l : ctx.enclosing_loops()) {
    const int64_t* mn = as_const_int(l->min);
    if (l->loop_var.get() != v || !mn) continue;
    if (*b - c - 1 >= *mn) an.bind_bound(l->loop_var, *mn, *b - c - 1);
  }
}

Stmt lower_async(const TileOpNode& op, LowerContext& ctx, const RegionLoop& loop, const AsyncPlan& plan) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  // Chunk space: the iteration extents with the innermost one in units of V.
  std::vector<int64_t> chunks = loop.extents;
  chunks.back() /= plan.elems;
  int64_t total = 1;
  for (int64_t c : chunks) total *= c;
  const int64_t threads = ctx.num_threads();
  const int64_t iters = (total + threads - 1) / threads;
  Var it = make_var("v_chunk");
  Expr c = iters == 1 ? ctx.thread_index() : Expr(it) * threads + ctx.thread_index();
  VarMap vm;
  int64_t inner = 1;
  for (int k = static_cast<int>(chunks.size()) - 1; k >= 0; --k) {
    Expr coord = floormod(floordiv(c, inner), chunks[k]);
    if (k == static_cast<int>(chunks.size()) - 1) coord = coord * plan.elems;
    vm[loop.vars[k].get()] = coord;
    inner *= chunks[k];
  }
  std::vector<Expr> src_idx, dst_idx;
  for (const auto& x : region_indices(src, loop.vars)) src_idx.push_back(substitute(x, vm));
  for (const auto& x : region_indices(dst, loop.vars)) dst_idx.push_back(substitute(x, vm));
  // Which chunks may fall outside the source: decided with the ranges of the block
  // indices (and the Lets computing rasterized ones), the enclosing loops, the thread and
  // chunk indices, and the guard (a pipelined copy's `it < n`).
  arith::Analyzer an;
  ctx.bind_known_ranges(an);
  for (const ForNode* l : ctx.enclosing_loops()) an.bind_range(l->loop_var, l->min, l->extent);
  if (Expr tid = ctx.thread_index(); tid.as<VarNode>())
    an.bind_range(Var(std::static_pointer_cast<const VarNode>(tid.shared())), int_imm(0), int_imm(threads));
  if (iters > 1) an.bind_range(it, int_imm(0), int_imm(iters));
  Expr guard = guard_of(op);
  if (guard) tighten_with_guard(guard, ctx, an);
  Expr pred = guard;
  for (int d = 0; d < src.buffer->ndim(); ++d) {
    Expr in = src_idx[d] < src.buffer->shape[d];
    if (!an.can_prove(in)) pred = conj(pred, in);
  }
  const std::string kind = plan.bytes == 16 ? "cg16" : "ca" + std::to_string(plan.bytes);
  Expr dst_addr = call(DataType::Handle(), "tl.address_of",
                       {buffer_load(ctx.lowered_buffer(dst.buffer), ctx.physical_index(dst.buffer, dst_idx), op.loc)},
                       op.loc);
  Expr src_addr = call(DataType::Handle(), "tl.address_of", {buffer_load(src.buffer, src_idx, op.loc)}, op.loc);
  Stmt body = pred ? evaluate(call(DataType::Void(), "tl.cp_async_" + kind + "_zfill", {dst_addr, src_addr, pred}, op.loc), op.loc)
                   : evaluate(call(DataType::Void(), "tl.cp_async_" + kind, {dst_addr, src_addr}, op.loc), op.loc);
  if (total % threads != 0) body = if_then_else(c < int_imm(total), body, nullptr, op.loc);
  if (iters > 1) body = make_for(it, int_imm(0), int_imm(iters), ForKind::kUnrolled, body, op.loc);
  return annotate(passes::kAssumeAlignedPrefix + std::to_string(plan.bytes), src.buffer, body, op.loc);
}

// The generic copy of the same regions (the SIMT behaviour of T.copy), under the guard.
Stmt lower_simt(const TileOpNode& op, LowerContext& ctx) {
  Stmt copy = make_tile_op("copy", op.args, {}, op.loc);
  Stmt out = ops::lower(*copy.as<TileOpNode>(), ctx);
  if (Expr g = guard_of(op)) out = if_then_else(g, out, nullptr, op.loc);
  return out;
}

AccessRegions async_access(const TileOpNode& op) { return {{region_arg(op, 0)}, {region_arg(op, 1)}}; }

LayoutProposals async_infer(const TileOpNode&, const LayoutInferenceState&, InferLevel) { return {}; }

Stmt async_lower(const TileOpNode& op, LowerContext& ctx) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  TILEC_USER_CHECK(src.buffer->scope == Scope::kGlobal && is_shared(dst.buffer->scope), op.loc,
                   "use T.copy for other directions")
      << "T.async_copy copies from global to shared memory, not from " << scope_name(src.buffer->scope) << " to "
      << scope_name(dst.buffer->scope);
  auto se = nonunit_extents(src, "T.async_copy", op.loc);
  auto de = nonunit_extents(dst, "T.async_copy", op.loc);
  TILEC_USER_CHECK(se == de, op.loc, "make both regions cover the same tile (extents of 1 are ignored)")
      << "T.async_copy: the source region of '" << src.buffer->name << "' has extents " << extents_str(se)
      << " but the destination region of '" << dst.buffer->name << "' has " << extents_str(de);
  RegionLoop loop = region_loop(src, "T.async_copy", op.loc);
  Stmt out;
  if (auto plan = loop.vars.empty() ? std::nullopt : plan_async(op, ctx, loop)) {
    out = lower_async(op, ctx, loop, *plan);
    if (plan->runtime_condition) out = if_then_else(plan->runtime_condition, out, lower_simt(op, ctx), op.loc);
  } else {
    out = lower_simt(op, ctx);
  }
  if (!attr_bool(op, "no_implicit_commit_wait")) {
    out = seq({out, evaluate(call(DataType::Void(), "tl.cp_async_commit", {}, op.loc), op.loc),
               evaluate(call(DataType::Void(), "tl.cp_async_wait", {int_imm(0)}, op.loc), op.loc)},
              op.loc);
  }
  return out;
}

}  // namespace

void register_copy_async_behaviours() {
  register_op_behaviour({"async_copy", "cp.async", [](const target::Target& t) { return t.has_cp_async(); }, 10,
                         async_access, async_infer, async_lower});
}

}  // namespace tilec::ops
