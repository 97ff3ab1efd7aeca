// warp_specialize_plan.h: the analysis half of warp_specialize — the spine, copy groups,
// the rotated attention step and the ping-pong turn.
#include "passes/warp_specialize_plan.h"

#include <algorithm>
#include <unordered_set>

#include "ops/copy_tma.h"
#include "passes/cluster_invariance.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"

namespace tilec::passes::ws {

using namespace ir;
namespace pl = pipeline;

const TileOpNode* tile_op(const Stmt& s) { return s.as<TileOpNode>(); }

std::string describe(const Stmt& st) {
  std::string what = "a statement";
  if (auto* op = st.as<TileOpNode>()) what = "T." + op->op;
  return st->loc.line > 0 ? what + " at line " + std::to_string(st->loc.line) : what;
}

ReadOnly read_only_globals(const Stmt& kernel_body) {
  pl::Access acc = pl::accesses(kernel_body);
  // A buffer whose address is taken (tl.address_of: extern calls, atomics, cp.async) may be
  // written through it.
  for_each_node(kernel_body, [&](const Node* n) {
    auto* c = dynamic_cast<const CallNode*>(n);
    if (!c || c->op != "tl.address_of" || c->args.empty()) return;
    if (auto* l = c->args[0].as<BufferLoadNode>()) acc.writes.insert(l->buffer.get());
  });
  ReadOnly out;
  for (const BufferNode* b : acc.reads)
    if (b->scope == Scope::kGlobal && !acc.writes.count(b)) out.insert(b);
  return out;
}

bool reads_only(const Expr& e, const ReadOnly* read_only) {
  if (!back::reads_memory(e)) return true;
  if (!read_only) return false;
  return !back::any_node(e, [&](const ExprNode* n) {
    if (n->kind == NodeKind::kBufferLoad) return read_only->count(static_cast<const BufferLoadNode*>(n)->buffer.get()) == 0;
    if (n->kind == NodeKind::kCall) return !back::is_pure_call(static_cast<const CallNode*>(n));
    return false;
  });
}

namespace {
bool region_reads_only(const BufferRegion& r, const ReadOnly* read_only) {
  for (const auto& rg : r.region)
    if (!reads_only(rg.min, read_only) || !reads_only(rg.extent, read_only)) return false;
  return true;
}
}  // namespace

std::string why_not_producer_copy(const Stmt& st, const ReadOnly* read_only) {
  const TileOpNode* op = tile_op(st);
  if (!op || op->op != "copy" || !pl::is_global_to_shared_copy(st))
    return "a first-stage statement (" + describe(st) + ") is not a T.copy from global to shared memory";
  if (attr_bool(*op, "disable_tma")) return "a copy (" + describe(st) + ") has disable_tma=True";
  const std::string prefer = attr_string(*op, "prefer_instruction");
  if (!prefer.empty() && prefer != "tma") return "a copy (" + describe(st) + ") prefers instruction \"" + prefer + "\"";
  if (std::string why = ops::why_not_tma(*op); !why.empty()) return "a copy (" + describe(st) + ") cannot be TMA: " + why;
  if (!region_reads_only(region_arg(*op, 0), read_only) || !region_reads_only(region_arg(*op, 1), read_only))
    return "a copy's region (" + describe(st) + ") is computed from memory (e.g. a block table)" +
           (read_only ? " that the kernel also writes" : "; tilec.ws_indirect_copies lets the producer read it");
  return "";
}

std::vector<Stmt> head_copies(const Spine& sp, const Plan& p, const Stmt& kernel_body, const ReadOnly* read_only) {
  std::vector<Stmt> out;
  std::unordered_set<const Node*> in_loop;
  for_each_node(p.loop->body, [&](const Node* n) { in_loop.insert(n); });
  std::unordered_set<const BufferNode*> user_layout;
  for_each_node(kernel_body, [&](const Node* n) {
    if (auto* a = dynamic_cast<const AnnotateNode*>(n); a && a->key == "layout_map")
      if (auto* m = std::get_if<LayoutMap>(&a->value))
        for (const auto& [b, l] : *m) user_layout.insert(b.get());
  });
  for (const Stmt& st : sp.before) {
    if (!why_not_producer_copy(st, read_only).empty()) continue;
    const TileOpNode* op = tile_op(st);
    const BufferNode* src = region_arg(*op, 0).buffer.get();
    const BufferNode* dst = region_arg(*op, 1).buffer.get();
    if (p.versioned.count(dst) || user_layout.count(dst)) continue;
    // Besides this copy, only the loop's gemms touch dst, as an operand they read; nothing
    // writes src.
    pl::Access rest = pl::accesses_except(kernel_body, [&](const TileOpNode* t) {
      return t == op || (t->op == "gemm" && in_loop.count(t) && region_arg(*t, 2).buffer.get() != dst);
    });
    if (rest.writes.count(src) || rest.writes.count(dst) || rest.reads.count(dst)) continue;
    bool twice = false;
    for (const Stmt& o : out) twice |= region_arg(*tile_op(o), 1).buffer.get() == dst;
    if (!twice) out.push_back(st);
  }
  return out;
}

namespace {


// The nodes from `s` down to the first pipelined loop (inclusive); false when there is none.
bool path_to_loop(const Stmt& s, std::vector<const StmtNode*>* path) {
  if (!s) return false;
  path->push_back(s.get());
  if (auto* f = s.as<ForNode>(); f && f->for_kind == ForKind::kPipelined) return true;
  std::vector<Stmt> children;
  if (auto* q = s.as<SeqNode>()) children = q->stmts;
  if (auto* f = s.as<ForNode>()) children = {f->body};
  if (auto* i = s.as<IfNode>()) children = {i->then_case, i->else_case};
  if (auto* l = s.as<LetNode>()) children = {l->body};
  if (auto* a = s.as<AllocateNode>()) children = {a->body};
  if (auto* a = s.as<AnnotateNode>()) children = {a->body};
  for (const auto& c : children)
    if (path_to_loop(c, path)) return true;
  path->pop_back();
  return false;
}

}  // namespace

// The single pipelined loop of a kernel body when only Seqs and wrappers lead to it.
std::optional<Spine> find_spine(const Stmt& body) {
  int loops = 0;
  for_each_node(body, [&](const Node* n) {
    if (auto* f = dynamic_cast<const ForNode*>(n); f && f->for_kind == ForKind::kPipelined) ++loops;
  });
  std::vector<const StmtNode*> path;
  if (loops != 1 || !path_to_loop(body, &path)) return std::nullopt;
  Spine sp;
  sp.loop = static_cast<const ForNode*>(path.back());
  path.pop_back();
  for (size_t i = 0; i < path.size(); ++i) {
    const StmtNode* n = path[i];
    switch (n->kind) {
      case NodeKind::kSeq: {
        const StmtNode* next = i + 1 < path.size() ? path[i + 1] : sp.loop;
        for (const auto& st : static_cast<const SeqNode*>(n)->stmts) {
          if (st.get() == next) break;
          sp.before.push_back(st);
        }
        break;
      }
      case NodeKind::kLet: {
        auto* l = static_cast<const LetNode*>(n);
        sp.let_values[l->var.get()] = substitute(l->value, sp.let_values);
        sp.wrappers.push_back(n);
        break;
      }
      case NodeKind::kAllocate:
      case NodeKind::kAnnotate: sp.wrappers.push_back(n); break;
      default: return std::nullopt;  // inside another loop or a condition
    }
  }
  return sp;
}


// Whether the loop's later stages are only wgmma gemms that wait for themselves
// (wg_wait 0), into accumulators nothing else in the loop touches, with operands from
// shared memory: then their completion may be awaited one iteration late.
bool defer_release(const Plan& p) {
  for (size_t j : p.consumers) {
    const TileOpNode* g = tile_op(p.body.stmts[j]);
    if (!g || g->op != "gemm" || attr_int(*g, "wg_wait", 0) != 0) return false;
    if (!is_shared(region_arg(*g, 0).buffer->scope) || !is_shared(region_arg(*g, 1).buffer->scope)) return false;
  }
  return !p.consumers.empty();
}

std::vector<CopyGroup> copy_groups(const Plan& p, bool single) {
  std::vector<CopyGroup> groups;
  for (size_t j : p.producers) {
    const BufferNode* dst = region_arg(*tile_op(p.body.stmts[j]), 1).buffer.get();
    CopyGroup c;
    c.producers = {j};
    c.last_reader = p.consumers.empty() ? 0 : p.consumers.size() - 1;
    bool seen = false;
    for (size_t q = 0; q < p.consumers.size(); ++q) {
      if (!pl::accesses(p.body.stmts[p.consumers[q]]).reads.count(dst)) continue;
      if (!seen) c.first_reader = q;
      c.last_reader = q;
      seen = true;
      const TileOpNode* g = tile_op(p.body.stmts[p.consumers[q]]);
      if (g && g->op == "gemm") c.waits_pending |= attr_int(*g, "wg_wait", 0) != 0;
      else c.thread_readers = true;
    }
    if (single && !groups.empty()) {
      CopyGroup& all = groups[0];
      all.producers.push_back(j);
      all.last_reader = std::max(all.last_reader, c.last_reader);
      all.waits_pending |= c.waits_pending;
      all.thread_readers |= c.thread_readers;
      continue;
    }
    if (single) c.first_reader = 0;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const CopyGroup& g) {
      return g.first_reader == c.first_reader && g.last_reader == c.last_reader;
    });
    if (same == groups.end()) {
      groups.push_back(c);
    } else {
      same->producers.push_back(j);
      same->waits_pending |= c.waits_pending;
      same->thread_readers |= c.thread_readers;
    }
  }
  return groups;
}

