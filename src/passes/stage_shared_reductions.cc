// Pass stage_shared_reductions: T.reduce_* whose input or output is in shared memory
// (TileLang reduces shared tiles too) reduces register fragments in between.
//
// Input:  tile IR before pipeline_planning (reduce_max / min / sum / abssum / absmax tile ops).
// Output: every reduce with a shared input or output becomes
//             Allocate(src_frag: fragment, the input region's extents,      (shared input)
//             Allocate(dst_frag: fragment, the output region's extents,     (shared output)
//               T.copy(src, src_frag);
//               T.copy(dst, dst_frag);                    (shared output and clear=False)
//               T.reduce_*(src_frag, dst_frag, dim, clear);
//               T.copy(dst_frag, dst)))                   (shared output)
//         The fragments keep the regions' rank, so `dim` means what it meant; layout
//         inference gives them layouts like any fragment; insert_syncs orders the copies
//         against other threads' writes and reads of the shared tiles. Reductions of
//         fragments (and of other scopes: their own error) are unchanged, so programs that
//         compiled before keep their generated code byte for byte.
// Runs before: pipeline_planning, warp_specialize and inject_pipeline. A pipelined shared tile
//   gets a leading slot dimension there; staged here first, the reduction reads a fragment of
//   the region's own rank and only the copy into it sees the versioned tile. The staging copies
//   are ordinary T.copy statements of the loop body (later-stage readers of the tile).
#include <string>

#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

// A fragment shaped like the region (same rank, the region's extents).
Buffer fragment_for(const BufferRegion& r, const std::string& suffix, const SourceLoc& loc) {
  std::vector<Expr> shape;
  shape.reserve(r.region.size());
  for (const Range& range : r.region) shape.push_back(range.extent);
  return make_buffer(r.buffer->name + suffix, std::move(shape), r.buffer->dtype, Scope::kFragment, {}, loc);
}

class SharedReductionStager : public IRMutator {
 protected:
  Stmt mutate_TileOp(const Stmt& s, const TileOpNode* op) override {
    if (!op->op.starts_with("reduce_") || op->args.size() < 2) return s;  // the T.reduce_* ops
    auto* src = std::get_if<BufferRegion>(&op->args[0]);
    auto* dst = std::get_if<BufferRegion>(&op->args[1]);
    if (!src || !dst) return s;
    const bool src_shared = is_shared(src->buffer->scope), dst_shared = is_shared(dst->buffer->scope);
    if (!src_shared && !dst_shared) return s;

    auto reduce = std::make_shared<TileOpNode>(*op);
    std::vector<Stmt> body;
    std::vector<Buffer> temps;
    if (src_shared) {
      Buffer f = fragment_for(*src, "_frag", op->loc);
      body.push_back(make_tile_op("copy", {*src, BufferRegion::full(f)}, {}, op->loc));
      reduce->args[0] = BufferRegion::full(f);
      temps.push_back(f);
    }
    Stmt write_back;
    if (dst_shared) {
      Buffer f = fragment_for(*dst, "_frag", op->loc);
      if (!attr_bool(*op, "clear", true))  // the reduction combines with the output's values
        body.push_back(make_tile_op("copy", {*dst, BufferRegion::full(f)}, {}, op->loc));
      reduce->args[1] = BufferRegion::full(f);
      write_back = make_tile_op("copy", {BufferRegion::full(f), *dst}, {}, op->loc);
      temps.push_back(f);
    }
    body.push_back(Stmt(std::shared_ptr<const TileOpNode>(std::move(reduce))));
    if (write_back.defined()) body.push_back(write_back);
    return allocate_all(temps, seq(std::move(body), op->loc), op->loc);
  }
};

}  // namespace

Pass stage_shared_reductions_pass() {
  return {"stage_shared_reductions", [](const PrimFunc& f, PassContext&) {
            Stmt body = SharedReductionStager().mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
