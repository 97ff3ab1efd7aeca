// Index arithmetic of the wgmma GEMM (gemm_sm90.cuh), shared with the compiler's layout
// decisions (src/ops/gemm_sm90.cc builds the same formulas as IR) and the CPU tests.
// Plain constexpr integer arithmetic: the one definition serves device code, NVRTC and
// host tests.
//
// 1. Operand tiles in shared memory are stored like tilec::layout::swizzled_layout with a
//    mode of B = 1, 2, 3 bits (32B, 64B, 128B swizzle; span S = 16 << B bytes): rows of
//    exactly S bytes, a tile wider than S cut into column blocks of S bytes stored one
//    after another (block b at b * rows * S bytes), 16-byte chunks XORed with the row's
//    index mod 2^B. This is the canonical wgmma layout ("atoms" of 8 rows x S bytes) and
//    what TMA writes with CU_TENSOR_MAP_SWIZZLE_<S>B; the hardware applies the XOR from
//    the address bits, so descriptors point at the *unswizzled* position (wg_linear_offset)
//    of a tile whose base is aligned to the swizzle period (8 * S bytes).
//
// 2. The accumulator (and register-A) fragment: an M x N tile over WG_M x WG_N
//    warpgroups; warpgroup g = wm + wn * WG_M owns the (M / WG_M) x (N / WG_N) sub-tile at
//    (wm, wn), cut into 64-row atoms (mi) and ATOM_N-column atoms (ni), numbered
//    mi-major. Inside an atom, row r and column c are held by warp r / 16 of the group,
//    lane (r % 8) * 4 + (c % 8) / 2, at register 4 * (c / 8) + 2 * ((r % 16) / 8) + c % 2
//    (PTX "wgmma register fragments": the m16n8 accumulator repeated down the 4 warps and
//    across the columns).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TL_WG_LAYOUT_FN __host__ __device__ __forceinline__ constexpr
#else
#define TL_WG_LAYOUT_FN inline constexpr
#endif

namespace tl {
namespace layout {

TL_WG_LAYOUT_FN int wg_span_bytes(int bits) { return bits == 0 ? 0 : 16 << bits; }

// Element offset of (row, col) in a rows x cols tile stored in column blocks of the span,
// before the swizzle XOR (bits == 0: plain row-major).
TL_WG_LAYOUT_FN int wg_linear_offset(int row, int col, int rows, int cols, int elem_bytes, int bits) {
  return bits == 0 ? row * cols + col
                   : (col / (wg_span_bytes(bits) / elem_bytes)) * rows * (wg_span_bytes(bits) / elem_bytes) +
                         row * (wg_span_bytes(bits) / elem_bytes) + col % (wg_span_bytes(bits) / elem_bytes);
}

TL_WG_LAYOUT_FN int wg_acc_thread(int i, int j, int M, int N, int wg_m, int wg_n) {
  return ((j / (N / wg_n)) * wg_m + i / (M / wg_m)) * 128 + ((i % (M / wg_m)) % 64) / 16 * 32 +
         ((i % (M / wg_m)) % 8) * 4 + ((j % (N / wg_n)) % 8) / 2;
}

TL_WG_LAYOUT_FN int wg_acc_index(int i, int j, int M, int N, int wg_m, int wg_n, int atom_n) {
  return (((i % (M / wg_m)) / 64) * ((N / wg_n) / atom_n) + (j % (N / wg_n)) / atom_n) * (atom_n / 2) +
         4 * (((j % (N / wg_n)) % atom_n) / 8) + 2 * (((i % (M / wg_m)) % 16) / 8) + (j % (N / wg_n)) % 2;
}

}  // namespace layout
}  // namespace tl
