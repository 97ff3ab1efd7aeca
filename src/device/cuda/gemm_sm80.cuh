// Block-level GEMM on shared-memory operands with ldmatrix + mma.sync (sm_80+), and the
// FMA fallback. One call per T.gemm: the compiler picks every template argument (tile
// shape, warp partition, orientation, shared layouts) and reports to layout inference
// exactly the fragment / shared layouts this code assumes (gemm_sm80_layout.cuh holds the
// shared formulas).
//
//   tl::gemm_ss<M, N, K, WARP_M, WARP_N, TRANS_A, TRANS_B, CLEAR_ACCUM,
//               tl::SmemTile<ROWS, COLS, SWIZZLE_BITS> (A), tl::SmemTile<...> (B), KIND>
//       (A, a_row0, a_col0, B, b_row0, b_col0, C, thread_idx)
//
//   C[M x N] (+)= op(A) * op(B) where
//     A is stored K x M (M contiguous) when TRANS_A, else M x K (K contiguous),
//     B is stored N x K (K contiguous) when TRANS_B, else K x N (N contiguous),
//   each read at (row0 + r, col0 + c) of a shared tile (pointer at the tile's first
//   element) laid out as tl::layout::tile_offset says for its SmemTile; C is the thread's
//   accumulator fragment (registers) in the layout of tl::layout::c_frag_thread /
//   c_frag_index; thread_idx is the linear index of the calling thread among the
//   WARP_M * WARP_N * 32 that share the GEMM. col0 must keep 16-byte chunks aligned.
//   KIND: kMmaF16 / kMmaBF16 (f32 accumulate), kMmaTF32 (f32 data rounded to tf32),
//   kMmaS8 / kMmaU8 (s32 accumulate).
//
//   tl::gemm_rs<M, N, K, WARP_M, 1, TRANS_B, CLEAR_ACCUM, TileB, KIND>(A_frag, B, b_row0,
//       b_col0, C, thread_idx): A (16-bit) in registers, in the accumulator layout over
//       M x K (see its comment below).
//
//   tl::gemm_ss_prefetch / tl::gemm_ss_overlap: the same GEMM split for a pipelined main
//   loop whose operand fragments stay in registers across iterations (the barrier of the
//   next tile sits before the last k-step of this one); see their comment below.
//
// Per warp and k-step, A fragments come from one ldmatrix.x4 per m16 tile and B fragments
// from one ldmatrix.x4 per pair of n8 tiles; fragments of k-step s+1 are loaded while the
// mma.sync of k-step s run (register double buffering). Orientations that ldmatrix cannot
// transpose (32-bit and 8-bit M/N-major operands) are read with scalar loads.
// The ldmatrix row addresses are per-thread offsets computed once (loop invariant when the
// call sits in a pipelined loop) plus compile-time immediates wherever a k-step or tile step
// is a whole swizzle period (LdsmAddress): the main loop spends about one integer
// instruction per ldmatrix instead of a swizzle evaluation, and keeps fewer registers live
// (no spills at block_K = 64 with 128 accumulators per thread).
#pragma once

#include "tilec/cp_async.cuh"
#include "tilec/gemm_sm80_layout.cuh"
#include "tilec/ldmatrix.cuh"
#include "tilec/mma.cuh"

