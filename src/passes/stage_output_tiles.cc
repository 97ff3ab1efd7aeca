// Pass stage_output_tiles: on sm_90, a GEMM-like kernel's result tile goes to global memory
// through shared memory (one TMA store) instead of from the registers.
//
// Input:  planned tile IR (after pipeline_planning). A kernel whose body (its spine: the
//         statements under the kernel's Lets, Allocates and Annotates) holds a T.Pipelined
//         loop with a T.gemm and, after it, a statement
//           T.copy(F, G[region])          F a whole fragment of rank >= 2, G global
//         whose region has F's shape once its unit dimensions are dropped.
// Output: that copy becomes
//           S = T.alloc_shared(F.shape, G.dtype)   (an Allocate around the spine's Seq)
//           T.copy(F, S); T.copy(S, G[region])
//         which the later passes lower as if the program had written it: a swizzled shared
//         layout for the fragment's stores, and a TMA store (bulk, asynchronous, whole
//         128-byte lines; out-of-bounds rows of a partial tile dropped by the hardware)
//         issued by one thread after a barrier of the writers.
// When:   target has TMA; config tilec.stage_output_tiles (default on), tl.disable_tma_lower off; the copy carries no
//         keyword arguments but disable_tma=False; G has compact strides and the region's
//         innermost extent is a multiple of 16 bytes (TMA's box rule); and the kernel's shared
//         memory with S still fits — pipelined buffers (those the loop fills from global
//         memory) counted once per stage, side by side
//         (as a persistent kernel needs them), and twice over for a one-warpgroup kernel
//         (which runs two blocks per SM). Where the whole tile does not fit but two column
//         blocks of it do (a rows x cols wgmma accumulator whose warpgroups split the rows, so
//         that the holders of a block's rows hold all of it; blocks of whole 128-byte lines
//         dividing the columns, the widest that fits), the copy becomes, for each block c,
//           T.copy(F[:, c*w:(c+1)*w], S[c % 2]); T.copy(S[c % 2], G[... columns + c*w ...])
//         with S = T.alloc_shared((2, rows, w)): the epilogue subtiles of CUTLASS (head dim 256
//         causal attention, a 4-stage GEMM that then stays persistent). The program's own
//           T.copy(F, S); T.copy(S, G[region])     (S a whole shared tile nothing else uses,
//                                                   no T.annotate_layout)
//         is left as written when the kernel's shared memory fits with S; when it does not (S
//         keeps the kernel from being persistent), S is dropped for the column blocks, if
//         they fit. Where a new tile does not fit but one of the same shape and type was
//         staged before in the same statement list, that one is written again after TMA has
//         read it (the backward's dK after its dV). Where neither the whole tile nor column
//         blocks fit, the whole tile is staged over the last pipelined buffer of the kernel's
//         one loop when that buffer's stages hold it, a gemm that does not read it comes
//         first in the step (FlashAttention-3's O over V, not a GEMM's B: head dim 256
//         with 80-key blocks, head dim 128 with 176) and the loop has a constant step count
//         of at most 32 (measured: faster there, slower on longer loops): PrimFunc attr kStagedOverStagesAttr
//         "tile: buffer" (each name one allocation); warp_specialize orders the two in a
//         persistent kernel (its producer loads the buffer's first stage of a tile after the
//         last tile's store read the staged tile) and plan_shared_memory places the tile at
//         the buffer's offset. A copy left as written
//         for want of shared memory is named in the function attribute tilec.output_not_staged
//         (kernel.explain() shows it).
// Why:    written from the accumulator registers, each thread stores 4-byte pieces spread
//         over 16 rows, and the store sits on the consumer warps' critical path. Staged, the
//         stores to shared memory are conflict-free and the global write is one bulk
//         transfer that overlaps what follows. FP8 GEMM with K = 1024 (8 main-loop steps per
//         tile) spent a fifth of its time in that epilogue.
// Before: warp_specialize (which then counts S in its persistence check) and layout inference.
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ops/op_util.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

constexpr int64_t kSmemPerSm = 228 * 1024;  // sm_90: shared memory of one SM
constexpr int64_t kReservedPerBlock = 1024;  // the driver's reserve per resident block
constexpr int64_t kMaxStepsOverStages = 32;  // a result tile goes over the stages of loops this short

int64_t const_or(const Expr& e, int64_t fallback) {
  const int64_t* v = as_const_int(e);
  return v ? *v : fallback;
}

