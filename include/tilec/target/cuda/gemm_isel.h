// Instruction selection for T.gemm on CUDA targets (DESIGN.md section 5).
//
// The predicate chain, in order:
//   1. an explicit `instruction=` must succeed or fail with a UserError that says why;
//   2. tcgen05 (sm_100): a slot for a later issue, never chosen yet;
//   2b. wgmma (sm_90a; gemm_isel_sm90.cc): M a multiple of 64 per warpgroup, whole
//      warpgroups, f16/bf16 either major, tf32/fp8/int8 K-major only, A from shared
//      memory (descriptor) or a 16-bit register fragment; not with tl.disable_wgmma;
//   3. mma.sync (sm_80+) when the dtypes have an mma shape and M, N, K fit it and a warp
//      partition exists; A may also be a register fragment (16-bit, not transposed, in
//      the accumulator layout over M x K with WARP_N = 1: tl::gemm_rs), e.g. the cast
//      scores of FlashAttention feeding P @ V;
//   4. the FMA fallback on CUDA cores (any shape, any dtype pair A == B).
// Warp partition policies (TileLang's GemmWarpPolicy): Square, FullRow, FullCol, with 16
// rows x 8 columns per warp as the granularity of mma.sync.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tilec/ir/buffer.h"
#include "tilec/support/diag.h"
#include "tilec/target/target.h"

namespace tilec::cuda {

enum class GemmInst : uint8_t { kMma, kFma, kWgmma };
const char* gemm_inst_name(GemmInst inst);  // "mma", "fma", "wgmma"

// The mma.sync operand kind; the values are the device library's tl::kMma* constants
// (src/device/cuda/gemm_sm80.cuh), printed into the template arguments of tl::gemm_ss.
enum class MmaKind : int { kF16 = 0, kBF16 = 1, kTF32 = 2, kS8 = 3, kU8 = 4 };
int mma_k(MmaKind kind);          // 16, 16, 8, 32, 32
const char* mma_kind_constant(MmaKind kind);  // "tl::kMmaBF16", ...

enum class WarpPolicy : uint8_t { kSquare, kFullRow, kFullCol };
// Accepts "Square", "FullRow", "FullCol" (any case, with or without "GemmWarpPolicy.").
std::optional<WarpPolicy> parse_warp_policy(const std::string& name);
const char* warp_policy_name(WarpPolicy p);

// Splits num_warps over an M x N tile: m_warp * n_warp == num_warps, M % (16 m_warp) == 0,
// N % (n_per_warp n_warp) == 0. FullRow gives M as many warps as it can take, FullCol N;
// Square picks the split whose per-warp tile ratio is closest to M / N (TileLang's rule).
// nullopt when no split satisfies the divisibility rules.
std::optional<std::pair<int, int>> compute_warp_partition(WarpPolicy policy, int64_t m, int64_t n, int num_warps,
                                                          int n_per_warp = 8);

// What selection needs to know about one T.gemm.
struct GemmQuery {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  ir::DataType a_dtype, b_dtype, c_dtype;
  ir::Scope a_scope = ir::Scope::kSharedDyn, b_scope = ir::Scope::kSharedDyn, c_scope = ir::Scope::kFragment;
  int64_t lda = 0, ldb = 0;     // elements per stored row of the A / B shared buffers (lda: A shared only)
  int num_threads = 128;        // threads of the block that run the gemm
  std::string instruction;      // "" = automatic; "mma", "fma", "wgmma", "tcgen05"
  WarpPolicy policy = WarpPolicy::kSquare;
  bool allow_wgmma = true;      // false under the pass config tl.disable_wgmma
  std::string wgmma_partition;  // tilec.wgmma_partition: "" (the policy), "FullRow", "FullCol" for Square
  SourceLoc loc;                // the T.gemm line, for errors
};

struct GemmPlan {
  GemmInst inst = GemmInst::kFma;
  MmaKind kind = MmaKind::kF16;  // mma only
  int warp_m = 1, warp_n = 1;    // mma: the warp grid (warp w = wm + wn * warp_m); warp_n == 1 when a_in_registers
  bool a_in_registers = false;   // mma: A is a fragment (tl::gemm_rs), not shared (tl::gemm_ss)
  int thread_m = 1, thread_n = 1;  // fma: the thread grid (thread t = tm * thread_n + tn)
  // wgmma: the warpgroup grid (group g = wm + wn * wg_m), the N of one instruction, and the
  // operand type id (tl::kWgmma* in src/device/cuda/gemm_sm90.cuh).
  int wg_m = 1, wg_n = 1, atom_n = 8;
  int wgmma_kind = 0;
};

// The wgmma candidate of the chain (gemm_isel_sm90.cc): fills `plan` or explains in `why`.
bool accept_wgmma(const GemmQuery& q, const target::Target& t, GemmPlan* plan, std::string* why);
// The K of one wgmma for an operand type id: 16 (f16/bf16), 8 (tf32), 32 (fp8, int8).
int wgmma_k(int kind);
// "tl::kWgmmaBF16", ...: the device constant of an operand type id.
const char* wgmma_kind_constant(int kind);

// Raises UserError (naming T.gemm and its line) when the gemm cannot be lowered.
GemmPlan select_gemm(const GemmQuery& q, const target::Target& target);

// The chain as select_gemm walks it, for explain(): each candidate tried, in order, up to
// and including the one chosen; `why` says why a rejected one could not be used.
struct GemmCandidate {
  std::string name;  // "tcgen05", "wgmma", "mma", "fma"
  bool chosen = false;
  std::string why;
};
std::vector<GemmCandidate> gemm_candidates(const GemmQuery& q, const target::Target& target);

}  // namespace tilec::cuda
