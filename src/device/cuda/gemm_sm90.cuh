// Block-level GEMM on the Hopper tensor cores: warpgroup MMA (wgmma.mma_async, sm_90a).
//
//   tl::wgmma_gemm_ss<M, N, K, WG_M, WG_N, TRANS_A, TRANS_B, CLEAR, TileA, TileB, KIND,
//                     ATOM_N, WAIT>(A, a_row0, a_col0, B, b_row0, b_col0, C, thread[, clear_now])
//   tl::wgmma_gemm_rs<M, N, K, WG_M, 1, TRANS_B, CLEAR, TileB, KIND, ATOM_N, WAIT>(
//                     A_frag, B, b_row0, b_col0, C, thread[, clear_now])
//
//   C[M x N] (+)= op(A) * op(B), A stored K x M when TRANS_A (M-major) else M x K (K-major),
//   B stored N x K when TRANS_B (K-major) else K x N (N-major), both read at (row0 + r,
//   col0 + c) of a shared tile tl::WgTile<ROWS, COLS, SWIZZLE_BITS> whose first element is
//   A / B (layout: gemm_sm90_layout.cuh, part 1). C is the calling thread's accumulator
//   fragment (gemm_sm90_layout.cuh, part 2); thread is its index among the WG_M * WG_N * 128
//   threads that share the GEMM. Each warpgroup issues, per K step, one
//   m64n<ATOM_N>k<KK> wgmma for each 64-row x ATOM_N-column atom of its sub-tile; the first
//   step of a CLEAR gemm does not accumulate (scale-d = 0), nor that of a gemm called with
//   clear_now true (a condition known only at run time: the scale-d operand is a register,
//   so the choice costs nothing; T.gemm's clear_if). The group is committed, and
//   waited for until at most WAIT groups are pending (WAIT < 0: not waited for; the caller
//   waits with tl::wgmma_wait<n>() before it touches C or reuses the operands).
//   With A in registers (rs) A_frag holds the thread's 16-bit A values in the accumulator
//   layout over M x K (WG_N = 1), which is what a cast accumulator of another gemm has, or
//   its 8-bit (fp8) A values in the register-A layout of gemm_sm90_layout.cuh part 3, which
//   tl::wgmma_acc_to_a8 makes from such an accumulator:
//   tl::wgmma_acc_to_a8<MA, K, E5M2>(acc, A_frag, thread)   (MA = 64-row atoms per warpgroup)
//
// The instruction itself (one asm statement per shape and type, the accumulator registers
// listed one by one) is the specialization tl::WgmmaAtom<N, KIND>, which the generated
// kernel source defines for exactly the atoms it uses (src/target/cuda/wgmma_atoms.cc).
#pragma once

#include "tilec/gemm_sm90_layout.cuh"
#include "tilec/mbarrier.cuh"