// The rotated form of a consumer step S = gemm1(...); <B>; O += gemm2(P, V) (attention):
// two gemms, the first and the last consumer statement of their own copy groups, gemm1's
// result read by B, and nothing before gemm1 or in B's first part touching gemm2's
// operands or accumulator. tilec.intra_wg_overlap turns it off.

namespace {

bool intersects(const pl::BufferSet& a, const pl::BufferSet& b) {
  for (const BufferNode* x : a)
    if (b.count(x)) return true;
  return false;
}

// Whether two statements' accesses conflict (one writes what the other reads or writes).
bool conflict(const pl::Access& a, const pl::Access& b) {
  return intersects(a.writes, b.reads) || intersects(a.writes, b.writes) || intersects(b.writes, a.reads);
}

}  // namespace

// The statements of the rotated step's tail [touches_second, last) that write gemm2's
// accumulator and nothing of its other operands (O *= scale, not the cast of P), and that
// conflict with no statement they would move past: the rest of the tail and the next step's
// statements up to and including gemm1. Moved, each runs in the next step right after gemm1
// is issued (FlashAttention-3's order), while gemm1 runs, instead of before the next turn.
std::vector<size_t> deferred_updates(const Plan& p, const Rotation& r, const pl::Access& second) {
  const size_t n = p.consumers.size();
  pl::BufferSet operands = second.reads;  // gemm2's A and B (B is versioned: never touched here)
  for (const BufferNode* b : second.writes) operands.erase(b);
  std::vector<pl::Access> acc(n);
  for (size_t q = 0; q < n; ++q) acc[q] = pl::accesses(p.body.stmts[p.consumers[q]]);
  std::vector<size_t> out;
  for (size_t q = r.touches_second; q + 1 < n; ++q) {
    const pl::Access& a = acc[q];
    if (!intersects(a.writes, second.writes) || intersects(a.reads, operands) || intersects(a.writes, operands))
      continue;
    bool ok = true;
    for (size_t o = r.touches_second; o + 1 < n && ok; ++o)
      if (o != q) ok = !conflict(a, acc[o]);
    for (size_t o = 0; o <= r.first_gemm && ok; ++o) ok = !conflict(a, acc[o]);
    if (ok) out.push_back(q);
  }
  return out;
}

