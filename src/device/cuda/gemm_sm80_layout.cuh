// Index arithmetic shared by the mma.sync GEMM (gemm_sm80.cuh), the compiler's layout
// decisions (src/ops/gemm.cc builds the same formulas as IR) and the CPU tests (which
// include this file with a host compiler and simulate a warp with it).
//
// Everything here is plain constexpr integer arithmetic, no intrinsics, so the one
// definition serves device code, NVRTC and host tests alike.
//
// 1. Shared-memory swizzle of a row-major operand tile (the same formula as
//    tilec::layout::swizzled_layout, include/tilec/layout/swizzle.h, so one swizzle serves
//    copies, ldmatrix and, later, TMA and wgmma). For a tile of `rows` x `cols` elements
//    of `elem_bytes` and a mode of B = 1, 2, 3 bits (32B, 64B, 128B; 0 = none):
//      - a row wider than the span (16 << B bytes) is cut into column blocks of one span,
//        stored one after another (block b at b * rows * span elements);
//      - inside (the block or the whole tile), with x the row-major element offset, the
//        B-bit field of 16-byte chunks of x is XORed with the B-bit field of 128-byte lines
//        (CuTe's Swizzle<B, 4, 3> on byte offsets).
//    Eight consecutive rows at one logical 16-byte chunk (one ldmatrix phase) then land in
//    eight different bank groups, and every 16-byte chunk stays whole for cp.async.
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

TL_LAYOUT_FN int swizzle_span_bytes(int bits) { return bits == 0 ? 0 : 16 << bits; }

// Whether mode `bits` can lay out a rows x cols tile: rows a multiple of the span, or a
// divisor of it with the whole tile a multiple of the span.
TL_LAYOUT_FN bool swizzle_applicable(int rows, int cols, int elem_bytes, int bits) {
  return bits == 0 || (cols * elem_bytes) % swizzle_span_bytes(bits) == 0 ||
         (swizzle_span_bytes(bits) % (cols * elem_bytes) == 0 &&
          (rows * cols * elem_bytes) % swizzle_span_bytes(bits) == 0);
}

// The widest mode that applies to a tile whose rows are at least one 16-byte chunk.
TL_LAYOUT_FN int widest_swizzle_bits(int rows, int cols, int elem_bytes) {
  return cols * elem_bytes < 16                               ? 0
         : swizzle_applicable(rows, cols, elem_bytes, 3) ? 3
         : swizzle_applicable(rows, cols, elem_bytes, 2) ? 2
         : swizzle_applicable(rows, cols, elem_bytes, 1) ? 1
                                                          : 0;
}

// Element offset x with its B-bit chunk field XORed with its B-bit 128-byte-line field.
TL_LAYOUT_FN int swizzle_xor(int x, int elem_bytes, int bits) {
  return bits == 0 ? x
                   : x + ((((x / (16 / elem_bytes)) & ((1 << bits) - 1)) ^ ((x / (128 / elem_bytes)) & ((1 << bits) - 1))) -
                          ((x / (16 / elem_bytes)) & ((1 << bits) - 1))) *
                             (16 / elem_bytes);
}

// Element offset of logical (row, col) in a rows x cols tile stored with mode `bits`.
TL_LAYOUT_FN int tile_offset(int row, int col, int rows, int cols, int elem_bytes, int bits) {
  return bits == 0 ? row * cols + col
         : cols * elem_bytes > swizzle_span_bytes(bits)
             ? (col / (swizzle_span_bytes(bits) / elem_bytes)) * rows * (swizzle_span_bytes(bits) / elem_bytes) +
                   swizzle_xor(row * (swizzle_span_bytes(bits) / elem_bytes) + col % (swizzle_span_bytes(bits) / elem_bytes),
                               elem_bytes, bits)
             : swizzle_xor(row * cols + col, elem_bytes, bits);
}

// The constant element distance between (row, col) and (row + drow, col + dcol), the
// same for every (row, col) with both in the tile, or -1 when it depends on (row, col).
// A shift of whole 1024-byte swizzle periods inside a column block (or whole column
// blocks) keeps both XORed fields, so it is a plain addition; the device GEMM then
// addresses those fragments with one per-thread base plus an immediate.
TL_LAYOUT_FN int tile_shift_delta(int drow, int dcol, int rows, int cols, int elem_bytes, int bits) {
  return bits == 0 ? drow * cols + dcol
         : cols * elem_bytes > swizzle_span_bytes(bits)
             ? (dcol % (swizzle_span_bytes(bits) / elem_bytes) == 0 &&
                        (drow * swizzle_span_bytes(bits)) % (128 << bits) == 0
                    ? (dcol / (swizzle_span_bytes(bits) / elem_bytes)) * rows * (swizzle_span_bytes(bits) / elem_bytes) +
                          drow * (swizzle_span_bytes(bits) / elem_bytes)
                    : -1)
             : (((drow * cols + dcol) * elem_bytes) % (128 << bits) == 0 ? drow * cols + dcol : -1);
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
