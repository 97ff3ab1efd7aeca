// Pass order_blocks_by_work: blocks whose main loop runs longer start first.
//
// Input:  tile IR after rasterize_blocks (which gives a kernel with T.use_swizzle Lets of
//         fresh hardware indices: none of its trip counts depends on a block index alone). A
//         kernel with a loop on its spine — the statements under the kernel's Lets, Allocates
//         and Annotates — whose trip count (the spine's Lets substituted) depends on exactly
//         one block index b and on nothing else that varies (causal attention:
//         min(ceildiv(seq, bN), ceildiv((bx + 1) bM, bN))), over a constant grid extent g.
// Output: when that trip count never decreases as b grows and is larger for the last block
//         than for the first, the kernel gets a fresh hardware index b_hw and b becomes the
//         Let g - 1 - b_hw: the hardware's launch order (blockIdx.x first) then hands out the
//         longest blocks first and the short ones fill the SMs at the end, instead of a last
//         wave of long blocks that leaves most SMs idle (longest-processing-time-first; what
//         FlashAttention-3's causal scheduler does).
// When:   config tilec.longest_blocks_first (default on); g <= 65536; the kernel does not
//         call T.sync_grid() (a cooperative launch runs every block at once).
// Why:    the trip counts of a causal attention kernel grow linearly with bx; launched in
//         increasing order, the last blocks to start are the longest.
// Before: layout inference and lowering (it only renames a block index), after
//         rasterize_blocks.
#include <string>

#include "layout/int_eval.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

constexpr int64_t kMaxGrid = 65536;

// The trip counts of the spine's loops (Fors reached from the kernel body through Lets,
// Allocates, Annotates and Seqs), with the spine's Lets substituted.
void spine_trip_counts(const Stmt& s, VarMap& lets, std::vector<Expr>& out) {
  if (auto* l = s.as<LetNode>()) {
    lets[l->var.get()] = substitute(l->value, lets);
    return spine_trip_counts(l->body, lets, out);
  }
  if (auto* a = s.as<AllocateNode>()) return spine_trip_counts(a->body, lets, out);
  if (auto* an = s.as<AnnotateNode>()) return spine_trip_counts(an->body, lets, out);
  if (auto* q = s.as<SeqNode>()) {
    for (const auto& st : q->stmts) spine_trip_counts(st, lets, out);
    return;
  }
  if (auto* f = s.as<ForNode>()) out.push_back(substitute(f->extent, lets));
}

// Whether the trip count `extent`, a function of block index `b` alone over [0, g), never
// decreases and grows from the first block to the last.
bool grows_with(const Expr& extent, const Var& b, int64_t g) {
  std::vector<Var> vars = back::free_vars(extent);
  if (vars.size() != 1 || vars[0].get() != b.get() || !layout::IntProgram::compiles(extent, {b})) return false;
  // Every block's trip count at once (one vector pass over the expression, not g rewrites).
  std::vector<int64_t> trips = layout::eval_box(extent, {b}, {g});
  for (int64_t i = 1; i < g; ++i)
    if (trips[i] < trips[i - 1]) return false;
  return trips[g - 1] > trips[0];
}

class OrderBlocksByWork : public IRMutator {
 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    // The blocks of a kernel that syncs its grid are all resident at once (a cooperative
    // launch): their launch order gains nothing, so the kernel keeps its block indices.
    if (contains_grid_sync(op->body)) return s;
    std::vector<Expr> trips;
    VarMap lets;
    spine_trip_counts(op->body, lets, trips);
    for (size_t d = 0; d < op->block_vars.size(); ++d) {
      const int64_t* g = as_const_int(op->grid[d]);
      if (!g || *g < 2 || *g > kMaxGrid) continue;
      for (const Expr& trip : trips) {
        if (!grows_with(trip, op->block_vars[d], *g)) continue;
        auto n = std::make_shared<KernelLaunchNode>(*op);
        const Var& b = op->block_vars[d];
        Var hw = make_var(b->name + "_hw", b->dtype, op->loc);
        n->block_vars[d] = hw;
        n->body = let(b, int_imm(*g - 1, b->dtype) - hw, op->body, op->loc);
        return Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
      }
    }
    return s;
  }

};

}  // namespace

Pass order_blocks_by_work_pass() {
  return {"order_blocks_by_work", [](const PrimFunc& f, PassContext& ctx) {
            if (!ctx.get_bool("tilec.longest_blocks_first")) return f;
            return with_body(f, OrderBlocksByWork().mutate(f->body));
          }};
}

}  // namespace tilec::passes