namespace tl {

// Operand types (ids shared with src/target/cuda/wgmma_atoms.cc).
enum : int {
  kWgmmaF16 = 0,      // f16 x f16 -> f32, K step 16
  kWgmmaBF16 = 1,     // bf16 x bf16 -> f32, 16
  kWgmmaTF32 = 2,     // tf32 x tf32 -> f32, 8 (K-major only)
  kWgmmaE4M3E4M3 = 3, // fp8 -> f32, 32 (K-major only)
  kWgmmaE4M3E5M2 = 4,
  kWgmmaE5M2E4M3 = 5,
  kWgmmaE5M2E5M2 = 6,
  kWgmmaS8 = 7,       // s8 x s8 -> s32, 32 (K-major only)
  kWgmmaU8 = 8,       // u8 x u8 -> s32, 32 (K-major only)
};

template <int KIND>
struct WgmmaKindTraits {
  static constexpr int kK = KIND <= kWgmmaBF16 ? 16 : KIND == kWgmmaTF32 ? 8 : 32;
};

// wgmma.mma_async for one 64 x N atom; defined by the generated source:
//   template <int TA, int TB> static void ss(Acc* d, uint64 desc_a, uint64 desc_b, int scale_d);
//   template <int TB>         static void rs(Acc* d, const uint32* a, uint64 desc_b, int scale_d);
template <int N, int KIND>
struct WgmmaAtom;

template <int ROWS, int COLS, int SWIZZLE_BITS>
struct WgTile {
  static constexpr int kRows = ROWS, kCols = COLS, kSwizzle = SWIZZLE_BITS;
};

TL_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
TL_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// T.wait_wgmma(n) in a program compiled for a target without wgmma (sm_80, plain sm_90): every
// T.gemm there completes before it returns, so no group is pending and the wait is nothing.
template <int N>
TL_DEVICE void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

// Compiler-only barriers that keep register accesses of the accumulator on their side of
// the asynchronous MMAs (the instructions read and write these registers later).
TL_DEVICE void wgmma_fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }
TL_DEVICE void wgmma_fence_operand(int& x) { asm volatile("" : "+r"(x)::"memory"); }
template <int R, typename T>
TL_DEVICE void wgmma_fence_operands(T* regs) {
#pragma unroll
  for (int i = 0; i < R; ++i) wgmma_fence_operand(regs[i]);
}
// A clearing gemm (scale-d = 0 on its first step) reads nothing of the accumulator: give its
// registers a fresh, undefined value here (an empty asm with outputs only, no instruction), so
// that the compiler does not keep their previous contents alive up to the gemm (the asm
// operands are read-write, "+f"). Without it, attention's backward spilled once its clears
// were folded into the gemms (28 bytes on sm_90a).
TL_DEVICE void wgmma_undefine_operand(float& x) { asm volatile("" : "=f"(x)); }
TL_DEVICE void wgmma_undefine_operand(int& x) { asm volatile("" : "=r"(x)); }
template <int R, typename T>
TL_DEVICE void wgmma_undefine_operands(T* regs) {
#pragma unroll
  for (int i = 0; i < R; ++i) wgmma_undefine_operand(regs[i]);
}

// The 64-bit shared-memory matrix descriptor (PTX "matrix descriptor"): start address,
// leading / stride byte offsets (16-byte units) and the layout type, which numbers the
// swizzles 1 = 128B, 2 = 64B, 3 = 32B (not the tensor-map order).
TL_DEVICE uint64 wgmma_descriptor(uint32 addr, uint32 lbo, uint32 sbo, int swizzle_bits) {
  const uint64 type = swizzle_bits == 3 ? 1 : swizzle_bits == 2 ? 2 : swizzle_bits == 1 ? 3 : 0;
  return uint64((addr & 0x3FFFF) >> 4) | (uint64((lbo & 0x3FFFF) >> 4) << 16) |
         (uint64((sbo & 0x3FFFF) >> 4) << 32) | (type << 62);
}

namespace wgmma_detail {

// Operand stored with K contiguous (A not transposed, B transposed): (mn, k) of the atom's
// first element. Rows are one span apart, 8-row groups SBO = 8 spans apart; the leading
// offset is unused for swizzled K-major operands.
template <class Tile, int EB>
TL_DEVICE uint64 kmajor(uint32 base, int mn, int k) {
  constexpr int span = layout::wg_span_bytes(Tile::kSwizzle);
  static_assert(Tile::kSwizzle != 0, "wgmma reads K-major operands from swizzled tiles");
  return wgmma_descriptor(base + layout::wg_linear_offset(mn, k, Tile::kRows, Tile::kCols, EB, Tile::kSwizzle) * EB,
                          16, 8 * span, Tile::kSwizzle);
}

// Operand stored with M or N contiguous (A transposed, B not): rows are K. Column blocks
// (span bytes of M/N each) are LBO = rows * span apart, 8-row groups SBO = 8 spans.
template <class Tile, int EB>
TL_DEVICE uint64 mnmajor(uint32 base, int mn, int k) {
  constexpr int span = layout::wg_span_bytes(Tile::kSwizzle);
  static_assert(Tile::kSwizzle != 0, "wgmma reads MN-major operands from swizzled tiles");
  return wgmma_descriptor(base + layout::wg_linear_offset(k, mn, Tile::kRows, Tile::kCols, EB, Tile::kSwizzle) * EB,
                          Tile::kRows * span, 8 * span, Tile::kSwizzle);
}

}  // namespace wgmma_detail

template <int M, int N, int K, int WG_M, int WG_N, bool TRANS_A, bool TRANS_B, bool CLEAR, class TileA, class TileB,
          int KIND, int ATOM_N, int WAIT, typename TA, typename TB, typename TC>
