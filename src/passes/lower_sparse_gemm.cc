// Pass lower_sparse_gemm: T.gemm_sp (2:4 structured-sparse A) becomes a dense T.gemm on A
// rebuilt in shared memory. Correct at dense speed: no sparse tensor-core instruction
// (mma.sp / wgmma.sp) is used yet.
//
// Input:  tile IR after inject_pipeline, with T.gemm_sp(A_sparse (M, K/2), E (M, K/e), B, C)
//         tile ops whose arguments passed check_gemm_sp (src/ir/gemm_sp_checks.cc; the format
//         is src/ir/gemm_sp_format.h).
// Output: no gemm_sp. Each becomes
//             Allocate(A_dense: shared.dyn (M, K), A's dtype,
//               for m, k in T.Parallel(M, K):
//                 bits = (E[m, k / e] >> 4 * ((k / 4) % (e / 4))) & 15   (the group's 4 bits)
//                 A_dense[m, k] = k % 4 == bits & 3  ? A_sparse[m, 2 * (k / 4)]
//                               : k % 4 == bits >> 2 ? A_sparse[m, 2 * (k / 4) + 1] : 0
//               T.gemm(A_dense, B, C, transpose_B, policy, clear_accum, k_pack, wg_wait))
//         One dense element per parallel iteration, so the loop has A_dense's shape and layout
//         inference treats it like any T.Parallel writing a shared tile; the gemm chooses
//         A_dense's (swizzled) layout. insert_syncs puts a barrier between the loop's writes
//         and the gemm's reads, and between the gemm's reads and the next iteration's writes;
//         fence_proxy_async adds the fence a wgmma reader needs.
// Runs after: inject_pipeline (A_dense is written and read in one iteration: one version;
//         the pipeline versions A_sparse and E, whose readers it knew from gemm_sp's access
//         regions, src/ops/gemm_sp.cc). Before: layout_inference.
#include "ir/gemm_sp_format.h"
#include "layout/digit_form.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

// region[row, col] for a region whose leading extents are 1 (check_gemm_sp).
Expr load_at(const BufferRegion& r, const Expr& row, const Expr& col, const SourceLoc& loc) {
  std::vector<Expr> index;
  const size_t n = r.region.size();
  for (size_t i = 0; i + 2 < n; ++i) index.push_back(r.region[i].min);
  index.push_back(layout::idx_add(r.region[n - 2].min, row));
  index.push_back(layout::idx_add(r.region[n - 1].min, col));
  return buffer_load(r.buffer, std::move(index), loc);
}

Expr bit_call(const char* op, const Expr& a, int64_t b, const SourceLoc& loc) {
  return call(DataType::Int(32), op, {a, int_imm(b, DataType::Int(32), loc)}, loc);
}

// The T.Parallel nest that writes dense A (M, K) from A_sparse and E.
Stmt decompress_loop(const BufferRegion& a_sparse, const BufferRegion& meta, const Buffer& dense, int64_t rows,
                     int64_t k, const SourceLoc& loc) {
  const DataType i32 = DataType::Int(32);
  const int64_t groups_per_meta = sparse24::groups_per_meta(meta.buffer->dtype);
  const int64_t e_factor = sparse24::dense_k_per_meta(meta.buffer->dtype);
  Var m = make_var("sp_m", i32, loc), kk = make_var("sp_k", i32, loc);
  Expr group = floordiv(kk, sparse24::kGroup);
  Expr word = cast(i32, load_at(meta, m, floordiv(kk, e_factor), loc), loc);
  Expr shift = floormod(group, groups_per_meta) * sparse24::kBitsPerGroup;
  Expr bits = bit_call("tl.bitwise_and", call(i32, "tl.shift_right", {word, shift}, loc), 15, loc);
  Expr idx0 = bit_call("tl.bitwise_and", bits, 3, loc);
  Expr idx1 = bit_call("tl.shift_right", bits, 2, loc);
  Expr pos = floormod(kk, sparse24::kGroup);
  Expr first = load_at(a_sparse, m, group * sparse24::kKept, loc);
  Expr second = load_at(a_sparse, m, group * sparse24::kKept + 1, loc);
  Expr value = select(binary(NodeKind::kEQ, pos, idx0, loc), first,
                      select(binary(NodeKind::kEQ, pos, idx1, loc), second, back::zero_of(dense->dtype), loc), loc);
  Stmt store = buffer_store(dense, {m, kk}, value, loc);
  Stmt inner = make_for(kk, int_imm(0, i32, loc), int_imm(k, i32, loc), ForKind::kParallel, store, loc);
  return make_for(m, int_imm(0, i32, loc), int_imm(rows, i32, loc), ForKind::kParallel, inner, loc);
}

class SparseGemmLowerer : public IRMutator {
 protected:
  Stmt mutate_TileOp(const Stmt& s, const TileOpNode* op) override {
    if (op->op != "gemm_sp") return s;
    TILEC_ICHECK(op->args.size() == 4) << "gemm_sp takes A_sparse, E, B, C";
    const BufferRegion& a_sparse = region_arg(*op, 0);
    const BufferRegion& meta = region_arg(*op, 1);
    const BufferRegion& b = region_arg(*op, 2);
    const BufferRegion& c = region_arg(*op, 3);
    auto a_shape = sparse24::const_matrix_extents(a_sparse);
    TILEC_ICHECK(a_shape.has_value()) << "check_gemm_sp lets only constant 2-D A_sparse tiles through";
    const int64_t rows = a_shape->first, k = a_shape->second * sparse24::kGroup / sparse24::kKept;

    Buffer dense = make_buffer(a_sparse.buffer->name + "_dense", {int_imm(rows), int_imm(k)},
                               a_sparse.buffer->dtype, Scope::kSharedDyn, {}, op->loc);
    AttrMap gemm_attrs;
    for (const char* key : {"transpose_B", "policy", "clear_accum", "k_pack", "wg_wait"})
      if (const AttrValue* v = find_attr(op->attrs, key)) gemm_attrs.emplace_back(key, *v);
    Stmt gemm = make_tile_op("gemm", {BufferRegion::full(dense), b, c}, std::move(gemm_attrs), op->loc);
    Stmt body = seq({decompress_loop(a_sparse, meta, dense, rows, k, op->loc), gemm}, op->loc);
    return allocate(dense, body, op->loc);
  }
};

}  // namespace

Pass lower_sparse_gemm_pass() {
  return {"lower_sparse_gemm", [](const PrimFunc& f, PassContext&) {
            Stmt body = SparseGemmLowerer().mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
