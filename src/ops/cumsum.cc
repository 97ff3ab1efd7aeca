// T.cumsum(src, dst, dim, reverse): inclusive prefix sums along `dim` (from the end when
// reverse); T.cummax (attribute op = "max"): running maxima, the same scan with max for +
// and -inf (the lowest value of an integer type) for 0. src and dst are shared buffers (dst
// may be src: in place), or fragments whose scanned dimension lies within each thread's
// registers.
//
// Shared memory: the lines along `dim` are spread over the threads. With at least as
// many lines as threads, each thread scans whole lines. With fewer lines, P threads share
// a line in chunks: each scans its chunk and publishes the chunk total to a shared
// scratch; after the barrier (inserted by the sync pass) each adds the totals of the
// chunks before it.
#include <algorithm>
#include <limits>

#include "layout/digit_form.h"
#include "ops/op_util.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

struct ScanArgs {
  BufferRegion src, dst;
  int dim = 0;
  bool reverse = false;
  bool max = false;  // T.cummax
  std::vector<int64_t> shape;
  const char* name() const { return max ? "T.cummax" : "T.cumsum"; }
  // The scan's combination and its identity, in the destination's dtype.
  Expr combine(const Expr& a, const Expr& b) const { return max ? ir::max(a, b) : a + b; }
  Expr identity(DataType t) const {
    if (!max) return typed_const(0, t);
    if (t.is_float()) return typed_const(-std::numeric_limits<double>::infinity(), t);
    return int_imm(t.is_uint() ? 0 : -(int64_t{1} << (t.bits() - 1)), t);
  }
};

ScanArgs check_args(const TileOpNode& op) {
  ScanArgs a;
  a.src = region_arg(op, 0);
  a.dst = region_arg(op, 1);
  a.max = attr_string(op, "op", "sum") == "max";
  for (const auto* r : {&a.src, &a.dst}) {
    TILEC_USER_CHECK(r->buffer->scope == Scope::kFragment || is_shared(r->buffer->scope), op.loc,
                     "copy the data into a shared buffer first")
        << a.name() << " works on shared buffers and fragments, but '" << r->buffer->name << "' is in "
        << scope_name(r->buffer->scope);
    TILEC_USER_CHECK(region_is_full(*r), op.loc, "scan whole buffers")
        << a.name() << " on a part of '" << r->buffer->name << "' is not supported";
  }
  a.shape = const_shape(a.src.buffer);
  TILEC_USER_CHECK(a.shape == const_shape(a.dst.buffer), op.loc, "")
      << a.name() << ": '" << a.src.buffer->name << "' and '" << a.dst.buffer->name << "' have different shapes";
  TILEC_USER_CHECK((a.src.buffer->scope == Scope::kFragment) == (a.dst.buffer->scope == Scope::kFragment), op.loc,
                   "scan shared to shared, or fragment to fragment")
      << a.name() << " between a fragment and a shared buffer is not supported";
  int n = static_cast<int>(a.shape.size());
  int64_t dim = attr_int(op, "dim", 0);
  if (dim < 0) dim += n;
  TILEC_USER_CHECK(dim >= 0 && dim < n, op.loc, "") << a.name() << ": dim=" << attr_int(op, "dim", 0)
                                                     << " is out of range for a " << n << "-d buffer";
  a.dim = static_cast<int>(dim);
  a.reverse = attr_bool(op, "reverse", false);
  return a;
}

AccessRegions scan_access(const TileOpNode& op) { return {{region_arg(op, 0)}, {region_arg(op, 1)}}; }

