// The 2:4 structured-sparse format of T.gemm_sp, shared by its argument check
// (src/ir/gemm_sp_checks.cc), the CUDA rewrite (src/passes/lower_sparse_gemm.cc) and the CPU
// interpreter (src/target/cpu/tile_ops.cc). TileLang's torch_compress writes it:
//   - along K, each group of 4 consecutive dense elements keeps 2 values, stored in order as
//     A_sparse[m, 2g] and A_sparse[m, 2g + 1];
//   - group g of row m is described by 4 bits, idx0 | idx1 << 2: the positions (0-3) of the
//     two kept values in the group;
//   - a metadata element of b bits packs b / 4 consecutive groups, little-endian: group g
//     sits in E[m, g / (b / 4)] at bit 4 * (g % (b / 4)).
// So one metadata element covers b dense K elements (TileLang's get_e_factor).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "tilec/ir/buffer.h"
#include "tilec/ir/type.h"

namespace tilec::ir::sparse24 {

constexpr int64_t kGroup = 4;         // dense K elements per group
constexpr int64_t kKept = 2;          // values kept per group
constexpr int64_t kBitsPerGroup = 4;  // metadata bits per group

inline int64_t groups_per_meta(DataType e) { return e.bits() / kBitsPerGroup; }
inline int64_t dense_k_per_meta(DataType e) { return groups_per_meta(e) * kGroup; }

// The value dtypes that 2:4 sparsity applies to (TileLang's GROUP_CONFIG minus float32, whose
// 1:2 format tilec does not support).
inline bool is_supported_value_dtype(DataType t) {
  if (t.lanes() != 1) return false;
  if (t.bits() == 16) return t.is_float();  // float16, bfloat16
  if (t.bits() == 8) return t.is_integer() || t.is_float();  // int8, uint8, float8_e4m3 / e5m2
  return false;
}
inline bool is_supported_meta_dtype(DataType t) {
  return t.lanes() == 1 && t.is_integer() && (t.bits() == 8 || t.bits() == 16 || t.bits() == 32);
}

// (rows, cols) of a region whose last two extents are constants and whose other extents are 1
// (a pipelined tile's version dimension); nullopt otherwise.
inline std::optional<std::pair<int64_t, int64_t>> const_matrix_extents(const BufferRegion& r) {
  const size_t n = r.region.size();
  if (n < 2) return std::nullopt;
  for (size_t i = 0; i + 2 < n; ++i)
    if (!is_one(r.region[i].extent)) return std::nullopt;
  const int64_t* rows = as_const_int(r.region[n - 2].extent);
  const int64_t* cols = as_const_int(r.region[n - 1].extent);
  if (!rows || !cols) return std::nullopt;
  return std::make_pair(*rows, *cols);
}

}  // namespace tilec::ir::sparse24