bool contains_gemm(const Stmt& s) {
  bool found = false;
  for_each_node(s, [&](const Node* n) {
    if (auto* t = dynamic_cast<const TileOpNode*>(n); t && t->op == "gemm") found = true;
  });
  return found;
}

// Shared bytes of the kernel: buffers a pipelined loop fills from global memory once per stage
// (the copies the pipeline versions; a fragment -> shared copy in the loop, as attention's dS,
// keeps one buffer).
int64_t shared_bytes(const Stmt& kernel_body) {
  std::map<const BufferNode*, int64_t> stages;
  for_each_node(kernel_body, [&](const Node* n) {
    auto* f = dynamic_cast<const ForNode*>(n);
    if (!f || f->for_kind != ForKind::kPipelined || f->pipeline.num_stages < 2) return;
    for_each_node(f->body, [&](const Node* m) {
      auto* t = dynamic_cast<const TileOpNode*>(m);
      if (!t || t->op != "copy" || t->args.size() < 2) return;
      auto* src = std::get_if<BufferRegion>(&t->args[0]);
      auto* dst = std::get_if<BufferRegion>(&t->args[1]);
      if (src && dst && src->buffer->scope == Scope::kGlobal && is_shared(dst->buffer->scope))
        stages[dst->buffer.get()] = std::max<int64_t>(stages[dst->buffer.get()], f->pipeline.num_stages);
    });
  });
  int64_t bytes = 0;
  for_each_node(kernel_body, [&](const Node* n) {
    auto* a = dynamic_cast<const AllocateNode*>(n);
    if (!a || !is_shared(a->buffer->scope)) return;
    auto it = stages.find(a->buffer.get());
    bytes += back::shared_alloc_bytes(a->buffer) * (it == stages.end() ? 1 : it->second);
  });
  return bytes;
}

// Keywords a copy may carry and still be staged: only the default disable_tma=False.
bool default_keywords_only(const TileOpNode& op) {
  for (const auto& [key, value] : op.attrs) {
    auto* b = std::get_if<bool>(&value);
    if (key != "disable_tma" || !b || *b) return false;
  }
  return true;
}

// The staged form's shape, when `op` is a copy this pass rewrites.
std::optional<std::vector<Expr>> stageable(const TileOpNode& op) {
  if (op.op != "copy" || op.args.size() != 2 || !default_keywords_only(op)) return std::nullopt;
  auto* src = std::get_if<BufferRegion>(&op.args[0]);
  auto* dst = std::get_if<BufferRegion>(&op.args[1]);
  if (!src || !dst || src->buffer->scope != Scope::kFragment || dst->buffer->scope != Scope::kGlobal) return std::nullopt;
  const Buffer& frag = src->buffer;
  if (frag->shape.size() < 2 || !ops::region_is_full(*src)) return std::nullopt;
  if (!dst->buffer->strides.empty() || dst->region.empty()) return std::nullopt;
  std::vector<int64_t> kept;  // the region's non-unit extents
  for (const auto& r : dst->region) {
    int64_t e = const_or(r.extent, -1);
    if (e < 1) return std::nullopt;
    if (e > 1) kept.push_back(e);
  }
  if (kept.size() != frag->shape.size()) return std::nullopt;
  for (size_t d = 0; d < kept.size(); ++d)
    if (kept[d] != const_or(frag->shape[d], -1)) return std::nullopt;
  // TMA's box: the innermost extent in whole 16-byte units, and the region's innermost
  // dimension the tensor's own (contiguous).
  if (const_or(dst->region.back().extent, 1) * dst->buffer->dtype.bytes() % 16 != 0) return std::nullopt;
  return frag->shape;
}

class StageOutputTiles : public IRMutator {
 public:
  explicit StageOutputTiles(const PassContext& ctx) : ctx_(ctx) {}