TL_DEVICE void wgmma_gemm_ss(const TA* A, int a_row0, int a_col0, const TB* B, int b_row0, int b_col0, TC* C,
                             int thread, bool clear_now = false) {
  constexpr int MW = M / WG_M, NW = N / WG_N, MA = MW / 64, NA = NW / ATOM_N;
  constexpr int KK = WgmmaKindTraits<KIND>::kK;
  constexpr int REGS = MA * NA * (ATOM_N / 2);
  static_assert(M % (64 * WG_M) == 0, "wgmma: each warpgroup takes a multiple of 64 rows");
  static_assert(N % WG_N == 0 && NW % ATOM_N == 0 && ATOM_N % 8 == 0 && ATOM_N <= 256, "wgmma: bad N split");
  static_assert(K % KK == 0, "wgmma: K must be a multiple of the instruction's K step");
  const int wg = thread / 128;
  const int wm = wg % WG_M, wn = wg / WG_M;
  const uint32 a_base = smem_addr(A), b_base = smem_addr(B);
  if constexpr (CLEAR) wgmma_undefine_operands<REGS>(C);
  wgmma_fence_operands<REGS>(C);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < K / KK; ++ks) {
#pragma unroll
    for (int mi = 0; mi < MA; ++mi) {
      const int m0 = wm * MW + mi * 64;
      const uint64 da = TRANS_A ? wgmma_detail::mnmajor<TileA, sizeof(TA)>(a_base, a_col0 + m0, a_row0 + ks * KK)
                                : wgmma_detail::kmajor<TileA, sizeof(TA)>(a_base, a_row0 + m0, a_col0 + ks * KK);
#pragma unroll
      for (int ni = 0; ni < NA; ++ni) {
        const int n0 = wn * NW + ni * ATOM_N;
        const uint64 db = TRANS_B ? wgmma_detail::kmajor<TileB, sizeof(TB)>(b_base, b_row0 + n0, b_col0 + ks * KK)
                                  : wgmma_detail::mnmajor<TileB, sizeof(TB)>(b_base, b_col0 + n0, b_row0 + ks * KK);
        WgmmaAtom<ATOM_N, KIND>::template ss<TRANS_A ? 1 : 0, TRANS_B ? 0 : 1>(C + (mi * NA + ni) * (ATOM_N / 2), da,
                                                                             db, (ks == 0 && (CLEAR || clear_now)) ? 0 : 1);
      }
    }
  }
  wgmma_commit();
  wgmma_fence_operands<REGS>(C);
  if constexpr (WAIT >= 0) wgmma_wait<WAIT>();
}

template <int M, int N, int K, int WG_M, int WG_N, bool TRANS_B, bool CLEAR, class TileB, int KIND, int ATOM_N,
          int WAIT, typename TA, typename TB, typename TC>
TL_DEVICE void wgmma_gemm_rs(const TA* A_frag, const TB* B, int b_row0, int b_col0, TC* C, int thread,
                             bool clear_now = false) {
  constexpr int MW = M / WG_M, NW = N / WG_N, MA = MW / 64, NA = NW / ATOM_N;
  constexpr int KK = WgmmaKindTraits<KIND>::kK;
  constexpr int REGS = MA * NA * (ATOM_N / 2);
  constexpr int A_REGS = K * int(sizeof(TA)) / 8;  // 32-bit registers of A per 64-row atom
  static_assert(WG_N == 1, "wgmma with A in registers: every warpgroup along M");
  static_assert((sizeof(TA) == 2 && KK == 16) || (sizeof(TA) == 1 && KK == 32),
                "wgmma with A in registers: 16-bit or 8-bit A");
  static_assert(M % (64 * WG_M) == 0 && NW % ATOM_N == 0 && K % KK == 0, "wgmma: bad shape");
  const int wg = thread / 128;
  const int wn = wg / WG_M;
  const uint32 b_base = smem_addr(B);
  // The A values are written by ordinary code (a cast) right before: fence them too.
  uint32* a = const_cast<uint32*>(reinterpret_cast<const uint32*>(A_frag));
  if constexpr (CLEAR) wgmma_undefine_operands<REGS>(C);
  wgmma_fence_operands<REGS>(C);
#pragma unroll
  for (int i = 0; i < MA * A_REGS; ++i) asm volatile("" : "+r"(a[i])::"memory");
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < K / KK; ++ks) {
#pragma unroll
    for (int mi = 0; mi < MA; ++mi) {
#pragma unroll
      for (int ni = 0; ni < NA; ++ni) {
        const int n0 = wn * NW + ni * ATOM_N;
        const uint64 db = TRANS_B ? wgmma_detail::kmajor<TileB, sizeof(TB)>(b_base, b_row0 + n0, b_col0 + ks * KK)
                                  : wgmma_detail::mnmajor<TileB, sizeof(TB)>(b_base, b_col0 + n0, b_row0 + ks * KK);
        WgmmaAtom<ATOM_N, KIND>::template rs<TRANS_B ? 0 : 1>(C + (mi * NA + ni) * (ATOM_N / 2),
                                                              a + mi * A_REGS + ks * 4, db,
                                                              (ks == 0 && (CLEAR || clear_now)) ? 0 : 1);
      }
    }
  }
  wgmma_commit();
  wgmma_fence_operands<REGS>(C);
  if constexpr (WAIT >= 0) wgmma_wait<WAIT>();
}

