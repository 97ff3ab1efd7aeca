// Shared-memory bank conflicts of a lowered kernel, by reading its index expressions (for
// kernel.explain(); include/tilec/target/cuda/explain.h).
//
// For every load or store of a shared buffer (scalar, or a unit-stride vector of up to 16 bytes),
// the words each lane of the first warp of its threads touches at the first iteration of the
// enclosing loops (loops at their minimum, block indices 0, Lets substituted): the access's
// conflict degree is the largest number of distinct 4-byte words one of the 32 banks serves
// (within a 128-byte phase for accesses wider than 4 bytes). Conditions are ignored (all lanes
// counted); a line with several accesses (fast and slow paths) reports its best one.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "layout/int_eval.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/stmt.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/target/cuda/explain.h"

namespace tilec::cuda {

namespace {

using namespace ir;

// Every expression node of `e` (back::any_node, never stopping early).
void each_node(const Expr& e, const std::function<void(const ExprNode*)>& fn) {
  passes::back::any_node(e, [&](const ExprNode* n) {
    fn(n);
    return false;
  });
}

class ConflictFinder {
 public:
  std::vector<BankConflict> found;

  void stmt(const Stmt& s) {
    if (!s) return;
    if (auto* k = s.as<KernelLaunchNode>()) {
      if (!k->thread_vars.empty()) tx_ = k->thread_vars[0];
      for (const auto& b : k->block_vars) fixed_[b.get()] = 0;
      return stmt(k->body);
    }
    if (auto* a = s.as<AnnotateNode>()) {
      int64_t saved = first_thread_;
      if (a->key == passes::kThreadRangeKey)
        if (auto* r = std::get_if<std::vector<int64_t>>(&a->value); r && !r->empty()) first_thread_ = (*r)[0];
      stmt(a->body);
      first_thread_ = saved;
      return;
    }
    if (auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::kThreadBinding) {
        if (!tx_.defined() || f->thread_tag == "threadIdx.x") tx_ = f->loop_var;
      } else {
        auto* lo = as_const_int(f->min);
        fixed_[f->loop_var.get()] = lo ? *lo : 0;
      }
      expr(f->min);
      expr(f->extent);
      return stmt(f->body);
    }
    if (auto* l = s.as<LetNode>()) {
      lets_[l->var.get()] = l->value;
      expr(l->value);
      return stmt(l->body);
    }
    if (auto* st = s.as<BufferStoreNode>()) {
      access(st->buffer, st->indices, /*store=*/true, s->loc);
      expr(st->value);
      for (const auto& i : st->indices) expr(i);
      return;
    }
    if (auto* q = s.as<SeqNode>()) {
      for (const auto& x : q->stmts) stmt(x);
      return;
    }
    if (auto* i = s.as<IfNode>()) {
      expr(i->cond);
      stmt(i->then_case);
      stmt(i->else_case);
      return;
    }
    if (auto* a = s.as<AllocateNode>()) return stmt(a->body);
    if (auto* e = s.as<EvaluateNode>()) return expr(e->value);
  }

 private:
  void expr(const Expr& e) {
    if (!e) return;
    // Addresses handed to intrinsics (cp.async, ldmatrix, wgmma descriptors, TMA) are not loads
    // by the threads: those instructions have their own access patterns.
    std::set<const Node*> addressed;
    each_node(e, [&](const ExprNode* n) {
      auto* c = dynamic_cast<const CallNode*>(n);
      if (c && c->op == "tl.address_of" && !c->args.empty()) addressed.insert(c->args[0].get());
    });
    each_node(e, [&](const ExprNode* n) {
      if (auto* l = dynamic_cast<const BufferLoadNode*>(n); l && !addressed.count(n))
        access(l->buffer, l->indices, false, l->loc);
    });
  }

  // `e` with the Lets substituted (their values' Lets too).
  Expr resolved(const Expr& e, int depth = 0) const {
    if (depth > 16) return e;
    VarMap m;
    each_node(e, [&](const ExprNode* n) {
      auto* v = dynamic_cast<const VarNode*>(n);
      if (!v) return;
      auto it = lets_.find(v);
      if (it != lets_.end()) m[v] = resolved(it->second, depth + 1);
    });
    return m.empty() ? e : substitute(e, m);
  }

  void access(const Buffer& b, const std::vector<Expr>& indices, bool store, const SourceLoc& loc) {
    if (!is_shared(b->scope) || indices.size() != 1 || !tx_.defined()) return;
    const int elem = b->dtype.bytes();
    // A vector access (Ramp) reads `lanes` consecutive elements per thread.
    Expr idx = indices[0];
    int64_t lanes = 1;
    if (auto* r = idx.as<RampNode>()) {
      auto* stride = as_const_int(r->stride);
      if (!stride || *stride != 1) return;
      lanes = r->lanes;
      idx = r->base;
    }
    const int64_t bytes = elem * lanes;
    if (elem <= 0 || b->dtype.lanes() != 1 || (bytes != 1 && bytes != 2 && bytes % 4 != 0) || bytes > 16) return;
    idx = resolved(idx);
    // Every variable but the thread index at its first value.
    VarMap fix;
    bool ok = true;
    for (const Var& v : passes::back::free_vars(idx)) {
      if (v.get() == tx_.get()) continue;
      auto it = fixed_.find(v.get());
      if (it == fixed_.end()) {
        ok = false;
        break;
      }
      fix[v.get()] = int_imm(it->second, v->dtype);
    }
    if (!ok) return;
    if (!fix.empty()) idx = substitute(idx, fix);
    std::vector<Var> slots = {tx_};
    std::vector<int64_t> values = {0};
    if (!layout::IntProgram::compiles(idx, slots)) return;
    layout::IntProgram p(idx, slots);
    // Accesses wider than 4 bytes are served in phases of 128 bytes (8 lanes for 16-byte
    // accesses, 16 for 8-byte ones); a conflict counts within a phase.
    const int64_t phase_lanes = bytes > 4 ? 128 / bytes : 32;
    int ways = 1;
    for (int64_t first = 0; first < 32; first += phase_lanes) {
      std::map<int64_t, std::set<int64_t>> words_of_bank;
      for (int64_t lane = first; lane < first + phase_lanes; ++lane) {
        values[0] = first_thread_ + lane;
        const int64_t start = p.eval(values.data()) * elem;
        for (int64_t w = start / 4; w <= (start + bytes - 1) / 4; ++w) words_of_bank[((w % 32) + 32) % 32].insert(w);
      }
      for (const auto& [bank, words] : words_of_bank) ways = std::max(ways, static_cast<int>(words.size()));
    }
    // One line may lower to several accesses (a vectorized fast path and an element-wise slow
    // path for partial tiles): the line's degree is its best path's.
    for (auto& f : found)
      if (f.loc.line == loc.line && f.buffer == b->name && f.store == store) {
        f.ways = std::min(f.ways, ways);
        return;
      }
    found.push_back({loc, b->name, store, ways});
  }

  Var tx_;
  int64_t first_thread_ = 0;
  std::unordered_map<const VarNode*, int64_t> fixed_;
  std::unordered_map<const VarNode*, Expr> lets_;
};

}  // namespace

std::vector<BankConflict> shared_bank_conflicts(const ir::PrimFunc& lowered) {
  ConflictFinder f;
  f.stmt(lowered->body);
  return f.found;
}

}  // namespace tilec::cuda
