// Pass: rasterize_blocks — T.use_swizzle(panel_size=P): reorder thread blocks for L2 reuse.
//
// Input:  a PrimFunc whose kernel body may contain Annotate{key="use_swizzle", value=P}
//         (P > 0, an int) anywhere inside a 2-D KernelLaunch (grid (gx, gy)).
// Output: the annotation is removed; the kernel gets fresh hardware block variables and
//         the user's (bx, by) become Lets computed from them, so every later pass and the
//         code generator see ordinary variables.
// Runs:   before layout inference and lowering (it only renames block indices).
//
// Why: a GEMM's consecutive blocks (launched in blockIdx.x-major order) sweep a whole
// row of C tiles, so B streams through L2 once per row of tiles. Launching blocks in
// panels of P tile-rows, column by column, keeps P rows of A and a few columns of B hot.
//
// Mapping (linear id L = hw_by * gx + hw_bx, panel height P, rows gy):
//   panel     = L / (P * gx),  offset = L % (P * gx)
//   height    = min(P, gy - panel * P)           (the last panel may be shorter)
//   by        = panel * P + offset % height
//   column    = offset / height
//   bx        = column, or gx - 1 - column on odd panels (a serpentine keeps the B
//               columns just used hot when the next panel starts)
// This is a bijection of [0, gx) x [0, gy) onto itself for every gx, gy, P >= 1.
#include <string>

#include "tilec/ir/mutator.h"
#include "tilec/passes/pass.h"

namespace tilec::passes {

namespace {

using namespace tilec::ir;

class RasterizeBlocks : public IRMutator {
 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    const KernelLaunchNode* saved = kernel_;
    int64_t saved_panel = panel_;
    kernel_ = op;
    panel_ = 0;
    Stmt body = mutate(op->body);
    kernel_ = saved;
    int64_t panel = panel_;
    panel_ = saved_panel;
    if (panel == 0) {
      if (body.same_as(op->body)) return s;
      auto n = std::make_shared<KernelLaunchNode>(*op);
      n->body = body;
      return Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
    }
    TILEC_USER_CHECK(op->grid.size() == 2, op->loc,
                     "T.use_swizzle reorders a 2-D grid: write T.Kernel(gx, gy, threads=...)")
        << "T.use_swizzle needs a kernel with a 2-D grid, this one has " << op->grid.size() << " dimension(s)";
    auto n = std::make_shared<KernelLaunchNode>(*op);
    Var hw_bx = make_var(op->block_vars[0]->name + "_hw", op->block_vars[0]->dtype, op->loc);
    Var hw_by = make_var(op->block_vars[1]->name + "_hw", op->block_vars[1]->dtype, op->loc);
    n->block_vars = {hw_bx, hw_by};
    DataType t = hw_bx->dtype;
    Expr gx = cast(t, op->grid[0]);
    Expr gy = cast(t, op->grid[1]);
    Expr p = int_imm(panel, t);
    Expr linear = Expr(hw_by) * gx + hw_bx;
    Expr panel_idx = floordiv(linear, p * gx);
    Expr offset = floormod(linear, p * gx);
    Expr height = min(p, gy - panel_idx * p);
    Expr column = floordiv(offset, height);
    Expr by = panel_idx * p + floormod(offset, height);
    Expr odd = binary(NodeKind::kEQ, floormod(panel_idx, int64_t{2}), int_imm(1, t));
    Expr bx = select(odd, gx - 1 - column, column);
    // The mapping is a bijection onto the grid, but bounds analysis cannot see that; the
    // clamps (identities, a few instructions per block) let it prove by < gy and bx < gx,
    // so copies of full tiles need no bounds predicates.
    by = max(min(by, gy - 1), int_imm(0, t));
    bx = max(min(bx, gx - 1), int_imm(0, t));
    n->body = let(op->block_vars[1], by, let(op->block_vars[0], bx, body, op->loc), op->loc);
    return Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
  }

  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key != "use_swizzle") return IRMutator::mutate_Annotate(s, op);
    TILEC_USER_CHECK(kernel_ != nullptr, op->loc, "call T.use_swizzle inside `with T.Kernel(...)`")
        << "T.use_swizzle outside a kernel";
    const int64_t* panel = std::get_if<int64_t>(&op->value);
    TILEC_USER_CHECK(panel && *panel > 0, op->loc, "write T.use_swizzle(panel_size=8), a positive constant")
        << "T.use_swizzle needs a positive integer panel size";
    TILEC_USER_CHECK(panel_ == 0 || panel_ == *panel, op->loc, "use one T.use_swizzle per kernel")
        << "conflicting T.use_swizzle panel sizes " << panel_ << " and " << *panel;
    panel_ = *panel;
    return mutate(op->body);
  }

 private:
  const KernelLaunchNode* kernel_ = nullptr;
  int64_t panel_ = 0;
};

}  // namespace

Pass rasterize_blocks_pass() {
  return {"rasterize_blocks", [](const PrimFunc& f, PassContext&) {
            return with_body(f, RasterizeBlocks().mutate(f->body));
          }};
}

}  // namespace tilec::passes