namespace tl {

enum : int { kMmaF16 = 0, kMmaBF16 = 1, kMmaTF32 = 2, kMmaS8 = 3, kMmaU8 = 4 };

// A shared-memory operand tile: ROWS x COLS elements, swizzle mode SWIZZLE_BITS (0 none,
// 1 32B, 2 64B, 3 128B), addressed by tl::layout::tile_offset.
template <int ROWS, int COLS, int SWIZZLE_BITS>
struct SmemTile {
  static constexpr int kRows = ROWS, kCols = COLS, kSwizzle = SWIZZLE_BITS;
  __device__ __forceinline__ static int offset(int row, int col, int elem_bytes) {
    return layout::tile_offset(row, col, ROWS, COLS, elem_bytes, SWIZZLE_BITS);
  }
};

namespace gemm_detail {

template <typename T, typename U>
struct same_type {
  static constexpr bool value = false;
};
template <typename T>
struct same_type<T, T> {
  static constexpr bool value = true;
};

template <int KIND>
struct MmaTraits;
template <>
struct MmaTraits<kMmaF16> {
  static constexpr int kK = 16, kElemBytes = 2;
  using Acc = float;
  __device__ __forceinline__ static void run(float* c, const unsigned* a, const unsigned* b) {
    mma_m16n8k16_f32_f16(c, a, b, c);
  }
};
template <>
struct MmaTraits<kMmaBF16> {
  static constexpr int kK = 16, kElemBytes = 2;
  using Acc = float;
  __device__ __forceinline__ static void run(float* c, const unsigned* a, const unsigned* b) {
    mma_m16n8k16_f32_bf16(c, a, b, c);
  }
};
template <>
struct MmaTraits<kMmaTF32> {
  static constexpr int kK = 8, kElemBytes = 4;
  using Acc = float;
  __device__ __forceinline__ static void run(float* c, const unsigned* a, const unsigned* b) {
    mma_m16n8k8_f32_tf32(c, a, b, c);
  }
};
template <>
struct MmaTraits<kMmaS8> {
  static constexpr int kK = 32, kElemBytes = 1;
  using Acc = int;
  __device__ __forceinline__ static void run(int* c, const unsigned* a, const unsigned* b) {
    mma_m16n8k32_s32_s8(c, a, b, c);
  }
};
template <>
struct MmaTraits<kMmaU8> {
  static constexpr int kK = 32, kElemBytes = 1;
  using Acc = int;
  __device__ __forceinline__ static void run(int* c, const unsigned* a, const unsigned* b) {
    mma_m16n8k32_s32_u8(c, a, b, c);
  }
};

// Reads one 32-bit register's worth of an operand element by element (for orientations
// ldmatrix cannot produce). (row, col) is the first element in stored coordinates; the
// register's elements run down the stored rows (row + e).
template <int ELEM_BYTES, class Tile>
__device__ __forceinline__ unsigned gather_down_rows(const void* base, int row, int col) {
  if (ELEM_BYTES == 4) {
    return static_cast<const unsigned*>(base)[Tile::offset(row, col, 4)];
  } else if (ELEM_BYTES == 1) {
    const unsigned char* p = static_cast<const unsigned char*>(base);
    unsigned r = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) r |= unsigned(p[Tile::offset(row + e, col, 1)]) << (8 * e);
    return r;
  } else {
    const unsigned short* p = static_cast<const unsigned short*>(base);
    return unsigned(p[Tile::offset(row, col, 2)]) | (unsigned(p[Tile::offset(row + 1, col, 2)]) << 16);
  }
}

// A fragment of the m16 tile at m0 and k-step starting at k0.
// (row0, col0): where the operand starts in its stored tile.
// `addr`: the shared address this lane gives ldmatrix (LdsmAddress), on the ldmatrix paths.
template <int KIND, bool TRANS_A, class TileA, typename TA>
__device__ __forceinline__ void load_a(unsigned* a, unsigned addr, const TA* A, int row0, int col0, int m0, int k0,
                                       int lane) {
  using Tr = MmaTraits<KIND>;
  constexpr int E = Tr::kElemBytes;
  if (!TRANS_A) {
    ldmatrix_x4(a, addr);
  } else if (E == 2) {
    ldmatrix_x4_trans(a, addr);
  } else {
    // Stored K x M: register q holds rows (g, g+8) and k groups as in mma.cuh.
    const int g = lane >> 2, t = lane & 3;
    constexpr int kPerReg = 4 / E;            // elements per register along K
    constexpr int kHalf = Tr::kK / 2;         // k offset of registers 2 and 3
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int m = m0 + g + 8 * (q & 1);
      const int k = k0 + kHalf * (q >> 1) + t * kPerReg;
      a[q] = gather_down_rows<E, TileA>(A, row0 + k, col0 + m);
    }
  }
  if (KIND == kMmaTF32) {
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] = f32_to_tf32(a[q]);
  }
}

