// kernel.explain() (see include/tilec/target/cuda/explain.h): runs the CUDA pipeline up to
// layout inference, then walks the tile ops in program order asking instruction selection
// what lowering will ask. Read-only: nothing here changes what is compiled.
// What the tile ops do not say is read from two other points of the same pipeline: the
// depth of each T.Pipelined loop right after pipeline_planning, and the width of a SIMT
// copy's accesses from the lowered IR (after vectorize), where the copy's stores carry its
// source location.
#include "tilec/target/cuda/explain.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ops/copy_tma.h"
#include "ops/gemm_operands.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/target/cuda/gemm_isel.h"

namespace tilec::cuda {

namespace {

using namespace ir;

using Env = passes::back::PassOpEnv;

std::string region_text(const BufferRegion& r) { return r.buffer->name; }

std::string op_text(const TileOpNode& op) {
  std::ostringstream os;
  os << "T." << op.op << "(";
  bool first = true;
  for (const auto& a : op.args)
    if (auto* r = std::get_if<BufferRegion>(&a)) {
      os << (first ? "" : ", ") << region_text(*r);
      first = false;
    }
  os << ")";
  return os.str();
}

std::string gemm_choice(const std::string& name, const ops::GemmOp& g) {
  const bool a_regs = !is_shared(g.query.a_scope);
  if (name == "wgmma") return std::string("wgmma (A from ") + (a_regs ? "registers" : "shared memory") + ", B from shared memory)";
  if (name == "mma") return std::string("mma.sync (A from ") + (a_regs ? "registers" : "shared memory through ldmatrix") + ")";
  if (name == "fma") return "FMA on CUDA cores (no tensor cores)";
  return name;
}

const char* gemm_candidate_name(const std::string& name) {
  if (name == "mma") return "mma.sync";
  return name.c_str()[0] == 'f' ? "FMA" : name.c_str();
}

// A pass's per-buffer notes ("name: text; name: text", the kOutputNotStagedAttr and
// kSharedLayoutChoicesAttr format) of function `f`, by buffer name, in order.
std::vector<std::pair<std::string, std::string>> buffer_notes(const ir::PrimFunc& f, const char* attr) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto* v = find_attr(f->attrs, attr);
  const auto* text = v ? std::get_if<std::string>(v) : nullptr;
  for (size_t at = 0; text && at < text->size();) {
    const size_t end = std::min(text->find("; ", at), text->size());
    const std::string item = text->substr(at, end - at);
    const size_t colon = item.find(": ");
    if (colon != std::string::npos) out.emplace_back(item.substr(0, colon), item.substr(colon + 2));
    at = end + 2;
  }
  return out;
}

// The widest store each source location (a tile op's line and column) lowered to, and whether
// some store of it stays one element wide (a runtime alignment check's or a boundary's path).
struct StoreWidth {
  ir::DataType dtype;  // the element type
  int lanes = 0;       // the widest store's lanes
  bool scalar_too = false;
};
using StoreWidths = std::map<std::pair<int, int>, StoreWidth>;

// The source locations of the tile ops that lowered to a TMA store (tl.tma_store calls carry
// their copy's location). A store TMA's rules admit can still fall back to the SIMT copy when
// the shared tile's inferred layout is one a TMA box cannot read (copy_tma.cc): the lowered IR
// says which happened.
using SourceLocs = std::set<std::pair<int, int>>;

// What the lowered IR says about the stores, read in one walk.
struct LoweredStores {
  StoreWidths widths;
  SourceLocs tma_stores;
};

LoweredStores lowered_stores(const ir::PrimFunc& lowered) {
  LoweredStores out;
  ir::for_each_node(lowered->body, [&](const ir::Node* n) {
    if (auto* c = dynamic_cast<const CallNode*>(n)) {
      if (c->op == "tl.tma_store" && c->loc.known()) out.tma_stores.insert({c->loc.line, c->loc.col});
      return;
    }
    auto* st = dynamic_cast<const BufferStoreNode*>(n);
    if (!st || !st->loc.known() || !st->value) return;
    const int lanes = st->value->dtype.lanes();
    StoreWidth& w = out.widths[{st->loc.line, st->loc.col}];
    if (lanes > w.lanes) w.lanes = lanes, w.dtype = st->value->dtype.element_of();
    w.scalar_too |= lanes == 1;
  });
  return out;
}

// The width of a SIMT copy's accesses, from what it lowered to: "16-byte vectors (8 x float16)
// per thread", "one element (2 bytes) per access: ...", or "" when its stores are not found.
std::string simt_width(const StoreWidths& widths, const SourceLoc& loc) {
  auto it = widths.find({loc.line, loc.col});
  if (it == widths.end() || it->second.lanes == 0) return "";
  const StoreWidth& w = it->second;
  const int elem = w.dtype.bytes();  // sub-byte types round up to a byte
  if (w.lanes == 1)
    return "one element (" + std::to_string(elem) + (elem == 1 ? " byte" : " bytes") +
           ") per access: no wider aligned access was proved";
  std::string text = std::to_string(w.dtype.with_lanes(w.lanes).bytes()) + "-byte vectors (" +
                     std::to_string(w.lanes) + " \u00d7 " + w.dtype.str() + ") per thread";
  if (w.scalar_too) text += " (element by element on the path a run-time alignment or bounds check takes)";
  return text;
}

std::string simt_copy(const StoreWidths& widths, const SourceLoc& loc) {
  const std::string width = simt_width(widths, loc);
  return width.empty() ? "SIMT copy by the block's threads" : "SIMT copy, " + width;
}

std::string with_width(std::string chosen, const StoreWidths& widths, const SourceLoc& loc) {
  const std::string width = simt_width(widths, loc);
  return width.empty() ? chosen : chosen + ", " + width;
}

// TMA with a global tensor whose strides are symbolic: the tensor map is encoded, and can
// fail, only at launch (runtime/tma_map.cc's rules; the Python call falls back to the program
// compiled without TMA, bind_runtime.cc).
std::string launch_time_tma_note(const Buffer& g) {
  std::vector<Expr> strides = buffer_strides(g);
  bool symbolic = false;
  for (size_t d = 0; d + 1 < strides.size(); ++d) symbolic |= as_const_int(strides[d]) == nullptr;
  if (!symbolic) return "";
  return "TMA is decided at launch: the strides of '" + g->name +
         "' are not known when compiling; its tensor map needs the data 16-byte aligned, the last dimension "
         "contiguous and every other stride a multiple of 16 bytes. A call from Python with a tensor that breaks "
         "this warns and runs the kernel compiled without TMA; an exported (C++) kernel refuses it";
}

class Explainer {
 public:
  Explainer(const passes::PassContext& ctx, LoweredStores stores)
      : ctx_(ctx), widths_(std::move(stores.widths)), tma_stores_(std::move(stores.tma_stores)) {}
  std::vector<ExplainLine> lines;

