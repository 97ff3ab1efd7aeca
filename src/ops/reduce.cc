// T.reduce_max / min / sum / abssum / absmax(src, dst, dim, clear[, nan_propagate]) on fragments
// (MODEL.md "Reductions"). nan_propagate (max / min / absmax): a NaN element makes the result
// NaN; without it NaNs are ignored (fmaxf semantics, also the CPU target's).
//
// Layout: dst is src with the reduced dimension dropped (or kept with extent 1): the
// threads that held different positions along it become replicas of the result
// (layout::project). Lowering, per output register of the thread:
//   1. combine the thread's own registers along the reduced dimension;
//   2. butterfly warp shuffles over exactly the lane digits that vary with the reduced
//      coordinate (xor offsets for power-of-two digits, indexed shuffles otherwise);
//   3. when the reduced coordinate also varies with the warp, one representative lane
//      per group writes its partial to a shared scratch and every thread combines the
//      partials of the warps of its group (barriers come from the sync pass);
//   4. dst = result, or dst combined with the result when clear=False.
// Elements beyond an uneven extent contribute the identity; every holder (replica) ends
// with the result. stage="own_registers" stops after 1 (each holder of a row keeps its
// partial); stage="across_threads" starts from dst's partials instead of 1 and ends with
// dst = result (defer_row_sums: a running sum's threads combined once, after its loop).
#include <algorithm>
#include <cmath>
#include <limits>

#include "layout/digit_form.h"
#include "ops/op_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;
using layout::Digit;
using layout::DigitForm;
using layout::idx_add;
using layout::idx_div;
using layout::idx_mod;
using layout::idx_mul;
using layout::kRepDim;

namespace {

enum class ReduceKind { kMax, kMin, kSum, kAbsSum, kAbsMax };

ReduceKind kind_of(const std::string& op) {
  if (op == "reduce_max") return ReduceKind::kMax;
  if (op == "reduce_min") return ReduceKind::kMin;
  if (op == "reduce_sum") return ReduceKind::kSum;
  if (op == "reduce_abssum") return ReduceKind::kAbsSum;
  return ReduceKind::kAbsMax;
}

struct ReduceArgs {
  BufferRegion src, dst;
  int dim = 0;
  bool keep_dim = false;  // dst keeps the reduced dimension with extent 1
  std::vector<int64_t> src_shape, dst_shape;
};

ReduceArgs check_args(const TileOpNode& op) {
  ReduceArgs a;
  a.src = region_arg(op, 0);
  a.dst = region_arg(op, 1);
  std::string name = "T." + op.op;
  for (const auto* r : {&a.src, &a.dst}) {
    TILEC_USER_CHECK(r->buffer->scope == Scope::kFragment, op.loc,
                     "reduce fragments; copy a shared or global tile into a fragment first")
        << name << " needs fragments, but '" << r->buffer->name << "' is in " << scope_name(r->buffer->scope);
    TILEC_USER_CHECK(region_is_full(*r), op.loc, "reduce whole fragments")
        << name << " on a part of fragment '" << r->buffer->name << "' is not supported";
  }
  if (attr_bool(op, "nan_propagate", false)) {
    const ReduceKind k = kind_of(op.op);
    TILEC_USER_CHECK(k == ReduceKind::kMax || k == ReduceKind::kMin || k == ReduceKind::kAbsMax, op.loc,
                     "a sum has no NaN choice to make: NaN operands always give NaN")
        << name << " takes no nan_propagate (only reduce_max, reduce_min and reduce_absmax do)";
    const DataType t = a.dst.buffer->dtype;
    TILEC_USER_CHECK(!t.is_float() || t == DataType::Float(16) || t == DataType::BFloat16() ||
                         t == DataType::Float(32) || t == DataType::Float(64),
                     op.loc, "reduce into a float32 fragment and convert")
        << name << "(nan_propagate=True) into '" << a.dst.buffer->name << "' of type " << t.str()
        << " is not supported (float16, bfloat16, float32 and float64 are)";
  }
  a.src_shape = const_shape(a.src.buffer);
  a.dst_shape = const_shape(a.dst.buffer);
  int n = static_cast<int>(a.src_shape.size());
  int64_t dim = attr_int(op, "dim", -1);
  if (dim < 0) dim += n;
  TILEC_USER_CHECK(dim >= 0 && dim < n, op.loc, "dim counts the source's dimensions (negative from the end)")
      << name << ": dim=" << attr_int(op, "dim", -1) << " is out of range for the " << n << "-d fragment '"
      << a.src.buffer->name << "'";
  a.dim = static_cast<int>(dim);
  std::vector<int64_t> dropped = a.src_shape, kept1 = a.src_shape;
  dropped.erase(dropped.begin() + a.dim);
  kept1[a.dim] = 1;
  if (dropped.empty()) dropped = {1};
  if (a.dst_shape == dropped) a.keep_dim = false;
  else if (a.dst_shape == kept1) a.keep_dim = true;
  else
    throw_user_error(name + ": the output '" + a.dst.buffer->name + "' has shape " + extents_str(a.dst_shape) +
                         ", expected " + extents_str(dropped) + " (the input " + extents_str(a.src_shape) +
                         " without dimension " + std::to_string(a.dim) + ")",
                     op.loc);
  return a;
}

// The output digit form implied by the input's.
std::optional<DigitForm> output_form(const ReduceArgs& a, const DigitForm& in) {
  std::vector<int> kept;
  for (int d = 0; d < static_cast<int>(a.src_shape.size()); ++d)
    if (d != a.dim) kept.push_back(d);
  DigitForm p = layout::project_form(in, kept);
  if (a.keep_dim || p.shape.empty()) {
    // Re-insert a unit dimension (or make a 0-d result 1-d).
    int at = a.keep_dim ? a.dim : 0;
    for (auto& g : p.digits)
      if (g.dim != kRepDim && g.dim >= at) ++g.dim;
    p.shape.insert(p.shape.begin() + at, 1);
  }
  return p;
}

AccessRegions reduce_access(const TileOpNode& op) {
  AccessRegions r{{region_arg(op, 0)}, {region_arg(op, 1)}};
  if (!attr_bool(op, "clear", true) || attr_string(op, "stage", "all") == "across_threads")
    r.reads.push_back(region_arg(op, 1));
  return r;
}

LayoutProposals reduce_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  ReduceArgs a = check_args(op);
  Layout in = state.layout_of(a.src.buffer);
  if (level == InferLevel::kCommon && in) {
    auto f = layout::fit_digit_form(in);
    TILEC_USER_CHECK(f.has_value(), op.loc, "give the input a layout with div/mod-style thread maps")
        << "T." << op.op << " cannot reduce fragment '" << a.src.buffer->name << "': its layout has no digit structure";
    return {{a.dst.buffer, layout::to_layout(*output_form(a, *f))}};
  }
  if (level == InferLevel::kFree && !in)
    return {{a.src.buffer, layout::default_fragment(a.src_shape, state.num_threads(), a.src.buffer->dtype)}};
  return {};
}

