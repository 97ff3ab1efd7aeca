// Pass fuse_clear_into_gemm: `T.clear(C); T.gemm(A, B, C)` becomes `T.gemm(A, B, C,
// clear_accum=True)`.
//
// Input:  verified tile IR.
// Output: in every statement list, a T.fill of a whole fragment with zero immediately followed
//         by a T.gemm accumulating into that whole fragment (clear_accum False) is replaced by
//         the gemm with clear_accum=True: the instruction's first k-step writes C instead of
//         adding to it (wgmma scale-d = 0, or the mma path's cleared accumulator), and the
//         per-thread zeroing loop disappears.
// When:   config tilec.fuse_clear_into_gemm (default on); the fill's value is the constant 0
//         and its region the whole buffer, which the gemm's C region is too; the two are
//         adjacent in one list (nothing in between can read or write C).
// Why:    attention clears S = Q K^T every step: 64 register moves per thread per step on the
//         softmax's side of the ping-pong, for a value the gemm overwrites anyway.
// Before: pipeline_planning (statement indices and stages are planned after the fusion).
#include "ops/op_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

bool is_constant_zero(const Expr& e) {
  if (is_zero(e)) return true;
  if (auto* f = e.as<FloatImmNode>()) return f->value == 0.0;
  if (auto* c = e.as<CastNode>()) return is_constant_zero(c->value);
  return false;
}

// The fragment a `T.fill(F, 0)` of a whole fragment clears, else null.
const BufferNode* cleared_fragment(const Stmt& s) {
  auto* t = s.as<TileOpNode>();
  if (!t || t->op != "fill" || t->args.size() != 2) return nullptr;
  auto* r = std::get_if<BufferRegion>(&t->args[0]);
  auto* v = std::get_if<Expr>(&t->args[1]);
  if (!r || !v || r->buffer->scope != Scope::kFragment || !ops::region_is_full(*r) || !is_constant_zero(*v)) return nullptr;
  return r->buffer.get();
}

class FuseClearIntoGemm : public IRMutator {
 protected:
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    Stmt visited = IRMutator::mutate_Seq(s, op);
    auto* q = visited.as<SeqNode>();
    if (!q) return visited;
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < q->stmts.size(); ++i) {
      const BufferNode* c = cleared_fragment(q->stmts[i]);
      auto* g = i + 1 < q->stmts.size() ? q->stmts[i + 1].as<TileOpNode>() : nullptr;
      if (c && g && g->op == "gemm" && !attr_bool(*g, "clear_accum") && region_arg(*g, 2).buffer.get() == c &&
          ops::region_is_full(region_arg(*g, 2))) {
        AttrMap attrs;
        for (const auto& kv : g->attrs)
          if (kv.first != "clear_accum") attrs.push_back(kv);
        attrs.emplace_back("clear_accum", true);
        out.push_back(make_tile_op(g->op, g->args, attrs, g->loc));
        ++i;
        changed = true;
        continue;
      }
      out.push_back(q->stmts[i]);
    }
    return changed ? seq(out, s->loc) : visited;
  }
};

}  // namespace

Pass fuse_clear_into_gemm_pass() {
  return {"fuse_clear_into_gemm", [](const PrimFunc& f, PassContext& ctx) {
            if (!ctx.get_bool("tilec.fuse_clear_into_gemm")) return f;
            return with_body(f, FuseClearIntoGemm().mutate(f->body));
          }};
}

}  // namespace tilec::passes