  void visit(const Stmt& s, int64_t threads, bool pipelined) {
    if (!s) return;
    if (auto* k = s.as<KernelLaunchNode>()) {
      visit(k->body, k->threads.empty() ? 1 : k->threads[0], false);
      return;
    }
    if (auto* a = s.as<AnnotateNode>()) {
      if (a->key == passes::kThreadRangeKey)
        if (auto* r = std::get_if<std::vector<int64_t>>(&a->value); r && r->size() >= 2) threads = (*r)[1];
      visit(a->body, threads, pipelined);
      return;
    }
    if (auto* f = s.as<ForNode>()) {
      visit(f->body, threads, pipelined || f->for_kind == ForKind::kPipelined);
      return;
    }
    if (auto* q = s.as<SeqNode>()) {
      for (const auto& x : q->stmts) visit(x, threads, pipelined);
      return;
    }
    if (auto* i = s.as<IfNode>()) {
      visit(i->then_case, threads, pipelined);
      visit(i->else_case, threads, pipelined);
      return;
    }
    if (auto* l = s.as<LetNode>()) return visit(l->body, threads, pipelined);
    if (auto* a = s.as<AllocateNode>()) return visit(a->body, threads, pipelined);
    if (auto* op = s.as<TileOpNode>()) tile_op(*op, threads, pipelined);
  }

