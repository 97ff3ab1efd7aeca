// Pass fuse_clear_into_gemm: `T.clear(C); T.gemm(A, B, C)` becomes `T.gemm(A, B, C,
// clear_accum=True)`.
//
// Input:  verified tile IR.
// Output: in every statement list, a T.fill of a whole fragment with zero immediately followed
//         by a T.gemm accumulating into that whole fragment (clear_accum False) is replaced by
//         the gemm with clear_accum=True: the instruction's first k-step writes C instead of
//         adding to it (wgmma scale-d = 0, or the mma path's cleared accumulator), and the
//         per-thread zeroing loop disappears.
//         On targets with wgmma, `if c { T.fill(C, 0) } [else { E }]` right before such a gemm
//         (what `T.gemm(..., clear_accum=<expr>)` and unswitch_uniform_conditions write) becomes
//         `[if c { T.fill(C, tl.unspecified()) } else { E }]` and the gemm with clear_if=c: the
//         condition picks the first k-step's scale-d at run time (c reads no memory, so testing
//         it twice is the same); the unspecified fill stores nothing, it only ends the life of
//         C's old registers on that side (without it they stay live across the loop step).
// When:   config tilec.fuse_clear_into_gemm (default on); the fill's value is the constant 0
//         and its region the whole buffer, which the gemm's C region is too; the two are
//         adjacent in one list (nothing in between can read or write C).
// Why:    attention clears S = Q K^T every step: 64 register moves per thread per step on the
//         softmax's side of the ping-pong, for a value the gemm overwrites anyway; a causal or
//         ragged mask that holds for the whole tile is such a clear on most steps.
// Before: pipeline_planning (statement indices and stages are planned after the fusion).
#include "ops/op_util.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

// The gemm with `key` set to `value` (and the other clear attribute dropped).
Stmt gemm_with(const TileOpNode& g, const char* key, AttrValue value) {
  AttrMap attrs;
  for (const auto& kv : g.attrs)
    if (kv.first != "clear_accum" && kv.first != "clear_if") attrs.push_back(kv);
  attrs.emplace_back(key, std::move(value));
  return make_tile_op(g.op, g.args, attrs, g.loc);
}

class FuseClearIntoGemm : public IRMutator {
 public:
  explicit FuseClearIntoGemm(bool conditional) : conditional_(conditional) {}

 protected:
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    Stmt visited = IRMutator::mutate_Seq(s, op);
    auto* q = visited.as<SeqNode>();
    if (!q) return visited;
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < q->stmts.size(); ++i) {
      auto* g = i + 1 < q->stmts.size() ? q->stmts[i + 1].as<TileOpNode>() : nullptr;
      const bool plain_gemm = g && g->op == "gemm" && !attr_bool(*g, "clear_accum") && !attr_expr(*g, "clear_if") &&
                              ops::region_is_full(region_arg(*g, 2));
      const BufferNode* c = plain_gemm ? region_arg(*g, 2).buffer.get() : nullptr;
      if (c && back::cleared_fragment(q->stmts[i]) == c) {
        out.push_back(gemm_with(*g, "clear_accum", true));
        ++i;
        changed = true;
        continue;
      }
      auto* branch = q->stmts[i].as<IfNode>();
      if (c && conditional_ && branch && back::cleared_fragment(back::sole_statement(branch->then_case)) == c &&
          !back::reads_memory(branch->cond)) {
        // With an else branch the if stays, its then side now saying only that C's old value is
        // dead (both sides define C: the compiler keeps no registers alive across the step).
        if (branch->else_case) {
          Stmt dead = make_tile_op("fill", {region_arg(*g, 2), call(c->dtype, "tl.unspecified", {}, branch->loc)}, {},
                                   branch->loc);
          out.push_back(if_then_else(branch->cond, dead, branch->else_case, branch->loc));
        }
        out.push_back(gemm_with(*g, "clear_if", branch->cond));
        ++i;
        changed = true;
        continue;
      }
      out.push_back(q->stmts[i]);
    }
    return changed ? seq(out, s->loc) : visited;
  }

 private:
  bool conditional_;
};

}  // namespace

Pass fuse_clear_into_gemm_pass() {
  return {"fuse_clear_into_gemm", [](const PrimFunc& f, PassContext& ctx) {
            if (!ctx.get_bool("tilec.fuse_clear_into_gemm")) return f;
            // The run-time form needs the wgmma path (scale-d in a register); mma.sync takes
            // the clear as a template argument.
            return with_body(f, FuseClearIntoGemm(ctx.target().has_wgmma()).mutate(f->body));
          }};
}

}  // namespace tilec::passes