// B fragments of the n8 tiles at n0 (and n0 + 8 when PAIR) for the k-step at k0.
template <int KIND, bool TRANS_B, class TileB, bool PAIR, typename TB>
__device__ __forceinline__ void load_b(unsigned* b0, unsigned* b1, unsigned addr, const TB* B, int row0, int col0,
                                       int n0, int k0, int lane) {
  using Tr = MmaTraits<KIND>;
  constexpr int E = Tr::kElemBytes;
  if (TRANS_B) {
    if (PAIR) {
      unsigned r[4];
      ldmatrix_x4(r, addr);
      b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
    } else {
      ldmatrix_x2(b0, addr);
    }
  } else if (E == 2) {
    if (PAIR) {
      unsigned r[4];
      ldmatrix_x4_trans(r, addr);
      b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
    } else {
      ldmatrix_x2_trans(b0, addr);
    }
  } else {
    // Stored K x N: register q of tile n holds column n + g, k group q.
    const int g = lane >> 2, t = lane & 3;
    constexpr int kPerReg = 4 / E;
    constexpr int kHalf = Tr::kK / 2;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int k = k0 + kHalf * q + t * kPerReg;
      b0[q] = gather_down_rows<E, TileB>(B, row0 + k, col0 + n0 + g);
      if (PAIR) b1[q] = gather_down_rows<E, TileB>(B, row0 + k, col0 + n0 + 8 + g);
    }
  }
  if (KIND == kMmaTF32) {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      b0[q] = f32_to_tf32(b0[q]);
      if (PAIR) b1[q] = f32_to_tf32(b1[q]);
    }
  }
}

// The ldmatrix row addresses of one operand for k-step s < KS and fragment i < I (an m16
// tile of A, a pair of n8 tiles of B): the lane's stored (row, col) is COORD(lane, s, i).
// A step in s or i that moves every element by the same distance (tile_shift_delta, e.g.
// a whole swizzle period) becomes an immediate on one per-thread base, so the main loop
// adds only the stage's address to a few loop-invariant offsets; other steps keep one
// precomputed offset each.
template <class Tile, int E, int KS, int I, int S_DROW, int S_DCOL, int I_DROW, int I_DCOL>
struct LdsmAddress {
  static constexpr int kDs = layout::tile_shift_delta(S_DROW, S_DCOL, Tile::kRows, Tile::kCols, E, Tile::kSwizzle);
  static constexpr int kDi = layout::tile_shift_delta(I_DROW, I_DCOL, Tile::kRows, Tile::kCols, E, Tile::kSwizzle);
  static constexpr int kNs = kDs >= 0 ? 1 : KS, kNi = kDi >= 0 ? 1 : I;
  unsigned off[kNs][kNi];  // bytes from the tile's first element
  template <class Coord>
  __device__ __forceinline__ LdsmAddress(int row0, int col0, Coord coord) {
#pragma unroll
    for (int s = 0; s < kNs; ++s)
#pragma unroll
      for (int i = 0; i < kNi; ++i) {
        const layout::Coord p = coord(s, i);
        off[s][i] = unsigned(Tile::offset(row0 + p.row, col0 + p.col, E) * E);
      }
  }
  __device__ __forceinline__ unsigned at(unsigned base, int s, int i) const {
    return base + off[kDs >= 0 ? 0 : s][kDi >= 0 ? 0 : i] + unsigned((kDs >= 0 ? s * kDs : 0) * E) +
           unsigned((kDi >= 0 ? i * kDi : 0) * E);
  }
};

}  // namespace gemm_detail

