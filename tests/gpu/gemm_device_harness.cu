// Standalone check of the device GEMM library (src/device/cuda/gemm_sm80.cuh, cp_async.cuh)
// on a GPU, independent of the compiler: a multistage cp.async pipeline around
// tl::gemm_ss, written the way the compiler lowers
//
//   for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=STAGES):
//       T.copy(A[...], A_shared); T.copy(B[...], B_shared); T.gemm(A_shared, B_shared, C_local)
//
// i.e. swizzled shared tiles filled by 16-byte cp.async with zero-fill for partial tiles,
// STAGES-1 tiles in flight, one __syncthreads per k-tile, swizzled CTA rasterisation.
//
// Correctness: every configuration against a float64 GPU reference on random inputs with
// poisoned outputs (the reference itself is spot-checked against a float64 CPU dot product),
// at sizes that are and are not multiples of the tile. Performance (--perf): bf16 at
// 4096^3 and 8192^3 against cuBLAS (cublasGemmEx bf16 in/out, f32 compute) in the same run.
//
// Build and run: tests/gpu/run_gemm_harness.sh [--perf] [--arch sm_90a]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tilec/gemm_sm80.cuh"

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)
#define CKB(call)                                                                                  \
  do {                                                                                             \
    cublasStatus_t st_ = (call);                                                                   \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                            \
      std::fprintf(stderr, "%s:%d: %s failed: status %d\n", __FILE__, __LINE__, #call, int(st_)); \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

// ---------------------------------------------------------------------------------------
// element types

template <int KIND>
struct KindTypes;
template <>
struct KindTypes<tl::kMmaBF16> {
  using In = __nv_bfloat16;
  using Acc = float;
  using Out = __nv_bfloat16;
  static constexpr const char* name = "bf16";
};
template <>
struct KindTypes<tl::kMmaF16> {
  using In = __half;
  using Acc = float;
  using Out = __half;
  static constexpr const char* name = "f16";
};
template <>
struct KindTypes<tl::kMmaTF32> {
  using In = float;
  using Acc = float;
  using Out = float;
  static constexpr const char* name = "tf32";
};
template <>
struct KindTypes<tl::kMmaS8> {
  using In = int8_t;
  using Acc = int;
  using Out = int;
  static constexpr const char* name = "int8";
};
constexpr int kFma = 100;  // f32 on CUDA cores through tl::gemm_fma_ss
template <>
struct KindTypes<kFma> {
  using In = float;
  using Acc = float;
  using Out = float;
  static constexpr const char* name = "fma-f32";
};

__host__ __device__ inline double to_double(__nv_bfloat16 x) { return double(__bfloat162float(x)); }
__host__ __device__ inline double to_double(__half x) { return double(__half2float(x)); }
__host__ __device__ inline double to_double(float x) { return double(x); }
__host__ __device__ inline double to_double(int8_t x) { return double(x); }
__host__ __device__ inline double to_double(int x) { return double(x); }

__device__ inline void store_out(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ inline void store_out(__half* p, float v) { *p = __float2half_rn(v); }
__device__ inline void store_out(float* p, float v) { *p = v; }
__device__ inline void store_out(int* p, int v) { *p = v; }

// ---------------------------------------------------------------------------------------
// the kernel under test

// Fills the stored tile (Tile: R x COLS, swizzled per its mode) from the row-major global
// matrix (grows x gcols) at (r0, c0) with 16-byte cp.async; chunks outside the matrix read
// zeros. Requires gcols to be a multiple of the chunk (checked on the host).
template <class Tile, int THREADS, typename T>
__device__ __forceinline__ void load_tile(T* smem, const T* g, int grows, int gcols, int r0, int c0, int tid) {
  constexpr int R = Tile::kRows, COLS = Tile::kCols;
  constexpr int V = 16 / sizeof(T);
  constexpr int CHUNKS = R * COLS / V;
  static_assert(COLS % V == 0, "tile rows must be whole 16-byte chunks");
#pragma unroll
  for (int it = 0; it < (CHUNKS + THREADS - 1) / THREADS; ++it) {
    const int c = it * THREADS + tid;
    if (CHUNKS % THREADS == 0 || c < CHUNKS) {
      const int r = c / (COLS / V), cc = (c % (COLS / V)) * V;
      const int gr = r0 + r, gc = c0 + cc;
      // 32-bit index arithmetic, as the compiler emits it; with zero-fill the source is not
      // read when the predicate is false, so the address may lie outside the matrix.
      tl::cp_async_cg16_zfill(smem + Tile::offset(r, cc, sizeof(T)), g + (gr * gcols + gc),
                              gr < grows && gc < gcols);
    }
  }
}

template <int BM, int BN, int BK, int WARP_M, int WARP_N, int STAGES, bool TRANS_A, bool TRANS_B, int KIND,
          bool SWIZZLE, bool COPY_AFTER = false, bool OVERLAP = false>
struct Config {
  // OVERLAP: the main loop overlap_gemm_mainloop emits (tl::gemm_ss_prefetch before the loop,
  // tl::gemm_ss_overlap in it: the wait + barrier run before the last k-step of each tile).
  static constexpr bool kOverlap = OVERLAP;
  // COPY_AFTER: issue the next tile's cp.async after the gemm instead of before it (the
  // order T.Pipelined(..., order=[1, 2, 0], stage=[0, 0, 1]) gives): shorter bubble after
  // the barrier, one iteration less lead time for the loads.
  static constexpr bool kCopyAfter = COPY_AFTER;
  static constexpr int kThreads = KIND == kFma ? 256 : WARP_M * WARP_N * 32;
  using In = typename KindTypes<KIND>::In;
  using Acc = typename KindTypes<KIND>::Acc;
  using Out = typename KindTypes<KIND>::Out;
  // Stored tiles: A is BK x BM or BM x BK, B is BN x BK or BK x BN; the widest swizzle.
  static constexpr int kArows = TRANS_A ? BK : BM, kAcols = TRANS_A ? BM : BK;
  static constexpr int kBrows = TRANS_B ? BN : BK, kBcols = TRANS_B ? BK : BN;
  using TileA = tl::SmemTile<kArows, kAcols,
                             SWIZZLE ? tl::layout::widest_swizzle_bits(kArows, kAcols, sizeof(In)) : 0>;
  using TileB = tl::SmemTile<kBrows, kBcols,
                             SWIZZLE ? tl::layout::widest_swizzle_bits(kBrows, kBcols, sizeof(In)) : 0>;
  static constexpr int kTileA = BM * BK, kTileB = BN * BK;
  static constexpr size_t kSmemBytes = size_t(STAGES) * (kTileA + kTileB) * sizeof(In);
  // FMA: 16 x 16 threads, cyclic
  static constexpr int kFmaTm = 16, kFmaTn = 16;
  static constexpr int kFrag =
      KIND == kFma ? (BM / kFmaTm) * (BN / kFmaTn) : tl::layout::c_frag_size(BM, BN, WARP_M, WARP_N);
};

// The T.gemm of the loop body: one call of the device library, as the compiler emits it.
template <class Cfg, int BM, int BN, int BK, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, int KIND,
          typename In>
using CoreOf = tl::gemm_detail::GemmSsCore<BM, BN, BK, WARP_M, WARP_N, TRANS_A, TRANS_B, typename Cfg::TileA,
                                           typename Cfg::TileB, KIND, In, In>;

template <bool FMA>
struct BlockGemm;
template <>
struct BlockGemm<false> {
  template <class Cfg, int BM, int BN, int BK, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, int KIND,
            bool SWIZZLE, typename In, typename Acc>
  __device__ __forceinline__ static void run(const In* As, const In* Bs, Acc* acc, int tid) {
    tl::gemm_ss<BM, BN, BK, WARP_M, WARP_N, TRANS_A, TRANS_B, false, typename Cfg::TileA, typename Cfg::TileB, KIND>(
        As, 0, 0, Bs, 0, 0, acc, tid);
  }
};
template <>
struct BlockGemm<true> {
  template <class Cfg, int BM, int BN, int BK, int WARP_M, int WARP_N, bool TRANS_A, bool TRANS_B, int KIND,
            bool SWIZZLE, typename In, typename Acc>
  __device__ __forceinline__ static void run(const In* As, const In* Bs, Acc* acc, int tid) {
    tl::gemm_fma_ss<BM, BN, BK, Cfg::kFmaTm, Cfg::kFmaTn, TRANS_A, TRANS_B, false, typename Cfg::TileA,
                    typename Cfg::TileB>(As, 0, 0, Bs, 0, 0, acc, tid);
  }
};

template <class Cfg, int BM, int BN, int BK, int WARP_M, int WARP_N, int STAGES, bool TRANS_A, bool TRANS_B,
          int KIND, bool SWIZZLE>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    gemm_kernel(const typename Cfg::In* __restrict__ A, const typename Cfg::In* __restrict__ B,
                typename Cfg::Out* __restrict__ C, int M, int N, int K, int group_m) {
  using In = typename Cfg::In;
  using Acc = typename Cfg::Acc;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  In* As = reinterpret_cast<In*>(smem_raw);
  In* Bs = As + STAGES * Cfg::kTileA;
  const int tid = threadIdx.x;

  // Grouped rasterisation: group_m tile-rows are walked column by column, so consecutive
  // CTAs share A and B tiles in L2.
  const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x;
  const int per_group = group_m * grid_n;
  const int first_m = (pid / per_group) * group_m;
  const int group_rows = min(grid_m - first_m, group_m);
  const int bm = first_m + (pid % per_group) % group_rows;
  const int bn = (pid % per_group) / group_rows;

  Acc acc[Cfg::kFrag];
#pragma unroll
  for (int i = 0; i < Cfg::kFrag; ++i) acc[i] = Acc(0);

  const int k_tiles = (K + BK - 1) / BK;
  auto issue = [&](int kt, int slot) {
    using TA = typename Cfg::TileA;
    using TB = typename Cfg::TileB;
    if (TRANS_A)
      load_tile<TA, Cfg::kThreads>(As + slot * Cfg::kTileA, A, K, M, kt * BK, bm * BM, tid);
    else
      load_tile<TA, Cfg::kThreads>(As + slot * Cfg::kTileA, A, M, K, bm * BM, kt * BK, tid);
    if (TRANS_B)
      load_tile<TB, Cfg::kThreads>(Bs + slot * Cfg::kTileB, B, N, K, bn * BN, kt * BK, tid);
    else
      load_tile<TB, Cfg::kThreads>(Bs + slot * Cfg::kTileB, B, K, N, kt * BK, bn * BN, tid);
  };

  // prologue: tiles 0 .. STAGES-2, one commit group each (empty when past the end)
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) issue(s, s);
    tl::cp_async_commit();
  }
  if constexpr (Cfg::kOverlap && KIND != kFma) {
    using Core = CoreOf<Cfg, BM, BN, BK, WARP_M, WARP_N, TRANS_A, TRANS_B, KIND, In>;
    constexpr int F = Core::kFragWords;
    unsigned frag[F];
    tl::cp_async_wait(STAGES - 2);
    __syncthreads();
    tl::gemm_ss_prefetch<BM, BN, BK, WARP_M, WARP_N, TRANS_A, TRANS_B, false, typename Cfg::TileA,
                         typename Cfg::TileB, KIND, F>(As, 0, 0, Bs, 0, 0, frag, tid);
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int next = kt + STAGES - 1;
      if (next < k_tiles) issue(next, next % STAGES);
      tl::cp_async_commit();
      const int slot = kt % STAGES, nslot = (kt + 1) % STAGES;
      tl::gemm_ss_overlap<BM, BN, BK, WARP_M, WARP_N, TRANS_A, TRANS_B, false, typename Cfg::TileA,
                          typename Cfg::TileB, KIND, STAGES - 2, F>(
          As + slot * Cfg::kTileA, 0, 0, Bs + slot * Cfg::kTileB, 0, 0, acc, tid, frag, As + nslot * Cfg::kTileA,
          Bs + nslot * Cfg::kTileB, kt + 1 < k_tiles);
    }
  } else {
  for (int kt = 0; kt < k_tiles; ++kt) {
    tl::cp_async_wait(STAGES - 2);  // tile kt has landed (for this thread)
    __syncthreads();                // ... for every thread; and slot (kt-1) % STAGES is free
    const int next = kt + STAGES - 1;
    if (!Cfg::kCopyAfter) {
      if (next < k_tiles) issue(next, next % STAGES);
      tl::cp_async_commit();
    }
    const int slot = kt % STAGES;
    BlockGemm<KIND == kFma>::template run<Cfg, BM, BN, BK, WARP_M, WARP_N, TRANS_A, TRANS_B, KIND, SWIZZLE>(
        As + slot * Cfg::kTileA, Bs + slot * Cfg::kTileB, acc, tid);
    if (Cfg::kCopyAfter) {
      if (next < k_tiles) issue(next, next % STAGES);
      tl::cp_async_commit();
    }
  }
  }
  tl::cp_async_wait(0);

  // epilogue: every register to its (i, j) through the fragment layout
#pragma unroll
  for (int r = 0; r < Cfg::kFrag; ++r) {
    int i, j;
    if (KIND == kFma) {
      const int ti = tid / Cfg::kFmaTn, tj = tid % Cfg::kFmaTn;
      i = ti + Cfg::kFmaTm * (r / (BN / Cfg::kFmaTn));
      j = tj + Cfg::kFmaTn * (r % (BN / Cfg::kFmaTn));
    } else {
      constexpr int WM = BM / WARP_M, WN = BN / WARP_N, NT = WN / 8;
      const int lane = tid & 31, warp = tid >> 5;
      const int tile = r / 4, mt = tile / NT, nt = tile % NT;
      i = (warp % WARP_M) * WM + mt * 16 + ((r % 4) / 2) * 8 + lane / 4;
      j = (warp / WARP_M) * WN + nt * 8 + (lane % 4) * 2 + r % 2;
    }
    const int gi = bm * BM + i, gj = bn * BN + j;
    if (gi < M && gj < N) store_out(C + size_t(gi) * N + gj, acc[r]);
  }
}