LayoutProposals scan_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  ScanArgs a = check_args(op);
  if (a.src.buffer->scope != Scope::kFragment) return {};
  Layout ls = state.layout_of(a.src.buffer), ld = state.layout_of(a.dst.buffer);
  LayoutProposals out;
  if (level == InferLevel::kCommon) {
    if (ls) out.push_back({a.dst.buffer, ls});
    if (ld) out.push_back({a.src.buffer, ld});
  }
  if (level == InferLevel::kStrict && !ls && !ld) {
    // The scan runs in registers: the scanned dimension must stay inside each thread
    // (strict: a copy's default would spread it over threads). Only the other
    // dimensions are spread.
    std::vector<int64_t> rest;
    for (int d = 0; d < static_cast<int>(a.shape.size()); ++d)
      if (d != a.dim) rest.push_back(a.shape[d]);
    layout::DigitForm f;
    f.shape = a.shape;
    if (!rest.empty()) {
      auto base = layout::fit_digit_form(layout::coalesced_layout(rest, state.num_threads(), 1));
      int64_t local = base->local_size();
      for (auto g : base->digits) {
        if (g.dim != layout::kRepDim && g.dim >= a.dim) ++g.dim;
        f.digits.push_back(g);
      }
      f.digits.push_back({a.dim, 1, a.shape[a.dim], false, local});
    } else {
      f.digits.push_back({a.dim, 1, a.shape[a.dim], false, 1});
    }
    f.digits.erase(std::remove_if(f.digits.begin(), f.digits.end(), [](const layout::Digit& g) { return g.extent == 1; }),
                   f.digits.end());
    out.push_back({a.src.buffer, layout::to_layout(f)});
  }
  return out;
}

// Logical index of the element at position `pos` of line `line_idx` (indices of the
// other dimensions).
std::vector<Expr> element(const ScanArgs& a, const std::vector<Expr>& line_idx, const Expr& pos) {
  std::vector<Expr> idx;
  size_t k = 0;
  int64_t n = a.shape[a.dim];
  Expr p = a.reverse ? int_imm(n - 1) - pos : pos;
  for (int d = 0; d < static_cast<int>(a.shape.size()); ++d) idx.push_back(d == a.dim ? p : line_idx[k++]);
  return idx;
}