namespace gemm_detail {

// Everything one warp needs to run a block GEMM on shared operands: the warp's place in the
// block tile, its ldmatrix addresses, and the two steps the k loop repeats (load the
// fragments of one k-step into a register slot; run the mma.sync of one slot).
template <int M, int N, int K, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, class TileA, class TileB,
          int KIND, typename TA, typename TB>
struct GemmSsCore {
  using Tr = MmaTraits<KIND>;
  static constexpr int E = Tr::kElemBytes;
  static constexpr int WM = M / WARP_M, WN = N / WARP_N;  // the warp tile
  static constexpr int MT = WM / 16, NT = WN / 8;         // mma tiles per warp
  static constexpr int KK = Tr::kK;
  static constexpr int KS = K / KK;  // k-steps
  static_assert(sizeof(TA) == E && sizeof(TB) == E, "gemm_ss: operand element size does not match KIND");
  static_assert(M % (WARP_M * 16) == 0, "gemm_ss: M must be a multiple of 16 * WARP_M");
  static_assert(N % (WARP_N * 8) == 0, "gemm_ss: N must be a multiple of 8 * WARP_N");
  static_assert(K % KK == 0, "gemm_ss: K must be a multiple of the mma k (16 f16/bf16, 8 tf32, 32 int8)");
  static_assert((TileA::kCols * E) % 16 == 0 && (TileB::kCols * E) % 16 == 0,
                "gemm_ss: operand rows must be whole 16-byte chunks (ldmatrix row addresses)");
  static_assert((TRANS_A ? TileA::kRows >= K && TileA::kCols >= M : TileA::kRows >= M && TileA::kCols >= K) &&
                    (TRANS_B ? TileB::kRows >= N && TileB::kCols >= K : TileB::kRows >= K && TileB::kCols >= N),
                "gemm_ss: an operand is larger than its shared tile");

  // Operand fragments, two slots (k-step s uses slot s % 2 while s + 1 loads into the other).
  struct Frags {
    unsigned a[2][MT][4];
    unsigned b[2][NT][2];
  };
  static constexpr int kFragWords = int(sizeof(Frags) / sizeof(unsigned));

  using AAddr = LdsmAddress<TileA, E, KS, MT, TRANS_A ? KK : 0, TRANS_A ? 0 : KK, TRANS_A ? 0 : 16, TRANS_A ? 16 : 0>;
  using BAddr = LdsmAddress<TileB, E, KS, (NT + 1) / 2, TRANS_B ? 0 : KK, TRANS_B ? KK : 0, TRANS_B ? 16 : 0,
                            TRANS_B ? 0 : 16>;

  const int lane, m_base, n_base;
  const int a_row0, a_col0, b_row0, b_col0;
  const AAddr a_addr;
  const BAddr b_addr;

  __device__ __forceinline__ GemmSsCore(int a_row0_, int a_col0_, int b_row0_, int b_col0_, int thread_idx)
      : lane(thread_idx & 31),
        m_base(((thread_idx >> 5) % WARP_M) * WM),
        n_base(((thread_idx >> 5) / WARP_M) * WN),
        a_row0(a_row0_),
        a_col0(a_col0_),
        b_row0(b_row0_),
        b_col0(b_col0_),
        a_addr(a_row0_, a_col0_,
               [&](int s, int i) {
                 return TRANS_A ? layout::ldsm_a_mmajor(lane, m_base + i * 16, s * KK)
                                : layout::ldsm_a_kmajor(lane, m_base + i * 16, s * KK, E);
               }),
        b_addr(b_row0_, b_col0_, [&](int s, int i) {
          return TRANS_B ? layout::ldsm_b_kmajor(lane, n_base + i * 16, s * KK, E)
                         : layout::ldsm_b_nmajor(lane, n_base + i * 16, s * KK);
        }) {}

  // The fragments of k-step ks of the operands at A / B into slot `buf`.
  __device__ __forceinline__ void load_step(Frags& f, int buf, int ks, const TA* A, const TB* B) const {
    const unsigned a_base = smem_u32addr(A);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      load_a<KIND, TRANS_A, TileA>(f.a[buf][mt], a_addr.at(a_base, ks, mt), A, a_row0, a_col0, m_base + mt * 16,
                                   ks * KK, lane);
    load_b_step(f, buf, ks, B);
  }