 private:
  void tile_op(const TileOpNode& op, int64_t threads, bool pipelined) {
    Env env(ctx_, threads);
    if (op.op == "gemm") return gemm(op, env);
    if (op.op == "tma_copy") {
      ExplainLine l{op.loc, op_text(op), "", {}};
      const bool multicast = attr_int(op, "cluster_mask", 0) != 0;
      const bool producer = find_attr(op.attrs, "barrier") != nullptr;
      l.chosen = producer ? std::string("TMA load (cp.async.bulk.tensor") +
                                (multicast ? ", multicast to the cluster" : "") +
                                ") by the producer warpgroup, completing on an mbarrier"
                          : "TMA";
      if (producer && !multicast)
        if (std::string why = attr_string(op, "multicast_declined", ""); !why.empty())
          l.rejected.push_back("no TMA multicast: " + why);
      const BufferRegion& g = region_arg(op, 0).buffer->scope == Scope::kGlobal ? region_arg(op, 0) : region_arg(op, 1);
      if (std::string note = launch_time_tma_note(g.buffer); !note.empty()) l.rejected.push_back(note);
      lines.push_back(l);
      return;
    }
    if (op.op == "async_copy") {
      lines.push_back({op.loc, op_text(op), "cp.async (asynchronous global -> shared copy) in the software pipeline",
                       {}});
      return;
    }
    if (op.op == "copy") copy(op, env, pipelined);
  }

  void gemm(const TileOpNode& op, const Env& env) {
    ExplainLine l{op.loc, op_text(op), "", {}};
    ops::GemmOp g = ops::analyze_gemm(op, env);
    for (const GemmCandidate& c : gemm_candidates(g.query, env.target())) {
      if (c.chosen) {
        l.chosen = gemm_choice(c.name, g);
      } else if (c.name != "tcgen05" || env.target().arch >= 100) {
        l.rejected.push_back(std::string("no ") + gemm_candidate_name(c.name) + ": " + c.why);
      }
    }
    lines.push_back(l);
  }

