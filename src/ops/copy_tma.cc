// TMA copies on sm_90+ (cp.async.bulk.tensor): T.tma_copy, and T.copy where TMA applies.
//
// Which copies (seeds/000 4.4.1, TileLang's choice):
//   T.tma_copy(src, dst, barrier=mbar)   always TMA (UserError when it cannot be): a load
//                                        global -> shared needs the barrier; it posts the
//                                        box bytes on it (expect_tx) and issues the loads,
//                                        the caller arrives and waits (the producer half);
//                                        a store shared -> global needs none;
//   T.copy(shared -> global)             a TMA store by default on sm_90 (not with
//                                        disable_tma=True, tl.disable_tma_lower, or a
//                                        prefer_instruction other than "tma");
//   T.copy(..., prefer_instruction="tma") must be TMA (store) — loads need an mbarrier and
//                                        are written as T.tma_copy (UserError says so).
//   Other T.copy loads are not TMA here; warp specialization turns the copies of a
//   pipelined loop into T.tma_copy.
// Shapes: the shared side is a tile (its last two dimensions: all columns of all rows, or
//   of a band of whole 8-row groups; leading dimensions indexed with one value) in
//   smem_tile.h's form, or a column block of it (`S[:, j * 64:(j + 1) * 64]`) whose start and
//   width are whole swizzle spans: a swizzled tile stores each span-wide column block as its
//   own rows x span array, which a box of span columns writes as it writes a whole tile (a
//   row-major tile has no such block: T.copy falls back to the SIMT copy, T.tma_copy is a
//   UserError); the global side's non-unit
//   extents are (rows, cols) or (cols), the last dimension contiguous. Boxes are at most
//   256 per dimension and one swizzle span wide: a tile is one or more boxes (column
//   blocks x 256-row chunks), each one instruction. Partial tiles need nothing: TMA reads
//   zeros outside the tensor and drops writes there.
// Layouts: at the free level a shared side without a layout gets the widest swizzled
//   tile form (conflict-free for the threads that fill or read it).
// Lowering (one thread issues; thread 0 of the threads that run the op, none when the op
// runs on one thread):
//   load:  if (t == 0) { tl.mbarrier_expect_tx(bar, bytes); tl.tma_load(&S[box], desc, bar, c...) ... }
//          with cluster_mask m: tl.tma_load_multicast(&S[box], desc, bar, m, c...), and
//          popcount(m) times the bytes expected (every CTA of m sends its copy)
//   store: tl.fence_proxy_async(); if (t == 0) { tl.tma_store(desc, &S[box], c...) ...;
//          tl.tma_store_commit(); tl.tma_store_wait_read(0) }   (insert_syncs puts the
//          barrier between the writers' fence and the store); with release=bar (warp_specialize:
//          a staged tile over a pipelined buffer) barrier_arrive(bar) follows the wait, and
//          the store must be TMA (else an error, never a SIMT copy that would not arrive)
//   T.atomic_add(G[region], S) of a shared tile (float32 / float16 / bfloat16, TMA's shapes):
//          the store with tl.tma_reduce_add (cp.reduce.async.bulk.tensor .add) for tl.tma_store.
// The tensor map is tl.tma_descriptor("<tensor>", swizzle, box...) (passes::kTmaDescriptorOp);
// the global tensor's alignment and symbolic strides are checked at launch (constant strides
// that are not multiples of 16 bytes rule TMA out when compiling).
#include <sstream>

#include "ops/copy_tma.h"
#include "ops/op_util.h"
#include "ops/smem_tile.h"
#include "tilec/ir/tile_op.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"

