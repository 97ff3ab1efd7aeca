// fp8 wgmma with A from registers (FlashAttention-3's fp8 P kept in registers): the 8-bit
// register-A fragment the compiler builds is the device formula and the PTX m16n8k32 A
// layout of 8-bit types down a warpgroup's four warps; the quad exchange of
// tl::wgmma_acc_to_a8, simulated lane by lane with its own lane/selector functions and
// CUDA's __byte_perm / __shfl_sync(width 4) semantics, moves every accumulator value to the
// thread and byte that register-A layout names; the fp8 atom gets an rs form without the
// transpose immediate.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/gemm_operands.h"
#include "target/cuda/wgmma_atoms.h"
#include "tilec/layout/layout.h"

#include "../../src/device/cuda/gemm_sm90_layout.cuh"

using namespace tilec;

namespace {

// CUDA's __byte_perm(x, y, s): byte i of the result is byte (s >> 4i) & 7 of {y:x}.
uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t both = (uint64_t(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t((both >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}

TEST(WgmmaA8, FragmentLayoutIsTheDeviceFormulaAndThePtxLayout) {
  for (auto [m, k, wgm] : std::vector<std::array<int, 3>>{{64, 32, 1}, {128, 128, 2}, {128, 64, 1}, {256, 128, 2}}) {
    ir::Layout l = ops::wgmma_a8_fragment_layout(m, k, wgm);
    EXPECT_EQ(layout::fragment_local_size(l), int64_t(m) * k / (128 * wgm));
    for (int i = 0; i < m; ++i)
      for (int c = 0; c < k; ++c) {
        const int t = static_cast<int>(layout::eval_thread(l, {i, c}));
        const int r = static_cast<int>(layout::eval_index(l, {i, c})[0]);
        ASSERT_EQ(t, tl::layout::wg_a8_thread(i, c, m, wgm)) << i << "," << c;
        ASSERT_EQ(r, tl::layout::wg_a8_index(i, c, m, k, wgm)) << i << "," << c;
        // PTX mma.m16n8k32 (8-bit A), per warp of the warpgroup: a_j (j < 16) holds row
        // group + 8 * ((j / 4) % 2), column 4 * (lane % 4) + j % 4 + 16 * (j / 8).
        const int row = i % (m / wgm) % 64, lane = t % 32;
        EXPECT_EQ(t / 128, i / (m / wgm));
        EXPECT_EQ(t % 128 / 32, row / 16);
        const int j = r % 16;  // the byte within this K step's 4 registers
        EXPECT_EQ(row % 16, lane / 4 + 8 * ((j / 4) % 2));
        EXPECT_EQ(c % 32, 4 * (lane % 4) + j % 4 + 16 * (j / 8));
        EXPECT_EQ(r / 16, (i % (m / wgm) / 64) * (k / 32) + c / 32);  // 64-row atom, then K step
      }
  }
}

// Runs the exchange of wgmma_acc_to_a8 for one warp (its 8 quads) over a 64 x K atom: each
// thread's accumulator (part 2 of gemm_sm90_layout.cuh) holds a distinct byte per element.
TEST(WgmmaA8, QuadExchangeMovesEveryValueWhereRegisterALayoutWantsIt) {
  constexpr int M = 64, K = 64, kThreads = 128;
  auto value = [](int i, int c) { return uint8_t((i * 7 + c * 13 + 5) & 0xff); };
  // acc[t][reg] as bytes (the fp8 rounding is the identity on these codes).
  std::vector<std::vector<uint8_t>> acc(kThreads, std::vector<uint8_t>(K / 2));
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < K; ++c)
      acc[tl::layout::wg_acc_thread(i, c, M, K, 1, 1)][tl::layout::wg_acc_index(i, c, M, K, 1, 1, 8)] = value(i, c);
  std::vector<std::vector<uint32_t>> a(kThreads, std::vector<uint32_t>(K / 8));
  auto pack = [](const uint8_t* v, int b0, int b1, int b2, int b3) {
    return uint32_t(v[b0]) | uint32_t(v[b1]) << 8 | uint32_t(v[b2]) << 16 | uint32_t(v[b3]) << 24;
  };
  for (int kb = 0; kb < K / 32; ++kb)
    for (int h = 0; h < 2; ++h) {
      std::array<std::array<uint32_t, kThreads>, 2> sent{};
      for (int t = 0; t < kThreads; ++t) {
        const uint8_t* c = acc[t].data() + kb * 16;
        const uint32_t w0 = pack(c, 2 * h, 2 * h + 1, 4 + 2 * h, 5 + 2 * h);
        const uint32_t w1 = pack(c, 8 + 2 * h, 9 + 2 * h, 12 + 2 * h, 13 + 2 * h);
        for (int round = 0; round < 2; ++round)
          sent[round][t] = byte_perm(w0, w1, tl::layout::wg_a8_send_selector(t % 4, round));
      }
      for (int t = 0; t < kThreads; ++t) {
        const int q = t % 4, quad = t - q;  // __shfl_sync(width 4): lanes of the same quad
        const uint32_t r0 = sent[0][quad + tl::layout::wg_a8_source_lane(q, 0)];
        const uint32_t r1 = sent[1][quad + tl::layout::wg_a8_source_lane(q, 1)];
        const bool even_first = tl::layout::wg_a8_even_round(q) == 0;
        const uint32_t x = even_first ? r0 : r1, y = even_first ? r1 : r0;
        a[t][kb * 4 + h] = byte_perm(x, y, 0x5410);
        a[t][kb * 4 + 2 + h] = byte_perm(x, y, 0x7632);
      }
    }
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < K; ++c) {
      const int t = tl::layout::wg_a8_thread(i, c, M, 1), b = tl::layout::wg_a8_index(i, c, M, K, 1);
      ASSERT_EQ((a[t][b / 4] >> (8 * (b % 4))) & 0xff, value(i, c)) << "row " << i << " column " << c;
    }
}

TEST(WgmmaA8, Fp8AtomHasAnRsFormWithoutTranspose) {
  const std::string e4m3 = cuda::wgmma_atom_definition(128, 3);  // tl::kWgmmaE4M3E4M3
  ASSERT_NE(e4m3.find("void rs("), std::string::npos) << e4m3;
  EXPECT_NE(e4m3.find("static_assert(TB == 0"), std::string::npos);
  const std::string rs = e4m3.substr(e4m3.find("void rs("));
  EXPECT_NE(rs.find("m64n128k32.f32.e4m3.e4m3"), std::string::npos) << rs;
  EXPECT_NE(rs.find("p, 1, 1;"), std::string::npos) << rs;  // no imm-trans-b
  EXPECT_EQ(rs.find("\"n\"(TB)"), std::string::npos);
  const std::string bf16 = cuda::wgmma_atom_definition(64, 1);  // 16-bit: transpose operand kept
  EXPECT_NE(bf16.substr(bf16.find("void rs(")).find("\"n\"(TB)"), std::string::npos);
  const std::string s8 = cuda::wgmma_atom_definition(32, 7);  // integers: no rs form
  EXPECT_EQ(s8.find("void rs("), std::string::npos);
}

}  // namespace