  void copy(const TileOpNode& op, const Env& env, bool pipelined) {
    ExplainLine l{op.loc, op_text(op), "", {}};
    const BufferRegion& src = region_arg(op, 0);
    const BufferRegion& dst = region_arg(op, 1);
    const bool load = src.buffer->scope == Scope::kGlobal && is_shared(dst.buffer->scope);
    const bool store = is_shared(src.buffer->scope) && dst.buffer->scope == Scope::kGlobal;
    const std::string prefer = attr_string(op, "prefer_instruction");
    const bool tma_target = env.target().has_tma();
    std::string no_tma;
    if (!tma_target) no_tma = "TMA needs sm_90, the target is " + env.target().str();
    else if (env.config_flag("tl.disable_tma_lower")) no_tma = "tl.disable_tma_lower is set";
    else if (attr_bool(op, "disable_tma")) no_tma = "the copy has disable_tma=True";
    else if (!prefer.empty() && prefer != "tma") no_tma = "the copy prefers instruction \"" + prefer + "\"";
    else no_tma = ops::why_not_tma(op);
    if (store && no_tma.empty() && !tma_stores_.count({op.loc.line, op.loc.col}))
      no_tma = "the layout of shared tile '" + src.buffer->name +
               "' (annotated or inferred) is not one TMA boxes can read (e.g. padded rows, row-major wider than 256 "
               "columns, a column block that is not whole swizzle spans); the copy stays a SIMT copy";
    if (store) {
      if (no_tma.empty() && staged_by_compiler(src.buffer)) {
        // A 3-D staging buffer (2, rows, w): the tile did not fit whole, it leaves in column blocks.
        std::string blocks =
            src.buffer->ndim() == 3 ? " in column blocks of " + std::to_string(*as_const_int(src.buffer->shape[2])) +
                                          " through two shared buffers (the whole tile does not fit)"
                                    : "";
        for (const auto& [name, host] : staged_over_)
          if (name == src.buffer->name)
            blocks = " over the pipeline stages of '" + host + "' (the tile does not fit beside them; a persistent "
                     "kernel's producer loads the next tile's '" + host + "' once TMA has read this one)";
        l.chosen = "TMA store of the result tile, staged through shared memory by the compiler" + blocks +
                   " (stage_output_tiles; tilec.stage_output_tiles=False keeps the copies as written)";
      } else if (no_tma.empty()) {
        l.chosen = "TMA store (cp.async.bulk.tensor, shared -> global, one thread issues)";
      } else {
        l.chosen = simt_copy(widths_, op.loc);
        l.rejected.push_back("no TMA store: " + no_tma);
      }
      if (no_tma.empty())
        if (std::string note = launch_time_tma_note(dst.buffer); !note.empty()) l.rejected.push_back(note);
    } else if (load) {
      l.chosen = simt_copy(widths_, op.loc);
      if (tma_target) {
        l.rejected.push_back(no_tma.empty() ? std::string("no TMA: loads use TMA in a warp-specialized T.Pipelined "
                                                          "loop (or T.tma_copy with an mbarrier), and this copy is "
                                                          "not in one, nor ahead of one with its tile read only by "
                                                          "the loop's gemms in a block of two or more consumer "
                                                          "warpgroups (tilec.producer_head_copies)")
                                            : "no TMA: " + no_tma);
      }
      if (env.target().has_cp_async() && !pipelined)
        l.rejected.push_back("no cp.async: asynchronous copies are used in T.Pipelined loops (num_stages >= 2)");
    } else if (src.buffer->scope == Scope::kFragment && dst.buffer->scope == Scope::kGlobal && tma_target) {
      l.chosen = with_width("each thread stores its own elements (local.fragment -> global)", widths_, op.loc);
      for (const auto& [name, why] : not_staged_)
        if (name == src.buffer->name) {
          l.rejected.push_back("not staged through shared memory for one TMA store: " + why);
          break;
        }
    } else if (src.buffer->scope == Scope::kGlobal || dst.buffer->scope == Scope::kGlobal ||
               is_shared(src.buffer->scope) || is_shared(dst.buffer->scope)) {
      l.chosen = with_width(std::string("each thread copies its own elements (") + scope_name(src.buffer->scope) +
                                " -> " + scope_name(dst.buffer->scope) + ")",
                            widths_, op.loc);
    } else {
      return;  // between registers: nothing to choose
    }
    lines.push_back(l);
  }

  // A shared buffer stage_output_tiles made (named after the fragment, "_staged").
  static bool staged_by_compiler(const Buffer& b) {
    const std::string suffix = "_staged";
    return b->name.size() > suffix.size() && b->name.compare(b->name.size() - suffix.size(), suffix.size(), suffix) == 0;
  }

  const passes::PassContext& ctx_;
  const StoreWidths widths_;
  const SourceLocs tma_stores_;

 public:
  std::vector<std::pair<std::string, std::string>> not_staged_;  // stage_output_tiles' reasons
  std::vector<std::pair<std::string, std::string>> staged_over_;  // staged tile -> the pipelined buffer it shares
};

}  // namespace