// Four float32 values as four fp8 bytes (byte i = v_i), rounded to nearest and saturated to
// the finite range (what a float -> __nv_fp8_e4m3 / __nv_fp8_e5m2 conversion does).
template <bool E5M2>
TL_DEVICE uint32 wgmma_pack_fp8x4(float v0, float v1, float v2, float v3) {
  unsigned short lo, hi;  // cvt puts its first source in the upper byte
  if constexpr (E5M2) {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(v1), "f"(v0));
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(v3), "f"(v2));
  } else {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(v1), "f"(v0));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(v3), "f"(v2));
  }
  return uint32(lo) | (uint32(hi) << 16);
}

// A float32 wgmma accumulator fragment of an M x K tile (WG_N = 1; MA 64-row atoms per
// warpgroup) rounded to fp8 into the register-A fragment of the same tile
// (gemm_sm90_layout.cuh part 3): per 32 columns of each of the thread's two rows, two
// packed words, two __byte_perm, two shuffles within the quad, two __byte_perm. Every
// thread of the warpgroups calls it (the shuffles are warp-wide).
template <int MA, int K, bool E5M2>
TL_DEVICE void wgmma_acc_to_a8(const float* acc, void* A_frag, int thread) {
  static_assert(K % 32 == 0, "wgmma_acc_to_a8: K is a multiple of 32");
  uint32* a = reinterpret_cast<uint32*>(A_frag);
  const int q = thread % 4;
  const int src0 = layout::wg_a8_source_lane(q, 0), src1 = layout::wg_a8_source_lane(q, 1);
  const unsigned sel0 = layout::wg_a8_send_selector(q, 0), sel1 = layout::wg_a8_send_selector(q, 1);
  const bool even_first = layout::wg_a8_even_round(q) == 0;
#pragma unroll
  for (int mi = 0; mi < MA; ++mi) {
#pragma unroll
    for (int kb = 0; kb < K / 32; ++kb) {
      const float* c = acc + mi * (K / 2) + kb * 16;  // 4 registers per 8 columns (part 2)
      uint32* out = a + mi * (K / 8) + kb * 4;
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // row l / 4, then l / 4 + 8
        const uint32 w0 = wgmma_pack_fp8x4<E5M2>(c[2 * h], c[2 * h + 1], c[4 + 2 * h], c[5 + 2 * h]);
        const uint32 w1 = wgmma_pack_fp8x4<E5M2>(c[8 + 2 * h], c[9 + 2 * h], c[12 + 2 * h], c[13 + 2 * h]);
        const uint32 r0 = __shfl_sync(0xffffffffu, __byte_perm(w0, w1, sel0), src0, 4);
        const uint32 r1 = __shfl_sync(0xffffffffu, __byte_perm(w0, w1, sel1), src1, 4);
        const uint32 x = even_first ? r0 : r1, y = even_first ? r1 : r0;
        out[h] = __byte_perm(x, y, 0x5410);      // columns 4q .. 4q + 3
        out[2 + h] = __byte_perm(x, y, 0x7632);  // columns 16 + 4q .. 16 + 4q + 3
      }
    }
  }
}

}  // namespace tl