bool rotation(const Plan& p, const std::vector<CopyGroup>& groups, const PassContext& ctx, Rotation* out) {
  if (!ctx.get_bool("tilec.intra_wg_overlap") || !p.body.wrappers.empty() || groups.size() != 2) return false;
  const size_t n = p.consumers.size();
  std::vector<size_t> gemms;
  for (size_t q = 0; q < n; ++q)
    if (const TileOpNode* g = tile_op(p.body.stmts[p.consumers[q]]); g && g->op == "gemm") {
      if (attr_int(*g, "wg_wait", 0) != 0) return false;
      gemms.push_back(q);
    }
  if (gemms.size() != 2 || gemms[1] != n - 1) return false;
  Rotation r;
  r.first_gemm = gemms[0];
  bool found_first = false, found_second = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].first_reader == gemms[0] && groups[g].last_reader == gemms[0]) {
      r.first_group = g;
      found_first = true;
    }
    if (groups[g].first_reader == n - 1 && groups[g].last_reader == n - 1) {
      r.second_group = g;
      found_second = true;
    }
  }
  if (!found_first || !found_second) return false;
  // gemm2's buffers: its operands and accumulator (the copied buffer aside).
  pl::Access second = pl::accesses(p.body.stmts[p.consumers[n - 1]]);
  std::unordered_set<const BufferNode*> touched(second.reads.begin(), second.reads.end());
  touched.insert(second.writes.begin(), second.writes.end());
  for (const auto& [b, v] : p.versioned) touched.erase(b);
  auto touches = [&](size_t q) {
    pl::Access a = pl::accesses(p.body.stmts[p.consumers[q]]);
    for (const BufferNode* b : touched)
      if (a.reads.count(b) || a.writes.count(b)) return true;
    return false;
  };
  for (size_t q = 0; q <= r.first_gemm; ++q)
    if (touches(q)) return false;
  // gemm1's result must be read after it (else there is nothing to overlap).
  pl::Access first = pl::accesses(p.body.stmts[p.consumers[r.first_gemm]]);
  r.touches_second = n - 1;
  bool reads_s = false;
  for (size_t q = r.first_gemm + 1; q + 1 < n; ++q) {
    pl::Access a = pl::accesses(p.body.stmts[p.consumers[q]]);
    for (const BufferNode* b : first.writes) reads_s |= a.reads.count(b) > 0;
    if (touches(q)) {
      r.touches_second = q;
      break;
    }
  }
  if (!reads_s) return false;
  if (ctx.get_bool("tilec.defer_accumulator_updates")) r.deferred = deferred_updates(p, r, second);
  *out = r;
  return true;
}