Stmt scan_lower(const TileOpNode& op, LowerContext& ctx) {
  ScanArgs a = check_args(op);
  const SourceLoc& loc = op.loc;
  DataType t = a.dst.buffer->dtype;
  int64_t n = a.shape[a.dim];
  std::vector<int64_t> rest;
  std::vector<Var> rest_vars;
  for (int d = 0; d < static_cast<int>(a.shape.size()); ++d)
    if (d != a.dim) {
      rest.push_back(a.shape[d]);
      rest_vars.push_back(make_var("l" + std::to_string(d), DataType::Int(32), loc));
    }
  std::vector<Expr> line_idx(rest_vars.begin(), rest_vars.end());
  if (rest.empty()) {
    rest = {1};
    rest_vars = {make_var("l", DataType::Int(32), loc)};
  }
  int64_t lines = 1;
  for (auto e : rest) lines *= e;
  Buffer acc = ctx.alloc_buffer(a.dst.buffer->name + "_scan", {1}, t, Scope::kLocal);
  Expr acc0 = buffer_load(acc, {int_imm(0)}, loc);
  auto load_src = [&](const Expr& pos) {
    Expr v = buffer_load(a.src.buffer, element(a, line_idx, pos), loc);
    return v->dtype == t ? v : cast(t, v, loc);
  };

  if (a.src.buffer->scope == Scope::kFragment) {
    auto f = layout::fit_digit_form(ctx.layout_of(a.src.buffer));
    bool local_dim = f.has_value();
    if (f)
      for (const auto& g : f->digits)
        if (g.dim == a.dim && g.on_thread) local_dim = false;
    TILEC_USER_CHECK(local_dim, loc, "copy the fragment into a shared buffer and scan that")
        << a.name() << " of fragment '" << a.src.buffer->name
        << "' along a dimension spread over threads is not supported";
    std::vector<int> kept;
    for (int d = 0; d < static_cast<int>(a.shape.size()); ++d)
      if (d != a.dim) kept.push_back(d);
    layout::DigitForm lf = layout::project_form(*f, kept);
    if (kept.empty()) lf.shape = {1};
    Layout loop = layout::to_layout(lf);
    Var x = make_var("x", DataType::Int(32), loc);
    Stmt body = seq({buffer_store(acc, {int_imm(0)}, a.identity(t), loc),
                     make_for(x, int_imm(0), int_imm(n), ForKind::kUnrolled,
                              seq({buffer_store(acc, {int_imm(0)}, a.combine(acc0, load_src(x)), loc),
                                   buffer_store(a.dst.buffer, element(a, line_idx, x), acc0, loc)}),
                              loc)});
    return ctx.lower_parallel(rest_vars, rest, body, loop, false);
  }

  int64_t T = ctx.num_threads();
  int64_t P = 1;  // threads per line
  while (P * 2 * lines <= T && P * 2 <= n) P *= 2;
  if (P == 1) {
    Var x = make_var("x", DataType::Int(32), loc);
    Stmt body = seq({buffer_store(acc, {int_imm(0)}, a.identity(t), loc),
                     make_for(x, int_imm(0), int_imm(n), ForKind::kSerial,
                              seq({buffer_store(acc, {int_imm(0)}, a.combine(acc0, load_src(x)), loc),
                                   buffer_store(a.dst.buffer, element(a, line_idx, x), acc0, loc)}),
                              loc)});
    return ctx.lower_parallel(rest_vars, rest, body, layout::coalesced_layout(rest, T, 1), false);
  }
  // Chunked: thread = line * P + part.
  int64_t C = (n + P - 1) / P;
  Buffer totals = ctx.alloc_buffer(a.dst.buffer->name + "_scan_totals", {lines * P}, t, Scope::kShared);
  Expr tid = ctx.thread_index();
  Expr line = layout::idx_div(tid, P), part = layout::idx_mod(tid, P);
  // The line's indices in the other dimensions (row-major).
  std::vector<Expr> lidx(rest.size());
  {
    Expr rem = line;
    for (size_t d = rest.size(); d-- > 0;) {
      lidx[d] = d == 0 ? rem : layout::idx_mod(rem, rest[d]);
      rem = layout::idx_div(rem, rest[d]);
    }
  }
  std::vector<Expr> real_line_idx = rest.size() == 1 && line_idx.empty() ? std::vector<Expr>{} : lidx;
  auto elem_at = [&](const Expr& pos) { return element(a, real_line_idx, pos); };
  auto phys_load = [&](const Buffer& b, const Expr& pos) {
    Expr v = ctx.load(b, elem_at(pos));
    return v->dtype == t ? v : cast(t, v, loc);
  };
  Var x = make_var("x", DataType::Int(32), loc);
  Expr pos = part * int_imm(C) + x;
  Stmt scan_chunk = make_for(
      x, int_imm(0), int_imm(C), ForKind::kSerial,
      if_then_else(pos < int_imm(n),
                   seq({buffer_store(acc, {int_imm(0)}, a.combine(acc0, phys_load(a.src.buffer, pos)), loc),
                        ctx.store(a.dst.buffer, elem_at(pos), acc0)}),
                   nullptr, loc),
      loc);
  // Threads beyond lines * P (when the block is larger) sit out.
  auto guarded = [&](const Stmt& s) {
    return lines * P < T ? if_then_else(line < int_imm(lines), s, nullptr, loc) : s;
  };
  Stmt phase1 = guarded(seq({buffer_store(acc, {int_imm(0)}, a.identity(t), loc), scan_chunk,
                             buffer_store(totals, {tid}, acc0, loc)}));
  Var q = make_var("q", DataType::Int(32), loc);
  Stmt offset = seq({buffer_store(acc, {int_imm(0)}, a.identity(t), loc),
                     make_for(q, int_imm(0), int_imm(P), ForKind::kSerial,
                              if_then_else(q < part,
                                           buffer_store(acc, {int_imm(0)},
                                                        a.combine(acc0, buffer_load(totals, {line * int_imm(P) + q}, loc)),
                                                        loc),
                                           nullptr, loc),
                              loc)});
  Var y = make_var("y", DataType::Int(32), loc);
  Expr pos2 = part * int_imm(C) + y;
  Stmt add = make_for(y, int_imm(0), int_imm(C), ForKind::kSerial,
                      if_then_else(pos2 < int_imm(n),
                                   ctx.store(a.dst.buffer, elem_at(pos2),
                                             a.combine(phys_load(a.dst.buffer, pos2), acc0)),
                                   nullptr,
                                   loc),
                      loc);
  Stmt phase2 = guarded(seq({offset, add}));
  return seq({phase1, phase2}, loc);
}

}  // namespace

void register_cumsum_behaviours() {
  register_op_behaviour({"cumsum", "simt", nullptr, 0, scan_access, scan_infer, scan_lower});
}

}  // namespace tilec::ops