std::vector<ExplainLine> explain(const ir::PrimFunc& f, passes::PassContext& ctx) {
  // The pipeline once: up to pipeline_planning (the loops' depths), on to layout inference for
  // the tile-level questions, then on from that IR to flatten_buffers for the bank-conflict
  // reading and the SIMT copies' widths.
  std::vector<passes::Pass> planning, prefix, rest;
  for (auto& p : pipeline::cuda_pipeline(ctx.target())) {
    if (!rest.empty() || p.name == "layout_inference") {
      if (rest.empty() || rest.back().name != "flatten_buffers") rest.push_back(std::move(p));
    } else if (prefix.empty() && (planning.empty() || planning.back().name != "pipeline_planning")) {
      planning.push_back(std::move(p));
    } else {
      prefix.push_back(std::move(p));
    }
  }
  ir::PrimFunc planned = passes::run_passes(planning, f, ctx);
  ir::PrimFunc g = passes::run_passes(prefix, planned, ctx);
  ir::PrimFunc lowered = passes::run_passes(rest, g, ctx);
  std::vector<ExplainLine> out;
  SourceLoc loop_loc = f->loc;
  ir::for_each_node(f->body, [&](const ir::Node* n) {
    auto* l = dynamic_cast<const ForNode*>(n);
    if (l && l->for_kind == ForKind::kPipelined) loop_loc = l->loc;
  });
  // The kernel: the pipelined loop's form.
  bool specialized = false;
  ir::for_each_node(g->body, [&](const ir::Node* n) {
    auto* op = dynamic_cast<const TileOpNode*>(n);
    specialized |= op && op->op == "tma_copy" && find_attr(op->attrs, "barrier");
  });
  for (const auto& [key, value] : g->attrs) {
    if (key == passes::kNotWarpSpecializedAttr)
      if (auto* why = std::get_if<std::string>(&value))
        out.push_back({loop_loc, "T.Pipelined loop", "software pipeline of the block's threads",
                       {"not warp-specialized (TMA producer + wgmma consumers): " + *why}});
  }
  if (specialized) {
    std::string form = "warp-specialized: a producer warpgroup issues TMA loads, consumer warpgroups run the rest "
                       "(full/empty mbarriers per stage)";
    if (auto* b = find_attr(g->attrs, passes::kPersistentAttr)) {
      const int64_t per_sm = std::get<int64_t>(*b);
      auto* order = find_attr(g->attrs, passes::kPersistentOrderAttr);
      const bool snake = order && std::get<std::string>(*order) == "snake";
      int64_t cluster = 1;
      ir::for_each_node(g->body, [&](const ir::Node* n) {
        if (auto* k = dynamic_cast<const KernelLaunchNode*>(n))
          for (int64_t c : k->cluster) cluster *= c;
      });
      form += "; persistent: " + std::to_string(per_sm) + (per_sm == 1 ? " block" : " blocks") +
              " per SM loop over the tiles" +
              (cluster > 1 ? " in clusters of " + std::to_string(cluster) + ", each cluster's blocks the tiles of "
                             "one cluster of the grid"
                           : "") +
              (snake ? ", longest first, taken in a snake (their step counts differ)" : ", taken in turn");
    }
    out.push_back({loop_loc, "T.Pipelined loop", form, {}});
  }
  // Each T.Pipelined loop's depth: pipeline_planning's num_stages (max(stage) + 1), or a
  // serial loop when it found nothing to pipeline.
  std::map<int, int> depth_at_line;
  ir::for_each_node(planned->body, [&](const ir::Node* n) {
    auto* l = dynamic_cast<const ForNode*>(n);
    if (l && l->for_kind == ForKind::kPipelined) depth_at_line[l->loc.line] = l->pipeline.num_stages;
  });
  ir::for_each_node(f->body, [&](const ir::Node* n) {
    auto* l = dynamic_cast<const ForNode*>(n);
    if (!l || l->for_kind != ForKind::kPipelined) return;
    const int asked = l->pipeline.num_stages;
    const std::string given = "num_stages=" + std::to_string(asked);
    auto it = depth_at_line.find(l->loc.line);
    std::string depth;
    bool specialized = false;  // the loop's form line, above
    for (const auto& o : out)
      specialized |= o.what == "T.Pipelined loop" && o.loc.line == l->loc.line && o.chosen.rfind("warp-specialized", 0) == 0;
    if (it != depth_at_line.end() && it->second == 1 && specialized) {
      depth = "1 stage (" + given + "): one shared-memory buffer per tile the loop loads, which the producer "
              "refills as soon as its readers are done with it";
    } else if (it != depth_at_line.end() && it->second == 1) {
      depth = "1 stage (" + given + "): not pipelined, a serial loop";
    } else if (it != depth_at_line.end()) {
      depth = std::to_string(it->second) + " stages (" + given +
              (l->pipeline.stage.empty() ? "" : ", the deepest of its stage list") +
              "): each tile the loop loads has " + std::to_string(it->second) +
              " shared-memory buffers, so loads for later iterations overlap this one's work";
    } else if (asked < 2 && l->pipeline.stage.empty()) {
      depth = "1 stage (" + given + "): not pipelined, a serial loop";
    } else {
      depth = "1 stage (" + given + "): not pipelined, a serial loop: nothing in its body is a T.copy global -> "
              "shared that could run ahead";
    }
    // With the loop's form when there is a line for it, else a line of its own.
    for (auto& o : out)
      if (o.what == "T.Pipelined loop" && o.loc.line == l->loc.line) {
        o.rejected.push_back("depth: " + depth);
        return;
      }
    out.push_back({l->loc, "T.Pipelined loop", depth, {}, "depth"});
  });
  Explainer e(ctx, lowered_stores(lowered));
  e.not_staged_ = buffer_notes(g, passes::kOutputNotStagedAttr);
  e.staged_over_ = buffer_notes(g, passes::kStagedOverStagesAttr);
  e.visit(g->body, 1, false);
  // Program order; once per op (a pipeline's prologue repeats its copies).
  std::stable_sort(e.lines.begin(), e.lines.end(),
                   [](const ExplainLine& a, const ExplainLine& b) { return a.loc.line < b.loc.line; });
  for (const auto& l : e.lines) {
    bool seen = false;
    for (const auto& o : out) seen |= o.loc.line == l.loc.line && o.what == l.what && o.chosen == l.chosen;
    if (!seen) out.push_back(l);
  }
  // Bank-aware layouts layout inference chose (one line per buffer).
  for (const auto& [name, choice] : buffer_notes(lowered, passes::kSharedLayoutChoicesAttr)) {
    SourceLoc where = f->loc;  // the buffer's allocation, where known
    ir::for_each_node(g->body, [&](const ir::Node* n) {
      auto* a = dynamic_cast<const ir::AllocateNode*>(n);
      if (a && a->buffer->name == name && a->buffer->loc.known()) where = a->buffer->loc;
    });
    out.push_back({where, "shared '" + name + "' layout",
                   choice + " (layout inference; tilec.bank_aware_layouts=False keeps row-major)", {}});
  }
  // Shared-memory bank conflicts, read from the lowered index expressions.
  std::vector<BankConflict> conflicts = shared_bank_conflicts(lowered);
  std::stable_sort(conflicts.begin(), conflicts.end(),
                   [](const BankConflict& a, const BankConflict& b) { return a.loc.line < b.loc.line; });
  for (const auto& c : conflicts) {
    if (c.ways < 4) continue;
    out.push_back({c.loc, std::string("shared '") + c.buffer + "' " + (c.store ? "write" : "read"),
                   std::to_string(c.ways) + "-way bank conflict: a warp's lanes touch " + std::to_string(c.ways) +
                       " different words of one bank, served one after another",
                   {"to avoid it: pad the rows (e.g. T.alloc_shared((M, N + 1), ...)) so that a column falls in "
                    "different banks, or read the tile along its rows"},
                   "found"});
  }
  return out;
}

std::string format_explain(const std::vector<ExplainLine>& lines) {
  std::ostringstream os;
  for (const auto& l : lines) {
    os << (l.loc.line > 0 ? "line " + std::to_string(l.loc.line) : std::string("kernel")) << ": " << l.what << "\n"
       << "    " << l.label << ": " << l.chosen << "\n";
    for (const auto& r : l.rejected) os << "    " << r << "\n";
  }
  return os.str();
}

}  // namespace tilec::cuda
