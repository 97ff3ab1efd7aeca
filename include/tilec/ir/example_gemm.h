// The GEMM + ReLU kernel of seeds/000 section 1 (TileLang's quickstart), built through
// ir::Builder. Shared by the C++ example (examples/cpp/gemm_builder.cc), the tilec CLI and
// the tests, so they all show the same kernel:
//
//   with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
//       A_shared = T.alloc_shared((block_M, block_K), in_dtype)
//       B_shared = T.alloc_shared((block_K, block_N), in_dtype)
//       C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
//       T.clear(C_local)
//       for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
//           T.copy(A[by * block_M, ko * block_K], A_shared)
//           T.copy(B[ko * block_K, bx * block_N], B_shared)
//           T.gemm(A_shared, B_shared, C_local)
//       for i, j in T.Parallel(block_M, block_N):          # only when relu
//           C_local[i, j] = T.max(C_local[i, j], 0)
//       T.copy(C_local, C[by * block_M, bx * block_N])
#pragma once

#include <cstdint>
#include <string>

#include "tilec/ir/stmt.h"

namespace tilec::ir {

struct GemmExampleConfig {
  std::string name = "gemm_relu";
  int64_t M = 1024, N = 1024, K = 1024;
  int64_t block_M = 128, block_N = 128, block_K = 32;
  int64_t threads = 128;
  int num_stages = 3;
  DataType in_dtype = DataType::Float(16);     // A, B and C
  DataType accum_dtype = DataType::Float(32);  // C_local
  bool relu = true;
};

// C[M, N] = relu(A[M, K] @ B[K, N]).
PrimFunc build_example_gemm(const GemmExampleConfig& config = {});

}  // namespace tilec::ir