// ---------------------------------------------------------------------------------------
// float64 reference on the GPU (16 x 16 shared tiles)

template <typename T>
__global__ void reference_gemm(const T* A, const T* B, double* C, int M, int N, int K, bool trans_a, bool trans_b) {
  __shared__ double as[16][17], bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * 16 + ty, j = blockIdx.x * 16 + tx;
  double s = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + tx, kb = k0 + ty;
    const int ai = blockIdx.y * 16 + ty;
    as[ty][tx] = (ai < M && ka < K) ? to_double(trans_a ? A[size_t(ka) * M + ai] : A[size_t(ai) * K + ka]) : 0.0;
    bs[ty][tx] = (j < N && kb < K) ? to_double(trans_b ? B[size_t(j) * K + kb] : B[size_t(kb) * N + j]) : 0.0;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) s += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  if (i < M && j < N) C[size_t(i) * N + j] = s;
}

// ---------------------------------------------------------------------------------------
// tl::gemm_rs: a chain C2 = half(A * B) * D in one block, the way FlashAttention's P @ V
// runs: C1 from tl::gemm_ss (WARP_N = 1), cast element-wise to 16 bits in registers, fed
// to tl::gemm_rs as A with no data movement. Shared tiles swizzled as the compiler does.

template <int M, int K1, int N1, int N2, int WARP_M, bool TRANS_B, int KIND>
__global__ void __launch_bounds__(WARP_M * 32)
    gemm_rs_chain_kernel(const typename KindTypes<KIND>::In* A, const typename KindTypes<KIND>::In* B,
                         const typename KindTypes<KIND>::In* D, float* C1_out, float* C2_out) {
  using In = typename KindTypes<KIND>::In;
  constexpr int E = sizeof(In);
  constexpr int DR = TRANS_B ? N2 : N1, DC = TRANS_B ? N1 : N2;  // D stored N2 x N1 when TRANS_B
  using TA = tl::SmemTile<M, K1, tl::layout::widest_swizzle_bits(M, K1, E)>;
  using TB = tl::SmemTile<K1, N1, tl::layout::widest_swizzle_bits(K1, N1, E)>;
  using TD = tl::SmemTile<DR, DC, tl::layout::widest_swizzle_bits(DR, DC, E)>;
  __shared__ __align__(1024) In As[M * K1];
  __shared__ __align__(1024) In Bs[K1 * N1];
  __shared__ __align__(1024) In Ds[DR * DC];
  const int tid = threadIdx.x;
  for (int x = tid; x < M * K1; x += blockDim.x) As[TA::offset(x / K1, x % K1, E)] = A[x];
  for (int x = tid; x < K1 * N1; x += blockDim.x) Bs[TB::offset(x / N1, x % N1, E)] = B[x];
  for (int x = tid; x < DR * DC; x += blockDim.x) Ds[TD::offset(x / DC, x % DC, E)] = D[x];
  __syncthreads();
  constexpr int R1 = tl::layout::c_frag_size(M, N1, WARP_M, 1), R2 = tl::layout::c_frag_size(M, N2, WARP_M, 1);
  float c1[R1], c2[R2];
  tl::gemm_ss<M, N1, K1, WARP_M, 1, false, false, true, TA, TB, KIND>(As, 0, 0, Bs, 0, 0, c1, tid);
  alignas(16) In p[R1];
#pragma unroll
  for (int r = 0; r < R1; ++r) store_out(&p[r], c1[r]);
  tl::gemm_rs<M, N2, N1, WARP_M, 1, TRANS_B, true, TD, KIND>(p, Ds, 0, 0, c2, tid);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N1; ++j)
      if (tl::layout::c_frag_thread(i, j, M, N1, WARP_M, 1) == tid)
        C1_out[i * N1 + j] = c1[tl::layout::c_frag_index(i, j, M, N1, WARP_M, 1)];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N2; ++j)
      if (tl::layout::c_frag_thread(i, j, M, N2, WARP_M, 1) == tid)
        C2_out[i * N2 + j] = c2[tl::layout::c_frag_index(i, j, M, N2, WARP_M, 1)];
}