  std::string why_not_;  // the copies left as written for want of shared memory (kOutputNotStagedAttr)
  std::string over_;     // "staged tile: pipelined buffer" (kStagedOverStagesAttr)

 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    const int64_t threads = op->block_threads();
    blocks_per_sm_ = threads <= 128 ? 2 : 1;
    budget_ = std::min<int64_t>(ctx_.target().max_shared_memory_per_block(), kSmemPerSm / blocks_per_sm_) -
              kReservedPerBlock - shared_bytes(op->body);
    count_uses(op->body);
    kernel_body_ = op->body;
    threads_ = threads;
    bool after_gemm_loop = false;
    Stmt body = spine(op->body, after_gemm_loop);
    if (body.same_as(op->body)) return s;
    auto n = std::make_shared<KernelLaunchNode>(*op);
    n->body = body;
    return Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
  }

 private:
  // Down the kernel's wrappers (Lets, Allocates, Annotates) to its statement lists; a wrapper
  // among a list's statements (a value bound before the loop, as causal attention's step count)
  // is looked into with the same state, so a copy after the loop in its body is found too.
  Stmt spine(const Stmt& s, bool& after_gemm_loop) {
    if (auto* l = s.as<LetNode>()) {
      Stmt b = spine(l->body, after_gemm_loop);
      return b.same_as(l->body) ? s : let(l->var, l->value, b, l->loc);
    }
    if (auto* a = s.as<AllocateNode>()) {
      Stmt b = spine(a->body, after_gemm_loop);
      if (dropped_.count(a->buffer.get())) return b;  // a user's staging tile, replaced by column blocks
      return b.same_as(a->body) ? s : allocate(a->buffer, b, a->loc);
    }
    if (auto* an = s.as<AnnotateNode>()) {
      Stmt b = spine(an->body, after_gemm_loop);
      if (b.same_as(an->body)) return s;
      auto n = std::make_shared<AnnotateNode>(*an);
      n->body = b;
      return Stmt(std::shared_ptr<const AnnotateNode>(std::move(n)));
    }
    if (auto* q = s.as<SeqNode>()) return stage_in(s, q, after_gemm_loop);
    return s;
  }

  Stmt stage_in(const Stmt& s, const SeqNode* q, bool& after_gemm_loop) {
    std::vector<Stmt> out;
    std::vector<Buffer> staged;
    bool changed = false;
    for (size_t i = 0; i < q->stmts.size(); ++i) {
      const Stmt& st = q->stmts[i];
      if (auto* f = st.as<ForNode>(); f && f->for_kind == ForKind::kPipelined && contains_gemm(st)) after_gemm_loop = true;
      if (after_gemm_loop && i + 1 < q->stmts.size()) {
        if (std::vector<Stmt> blocks = restaged(st, q->stmts[i + 1], staged); !blocks.empty()) {
          for (Stmt& c : blocks) out.push_back(std::move(c));
          changed = true;
          ++i;
          continue;
        }
      }
      if (st.as<LetNode>() || st.as<AllocateNode>() || st.as<AnnotateNode>() || st.as<SeqNode>()) {
        Stmt n = spine(st, after_gemm_loop);
        changed |= !n.same_as(st);
        out.push_back(n);
        continue;
      }
      auto* t = st.as<TileOpNode>();
      std::optional<std::vector<Expr>> shape = after_gemm_loop && t ? stageable(*t) : std::nullopt;
      if (!shape) {
        out.push_back(st);
        continue;
      }
      const BufferRegion& src = std::get<BufferRegion>(t->args[0]);
      const BufferRegion& dst = std::get<BufferRegion>(t->args[1]);
      Buffer stage = make_buffer(src.buffer->name + "_staged", *shape, dst.buffer->dtype, Scope::kSharedDyn, {}, t->loc);
      if (back::shared_alloc_bytes(stage) > budget_) {
        // One of the same shape staged before in this list (the backward's dK after dV) is
        // written again once TMA has read it (insert_syncs orders the two).
        if (Buffer again = same_tile(staged, *shape, dst.buffer->dtype); again) {
          staged_whole(src, dst, again, t->loc, out);
          changed = true;
          continue;
        }
        if (Buffer blocks = column_blocks(src.buffer, *shape, dst.buffer->dtype, src.buffer->name, t->loc); blocks) {
          budget_ -= back::shared_alloc_bytes(blocks);
          staged.push_back(blocks);
          for (Stmt& c : staged_in_blocks(src, dst, blocks, t->loc, t->loc)) out.push_back(std::move(c));
          continue;
        }
        // Neither fits beside the stages: the whole tile over the loop's last pipelined buffer
        // (FlashAttention-3's O over V), which the loop no longer reads after its last step.
        if (Buffer host = host_stages(stage); host) {
          over_ += (over_.empty() ? "" : "; ") + stage->name + ": " + host->name;
          staged.push_back(stage);
          staged_whole(src, dst, stage, t->loc, out);
          continue;
        }
        why_not_ += (why_not_.empty() ? "" : "; ") + src.buffer->name + ": its " +
                    std::to_string(back::shared_alloc_bytes(stage) / 1024) + " KiB tile does not fit beside the kernel's other " +
                    "shared memory (" + std::to_string(std::max<int64_t>(budget_, 0) / 1024) + " KiB left" +
                    (blocks_per_sm_ > 1 ? ", two blocks per SM" : "") + ")";
        out.push_back(st);
        continue;
      }
      budget_ -= back::shared_alloc_bytes(stage);
      staged.push_back(stage);
      staged_whole(src, dst, stage, t->loc, out);
    }
    if (staged.empty()) return changed ? seq(out, s->loc) : s;
    Stmt body = seq(out, s->loc);
    body = allocate_all(staged, body, s->loc);
    return body;
  }

  // Where the whole tile does not fit: two shared buffers of a column block each (the widest
  // block of at least one 128-byte line that divides the columns and fits twice), as
  // CUTLASS's epilogue subtiles. Null when none fits or the tile is not rows x cols.
  Buffer column_blocks(const Buffer& frag, const std::vector<Expr>& shape, DataType dtype, const std::string& name,
                       const SourceLoc& loc) const {
    if (shape.size() != 2 || !blocks_held_by_rows(frag)) return Buffer();
    const int64_t rows = const_or(shape[0], -1), cols = const_or(shape[1], -1), elem = dtype.bytes();
    if (rows < 1 || cols < 1) return Buffer();
    for (int64_t w = cols / 2; w * elem >= 128; w /= 2) {
      if (cols % w != 0 || (w * elem) % 128 != 0) continue;
      Buffer b = make_buffer(name + "_staged", {int_imm(2), int_imm(rows), int_imm(w)}, dtype, Scope::kSharedDyn, {}, loc);
      if (back::shared_alloc_bytes(b) <= budget_) return b;
    }
    return Buffer();
  }

  // Whether each column block of F is held by the threads that hold its rows, so that every
  // block is copied from registers by its holders (a warpgroup that holds no element of a
  // block would run a guarded nest over all its registers, and spill): F is a wgmma
  // accumulator (sm_90a, wgmma on) of gemms that split rows over the warpgroups (not
  // FullCol), with 64 rows per warpgroup.
  bool blocks_held_by_rows(const Buffer& frag) const {
    if (!ctx_.target().has_wgmma() || ctx_.get_bool("tl.disable_wgmma")) return false;
    const int64_t rows = const_or(frag->shape[0], -1), groups = std::max<int64_t>(threads_ / 128, 1);
    if (rows < 0 || rows % (64 * groups) != 0) return false;
    bool written = false, split_by_rows = true;
    for_each_node(kernel_body_, [&](const Node* n) {
      auto* t = dynamic_cast<const TileOpNode*>(n);
      if (!t || t->op != "gemm" || t->args.size() < 3) return;
      auto* c = std::get_if<BufferRegion>(&t->args[2]);
      if (!c || c->buffer.get() != frag.get()) return;
      written = true;
      split_by_rows &= attr_string(*t, "policy", "Square") != "FullCol";
    });
    return written && split_by_rows;
  }

  // T.copy(F[:, c*w:(c+1)*w], S[c % 2]); T.copy(S[c % 2], G[... columns c*w ...]) for each
  // block c: the fragment's columns are constants, insert_syncs orders a block's writes after
  // the TMA store that last read its buffer.
  static std::vector<Stmt> staged_in_blocks(const BufferRegion& src, const BufferRegion& dst, const Buffer& blocks,
                                            const SourceLoc& loc, const SourceLoc& store_loc) {
    const int64_t rows = *as_const_int(blocks->shape[1]), w = *as_const_int(blocks->shape[2]);
    const int64_t cols = *as_const_int(src.buffer->shape[1]);
    std::vector<Stmt> out;
    for (int64_t c = 0; c * w < cols; ++c) {
      BufferRegion part = src;
      part.region[1] = Range{int_imm(c * w, src.region[1].min->dtype), int_imm(w, src.region[1].extent->dtype)};
      BufferRegion buf{blocks, {Range{int_imm(c % 2), int_imm(1)}, Range{int_imm(0), int_imm(rows)},
                                Range{int_imm(0), int_imm(w)}}, loc};
      BufferRegion to = dst;
      Range& inner = to.region.back();
      inner = Range{inner.min + int_imm(c * w, inner.min->dtype), int_imm(w, inner.extent->dtype)};
      out.push_back(make_tile_op("copy", {part, buf}, {}, loc));
      out.push_back(make_tile_op("copy", {buf, to}, {}, store_loc));
    }
    return out;
  }

  // T.copy(F, S); T.copy(S, G[region]).
  static void staged_whole(const BufferRegion& src, const BufferRegion& dst, const Buffer& stage, const SourceLoc& loc,
                           std::vector<Stmt>& out) {
    out.push_back(make_tile_op("copy", {src, BufferRegion::full(stage)}, {}, loc));
    out.push_back(make_tile_op("copy", {BufferRegion::full(stage), dst}, {}, loc));
  }

  // The pipelined buffer a result tile `stage` may share bytes with: the last global ->
  // shared copy in the body of the kernel's one pipelined loop (num_stages >= 2) whose stages
  // together hold at least the tile, first read by a gemm after another gemm of the step,
  // named by no other buffer of the kernel (the placement finds the two by name), and with
  // `stage`'s name unique too. Null when there is none.
  Buffer host_stages(const Buffer& stage) const {
    if (!over_.empty()) return Buffer();  // one tile per kernel
    std::vector<const ForNode*> loops;
    for_each_node(kernel_body_, [&](const Node* n) {
      if (auto* f = dynamic_cast<const ForNode*>(n); f && f->for_kind == ForKind::kPipelined) loops.push_back(f);
    });
    if (loops.size() != 1 || loops[0]->pipeline.num_stages < 2) return Buffer();
    // Only for short loops, where the epilogue is a large share of a tile: measured on the H200
    // (head dim 256, 80-key blocks, same call) +7 / +5 / +2% at 7 / 13 / 26 steps against the
    // stores from registers, -5 to -6% at 52 to 205 steps (not understood yet: the loop's CUDA
    // is the same; the producer's next V waits for the store, and the consumers meet at a
    // barrier before it). A step count only known at run time (causal) does not qualify.
    const int64_t* steps = as_const_int(loops[0]->extent);
    if (!steps || *steps > kMaxStepsOverStages) return Buffer();
    Buffer host;
    for_each_node(loops[0]->body, [&](const Node* m) {
      auto* t = dynamic_cast<const TileOpNode*>(m);
      if (!t || t->op != "copy" || t->args.size() < 2) return;
      auto* from = std::get_if<BufferRegion>(&t->args[0]);
      auto* to = std::get_if<BufferRegion>(&t->args[1]);
      if (from && to && from->buffer->scope == Scope::kGlobal && to->buffer->scope == Scope::kSharedDyn) host = to->buffer;
    });
    if (!host || back::shared_alloc_bytes(host) * loops[0]->pipeline.num_stages < back::shared_alloc_bytes(stage))
      return Buffer();
    // A gemm of the step that does not read it comes first (attention's S = Q K^T before
    // O += P V): the next tile starts on the other tiles while the store is read. A GEMM's A
    // and B are read at once, and the next tile would wait for its epilogue.
    bool other_gemm_first = false, decided = false;
    for_each_node(loops[0]->body, [&](const Node* m) {
      auto* t = dynamic_cast<const TileOpNode*>(m);
      if (decided || !t || t->op != "gemm") return;
      bool reads_host = false;
      for (const auto& a : t->args)
        if (auto* r = std::get_if<BufferRegion>(&a)) reads_host |= r->buffer.get() == host.get();
      if (reads_host) decided = true;
      else other_gemm_first = true;
    });
    if (!other_gemm_first) return Buffer();
    std::map<std::string, int> names;
    for_each_node(kernel_body_, [&](const Node* n) {
      if (auto* a = dynamic_cast<const AllocateNode*>(n)) ++names[a->buffer->name];
    });
    if (names[host->name] != 1 || names.count(stage->name)) return Buffer();
    return host;
  }

  static Buffer same_tile(const std::vector<Buffer>& staged, const std::vector<Expr>& shape, DataType dtype) {
    for (const Buffer& b : staged) {
      if (b->dtype != dtype || b->shape.size() != shape.size()) continue;
      bool same = true;
      for (size_t d = 0; d < shape.size(); ++d) same &= const_or(b->shape[d], -1) == const_or(shape[d], -2);
      if (same) return b;
    }
    return Buffer();
  }

  // References to each buffer in the kernel (tile-op regions, loads, stores), and the buffers
  // with a layout given by T.annotate_layout.
  void count_uses(const Stmt& body) {
    uses_.clear();
    for_each_node(body, [&](const Node* n) {
      if (auto* t = dynamic_cast<const TileOpNode*>(n)) {
        for (const auto& a : t->args)
          if (auto* r = std::get_if<BufferRegion>(&a)) ++uses_[r->buffer.get()];
        for (const auto& [key, value] : t->attrs)
          if (auto* b = std::get_if<Buffer>(&value)) uses_[b->get()] += 2;
      }
      if (auto* l = dynamic_cast<const BufferLoadNode*>(n)) ++uses_[l->buffer.get()];
      if (auto* st = dynamic_cast<const BufferStoreNode*>(n)) ++uses_[st->buffer.get()];
      if (auto* a = dynamic_cast<const AnnotateNode*>(n); a && a->key == "layout_map")
        if (auto* m = std::get_if<LayoutMap>(&a->value))
          for (const auto& [b, l] : *m) uses_[b.get()] += 2;  // never "only the two copies"
    });
  }

  // The program's own staging, T.copy(F, S); T.copy(S, G[region]) with S a whole shared tile
  // used by nothing else, where S does not fit beside the pipelined buffers (so the kernel
  // could not be persistent): the column blocks instead of S, when they fit (empty: left as
  // written; the blocks join `staged`). A 4-stage 128x256 GEMM: 64 KiB for S, 32 KiB for two
  // 128 x 64 blocks.
  std::vector<Stmt> restaged(const Stmt& first, const Stmt& second, std::vector<Buffer>& staged) {
    auto* a = first.as<TileOpNode>();
    auto* b = second.as<TileOpNode>();
    if (!a || !b || budget_ >= 0 || a->op != "copy" || a->args.size() != 2 || !default_keywords_only(*a)) return {};
    auto* frag = std::get_if<BufferRegion>(&a->args[0]);
    auto* tile = std::get_if<BufferRegion>(&a->args[1]);
    auto* from = b->args.size() == 2 ? std::get_if<BufferRegion>(&b->args[0]) : nullptr;
    auto* dst = b->args.size() == 2 ? std::get_if<BufferRegion>(&b->args[1]) : nullptr;
    if (!frag || !tile || !from || !dst || !is_shared(tile->buffer->scope) || from->buffer.get() != tile->buffer.get() ||
        !ops::region_is_full(*tile) || !ops::region_is_full(*from) || tile->buffer->dtype != dst->buffer->dtype)
      return {};
    auto uses = uses_.find(tile->buffer.get());
    if (uses == uses_.end() || uses->second != 2) return {};
    TileOpNode direct = *b;
    direct.args = {*frag, *dst};
    std::optional<std::vector<Expr>> shape = stageable(direct);
    if (!shape || ops::const_shape(tile->buffer) != ops::const_shape(frag->buffer)) return {};
    const int64_t freed = back::shared_alloc_bytes(tile->buffer);
    budget_ += freed;
    Buffer blocks = column_blocks(frag->buffer, *shape, dst->buffer->dtype, tile->buffer->name, a->loc);
    if (!blocks) {
      budget_ -= freed;
      return {};
    }
    budget_ -= back::shared_alloc_bytes(blocks);
    dropped_.insert(tile->buffer.get());
    staged.push_back(blocks);
    return staged_in_blocks(*frag, *dst, blocks, a->loc, b->loc);
  }

  const PassContext& ctx_;
  Stmt kernel_body_;
  int64_t threads_ = 128;
  std::unordered_map<const BufferNode*, int> uses_;
  std::unordered_set<const BufferNode*> dropped_;
  int64_t blocks_per_sm_ = 1;
  int64_t budget_ = 0;
};

}  // namespace

Pass stage_output_tiles_pass() {
  return {"stage_output_tiles", [](const PrimFunc& f, PassContext& ctx) {
            if (!ctx.target().has_tma() || !ctx.get_bool("tilec.stage_output_tiles") ||
                ctx.get_bool("tl.disable_tma_lower"))
              return f;
            StageOutputTiles st(ctx);
            PrimFunc g = with_body(f, st.mutate(f->body));
            if (st.why_not_.empty() && st.over_.empty()) return g;
            AttrMap attrs = g->attrs;
            if (!st.why_not_.empty()) attrs.emplace_back(kOutputNotStagedAttr, st.why_not_);
            if (!st.over_.empty()) attrs.emplace_back(kStagedOverStagesAttr, st.over_);
            return make_prim_func(g->name, g->params, g->body, std::move(attrs), g->loc);
          }};
}

}  // namespace tilec::passes