Expr identity_of(ReduceKind k, DataType t) {
  bool max_like = k == ReduceKind::kMax;
  bool min_like = k == ReduceKind::kMin;
  if (!max_like && !min_like) return typed_const(0, t);
  if (t.is_float()) return float_imm(max_like ? -INFINITY : INFINITY, t);
  int bits = t.bits();
  if (t.is_uint()) return int_imm(max_like ? 0 : static_cast<int64_t>(bits >= 64 ? -1 : (int64_t{1} << bits) - 1), t);
  int64_t lo = bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
  int64_t hi = bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return int_imm(max_like ? lo : hi, t);
}

// nan_propagate: a NaN operand makes max / min NaN (tl.max_nan / tl.min_nan on floats);
// plain max / min ignore it, as fmaxf does.
Expr combine(ReduceKind k, const Expr& a, const Expr& b, bool nan_propagate = false) {
  const bool nan = nan_propagate && a->dtype.is_float();
  switch (k) {
    case ReduceKind::kMax:
    case ReduceKind::kAbsMax: return nan ? call(a->dtype, "tl.max_nan", {a, b}) : max(a, b);
    case ReduceKind::kMin: return nan ? call(a->dtype, "tl.min_nan", {a, b}) : min(a, b);
    default: return a + b;
  }
}

Expr prepare(ReduceKind k, const Expr& x, DataType acc) {
  Expr v = x->dtype == acc ? x : cast(acc, x);
  if (k == ReduceKind::kAbsSum || k == ReduceKind::kAbsMax) v = call(acc, "abs", {v});
  return v;
}

Expr digit_of(const Expr& src, int64_t stride, int64_t extent) { return idx_mod(idx_div(src, stride), extent); }

Stmt unrolled(const Var& v, int64_t extent, const Stmt& body, const SourceLoc& loc) {
  if (extent == 1) return substitute(body, {{v.get(), int_imm(0)}});
  return make_for(v, int_imm(0), int_imm(extent), ForKind::kUnrolled, body, loc);
}

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

Expr eq(const Expr& a, const Expr& b) { return binary(NodeKind::kEQ, a, b); }