#ifndef TILEC_HARNESS_KERNELS_ONLY  // (the SASS inspection in the CPU tests compiles only the kernels)
// ---------------------------------------------------------------------------------------
// host side

template <typename T>
T from_double(double v);
template <>
__nv_bfloat16 from_double(double v) { return __float2bfloat16(float(v)); }
template <>
__half from_double(double v) { return __float2half(float(v)); }
template <>
float from_double(double v) { return float(v); }
template <>
int8_t from_double(double v) { return int8_t(v); }

template <typename T>
std::vector<T> random_matrix(size_t n, std::mt19937& rng, bool integer) {
  std::vector<T> v(n);
  std::uniform_real_distribution<double> uf(-1.0, 1.0);
  std::uniform_int_distribution<int> ui(-128, 127);
  for (auto& x : v) x = from_double<T>(integer ? double(ui(rng)) : uf(rng));
  return v;
}

struct Result {
  bool ok = true;
  double max_err = 0, ref_rms = 0, ms = 0;
};

int g_failures = 0;
int g_checks = 0;

template <class Cfg, int BM, int BN, int BK, int WARP_M, int WARP_N, int STAGES, bool TRANS_A, bool TRANS_B, int KIND,
          bool SWIZZLE>
Result run_config(int M, int N, int K, bool check, int timing_iters, uint64_t seed) {
  using In = typename Cfg::In;
  using Out = typename Cfg::Out;
  constexpr int V = 16 / sizeof(In);
  // 16-byte chunks of the contiguous dimensions must not straddle the matrix edge.
  if ((TRANS_A ? M : K) % V != 0 || (TRANS_B ? K : N) % V != 0) {
    std::fprintf(stderr, "size %dx%dx%d: contiguous dims must be multiples of %d for this harness\n", M, N, K, V);
    std::exit(2);
  }
  std::mt19937 rng(static_cast<unsigned>(seed));
  const bool integer = KIND == tl::kMmaS8;
  std::vector<In> hA = random_matrix<In>(size_t(M) * K, rng, integer);
  std::vector<In> hB = random_matrix<In>(size_t(K) * N, rng, integer);
  In *dA, *dB;
  Out* dC;
  CK(cudaMalloc(&dA, hA.size() * sizeof(In)));
  CK(cudaMalloc(&dB, hB.size() * sizeof(In)));
  CK(cudaMalloc(&dC, size_t(M) * N * sizeof(Out)));
  CK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(In), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(In), cudaMemcpyHostToDevice));
  CK(cudaMemset(dC, 0xFF, size_t(M) * N * sizeof(Out)));  // poison: NaN / -1 where unwritten

  auto kernel = gemm_kernel<Cfg, BM, BN, BK, WARP_M, WARP_N, STAGES, TRANS_A, TRANS_B, KIND, SWIZZLE>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Cfg::kSmemBytes)));
  const int grid = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const int group_m = 8;
  auto launch = [&] {
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes>>>(dA, dB, dC, M, N, K, group_m);
    CK(cudaGetLastError());
  };
  launch();
  CK(cudaDeviceSynchronize());

  Result res;
  if (check) {
    double* dRef;
    CK(cudaMalloc(&dRef, size_t(M) * N * sizeof(double)));
    dim3 rb(16, 16), rg((N + 15) / 16, (M + 15) / 16);
    reference_gemm<In><<<rg, rb>>>(dA, dB, dRef, M, N, K, TRANS_A, TRANS_B);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<double> ref(size_t(M) * N);
    std::vector<Out> out(size_t(M) * N);
    CK(cudaMemcpy(ref.data(), dRef, ref.size() * sizeof(double), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data(), dC, out.size() * sizeof(Out), cudaMemcpyDeviceToHost));
    CK(cudaFree(dRef));
    // The GPU reference itself, against a CPU float64 dot product at sampled points.
    std::uniform_int_distribution<int> pi(0, M - 1), pj(0, N - 1);
    for (int s = 0; s < 64; ++s) {
      const int i = s == 0 ? M - 1 : pi(rng), j = s == 0 ? N - 1 : pj(rng);
      double acc = 0;
      for (int k = 0; k < K; ++k)
        acc += to_double(TRANS_A ? hA[size_t(k) * M + i] : hA[size_t(i) * K + k]) *
               to_double(TRANS_B ? hB[size_t(j) * K + k] : hB[size_t(k) * N + j]);
      if (std::fabs(acc - ref[size_t(i) * N + j]) > 1e-9 * (1 + std::fabs(acc))) {
        std::fprintf(stderr, "reference kernel disagrees with the CPU at (%d, %d): %g vs %g\n", i, j,
                     ref[size_t(i) * N + j], acc);
        std::exit(3);
      }
    }
    double ss = 0;
    for (double r : ref) ss += r * r;
    res.ref_rms = std::sqrt(ss / double(ref.size()));
    // bf16/f16 outputs carry their own rounding (2^-9 / 2^-12 relative); tf32 products 2^-11.
    const double rtol = KIND == tl::kMmaBF16 ? 1.0 / 128 : KIND == tl::kMmaF16 ? 1.0 / 512
                        : KIND == tl::kMmaTF32 ? 4e-3 : KIND == kFma ? 1e-4 : 0.0;
    const double atol = rtol * res.ref_rms;
    int reported = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        const double o = to_double(out[size_t(i) * N + j]), r = ref[size_t(i) * N + j];
        const double err = std::fabs(o - r);
        if (!(err <= atol + rtol * std::fabs(r))) {  // also catches NaN (poison)
          res.ok = false;
          if (reported++ < 5) std::fprintf(stderr, "    mismatch at (%d, %d): got %g, want %g\n", i, j, o, r);
        }
        if (std::isfinite(err)) res.max_err = std::max(res.max_err, err);
        else res.max_err = INFINITY;
      }
  }
  if (timing_iters > 0) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> times;
    for (int rep = 0; rep < 7; ++rep) {
      CK(cudaEventRecord(e0));
      for (int it = 0; it < timing_iters; ++it) launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      times.push_back(ms / timing_iters);
    }
    std::sort(times.begin(), times.end());
    res.ms = times[times.size() / 2];
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
  return res;
}