namespace tilec::ops {

using namespace ir;

namespace {

struct TmaShape {
  const BufferRegion* global = nullptr;
  const BufferRegion* shared = nullptr;
  bool load = true;
  int rows_dim = -1;  // global dimension paired with the tile's rows (-1: rows == 1)
  int64_t rows = 1, cols = 1;  // the copy: rows of the tile from row_min, cols from col_min
  int64_t tile_rows = 1, tile_cols = 1;  // the shared tile (its last two dimensions)
  Expr row_min;                // first tile row the copy writes
  Expr col_min;                // first tile column the copy writes (0 unless a column block)
  bool column_block() const { return cols != tile_cols; }
};

// Static TMA conditions; "" and `out` filled, or why not.
std::string tma_shape(const TileOpNode& op, TmaShape* out) {
  const BufferRegion& src = region_arg(op, 0);
  const BufferRegion& dst = region_arg(op, 1);
  const bool load = src.buffer->scope == Scope::kGlobal && is_shared(dst.buffer->scope);
  const bool store = is_shared(src.buffer->scope) && dst.buffer->scope == Scope::kGlobal;
  if (!load && !store) return "TMA copies between global and shared memory";
  const BufferRegion& g = load ? src : dst;
  const BufferRegion& s = load ? dst : src;
  if (g.buffer->data) return "a T.make_tensor buffer has no tensor map (TMA copies tensor parameters)";
  if (g.buffer->dtype != s.buffer->dtype) return "TMA copies without converting types";
  const int bits = g.buffer->dtype.bits();
  if (bits % 8 != 0 || g.buffer->dtype.lanes() != 1) return "TMA copies whole bytes";
  const int sn = s.buffer->ndim(), gn = g.buffer->ndim();
  TILEC_ICHECK(sn >= 1) << "a shared buffer without dimensions";
  if (gn > 5) return "TMA addresses tensors of at most 5 dimensions";
  for (int d = 0; d + 2 < sn; ++d)
    if (!is_one(s.region[d].extent)) return "the shared side's leading dimensions must be indexed with one value";
  // Rows of the tile (a 1-D tile is one row): all of them, or (multicast slices) a band of
  // whole 8-row groups; their whole width or a column block (whole swizzle spans: checked
  // against the layout when lowering).
  const bool one_row = sn == 1;
  const int64_t one = 1;
  const int64_t* cols_extent = as_const_int(s.region[sn - 1].extent);
  const int64_t* rows_extent = one_row ? &one : as_const_int(s.region[sn - 2].extent);
  const int64_t* tile_cols = as_const_int(s.buffer->shape[sn - 1]);
  const int64_t* tile_rows = one_row ? &one : as_const_int(s.buffer->shape[sn - 2]);
  if (!cols_extent || !rows_extent || !tile_cols || !tile_rows)
    return "the shared tile and the copied part of it need constant extents";
  if (*cols_extent != *tile_cols && (*cols_extent * (bits / 8)) % 32 != 0)
    return "a column block of a shared tile must be whole swizzle spans (a multiple of 32 bytes wide)";
  const Expr row_min = one_row ? int_imm(0, s.region[0].min->dtype) : s.region[sn - 2].min;
  const bool whole = is_zero(row_min) && *rows_extent == *tile_rows;
  if (!whole && *rows_extent % 8 != 0) return "a part of a shared tile must be whole 8-row groups";
  TmaShape t;
  t.global = &g;
  t.shared = &s;
  t.load = load;
  t.rows = *rows_extent;
  t.cols = *cols_extent;
  t.tile_rows = *tile_rows;
  t.tile_cols = *tile_cols;
  t.row_min = row_min;
  t.col_min = s.region[sn - 1].min;
  std::vector<Expr> strides = buffer_strides(g.buffer);
  if (!is_one(strides.back())) return "the global tensor's last dimension must be contiguous";
  std::vector<int> nonunit;
  for (int d = 0; d < gn; ++d) {
    auto* e = as_const_int(g.region[d].extent);
    if (!e) return "the global region needs constant extents";
    if (*e != 1) nonunit.push_back(d);
  }
  const auto* last = as_const_int(g.region[gn - 1].extent);
  if (*last != t.cols) return "the global region's last dimension must be the tile's columns";
  if (t.rows == 1) {
    if (nonunit.size() > 1) return "a one-row tile takes one global dimension";
  } else {
    if (nonunit.size() != 2 || nonunit.back() != gn - 1 || *as_const_int(g.region[nonunit[0]].extent) != t.rows)
      return "the global region must be the tile's rows x columns";
    t.rows_dim = nonunit[0];
  }
  if (t.cols * (bits / 8) % 16 != 0) return "a TMA box row must be a multiple of 16 bytes";
  // The tensor map's other strides must be multiples of 16 bytes (runtime/tma_map.cc). A
  // constant one that is not rules TMA out here; a symbolic one is checked at launch.
  for (int d = 0; d + 1 < gn; ++d)
    if (const int64_t* st = as_const_int(strides[d]); st && (*st * (bits / 8)) % 16 != 0)
      return "the stride of '" + g.buffer->name + "' along dimension " + std::to_string(d) + " is " +
             std::to_string(*st * (bits / 8)) + " bytes, TMA needs a multiple of 16";
  *out = t;
  return "";
}

bool tma_enabled(const TileOpNode& op, const OpEnv& env) {
  return env.target().has_tma() && !env.config_flag("tl.disable_tma_lower") && !attr_bool(op, "disable_tma");
}

// T.copy: TMA for stores unless something says otherwise.
bool copy_claims(const TileOpNode& op, const OpEnv& env) {
  const std::string prefer = attr_string(op, "prefer_instruction");
  if (!prefer.empty() && prefer != "tma") return false;
  if (!tma_enabled(op, env)) return false;
  TmaShape t;
  std::string why = tma_shape(op, &t);
  if (prefer == "tma") {
    TILEC_USER_CHECK(why.empty(), op.loc, "remove prefer_instruction=\"tma\", or change the copy's shape")
        << "T.copy(prefer_instruction=\"tma\") cannot use TMA: " << why;
    TILEC_USER_CHECK(!t.load, op.loc, "write the load as T.tma_copy(src, dst, barrier=mbar) and wait on mbar")
        << "T.copy(prefer_instruction=\"tma\") of a load needs an mbarrier";
  }
  TILEC_ICHECK(why.empty() || !find_attr(op.attrs, "release")) << describe_op(op) << ": a store with release= is not TMA: " << why;
  return why.empty() && !t.load;
}

bool tma_copy_claims(const TileOpNode& op, const OpEnv& env) {
  TILEC_USER_CHECK(env.target().has_tma(), op.loc, "use T.copy, or compile for sm_90a")
      << "T.tma_copy needs TMA (sm_90 or newer), the target is " << env.target().str();
  TmaShape t;
  std::string why = tma_shape(op, &t);
  TILEC_USER_CHECK(why.empty(), op.loc, "use T.copy for this copy") << "T.tma_copy cannot use TMA: " << why;
  if (t.load) {
    const AttrValue* b = find_attr(op.attrs, "barrier");
    TILEC_USER_CHECK(b && std::holds_alternative<Expr>(*b), op.loc,
                     "mbar = T.alloc_barrier(arrive_count=1), then T.tma_copy(src, dst, barrier=mbar[0])")
        << "T.tma_copy of a load needs barrier=";
  }
  return true;
}

AccessRegions tma_access(const TileOpNode& op) { return {{region_arg(op, 0)}, {region_arg(op, 1)}}; }

// The widest box (at most 256 elements, whole 16 bytes) that divides a one-row tile's `cols`
// into at most 8 boxes; `cols` itself when none does (then no box fits: not TMA).
int64_t one_row_box(int64_t cols, int64_t elem) {
  for (int64_t w = 256; w >= 1 && cols / w <= 8; --w)
    if (cols % w == 0 && (w * elem) % 16 == 0) return w;
  return cols;
}

LayoutProposals tma_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  if (level != InferLevel::kFree) return {};
  TmaShape t;
  if (!tma_shape(op, &t).empty() || state.has_layout(t.shared->buffer)) return {};
  const Buffer& b = t.shared->buffer;
  layout::SwizzleMode mode = widest_smem_tile_mode(t.tile_rows, t.tile_cols, t.cols, b->dtype);
  if (mode == layout::SwizzleMode::kNone &&
      ((t.cols > 256 && (t.tile_rows > 1 || one_row_box(t.cols, b->dtype.bytes()) > 256)) || t.column_block()))
    return {};  // no box: not TMA
  return {{b, smem_tile_layout(b, mode)}};
}


// `reduce`: the store adds to the global elements (T.atomic_add of a shared tile).
Stmt tma_lower_as(const TileOpNode& op, LowerContext& ctx, bool reduce) {
  TmaShape t;
  std::string why = tma_shape(op, &t);
  TILEC_ICHECK(why.empty()) << why;
  const Buffer& s = t.shared->buffer;
  const Buffer& g = t.global->buffer;
  auto form = smem_tile_form(s, ctx.layout_of(s));
  // A store with release= (warp_specialize: a staged tile over a pipeline's buffer) must be
  // TMA: its barrier arrival follows the bulk read.
  const AttrValue* release = find_attr(op.attrs, "release");
  const bool explicit_tma = op.op == "tma_copy" || attr_string(op, "prefer_instruction") == "tma" || release;
  const int64_t elem = s->dtype.bytes();
  // Row-major: one box per row; a one-row tile wider than a box (a 1-D tile of more than 256
  // elements) is cut into boxes of the widest width that divides it.
  const bool row_major = !form || form->mode == layout::SwizzleMode::kNone;
  const int64_t span = !row_major ? layout::swizzle_span_bytes(form->mode) / elem
                       : t.tile_rows == 1 && t.cols > 256 ? one_row_box(t.cols, elem)
                                                           : t.cols;
  const int64_t box_cols = std::min<int64_t>(span, t.cols), box_rows = std::min<int64_t>(t.rows, 256);
  // A layout TMA cannot write, or a row-major tile wider than a box: a plain T.copy goes to
  // the SIMT copy (null: the next behaviour lowers it); an explicit request is an error.
  if (!explicit_tma && (!form || box_cols > 256)) return Stmt();
  TILEC_USER_CHECK(form.has_value(), op.loc, "remove the T.annotate_layout of this buffer, or use T.copy")
      << describe_op(op) << ": shared buffer '" << s->name << "' has a layout TMA cannot write ("
      << layout::describe(ctx.layout_of(s)) << ")";
  TILEC_USER_CHECK(box_cols <= 256, op.loc, "use tiles of at most 256 columns")
      << describe_op(op) << ": a TMA box is at most 256 elements wide, the tile has " << t.cols << " columns";
  // A column block: whole spans of a swizzled tile, starting at a span boundary.
  Expr col_block = int_imm(0, t.col_min->dtype);
  if (t.column_block() || !is_zero(t.col_min)) {
    std::string why_not;
    if (form->mode == layout::SwizzleMode::kNone)
      why_not = "its layout is row-major (a box writes whole rows of a row-major tile)";
    else if (t.cols % span != 0)
      why_not = "the block is " + std::to_string(t.cols) + " columns wide, not a multiple of the " +
                std::to_string(span) + "-column swizzle span";
    else if (!ctx.analyzer().can_prove_divisible(t.col_min, span))
      why_not = "the block does not provably start at a multiple of the " + std::to_string(span) +
                "-column swizzle span";
    if (!why_not.empty() && !explicit_tma) return Stmt();
    TILEC_USER_CHECK(why_not.empty(), op.loc, "copy whole rows of the tile, or blocks of whole swizzle spans")
        << describe_op(op) << ": TMA cannot write a column block of shared tile '" << s->name << "': " << why_not;
    col_block = floordiv(t.col_min, int_imm(span, t.col_min->dtype));
  }
  const int gn = g->ndim();
  // The map: box extents innermost first.
  std::vector<Expr> desc_args = {string_imm(g->name), int_imm(layout::swizzle_bits(form->mode))};
  for (int k = 0; k < gn; ++k) {
    const int d = gn - 1 - k;
    desc_args.push_back(int_imm(d == gn - 1 ? box_cols : d == t.rows_dim ? box_rows : 1));
  }
  Expr desc = call(DataType::Handle(), passes::kTmaDescriptorOp, desc_args, op.loc);
  // The first element the copy writes in shared memory (a band of whole 8-row groups starts
  // a swizzle atom, so its physical position is the unswizzled one).
  const int sn = s->ndim();
  std::vector<Expr> origin;
  for (int d = 0; d + 2 < sn; ++d) origin.push_back(t.shared->region[d].min);
  for (int d = std::max(0, sn - 2); d < sn; ++d) origin.push_back(int_imm(0));
  Expr base = ctx.physical_index(s, origin)[0];
  if (!is_zero(t.row_min)) {
    TILEC_USER_CHECK(ctx.analyzer().can_prove_divisible(t.row_min, 8), op.loc, "start the band at a multiple of 8 rows")
        << describe_op(op) << ": a part of shared tile '" << s->name << "' must start at a multiple of 8 rows";
    base = base + t.row_min * int_imm(span, t.row_min->dtype);
  }
  if (!is_zero(col_block)) base = base + cast(base->dtype, col_block) * int_imm(t.tile_rows * span, base->dtype);
  const int64_t mask = attr_int(op, "cluster_mask", 0);
  TILEC_USER_CHECK(mask == 0 || t.load, op.loc, "multicast loads only") << describe_op(op) << ": cluster_mask on a store";
  TILEC_USER_CHECK(mask >= 0 && mask < (1 << 16), op.loc, "") << describe_op(op) << ": cluster_mask must be 16 bits";
  Buffer ls = ctx.lowered_buffer(s);
  Expr bar;
  if (t.load) bar = std::get<Expr>(*find_attr(op.attrs, "barrier"));
  std::vector<Stmt> issue;
  if (t.load) {
    // A multicast copy lands popcount(mask) equal copies (one from each CTA of the mask).
    const int64_t copies = mask ? __builtin_popcountll(mask) : 1;
    issue.push_back(evaluate(call(DataType::Void(), "tl.mbarrier_expect_tx",
                                  {bar, int_imm(t.rows * t.cols * elem * copies, Int32())}, op.loc),
                             op.loc));
  }
  for (int64_t c0 = 0; c0 < t.cols; c0 += box_cols) {
    for (int64_t r0 = 0; r0 < t.rows; r0 += box_rows) {
      // Column block c0 / span starts at (c0 / span) * rows * span; rows are span apart.
      Expr off = base + int_imm((c0 / span) * t.tile_rows * span + r0 * span);
      Expr smem = call(DataType::Handle(), "tl.address_of", {buffer_load(ls, {off}, op.loc)}, op.loc);
      std::vector<Expr> coords;
      for (int k = 0; k < gn; ++k) {
        const int d = gn - 1 - k;
        Expr c = t.global->region[d].min;
        if (d == gn - 1 && c0) c = c + int_imm(c0, c->dtype);
        if (d == t.rows_dim && r0) c = c + int_imm(r0, c->dtype);
        coords.push_back(c->dtype == Int32() ? c : cast(Int32(), c, op.loc));
      }
      std::vector<Expr> args;
      if (t.load && mask) {
        args = {smem, desc, bar, int_imm(mask, DataType::UInt(16))};
      } else if (t.load) {
        args = {smem, desc, bar};
      } else {
        args = {desc, smem};
      }
      args.insert(args.end(), coords.begin(), coords.end());
      const char* what = t.load ? (mask ? "tl.tma_load_multicast" : "tl.tma_load")
                                : (reduce ? "tl.tma_reduce_add" : "tl.tma_store");
      issue.push_back(evaluate(call(DataType::Void(), what, args, op.loc), op.loc));
    }
  }
  if (!t.load) {
    issue.push_back(evaluate(call(DataType::Void(), "tl.tma_store_commit", {}, op.loc), op.loc));
    issue.push_back(evaluate(call(DataType::Void(), "tl.tma_store_wait_read", {int_imm(0)}, op.loc), op.loc));
    if (release) issue.push_back(evaluate(call(DataType::Void(), "barrier_arrive", {std::get<Expr>(*release)}, op.loc), op.loc));
  }
  Stmt body = seq(issue, op.loc);
  if (ctx.num_threads() > 1) body = if_then_else(binary(NodeKind::kEQ, ctx.thread_index(), int_imm(0, ctx.thread_index()->dtype)), body, nullptr, op.loc);
  if (form->mode != layout::SwizzleMode::kNone) body = annotate(passes::kSwizzle128BKey, ls, body, op.loc);
  if (!t.load) body = seq({evaluate(call(DataType::Void(), "tl.fence_proxy_async", {}, op.loc), op.loc), body}, op.loc);
  return body;
}

Stmt tma_lower(const TileOpNode& op, LowerContext& ctx) { return tma_lower_as(op, ctx, false); }

// T.atomic_add(G[region], S) of a whole shared tile S into global memory, as the copy S -> G.
TileOpNode reduce_as_copy(const TileOpNode& op) {
  TileOpNode c = op;
  c.op = "copy";
  c.args = {op.args[1], op.args[0]};
  c.attrs.clear();
  return c;
}

// On sm_90, T.atomic_add of a shared tile into global memory in float32, float16 or bfloat16
// whose shape TMA can copy: one cp.reduce.async.bulk.tensor .add per box, issued by one
// thread, instead of an atomic per element from every thread (FlashAttention-3's dQ).
bool reduce_claims(const TileOpNode& op, const OpEnv& env) {
  if (!tma_enabled(op, env) || !std::holds_alternative<BufferRegion>(op.args[1])) return false;
  const BufferRegion& dst = region_arg(op, 0);
  const BufferRegion& value = region_arg(op, 1);
  const DataType t = dst.buffer->dtype;
  if (dst.buffer->scope != Scope::kGlobal || !is_shared(value.buffer->scope) || value.buffer->dtype != t) return false;
  if (!(t == DataType::Float(32) || t == DataType::Float(16) || t == DataType::BFloat16())) return false;
  TmaShape shape;
  return tma_shape(reduce_as_copy(op), &shape).empty();
}

LayoutProposals reduce_infer(const TileOpNode& op, const LayoutInferenceState& state, InferLevel level) {
  return tma_infer(reduce_as_copy(op), state, level);
}

Stmt reduce_lower(const TileOpNode& op, LowerContext& ctx) { return tma_lower_as(reduce_as_copy(op), ctx, true); }

}  // namespace

