// T.gemm_sp on CUDA, before lower_sparse_gemm rewrites it: what it reads and writes, so that
// the passes that run earlier (pipeline planning and injection: which copies feed it, which
// tiles need a version per stage) see it like a gemm. It is never inferred or lowered itself:
// lower_sparse_gemm (src/passes/lower_sparse_gemm.cc) replaces it by a decompression loop and
// a T.gemm before layout inference.
#include "tilec/ir/tile_op.h"
#include "tilec/ops/op_behaviour.h"

namespace tilec::ops {

using namespace ir;

namespace {

AccessRegions gemm_sp_access(const TileOpNode& op) {
  AccessRegions r;
  r.reads = {region_arg(op, 0), region_arg(op, 1), region_arg(op, 2)};
  if (!attr_bool(op, "clear_accum")) r.reads.push_back(region_arg(op, 3));
  r.writes = {region_arg(op, 3)};
  return r;
}

Stmt gemm_sp_lower(const TileOpNode& op, LowerContext&) {
  TILEC_ICHECK(false) << "T.gemm_sp reached lower_tile_ops: the lower_sparse_gemm pass should have replaced it ("
                      << describe_op(op) << ")";
  return Stmt();
}

}  // namespace

void register_gemm_sp_behaviours() {
  register_op_behaviour({"gemm_sp", "decompressed to a dense gemm",
                         [](const target::Target& t) { return t.kind == "cuda"; }, 0, gemm_sp_access, nullptr,
                         gemm_sp_lower});
}

}  // namespace tilec::ops