template <int BM, int BN, int BK, int WARP_M, int WARP_N, int STAGES, bool TRANS_A, bool TRANS_B, int KIND,
          bool SWIZZLE = true, bool COPY_AFTER = false, bool OVERLAP = false>
Result test(int M, int N, int K, bool check, int timing_iters = 0) {
  using Cfg = Config<BM, BN, BK, WARP_M, WARP_N, STAGES, TRANS_A, TRANS_B, KIND, SWIZZLE, COPY_AFTER, OVERLAP>;
  Result r = run_config<Cfg, BM, BN, BK, WARP_M, WARP_N, STAGES, TRANS_A, TRANS_B, KIND, SWIZZLE>(
      M, N, K, check, timing_iters, 1234u + M * 7u + N * 13u + K);
  char label[160];
  std::snprintf(label, sizeof label, "%-7s %s%s %3dx%3dx%2d warps %dx%d stages %d%s%s", KindTypes<KIND>::name,
                TRANS_A ? "T" : "N", TRANS_B ? "T" : "N", BM, BN, BK, WARP_M, WARP_N, STAGES,
                SWIZZLE ? "" : " no-swizzle", COPY_AFTER ? " copy-after" : OVERLAP ? " overlap" : "");
  if (check) {
    ++g_checks;
    if (!r.ok) ++g_failures;
    std::printf("%-4s %-56s %5dx%5dx%5d  max|err| %.3g (ref rms %.3g)\n", r.ok ? "ok" : "FAIL", label, M, N, K,
                r.max_err, r.ref_rms);
  }
  if (timing_iters > 0) {
    const double tflops = 2.0 * M * N * double(K) / (r.ms * 1e-3) / 1e12;
    std::printf("perf %-56s %5dx%5dx%5d  %8.3f ms  %7.1f TFLOP/s\n", label, M, N, K, r.ms, tflops);
  }
  std::fflush(stdout);
  return r;
}

