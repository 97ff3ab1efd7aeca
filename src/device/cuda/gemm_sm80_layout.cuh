// Index arithmetic shared by the mma.sync GEMM (gemm_sm80.cuh), the compiler's layout
// decisions (src/ops/gemm.cc builds the same formulas as IR) and the CPU tests (which
// include this file with a host compiler and simulate a warp with it).
//
// Everything here is plain constexpr integer arithmetic, no intrinsics, so the one
// definition serves device code, NVRTC and host tests alike.
//
// 1. Shared-memory swizzle of a row-major operand tile.
//    A tile of `ld` elements per row, `elem_bytes` per element, is cut into 16-byte
//    chunks (V = 16 / elem_bytes elements). With L = ld / V chunks per row, the chunks of
//    a row are XOR-permuted inside aligned groups of G chunks, G the largest of 8, 4, 2, 1
//    dividing L, by a row-dependent key:
//        key(row)  = (row / (8 / G)) % G
//        chunk'    = chunk ^ key(row)
//    For L % 8 == 0 this is "chunk ^ (row % 8)" inside every 128-byte segment; for 64-byte
//    rows (L = 4) two rows share a 128-byte line and the key is (row / 2) % 4; and so on.
//    Eight consecutive rows at one logical chunk then land in eight different 16-byte
//    bank groups, which is the access of one ldmatrix phase, so ldmatrix is conflict-free.
//    A 16-byte chunk stays contiguous, so cp.async / vector stores of 16 bytes fill it.
//
// 2. Which shared-memory element each lane points ldmatrix at, per operand and
//    orientation (see the comments on each function), and
//
// 3. The accumulator fragment of a block-level GEMM: which thread holds C[i][j] and at
//    which register index (mma.sync m16n8 accumulator repeated over the warp grid and
//    over the m16 x n8 tiles of each warp).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TL_LAYOUT_FN __host__ __device__ __forceinline__ constexpr
#else
#define TL_LAYOUT_FN inline constexpr
#endif