Stmt reduce_lower(const TileOpNode& op, LowerContext& ctx) {
  const SourceLoc& loc = op.loc;
  ReduceArgs a = check_args(op);
  ReduceKind kind = kind_of(op.op);
  bool clear = attr_bool(op, "clear", true);
  const bool nan_propagate = attr_bool(op, "nan_propagate", false);
  auto combine = [&](ReduceKind k, const Expr& x, const Expr& y) { return ops::combine(k, x, y, nan_propagate); };
  Layout in_layout = ctx.layout_of(a.src.buffer), out_layout = ctx.layout_of(a.dst.buffer);
  auto in = layout::fit_digit_form(in_layout);
  TILEC_USER_CHECK(in.has_value(), loc, "") << "T." << op.op << ": the layout of '" << a.src.buffer->name
                                            << "' has no digit structure";
  DigitForm out = *output_form(a, *in);
  TILEC_USER_CHECK(layout::layout_equal(layout::to_layout(out), out_layout), loc,
                   "let layout inference derive the output's layout from the input")
      << "T." << op.op << ": the layout of the output '" << a.dst.buffer->name
      << "' is not the input's layout without dimension " << a.dim;

  DataType acc_t = a.dst.buffer->dtype;
  Expr t = ctx.thread_index();
  int64_t T = ctx.num_threads();
  Buffer src_regs = ctx.lowered_buffer(a.src.buffer);
  Buffer dst_regs = ctx.lowered_buffer(a.dst.buffer);
  int64_t KB = layout::fragment_local_size(out_layout);

  // Register digits of the input: kept ones map to output registers (renumbered densely
  // in order of input stride, as project_form does), reduced ones are enumerated by m.
  std::vector<Digit> kept_local, red_local, red_thread;
  for (const auto& g : in->digits) {
    if (g.dim == kRepDim) continue;
    if (g.on_thread) {
      if (g.dim == a.dim) red_thread.push_back(g);
    } else {
      (g.dim == a.dim ? red_local : kept_local).push_back(g);
    }
  }
  auto by_out = [](const Digit& x, const Digit& y) { return x.out_stride < y.out_stride; };
  std::sort(kept_local.begin(), kept_local.end(), by_out);
  std::sort(red_local.begin(), red_local.end(), by_out);

  Var kb = make_var("kb", DataType::Int(32), loc), m = make_var("m", DataType::Int(32), loc);
  Buffer red = ctx.alloc_buffer(a.dst.buffer->name + "_red", {KB}, acc_t, Scope::kLocal);
  Expr ka = nullptr;
  int64_t s = 1;
  for (const auto& g : kept_local) {
    ka = idx_add(ka, idx_mul(digit_of(kb, s, g.extent), g.out_stride));
    s *= g.extent;
  }
  int64_t MR = 1;
  Expr coord = nullptr;  // the reduced coordinate (for uneven extents)
  for (const auto& g : red_local) {
    Expr v = digit_of(m, MR, g.extent);
    ka = idx_add(ka, idx_mul(v, g.out_stride));
    coord = idx_add(coord, idx_mul(v, g.in_stride));
    MR *= g.extent;
  }
  for (const auto& g : red_thread) coord = idx_add(coord, idx_mul(digit_of(t, g.out_stride, g.extent), g.in_stride));
  if (!ka) ka = int_imm(0);
  int64_t n_red = a.src_shape[a.dim];
  int64_t covered = 1;
  for (const auto& g : in->digits_of(a.dim)) covered = g.in_stride * g.extent;
  Expr elem = prepare(kind, buffer_load(src_regs, {ka}, loc), acc_t);
  if (coord && covered > n_red) elem = select(coord < int_imm(n_red), elem, identity_of(kind, acc_t));

  const std::string stage = attr_string(op, "stage", "all");
  TILEC_USER_CHECK(stage == "all" || stage == "own_registers" || stage == "across_threads", loc,
                   "stage is all, own_registers or across_threads")
      << "T." << op.op << ": unknown stage '" << stage << "'";
  std::vector<Stmt> stmts;
  Expr red_kb = buffer_load(red, {kb}, loc);
  if (stage == "across_threads") {
    // 1'. the partials the threads hold in dst
    stmts.push_back(unrolled(kb, KB, buffer_store(red, {kb}, buffer_load(dst_regs, {kb}, loc), loc), loc));
    clear = true;
  } else {
    // 1. own registers
    stmts.push_back(unrolled(
        kb, KB,
        seq({buffer_store(red, {kb}, identity_of(kind, acc_t), loc),
             unrolled(m, MR, buffer_store(red, {kb}, combine(kind, red_kb, elem), loc), loc)}),
        loc));
  }

  // 2. lanes, 3. warps. Warp shuffles need every thread digit inside the lane index to be a
  // bit field (so the xor partner differs in one digit only and digits never straddle a warp
  // unevenly); digits of whole warps may have any extent (three warpgroups: 12 warps). Other
  // layouts combine all threads through shared memory.
  bool bit_fields = true;
  for (const auto& g : in->digits) {
    if (!g.on_thread) continue;
    bit_fields &= g.out_stride >= 32 ? g.out_stride % 32 == 0 : is_pow2(g.extent) && is_pow2(g.out_stride);
  }
  std::vector<Digit> lanes, warps;
  for (const auto& g : red_thread) {
    int64_t lo = g.out_stride, hi = g.out_stride * g.extent;
    if (!bit_fields || lo >= 32) {
      warps.push_back(g);
    } else if (hi <= 32) {
      lanes.push_back(g);
    } else {
      Digit l = g, w = g;
      l.extent = 32 / lo;
      w.extent = g.extent / l.extent;
      w.out_stride = 32;
      w.in_stride = g.in_stride * l.extent;
      lanes.push_back(l);
      warps.push_back(w);
    }
  }
  if (!lanes.empty()) {
    TILEC_USER_CHECK(T % 32 == 0, loc, "use a multiple of 32 threads")
        << "T." << op.op << " reduces across lanes, which needs whole warps, but the kernel has " << T << " threads";
  }
  if (stage == "own_registers") {  // the holders of a row keep partials (combined later)
    lanes.clear();
    warps.clear();
  }
  for (const auto& g : lanes) {
    for (int64_t off = g.out_stride; off < g.out_stride * g.extent; off *= 2) {
      Expr other = call(acc_t, "tl.shfl_xor", {red_kb, int_imm(off)}, loc);
      stmts.push_back(unrolled(kb, KB, buffer_store(red, {kb}, combine(kind, red_kb, other), loc), loc));
    }
  }
  if (!warps.empty()) {
    // Threads are (reduced lane digits, reduced warp digits, the rest); the rest indexes
    // a slot, the warp digits a partial.
    std::vector<Digit> rest;
    for (const auto& g : in->digits)
      if (g.on_thread && g.dim != a.dim) rest.push_back(g);
    std::sort(rest.begin(), rest.end(), by_out);
    Expr slot = nullptr;
    int64_t P = 1;
    for (const auto& g : rest) {
      slot = idx_add(slot, idx_mul(digit_of(t, g.out_stride, g.extent), P));
      P *= g.extent;
    }
    if (!slot) slot = int_imm(0);
    Expr wsel = nullptr;
    int64_t NW = 1;
    for (const auto& g : warps) {
      wsel = idx_add(wsel, idx_mul(digit_of(t, g.out_stride, g.extent), NW));
      NW *= g.extent;
    }
    // Writers: one lane per group, and only threads inside the input's thread space.
    Expr writer = nullptr;
    for (const auto& g : lanes) writer = layout::idx_and(writer, eq(digit_of(t, g.out_stride, g.extent), int_imm(0)));
    {
      std::vector<Digit> all;
      for (const auto& g : in->digits)
        if (g.on_thread) all.push_back(g);
      std::sort(all.begin(), all.end(), by_out);
      Expr rebuilt = nullptr;
      for (const auto& g : all) rebuilt = idx_add(rebuilt, idx_mul(digit_of(t, g.out_stride, g.extent), g.out_stride));
      if (!rebuilt) rebuilt = int_imm(0);
      writer = layout::idx_and(writer, eq(rebuilt, t));
    }
    Buffer scratch = ctx.alloc_buffer(a.dst.buffer->name + "_red_shared", {KB * NW * P}, acc_t, Scope::kShared);
    Expr wslot = (kb * int_imm(NW) + wsel) * int_imm(P) + slot;
    // Each kb writes its own slots [kb * NW * P, (kb + 1) * NW * P): no barrier between iterations
    // (insert_syncs could not tell the slots of two kb apart for different threads, and put one in each).
    stmts.push_back(mark_disjoint_nest(
        unrolled(kb, KB, if_then_else(writer, buffer_store(scratch, {wslot}, red_kb, loc), nullptr, loc), loc)));
    Var w = make_var("w", DataType::Int(32), loc);
    Expr rslot = (kb * int_imm(NW) + w) * int_imm(P) + slot;
    stmts.push_back(unrolled(
        kb, KB,
        seq({buffer_store(red, {kb}, identity_of(kind, acc_t), loc),
             unrolled(w, NW, buffer_store(red, {kb}, combine(kind, red_kb, buffer_load(scratch, {rslot}, loc)), loc),
                      loc)}),
        loc));
  }
  // 4. the result
  Expr result = clear ? red_kb : combine(kind, buffer_load(dst_regs, {kb}, loc), red_kb);
  stmts.push_back(unrolled(kb, KB, buffer_store(dst_regs, {kb}, result, loc), loc));
  return seq(stmts, loc);
}

}  // namespace

void register_reduce_behaviours() {
  for (const char* name : {"reduce_max", "reduce_min", "reduce_sum", "reduce_abssum", "reduce_absmax"})
    register_op_behaviour({name, "simt", nullptr, 0, reduce_access, reduce_infer, reduce_lower});
}

}  // namespace tilec::ops
