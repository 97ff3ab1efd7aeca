// T.gemm_sp's argument check, run when the tile op is made (so every target reports a bad
// call at the user's line with the same words). The format is gemm_sp_format.h.
//
//   A_sparse (M, K / 2), E (M, K / e) with e = E's bits (get_e_factor for 2:4), B (K, N)
//   ((N, K) with transpose_B), C (M, N); leading dimensions of extent 1 are allowed (a
//   pipelined tile's version), the last two extents must be constants.
//   A: float16, bfloat16, int8, uint8, float8 (2:4). E: 8, 16 or 32-bit integers.
//   A_sparse and E in shared memory. Not supported (a clear error, not a wrong answer):
//   float32 A (TileLang's 1:2 format), transpose_A, transpose_E.
#include <string>

#include "ir/gemm_sp_format.h"
#include "ir/tile_op_checks.h"
#include "tilec/support/diag.h"

namespace tilec::ir {

namespace {

std::pair<int64_t, int64_t> matrix_of(const BufferRegion& r, const char* role, const char* form,
                                      const SourceLoc& loc) {
  auto m = sparse24::const_matrix_extents(r);
  TILEC_USER_CHECK(m.has_value(), loc,
                   std::string("pass ") + role + " as a 2-D tile " + form + " of constant extents")
      << "T.gemm_sp: " << role << " '" << r.buffer->name << "' is not a 2-D tile of constant extents";
  return *m;
}

}  // namespace

void check_gemm_sp(std::vector<TileArg>& args, const AttrMap& attrs, const SourceLoc& loc) {
  const auto& A = std::get<BufferRegion>(args[0]);
  const auto& E = std::get<BufferRegion>(args[1]);
  const auto& B = std::get<BufferRegion>(args[2]);
  const auto& C = std::get<BufferRegion>(args[3]);
  const DataType a_t = A.buffer->dtype, e_t = E.buffer->dtype;

  TILEC_USER_CHECK(!attr_is_true(attrs, "transpose_A"), loc, "store A_sparse as (M, K/2) and E as (M, K/e_factor)")
      << "T.gemm_sp: transpose_A=True is not supported by tilec yet";
  TILEC_USER_CHECK(!attr_is_true(attrs, "transpose_E"), loc, "store E as (M, K/e_factor), as torch_compress writes it")
      << "T.gemm_sp: transpose_E=True is not supported by tilec yet";
  TILEC_USER_CHECK(!(a_t.is_float() && a_t.bits() == 32), loc,
                   "use float16 / bfloat16 (or int8 / float8) A with 2:4 sparsity, or a dense T.gemm")
      << "T.gemm_sp: float32 A (1:2 sparsity) is not supported by tilec; only 2:4 sparse A of 16-bit or 8-bit "
         "types is";
  TILEC_USER_CHECK(sparse24::is_supported_value_dtype(a_t), loc,
                   "A_sparse must be float16, bfloat16, int8, uint8, float8_e4m3 or float8_e5m2")
      << "T.gemm_sp: A_sparse '" << A.buffer->name << "' has dtype " << a_t.str()
      << ", which 2:4 sparsity does not apply to";
  TILEC_USER_CHECK(sparse24::is_supported_meta_dtype(e_t), loc, "E holds the metadata as int8, int16 or int32")
      << "T.gemm_sp: the metadata E '" << E.buffer->name << "' has dtype " << e_t.str()
      << ", not an 8, 16 or 32-bit integer";
  for (const BufferRegion* r : {&A, &E})
    TILEC_USER_CHECK(is_shared(r->buffer->scope), loc, "copy it into a T.alloc_shared tile first")
        << "T.gemm_sp reads A_sparse and E from shared memory; '" << r->buffer->name << "' is not shared";

  const bool tb = attr_is_true(attrs, "transpose_B");
  auto [am, ak] = matrix_of(A, "A_sparse", "(M, K/2)", loc);
  auto [em, ek] = matrix_of(E, "E", "(M, K/e_factor)", loc);
  auto [b0, b1] = matrix_of(B, "B", tb ? "(N, K)" : "(K, N)", loc);
  auto [cm, cn] = matrix_of(C, "C", "(M, N)", loc);
  const int64_t k = tb ? b1 : b0, n = tb ? b0 : b1;
  const int64_t e_factor = sparse24::dense_k_per_meta(e_t);
  const std::string b_form = tb ? "(N, K) with transpose_B=True" : "(K, N)";

  TILEC_USER_CHECK(k % e_factor == 0, loc,
                   "K must be a multiple of " + std::to_string(e_factor) + " (one " + e_t.str() +
                       " of metadata describes that many elements of A)")
      << "T.gemm_sp: B '" << B.buffer->name << "' is " << b_form << " with K = " << k << ", not a multiple of "
      << e_factor;
  TILEC_USER_CHECK(ak * sparse24::kGroup == k * sparse24::kKept, loc,
                   "A_sparse holds the 2 kept values of every 4 elements: (M, K/2)")
      << "T.gemm_sp: A_sparse '" << A.buffer->name << "' has K/2 = " << ak << " columns but B '"
      << B.buffer->name << "' has K = " << k << " (expected " << k / 2 << " columns)";
  TILEC_USER_CHECK(ek * e_factor == k, loc,
                   "E holds one " + e_t.str() + " per " + std::to_string(e_factor) +
                       " elements of A along K (get_e_factor): (M, K/" + std::to_string(e_factor) + ")")
      << "T.gemm_sp: E '" << E.buffer->name << "' has " << ek << " columns but K = " << k << " needs "
      << k / e_factor;
  TILEC_USER_CHECK(am == cm && em == cm, loc, "A_sparse, E and C have one row per row of the result (M)")
      << "T.gemm_sp: the M extents differ: A_sparse '" << A.buffer->name << "' has " << am << ", E '"
      << E.buffer->name << "' has " << em << ", C '" << C.buffer->name << "' has " << cm;
  TILEC_USER_CHECK(n == cn, loc, "B is " + b_form + " and C is (M, N)")
      << "T.gemm_sp: the N extents differ: B '" << B.buffer->name << "' has N = " << n << " but C '"
      << C.buffer->name << "' has N = " << cn;
}

}  // namespace tilec::ir