double cublas_bf16_ms(int M, int N, int K, int iters) {
  cublasHandle_t h;
  CKB(cublasCreate(&h));
  std::mt19937 rng(7);
  std::vector<__nv_bfloat16> hA = random_matrix<__nv_bfloat16>(size_t(M) * K, rng, false);
  std::vector<__nv_bfloat16> hB = random_matrix<__nv_bfloat16>(size_t(K) * N, rng, false);
  __nv_bfloat16 *dA, *dB, *dC;
  CK(cudaMalloc(&dA, hA.size() * 2));
  CK(cudaMalloc(&dB, hB.size() * 2));
  CK(cudaMalloc(&dC, size_t(M) * N * 2));
  CK(cudaMemcpy(dA, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
  const float alpha = 1, beta = 0;
  // Row-major C = A B is column-major C^T = B^T A^T.
  auto run = [&] {
    CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, dB, CUDA_R_16BF, N, dA, CUDA_R_16BF, K, &beta, dC,
                     CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  run();
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int rep = 0; rep < 7; ++rep) {
    CK(cudaEventRecord(e0));
    for (int it = 0; it < iters; ++it) run();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms / iters);
  }
  std::sort(times.begin(), times.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));
  CKB(cublasDestroy(h));
  return times[times.size() / 2];
}