  // Only the B fragments of k-step ks into slot `buf` (tl::gemm_rs: A is in registers).
  __device__ __forceinline__ void load_b_step(Frags& f, int buf, int ks, const TB* B) const {
    const unsigned b_base = smem_u32addr(B);
#pragma unroll
    for (int nt = 0; nt + 1 < NT; nt += 2)
      load_b<KIND, TRANS_B, TileB, true>(f.b[buf][nt], f.b[buf][nt + 1], b_addr.at(b_base, ks, nt / 2), B, b_row0,
                                         b_col0, n_base + nt * 8, ks * KK, lane);
    if (NT % 2 == 1)
      load_b<KIND, TRANS_B, TileB, false>(f.b[buf][NT - 1], f.b[buf][NT - 1], b_addr.at(b_base, ks, NT / 2), B,
                                          b_row0, b_col0, n_base + (NT - 1) * 8, ks * KK, lane);
  }

  // The mma.sync of one k-step, accumulating into C: A registers of m tile mt at a_of(mt),
  // B fragments b[nt].
  template <typename TC, class AOf>
  __device__ __forceinline__ static void mma_tiles(AOf a_of, const unsigned (&b)[NT][2], TC* C) {
    static_assert(same_type<TC, typename Tr::Acc>::value,
                  "gemm_ss: the accumulator type must be float (f16/bf16/tf32) or int (int8)");
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int nt = (mt & 1) ? NT - 1 - j : j;  // serpentine: reuse the last B fragment
        Tr::run(C + (mt * NT + nt) * 4, a_of(mt), b[nt]);
      }
    }
  }

  // The mma.sync of the fragments in slot `buf`.
  template <typename TC>
  __device__ __forceinline__ static void mma_step(const Frags& f, int buf, TC* C) {
    mma_tiles([&](int mt) { return f.a[buf][mt]; }, f.b[buf], C);
  }

  template <typename TC>
  __device__ __forceinline__ static void clear(TC* C) {
#pragma unroll
    for (int i = 0; i < MT * NT * 4; ++i) C[i] = TC(0);
  }
};

}  // namespace gemm_detail

template <int M, int N, int K, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, bool CLEAR_ACCUM, class TileA,
          class TileB, int KIND, typename TA, typename TB, typename TC>
__device__ __forceinline__ void gemm_ss(const TA* A, int a_row0, int a_col0, const TB* B, int b_row0, int b_col0,
                                        TC* C, int thread_idx) {
  using Core = gemm_detail::GemmSsCore<M, N, K, WARP_M, WARP_N, TRANS_A, TRANS_B, TileA, TileB, KIND, TA, TB>;
  const Core core(a_row0, a_col0, b_row0, b_col0, thread_idx);
  if (CLEAR_ACCUM) Core::clear(C);
  typename Core::Frags f;
  core.load_step(f, 0, 0, A, B);
#pragma unroll
  for (int ks = 0; ks < Core::KS; ++ks) {
    if (ks + 1 < Core::KS) core.load_step(f, (ks + 1) & 1, ks + 1, A, B);
    Core::mma_step(f, ks & 1, C);
  }
}

// A in registers: C[M x N] (+)= A * op(B) with A (M x K, 16-bit) a register fragment in the
// accumulator layout over M x K with WARP_N = 1 (tl::layout::c_frag_thread / c_frag_index
// (i, k, M, K, WARP_M, 1)), B as in gemm_ss. In that layout thread warp(i) * 32 +
// (i % 8) * 4 + (k % 8) / 2 holds A[i][k] at register (mt * KS + ks) * 8 + ((k % 16) / 8) * 4
// + ((i % 16) / 8) * 2 + k % 2 (mt = (i % WM) / 16, ks = k / 16): the four 32-bit words at
// element (mt * KS + ks) * 8 are exactly the m16n8k16 A registers a0..a3 of m tile mt and
// k-step ks (mma.cuh), so the fragment a previous T.gemm produced as C, cast element-wise
// to 16 bits, feeds this one with no data movement (FlashAttention's P @ V).
// A must be 4-byte aligned (codegen aligns local arrays whose size is a multiple of 16 bytes).
template <int M, int N, int K, int WARP_M, int WARP_N, bool TRANS_B, bool CLEAR_ACCUM, class TileB, int KIND,
          typename TA, typename TB, typename TC>