ClusterAxis cluster_axis(const KernelLaunchNode& kernel) {
  ClusterAxis a;
  for (size_t d = 0; d < kernel.cluster.size(); ++d) {
    a.size *= kernel.cluster[d];
    if (kernel.cluster[d] > 1) a.dim = a.dim == -1 ? static_cast<int>(d) : -2;
  }
  return a;
}

std::string why_not_multicast(const KernelLaunchNode& kernel, const TileOpNode& copy, const VarMap& lets,
                              const PassContext& ctx) {
  const auto [dim, size] = cluster_axis(kernel);
  if (dim == -1)
    return "the kernel has no cluster (T.Kernel(..., cluster_dims=...): blocks of a cluster that load the same "
           "tile can share one multicast load)";
  if (dim == -2) return "the cluster spans more than one grid dimension; multicast splits a tile along one";
  if (size > 16) return "the cluster has " + std::to_string(size) + " blocks, a multicast mask holds 16";
  if (!ctx.get_bool("tilec.tma_multicast")) return "tilec.tma_multicast is off";
  if (dim >= static_cast<int>(kernel.block_vars.size())) return "";
  const VarNode* b = kernel.block_vars[dim].get();
  for (const auto& r : region_arg(copy, 0).region)
    if (varies_within_cluster(substitute(r.min, lets), kernel, dim, size))
      return "the source depends on " + b->name + ", the block index the cluster spans: the blocks of a cluster "
             "load different tiles";
  if (!ops::tma_row_band(copy, size, int_imm(0, DataType::Int(32))))
    return "the tile does not split into " + std::to_string(size) +
           " bands of whole 8-row groups, one per block of the cluster";
  return "";
}

// A gemm tile op with its wg_wait attribute set to `n` (-1: issue only, no wait).
Stmt with_wg_wait(const Stmt& st, int64_t n) { return with_attr(*st.as<TileOpNode>(), "wg_wait", n); }

// Whether the consumer warpgroups each own rows of gemm `g`'s result: 64 rows or more per
// warpgroup and a policy that does not put every warp along N. When they share rows (MLA
// decoding's 64 heads split by columns, FullCol), every step meets at the barriers of the rows'
// reductions, so a turn only delays the other warpgroups' issue (measured on the H200,
// 2026-12-03: MLA decoding 440 -> 462 TFLOP/s without turns).
bool warpgroups_own_rows(const TileOpNode& g, int64_t groups) {
  if (attr_string(g, "policy", "Square") == "FullCol") return false;
  const auto& shape = region_arg(g, 2).buffer->shape;
  const int64_t* rows = shape.empty() ? nullptr : as_const_int(shape[0]);
  return rows && *rows >= 64 * groups;
}

// The consumer statement (index into p.consumers) at which the consumer warpgroups (two or
// three) take turns, round robin: the first gemm, when the step also runs other statements
// (with gemms only there is nothing to overlap). nullopt: no turns (one or four warpgroups,
// tilec.pingpong off).
std::optional<size_t> pingpong_gemm(const Plan& p, int64_t threads, const PassContext& ctx) {
  const int64_t groups = threads / 128;
  if (threads % 128 != 0 || groups < 2 || groups > kMaxTurnGroups || !ctx.get_bool("tilec.pingpong"))
    return std::nullopt;
  std::optional<size_t> first;
  bool other = false;
  for (size_t q = 0; q < p.consumers.size(); ++q) {
    const TileOpNode* g = tile_op(p.body.stmts[p.consumers[q]]);
    if (g && g->op == "gemm") {
      if (!first) first = q;
    } else {
      other = true;
    }
  }
  if (!other || !first) return std::nullopt;
  if (!warpgroups_own_rows(*tile_op(p.body.stmts[p.consumers[*first]]), groups)) return std::nullopt;
  return first;
}

}  // namespace tilec::passes::ws