// The chain against a float64 host reference: C1 = A * B, then C2 = round16(C1) * D with
// the rounding done on the device's own C1 (so only the second gemm's error is measured).
template <int M, int K1, int N1, int N2, int WARP_M, bool TRANS_B, int KIND>
void test_gemm_rs_chain() {
  using In = typename KindTypes<KIND>::In;
  constexpr int DR = TRANS_B ? N2 : N1, DC = TRANS_B ? N1 : N2;
  std::mt19937 rng(1234 + M + N2 + KIND);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<In> a(M * K1), b(K1 * N1), d(DR * DC);
  for (auto& x : a) x = In(dist(rng));
  for (auto& x : b) x = In(dist(rng));
  for (auto& x : d) x = In(dist(rng));
  In *da, *db, *dd;
  float *dc1, *dc2;
  CK(cudaMalloc(&da, a.size() * sizeof(In)));
  CK(cudaMalloc(&db, b.size() * sizeof(In)));
  CK(cudaMalloc(&dd, d.size() * sizeof(In)));
  CK(cudaMalloc(&dc1, M * N1 * sizeof(float)));
  CK(cudaMalloc(&dc2, M * N2 * sizeof(float)));
  CK(cudaMemcpy(da, a.data(), a.size() * sizeof(In), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), b.size() * sizeof(In), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dd, d.data(), d.size() * sizeof(In), cudaMemcpyHostToDevice));
  CK(cudaMemset(dc1, 0xff, M * N1 * sizeof(float)));  // NaN poison
  CK(cudaMemset(dc2, 0xff, M * N2 * sizeof(float)));
  gemm_rs_chain_kernel<M, K1, N1, N2, WARP_M, TRANS_B, KIND><<<1, WARP_M * 32>>>(da, db, dd, dc1, dc2);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> c1(M * N1), c2(M * N2);
  CK(cudaMemcpy(c1.data(), dc1, c1.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(c2.data(), dc2, c2.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double err1 = 0, err2 = 0;
  bool finite = true;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N1; ++j) {
      double s = 0;
      for (int k = 0; k < K1; ++k) s += to_double(a[i * K1 + k]) * to_double(b[k * N1 + j]);
      finite &= std::isfinite(c1[i * N1 + j]);
      err1 = std::max(err1, std::fabs(double(c1[i * N1 + j]) - s) / (1.0 + std::fabs(s)));
    }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N2; ++j) {
      double s = 0;
      for (int k = 0; k < N1; ++k)
        s += to_double(In(c1[i * N1 + k])) * to_double(TRANS_B ? d[j * N1 + k] : d[k * N2 + j]);
      finite &= std::isfinite(c2[i * N2 + j]);
      err2 = std::max(err2, std::fabs(double(c2[i * N2 + j]) - s) / (1.0 + std::fabs(s)));
    }
  const bool ok = finite && err1 < 1e-4 && err2 < 1e-4;
  ++g_checks;
  if (!ok) ++g_failures;
  std::printf("%s gemm_rs chain %s M=%d K1=%d N1=%d N2=%d warps=%dx1 tB=%d: max rel err %.2e / %.2e\n",
              ok ? "ok  " : "FAIL", KindTypes<KIND>::name, M, K1, N1, N2, WARP_M, int(TRANS_B), err1, err2);
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dd));
  CK(cudaFree(dc1));
  CK(cudaFree(dc2));
}