namespace tl {
namespace layout {

// ---- 1. swizzle -------------------------------------------------------------------

// Chunks per swizzle group for a row of `ld` elements; 0 when rows are not made of whole
// 16-byte chunks (then the tile is plain row-major).
TL_LAYOUT_FN int swizzle_group(int ld, int elem_bytes) {
  return (ld * elem_bytes) % 16 != 0 ? 0
         : ((ld * elem_bytes) / 16) % 8 == 0 ? 8
         : ((ld * elem_bytes) / 16) % 4 == 0 ? 4
         : ((ld * elem_bytes) / 16) % 2 == 0 ? 2
                                              : 1;
}

TL_LAYOUT_FN int swizzle_key(int row, int group) { return group <= 1 ? 0 : (row / (8 / group)) % group; }

// Element offset of logical (row, col) in a swizzled row-major tile with `ld` elements per row.
TL_LAYOUT_FN int swizzled_offset(int row, int col, int ld, int elem_bytes) {
  return swizzle_group(ld, elem_bytes) == 0
             ? row * ld + col
             : row * ld +
                   (((col / (16 / elem_bytes)) ^ swizzle_key(row, swizzle_group(ld, elem_bytes))) *
                    (16 / elem_bytes)) +
                   col % (16 / elem_bytes);
}

// Offset in a tile that is either swizzled or plain row-major.
TL_LAYOUT_FN int operand_offset(bool swizzled, int row, int col, int ld, int elem_bytes) {
  return swizzled ? swizzled_offset(row, col, ld, elem_bytes) : row * ld + col;
}

// ---- 2. ldmatrix lane addressing ------------------------------------------------------
// Every mma.sync k-step reads 32 bytes of K per row: 16 f16/bf16, 8 tf32, 32 int8.
// `chunk` is 16 / elem_bytes elements. All coordinates are in the *stored* orientation
// (row, col) of the shared tile.

struct Coord {
  int row;
  int col;
};

// A stored M x K (K contiguous), ldmatrix.x4 of the m16 x k-step block at (m0, k0):
// lanes 0-15 point at rows m0..m0+15 of the first 16-byte chunk, lanes 16-31 at the same
// rows of the second chunk; registers come back as a0 (rows 0-7, k lo), a1 (rows 8-15,
// k lo), a2 (rows 0-7, k hi), a3 (rows 8-15, k hi) — the mma A fragment order.
TL_LAYOUT_FN Coord ldsm_a_kmajor(int lane, int m0, int k0, int elem_bytes) {
  return {m0 + (lane & 15), k0 + (lane >> 4) * (16 / elem_bytes)};
}

// A stored K x M (M contiguous, 16-bit only), ldmatrix.x4.trans of the m16 x k16 block:
// matrix q = lane / 8 is (k half = q / 2, m half = q % 2), so the registers come back as
// a0 (m 0-7, k 0-7), a1 (m 8-15, k 0-7), a2 (m 0-7, k 8-15), a3 (m 8-15, k 8-15).
TL_LAYOUT_FN Coord ldsm_a_mmajor(int lane, int m0, int k0) {
  return {k0 + (lane & 7) + ((lane >> 4) << 3), m0 + ((lane >> 3) & 1) * 8};
}

// B stored N x K (K contiguous), ldmatrix.x4 of two n8 tiles (n0..n0+15) x one k-step:
// registers come back as b0, b1 of tile n0 and b0, b1 of tile n0 + 8.
// With .x2 (a single n8 tile) only lanes 0-15 matter and give b0, b1 of tile n0.
TL_LAYOUT_FN Coord ldsm_b_kmajor(int lane, int n0, int k0, int elem_bytes) {
  return {n0 + (lane & 7) + ((lane >> 4) << 3), k0 + ((lane >> 3) & 1) * (16 / elem_bytes)};
}

// B stored K x N (N contiguous, 16-bit only), ldmatrix.x4.trans of two n8 tiles x k16:
// matrix q = lane / 8 is (n tile = q / 2, k half = q % 2): b0, b1 of tile n0, then of n0 + 8.
TL_LAYOUT_FN Coord ldsm_b_nmajor(int lane, int n0, int k0) {
  return {k0 + (lane & 7) + (((lane >> 3) & 1) << 3), n0 + (lane >> 4) * 8};
}

// ---- 3. accumulator fragment ---------------------------------------------------------
// C is M x N over WARP_M x WARP_N warps; warp w = wm + wn * WARP_M owns the contiguous
// (M / WARP_M) x (N / WARP_N) sub-tile at (wm, wn). Inside it, m16 x n8 tiles (mt, nt)
// are numbered mt-major; in each tile lane = (r % 8) * 4 + (c % 8) / 2 holds
// register (r / 8) * 2 + c % 2 (PTX: c0,c1 at row groupID, c2,c3 at row groupID + 8).

TL_LAYOUT_FN int c_frag_thread(int i, int j, int M, int N, int warp_m, int warp_n) {
  return ((j / (N / warp_n)) * warp_m + i / (M / warp_m)) * 32 + ((i % (M / warp_m)) % 8) * 4 +
         ((j % (N / warp_n)) % 8) / 2;
}

TL_LAYOUT_FN int c_frag_index(int i, int j, int M, int N, int warp_m, int warp_n) {
  return (((i % (M / warp_m)) / 16) * ((N / warp_n) / 8) + (j % (N / warp_n)) / 8) * 4 +
         (((i % (M / warp_m)) % 16) / 8) * 2 + (j % 2);
}

// Registers per thread of the accumulator fragment.
TL_LAYOUT_FN int c_frag_size(int M, int N, int warp_m, int warp_n) {
  return (M / warp_m) * (N / warp_n) / 32;
}

// ---- FMA fallback fragment ------------------------------------------------------------
// threads = tm * tn; thread (ti, tj) = ti * tn + tj holds C[ti + tm * a][tj + tn * b]
// at register a * (N / tn) + b: lanes of a warp hold neighbouring columns, so the B reads
// of one k are conflict-free and the A reads are broadcasts.

TL_LAYOUT_FN int fma_frag_thread(int i, int j, int tm, int tn) { return (i % tm) * tn + (j % tn); }
TL_LAYOUT_FN int fma_frag_index(int i, int j, int N, int tm, int tn) {
  return (i / tm) * (N / tn) + (j / tn);
}

}  // namespace layout
}  // namespace tl
