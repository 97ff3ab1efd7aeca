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
//
// 3. The 8-bit register-A fragment (fp8 wgmma with A from registers, K step 32): an M x K
//    tile over WG_M warpgroups, all along M, 64-row atoms numbered mi. Inside an atom, row r
//    and column (k) c are held by warp r / 16, lane (r % 8) * 4 + (c % 16) / 4, at byte
//    16 * (c / 32) + 8 * ((c % 32) / 16) + 4 * ((r % 16) / 8) + c % 4 of the atom's K / 2
//    bytes (PTX: the m16n8k32 A fragment of 8-bit types down the 4 warps: register
//    a_{2 * ((c % 32) / 16) + (r % 16) / 8} of each K step, byte c % 4). An accumulator of the
//    same tile (part 2, WG_N = 1) holds the same rows in the same lanes but other columns:
//    lane q of a quad holds columns 8j + 2q, 8j + 2q + 1 of every 8, where the A fragment
//    wants 4q .. 4q + 3 and 16 + 4q .. 16 + 4q + 3 of every 32. wgmma_acc_to_a8
//    (gemm_sm90.cuh) moves them within the quad: per 32 columns of one row, each lane packs
//    its 8 bytes into two words (columns 0-15, 16-31), sends two words made of their
//    halves (wg_a8_send_selector) to the lanes that need them in two shuffles
//    (wg_a8_source_lane), and joins what it receives (the word from the even source lane
//    first: wg_a8_even_round).
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

TL_WG_LAYOUT_FN int wg_a8_thread(int i, int k, int M, int wg_m) {
  return (i / (M / wg_m)) * 128 + ((i % (M / wg_m)) % 64) / 16 * 32 + ((i % (M / wg_m)) % 8) * 4 + (k % 16) / 4;
}

TL_WG_LAYOUT_FN int wg_a8_index(int i, int k, int M, int K, int wg_m) {
  return ((i % (M / wg_m)) / 64) * (K / 2) + 16 * (k / 32) + 8 * ((k % 32) / 16) + 4 * (((i % (M / wg_m)) % 16) / 8) +
         k % 4;
}

// The quad exchange of part 3 for lane q (0..3) of a quad, in round 0 or 1: the lane it
// reads (a shuffle of width 4), the __byte_perm selector that builds the word it sends
// from its two packed words (0x5410: their low halves, columns 8j + 2q.. of the first 8 of
// each 16; 0x7632: their high halves), and the round whose word comes from the even lane
// 2 * (q % 2) of its two sources (the other comes from lane 2 * (q % 2) + 1).
TL_WG_LAYOUT_FN int wg_a8_source_lane(int q, int round) { return (2 * q) % 4 + (round == 0 ? q / 2 : 1 - q / 2); }
TL_WG_LAYOUT_FN unsigned wg_a8_send_selector(int q, int round) {
  return ((q % 2) == (round == 0 ? 1 : 0)) ? 0x7632u : 0x5410u;
}
TL_WG_LAYOUT_FN int wg_a8_even_round(int q) { return q < 2 ? 0 : 1; }

}  // namespace layout
}  // namespace tl