std::string why_not_tma(const TileOpNode& op) {
  TmaShape t;
  return tma_shape(op, &t);
}

std::optional<std::vector<TileArg>> tma_row_band(const TileOpNode& op, int64_t parts, const Expr& part) {
  TmaShape t;
  if (!tma_shape(op, &t).empty() || t.rows_dim < 0 || t.rows % (8 * parts) != 0 || !is_zero(t.row_min))
    return std::nullopt;
  const int64_t band = t.rows / parts;
  std::vector<TileArg> args = op.args;
  BufferRegion g = *t.global, s = *t.shared;
  Expr offset = part * int_imm(band, part->dtype);
  Range& gr = g.region[t.rows_dim];
  gr = Range{gr.min + cast(gr.min->dtype, offset), int_imm(band, gr.extent->dtype)};
  Range& sr = s.region[s.buffer->ndim() - 2];
  sr = Range{cast(sr.min->dtype, offset), int_imm(band, sr.extent->dtype)};
  const bool load = t.load;
  args[0] = load ? g : s;
  args[1] = load ? s : g;
  return args;
}

void register_copy_tma_behaviours() {
  auto sm90 = [](const target::Target& t) { return t.has_tma(); };
  OpBehaviour copy{"copy", "tma", sm90, 20, nullptr, tma_infer, tma_lower};
  copy.claims = copy_claims;
  register_op_behaviour(std::move(copy));
  OpBehaviour tma{"tma_copy", "tma", nullptr, 20, tma_access, tma_infer, tma_lower};
  tma.claims = tma_copy_claims;
  register_op_behaviour(std::move(tma));
  OpBehaviour reduce{"atomic_add", "tma reduce-add", sm90, 20, atomic_access, reduce_infer, reduce_lower};
  reduce.claims = reduce_claims;
  register_op_behaviour(std::move(reduce));
}

}  // namespace tilec::ops
