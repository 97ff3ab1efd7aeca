// The device GEMM library compiles with NVRTC (from the embedded headers, the way the
// runtime compiles generated kernels) for sm_80 and sm_90a, and the code uses the intended
// instructions: mma.sync (HMMA), ldmatrix (LDSM), cp.async (LDGSTS), without spills.
#include <gtest/gtest.h>

#include <string>

#include "gemm_test_nvrtc.h"

namespace {

// A pipelined block GEMM as the compiler emits it for
//   for ko in T.Pipelined(K / 32, num_stages=3): T.copy(...); T.copy(...); T.gemm(A_s, B_s, C)
// Element types are raw 16-bit / 32-bit / 8-bit integers: the device GEMM needs only their size.
const char* kPipelinedGemm = R"(
#include "tilec/gemm_sm80.cuh"
template <int R, int COLS, typename T>
__device__ void load_tile(T* dst, const T* src, int ld, int r0, int c0, int rows, int cols) {
  constexpr int V = 16 / sizeof(T);
  using Tile = tl::SmemTile<R, COLS, tl::layout::widest_swizzle_bits(R, COLS, sizeof(T))>;
  for (int c = threadIdx.x; c < R * COLS / V; c += 128) {
    const int r = c / (COLS / V), cc = c % (COLS / V) * V;
    tl::cp_async_cg16_zfill(dst + Tile::offset(r, cc, sizeof(T)), src + (r0 + r) * ld + c0 + cc,
                            r0 + r < rows && c0 + cc < cols);
  }
}
template <int KIND, typename T, typename Acc, bool TA, bool TB>
__device__ void block_gemm(const T* A, const T* B, Acc* C, int M, int N, int K) {
  constexpr int BM = 64, BN = 64, BK = 64 / sizeof(T), STAGES = 3;  // 64-byte rows of K
  extern __shared__ __align__(128) unsigned char smem[];
  T* As = reinterpret_cast<T*>(smem);
  T* Bs = As + STAGES * BM * BK;
  const int tid = threadIdx.x;
  Acc acc[32];
  for (int i = 0; i < 32; ++i) acc[i] = Acc(0);
  auto issue = [&](int kt, int slot) {
    load_tile<BM, BK>(As + slot * BM * BK, A, K, blockIdx.y * BM, kt * BK, M, K);
    if (TB) load_tile<BN, BK>(Bs + slot * BN * BK, B, K, blockIdx.x * BN, kt * BK, N, K);
    else load_tile<BK, BN>(Bs + slot * BN * BK, B, N, kt * BK, blockIdx.x * BN, K, N);
  };
  const int kt_n = (K + BK - 1) / BK;
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < kt_n) issue(s, s);
    tl::cp_async_commit();
  }
  for (int kt = 0; kt < kt_n; ++kt) {
    tl::cp_async_wait(STAGES - 2);
    __syncthreads();
    if (kt + STAGES - 1 < kt_n) issue(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
    tl::cp_async_commit();
    const int slot = kt % STAGES;
    using TileA = tl::SmemTile<BM, BK, tl::layout::widest_swizzle_bits(BM, BK, sizeof(T))>;
    using TileB = tl::SmemTile<TB ? BN : BK, TB ? BK : BN, tl::layout::widest_swizzle_bits(TB ? BN : BK, TB ? BK : BN, sizeof(T))>;
    tl::gemm_ss<BM, BN, BK, 2, 2, TA, TB, false, TileA, TileB, KIND>(As + slot * BM * BK, 0, 0, Bs + slot * BN * BK, 0, 0,
                                                                    acc, tid);
  }
  for (int i = 0; i < 32; ++i) C[((blockIdx.y * gridDim.x + blockIdx.x) * 128 + tid) * 32 + i] = acc[i];
}
extern "C" __global__ void __launch_bounds__(128) gemm_bf16_nt(const unsigned short* A, const unsigned short* B,
                                                               float* C, int M, int N, int K) {
  block_gemm<tl::kMmaBF16, unsigned short, float, false, true>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(128) gemm_f16_nn(const unsigned short* A, const unsigned short* B,
                                                              float* C, int M, int N, int K) {
  block_gemm<tl::kMmaF16, unsigned short, float, false, false>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(128) gemm_tf32_nt(const float* A, const float* B, float* C, int M, int N, int K) {
  block_gemm<tl::kMmaTF32, float, float, false, true>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(128) gemm_s8_nt(const signed char* A, const signed char* B, int* C,
                                                             int M, int N, int K) {
  block_gemm<tl::kMmaS8, signed char, int, false, true>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(256) gemm_fma(const float* A, const float* B, float* C) {
  __shared__ float As[32 * 16], Bs[16 * 32];
  for (int i = threadIdx.x; i < 32 * 16; i += 256) As[i] = A[i], Bs[i] = B[i];
  __syncthreads();
  float acc[4];
  tl::gemm_fma_ss<32, 32, 16, 16, 16, false, false, true, tl::SmemTile<32, 16, 0>, tl::SmemTile<16, 32, 0>>(
      As, 0, 0, Bs, 0, 0, acc, threadIdx.x);
  for (int i = 0; i < 4; ++i) C[threadIdx.x * 4 + i] = acc[i];
}
)";

class DeviceGemmCompile : public ::testing::TestWithParam<const char*> {};

TEST_P(DeviceGemmCompile, UsesMmaLdmatrixAndCpAsync) {
  auto* nvrtc = gemm_test::Nvrtc::get();
  if (!nvrtc) GTEST_SKIP() << "NVRTC not found";
  const std::string arch = GetParam();
  gemm_test::NvrtcOutput out = nvrtc->compile(kPipelinedGemm, arch);
  ASSERT_TRUE(out.ok) << out.log;
  for (const char* ins :
       {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 1", "cvt.rna.tf32.f32"}) {
    EXPECT_NE(out.ptx.find(ins), std::string::npos) << "PTX lacks " << ins;
  }
  // ptxas -v: "<n> bytes spill stores" for every kernel; all must be 0.
  for (size_t at = out.log.find(" bytes spill stores"); at != std::string::npos;
       at = out.log.find(" bytes spill stores", at + 1)) {
    size_t start = out.log.find_last_not_of("0123456789", at - 1);
    EXPECT_EQ(out.log.substr(start + 1, at - start - 1), "0") << out.log;
  }
  auto sass = gemm_test::disassemble(out.cubin);
  if (!sass) GTEST_SKIP() << "cuobjdump/nvdisasm not installed: SASS not checked";
  for (const char* ins : {"HMMA.16816.F32.BF16", "HMMA.16816.F32", "HMMA.1688.F32.TF32", "IMMA.16832.S8.S8",
                          "LDSM.16.M88.4", "LDSM.16.MT88.4", "LDGSTS.E.BYPASS.128", "LDGDEPBAR", "DEPBAR.LE SB0, 0x1"}) {
    EXPECT_NE(sass->find(ins), std::string::npos) << "SASS lacks " << ins;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, DeviceGemmCompile, ::testing::Values("sm_80", "sm_90a"));

}  // namespace