int main(int argc, char** argv) {
  bool perf = false;
  for (int i = 1; i < argc; ++i) perf |= std::strcmp(argv[i], "--perf") == 0;
  int dev;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);

  // ---- correctness: every operand orientation and kind, full and partial tiles ----
  const int sizes[][3] = {{256, 256, 256}, {200, 136, 72}, {1000, 1000, 1000}};
  for (auto& s : sizes) {
    test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16>(s[0], s[1], s[2], true);
    test<128, 256, 64, 2, 4, 3, false, false, tl::kMmaBF16>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, false, false, tl::kMmaBF16>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, false, true, tl::kMmaF16>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, true, false, tl::kMmaF16>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 2, true, true, tl::kMmaBF16>(s[0], s[1], s[2], true);
    test<64, 64, 64, 2, 2, 2, false, false, tl::kMmaF16>(s[0], s[1], s[2], true);
    test<64, 128, 32, 1, 4, 3, false, false, tl::kMmaBF16>(s[0], s[1], s[2], true);
    test<64, 64, 16, 4, 1, 2, false, false, tl::kMmaF16>(s[0], s[1], s[2], true);  // 16-row warps, 32-byte rows
    test<128, 128, 32, 2, 2, 3, false, false, tl::kMmaBF16, false>(s[0], s[1], s[2], true);
    test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16, true, true>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, false, false, tl::kMmaTF32>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, false, true, tl::kMmaTF32>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, true, false, tl::kMmaTF32>(s[0], s[1], s[2], true);
    test<64, 64, 16, 1, 1, 2, false, false, kFma>(s[0], s[1], s[2], true);
    // the overlapped main loop (tl::gemm_ss_prefetch / gemm_ss_overlap), every path of it:
    // even and odd k-step counts, ldmatrix and scalar operand loads, 2-4 stages
    test<128, 256, 64, 2, 4, 3, false, false, tl::kMmaBF16, true, false, true>(s[0], s[1], s[2], true);
    test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16, true, false, true>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, false, true, tl::kMmaF16, true, false, true>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 2, true, true, tl::kMmaBF16, true, false, true>(s[0], s[1], s[2], true);
    test<64, 64, 16, 4, 1, 2, false, false, tl::kMmaF16, true, false, true>(s[0], s[1], s[2], true);
    test<64, 64, 48, 2, 2, 3, true, false, tl::kMmaF16, true, false, true>(s[0], s[1], s[2], true);
    test<128, 128, 32, 2, 2, 3, true, false, tl::kMmaTF32, true, false, true>(s[0], s[1], s[2], true);
  }
  const int isizes[][3] = {{256, 256, 256}, {208, 144, 144}, {1008, 1008, 1008}};
  for (auto& s : isizes) {
    test<128, 128, 64, 2, 2, 3, false, true, tl::kMmaS8>(s[0], s[1], s[2], true);
    test<128, 128, 64, 2, 2, 3, false, false, tl::kMmaS8>(s[0], s[1], s[2], true);
    test<128, 128, 64, 2, 2, 3, true, true, tl::kMmaS8>(s[0], s[1], s[2], true);
    test<128, 128, 64, 2, 2, 3, false, false, tl::kMmaS8, true, false, true>(s[0], s[1], s[2], true);
  }
  // ---- A in registers (tl::gemm_rs), fed by a gemm_ss accumulator cast to 16 bits ----
  test_gemm_rs_chain<64, 32, 64, 64, 4, false, tl::kMmaF16>();
  test_gemm_rs_chain<64, 64, 64, 128, 4, true, tl::kMmaBF16>();
  test_gemm_rs_chain<128, 64, 64, 64, 8, false, tl::kMmaF16>();
  test_gemm_rs_chain<128, 128, 128, 128, 8, false, tl::kMmaBF16>();
  test_gemm_rs_chain<16, 16, 16, 8, 1, false, tl::kMmaF16>();   // one n8 tile (ldmatrix .x2)
  test_gemm_rs_chain<32, 16, 48, 24, 2, true, tl::kMmaF16>();   // three k-steps, three n8 tiles
  // ---- large bf16 (the performance configurations), also checked ----
  test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16>(4096, 4096, 4096, true);
  test<128, 256, 64, 2, 4, 3, false, false, tl::kMmaBF16>(4096, 4096, 4096, true);
  test<128, 256, 64, 2, 4, 3, false, false, tl::kMmaBF16, true, false, true>(4096, 4096, 4096, true);

  if (perf) {
    for (int n : {4096, 8192}) {
      const int iters = n == 4096 ? 20 : 5;
      const double cublas = cublas_bf16_ms(n, n, n, iters);
      const double flop = 2.0 * n * double(n) * n;
      std::printf("perf %-56s %5dx%5dx%5d  %8.3f ms  %7.1f TFLOP/s\n", "cuBLAS bf16 (cublasGemmEx, f32 compute)", n, n,
                  n, cublas, flop / (cublas * 1e-3) / 1e12);
      auto ratio = [&](const Result& r) {
        std::printf("     -> %.1f%% of cuBLAS\n", 100.0 * cublas / r.ms);
      };
      ratio(test<128, 256, 32, 2, 4, 3, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 256, 64, 2, 4, 3, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 256, 64, 2, 4, 4, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<256, 128, 32, 4, 2, 4, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<256, 128, 64, 4, 2, 3, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 128, 32, 2, 2, 4, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 128, 64, 2, 2, 3, false, false, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 256, 32, 2, 4, 4, false, true, tl::kMmaBF16>(n, n, n, false, iters));
      ratio(test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16, false>(n, n, n, false, iters));
      ratio(test<128, 256, 32, 2, 4, 4, false, false, tl::kMmaBF16, true, true>(n, n, n, false, iters));
      ratio(test<128, 256, 64, 2, 4, 4, false, false, tl::kMmaBF16, true, true>(n, n, n, false, iters));
      ratio(test<128, 256, 32, 2, 4, 5, false, false, tl::kMmaBF16, true, true>(n, n, n, false, iters));
      ratio(test<128, 256, 64, 2, 4, 3, false, false, tl::kMmaBF16, true, false, true>(n, n, n, false, iters));
      ratio(test<128, 256, 64, 2, 4, 4, false, false, tl::kMmaBF16, true, false, true>(n, n, n, false, iters));
      ratio(test<256, 128, 64, 4, 2, 3, false, false, tl::kMmaBF16, true, false, true>(n, n, n, false, iters));
      ratio(test<128, 128, 64, 2, 2, 3, false, false, tl::kMmaBF16, true, false, true>(n, n, n, false, iters));
    }
  }
  std::printf("%d passed, %d failed\n", g_checks - g_failures, g_failures);
  return g_failures == 0 ? 0 : 1;
}
#endif  // TILEC_HARNESS_KERNELS_ONLY