__device__ __forceinline__ void gemm_rs(const TA* A, const TB* B, int b_row0, int b_col0, TC* C, int thread_idx) {
  static_assert(WARP_N == 1, "gemm_rs: A in registers needs every warp along M (WARP_N == 1)");
  static_assert(KIND == kMmaF16 || KIND == kMmaBF16, "gemm_rs: A in registers must be float16 or bfloat16");
  // A's shared tile is a placeholder: only B's addressing and the warp's place are used.
  using Core = gemm_detail::GemmSsCore<M, N, K, WARP_M, WARP_N, false, TRANS_B, SmemTile<M, K, 0>, TileB, KIND, TA, TB>;
  const Core core(0, 0, b_row0, b_col0, thread_idx);
  if (CLEAR_ACCUM) Core::clear(C);
  const unsigned* a = reinterpret_cast<const unsigned*>(A);
  typename Core::Frags f;  // only f.b is used
  core.load_b_step(f, 0, 0, B);
#pragma unroll
  for (int ks = 0; ks < Core::KS; ++ks) {
    if (ks + 1 < Core::KS) core.load_b_step(f, (ks + 1) & 1, ks + 1, B);
    Core::mma_tiles([&](int mt) { return a + (mt * Core::KS + ks) * 4; }, f.b[ks & 1], C);
  }
}

// The main loop of a pipelined GEMM with the operand fragments carried across iterations
// (what src/passes/overlap_gemm_mainloop.cc emits in place of a loop
//   for ko: {cp_async_wait(W); __syncthreads(); <cp.async copies>; gemm_ss(stage ko)}):
//
//   cp_async_wait(W); __syncthreads();
//   gemm_ss_prefetch<..., FRAG_WORDS>(stage 0, frag, thread)         k-step 0 of the first tile
//   for ko: {<copies>; gemm_ss_overlap<..., W, FRAG_WORDS>(stage ko, C, thread, frag,
//                                                        stage ko + 1, ko + 1 < n)}
//
// gemm_ss_overlap runs the k-steps of one tile from fragments that are already in `frag`
// (slot 0 holds k-step 0) and, before the mma of the last k-step, does the loop's
// cp_async_wait(W) + __syncthreads() and loads k-step 0 of the next tile (when has_next):
// the barrier and the first ldmatrix of a tile then hide behind the last mma.sync of the
// one before, instead of stalling every warp at the top of the iteration. The operands'
// row0 / col0 must be the same for both tiles. `frag` is a local array of FRAG_WORDS
// (= GemmSsCore::kFragWords, checked) unsigned words that lives across the loop.
template <int M, int N, int K, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, bool CLEAR_ACCUM, class TileA,
          class TileB, int KIND, int FRAG_WORDS, typename TA, typename TB>
__device__ __forceinline__ void gemm_ss_prefetch(const TA* A, int a_row0, int a_col0, const TB* B, int b_row0,
                                                 int b_col0, unsigned* frag, int thread_idx) {
  using Core = gemm_detail::GemmSsCore<M, N, K, WARP_M, WARP_N, TRANS_A, TRANS_B, TileA, TileB, KIND, TA, TB>;
  static_assert(FRAG_WORDS == Core::kFragWords, "gemm_ss_prefetch: fragment storage size mismatch");
  const Core core(a_row0, a_col0, b_row0, b_col0, thread_idx);
  core.load_step(*reinterpret_cast<typename Core::Frags*>(frag), 0, 0, A, B);
}

template <int M, int N, int K, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, bool CLEAR_ACCUM, class TileA,
          class TileB, int KIND, int WAIT_GROUPS, int FRAG_WORDS, typename TA, typename TB, typename TC>
__device__ __forceinline__ void gemm_ss_overlap(const TA* A, int a_row0, int a_col0, const TB* B, int b_row0,
                                                int b_col0, TC* C, int thread_idx, unsigned* frag, const TA* A_next,
                                                const TB* B_next, bool has_next) {
  using Core = gemm_detail::GemmSsCore<M, N, K, WARP_M, WARP_N, TRANS_A, TRANS_B, TileA, TileB, KIND, TA, TB>;
  static_assert(FRAG_WORDS == Core::kFragWords, "gemm_ss_overlap: fragment storage size mismatch");
  const Core core(a_row0, a_col0, b_row0, b_col0, thread_idx);
  typename Core::Frags& f = *reinterpret_cast<typename Core::Frags*>(frag);
  if (CLEAR_ACCUM) Core::clear(C);
#pragma unroll
  for (int ks = 0; ks < Core::KS; ++ks) {
    if (ks + 1 < Core::KS) {
      core.load_step(f, (ks + 1) & 1, ks + 1, A, B);
    } else {
      cp_async_wait(WAIT_GROUPS);
      __syncthreads();
      if (has_next) core.load_step(f, Core::KS & 1, 0, A_next, B_next);
    }
    Core::mma_step(f, ks & 1, C);
  }
  if (Core::KS & 1) {  // k-step 0 of the next tile went to slot 1: the next call reads slot 0
#pragma unroll
    for (int mt = 0; mt < Core::MT; ++mt)
#pragma unroll
      for (int q = 0; q < 4; ++q) f.a[0][mt][q] = f.a[1][mt][q];
#pragma unroll
    for (int nt = 0; nt < Core::NT; ++nt) f.b[0][nt][0] = f.b[1][nt][0], f.b[0][nt][1] = f.b[1][nt][1];
  }
}

// FMA fallback: C[M x N] (+)= op(A) * op(B) on CUDA cores, TM * TN threads, the fragment
// of tl::layout::fma_frag_thread / fma_frag_index. Operands as in gemm_ss.
template <int M, int N, int K, int TM, int TN, bool TRANS_A, bool TRANS_B, bool CLEAR_ACCUM, class TileA, class TileB,
          typename TA, typename TB, typename TC>
__device__ __forceinline__ void gemm_fma_ss(const TA* A, int a_row0, int a_col0, const TB* B, int b_row0, int b_col0,
                                            TC* C, int thread_idx) {
  static_assert(M % TM == 0 && N % TN == 0, "gemm_fma_ss: the thread grid must divide the tile");
  constexpr int RM = M / TM, RN = N / TN;
  const int ti = thread_idx / TN, tj = thread_idx % TN;
  if (CLEAR_ACCUM) {
#pragma unroll
    for (int i = 0; i < RM * RN; ++i) C[i] = TC(0);
  }
#pragma unroll 2
  for (int k = 0; k < K; ++k) {
    TC av[RM], bv[RN];
#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const int m = ti + TM * i;
      av[i] = static_cast<TC>(A[TRANS_A ? TileA::offset(a_row0 + k, a_col0 + m, sizeof(TA))
                                        : TileA::offset(a_row0 + m, a_col0 + k, sizeof(TA))]);
    }
#pragma unroll
    for (int j = 0; j < RN; ++j) {
      const int n = tj + TN * j;
      bv[j] = static_cast<TC>(B[TRANS_B ? TileB::offset(b_row0 + n, b_col0 + k, sizeof(TB))
                                        : TileB::offset(b_row0 + k, b_col0 + n, sizeof(TB))]);
    }
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < RN; ++j) C[i * RN + j] += av[i] * bv[j];
  }
}

}  // namespace tl
