// The index arithmetic of the device GEMM (src/device/cuda/gemm_sm80_layout.cuh), checked on
// the CPU: the shared-memory swizzle is a bijection that keeps 16-byte chunks whole, every
// ldmatrix phase is bank-conflict free, the accumulator fragment is a bijection onto
// (thread, register), and a simulated warp — ldmatrix and mma.sync emulated from the PTX
// fragment definitions written out below — computes C = A * B through exactly the
// addresses and register orders the device code uses.
#include <gtest/gtest.h>

#include <cstdint>
#include <array>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "device/cuda/gemm_sm80_layout.cuh"

namespace L = tl::layout;

namespace {

// ---- swizzle --------------------------------------------------------------------------

struct TileShape {
  int rows, cols, elem_bytes;
};
int widest(const TileShape& t) { return L::widest_swizzle_bits(t.rows, t.cols, t.elem_bytes); }

class SwizzleTest : public ::testing::TestWithParam<TileShape> {};

TEST_P(SwizzleTest, IsABijectionKeepingChunksWhole) {
  const auto [rows, cols, e] = GetParam();
  const int v = 16 / e, bits = widest(GetParam());
  std::vector<int> seen(rows * cols, 0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int off = L::tile_offset(r, c, rows, cols, e, bits);
      ASSERT_GE(off, 0);
      ASSERT_LT(off, rows * cols);
      ++seen[off];
      if (c % v != 0) {
        EXPECT_EQ(off, L::tile_offset(r, c - 1, rows, cols, e, bits) + 1) << "16-byte chunks must stay contiguous";
      } else {
        EXPECT_EQ(off % v, 0) << "chunks must stay 16-byte aligned";
      }
    }
  for (int i = 0; i < rows * cols; ++i) ASSERT_EQ(seen[i], 1) << "offset " << i;
}

// Eight rows at one logical chunk (one ldmatrix phase) must hit eight different 16-byte
// bank groups of a 128-byte line.
TEST_P(SwizzleTest, EightRowsOfOneChunkAreConflictFree) {
  const auto [rows, cols, e] = GetParam();
  const int v = 16 / e, bits = widest(GetParam());
  ASSERT_GT(bits, 0) << "every tile here has rows of whole chunks";
  for (int r0 = 0; r0 + 8 <= rows; r0 += 8)
    for (int c = 0; c < cols; c += v) {
      std::set<int> groups;
      for (int r = r0; r < r0 + 8; ++r) groups.insert((L::tile_offset(r, c, rows, cols, e, bits) * e / 16) % 8);
      EXPECT_EQ(groups.size(), 8u) << "rows " << r0 << ".." << r0 + 7 << " chunk " << c / v;
    }
}

// tile_shift_delta: where it claims a constant distance, every in-tile position moves by
// exactly that much (the device GEMM turns it into an ldmatrix immediate), in every mode
// that applies to the tile.
TEST_P(SwizzleTest, ShiftDeltaIsExactWhereClaimed) {
  const auto [rows, cols, e] = GetParam();
  int claimed = 0;
  for (int bits = 0; bits <= 3; ++bits) {
    if (!L::swizzle_applicable(rows, cols, e, bits) || (bits > 0 && cols * e < 16)) continue;
    for (int drow : {0, 1, 2, 4, 8, 16, 32, 64})
      for (int dcol : {0, 1, 4, 8, 16, 32, 64, 128}) {
        if (drow >= rows || dcol >= cols) continue;
        const int d = L::tile_shift_delta(drow, dcol, rows, cols, e, bits);
        if (d < 0) continue;
        ++claimed;
        for (int r = 0; r + drow < rows; ++r)
          for (int c = 0; c + dcol < cols; ++c)
            ASSERT_EQ(L::tile_offset(r + drow, c + dcol, rows, cols, e, bits), L::tile_offset(r, c, rows, cols, e, bits) + d)
                << "mode " << bits << " shift (" << drow << ", " << dcol << ") at (" << r << ", " << c << ")";
      }
  }
  EXPECT_GT(claimed, 0);
}

TEST(Swizzle, ShiftDeltaFindsWholePeriods) {
  // A 128 x 32 bf16 tile (64-byte rows, 128B mode): 16 rows are one 1024-byte period, one
  // 16-element k-step is not (it moves the XORed chunk field).
  EXPECT_EQ(L::tile_shift_delta(16, 0, 128, 32, 2, 3), 16 * 32);
  EXPECT_EQ(L::tile_shift_delta(0, 16, 128, 32, 2, 3), -1);
  EXPECT_EQ(L::tile_shift_delta(8, 0, 128, 32, 2, 3), -1);
  // 32 x 256 bf16 (column blocks of 64): 16 rows within a block, or a whole block.
  EXPECT_EQ(L::tile_shift_delta(16, 0, 32, 256, 2, 3), 16 * 64);
  EXPECT_EQ(L::tile_shift_delta(0, 64, 32, 256, 2, 3), 32 * 64);
  EXPECT_EQ(L::tile_shift_delta(0, 16, 32, 256, 2, 3), -1);
  // No swizzle: plain row-major distance.
  EXPECT_EQ(L::tile_shift_delta(3, 5, 8, 6, 2, 0), 23);
}

INSTANTIATE_TEST_SUITE_P(Tiles, SwizzleTest,
                         ::testing::Values(TileShape{128, 32, 2}, TileShape{32, 256, 2}, TileShape{64, 64, 2},
                                           TileShape{16, 16, 2}, TileShape{64, 8, 2}, TileShape{128, 96, 2},
                                           TileShape{64, 32, 4}, TileShape{32, 128, 4}, TileShape{64, 64, 1},
                                           TileShape{128, 128, 1}, TileShape{40, 48, 2}, TileShape{256, 64, 2},
                                           TileShape{128, 32, 4}, TileShape{128, 64, 1}, TileShape{64, 128, 1}));

TEST(Swizzle, ModesFollowTheRowLength) {
  EXPECT_EQ(L::widest_swizzle_bits(128, 32, 2), 3);  // 64-byte rows fold into 128-byte lines
  EXPECT_EQ(L::widest_swizzle_bits(32, 256, 2), 3);
  EXPECT_EQ(L::widest_swizzle_bits(40, 48, 2), 1);   // 96-byte rows: 32-byte column blocks
  EXPECT_EQ(L::widest_swizzle_bits(8, 6, 2), 0);     // 12-byte rows: no chunks
  EXPECT_EQ(L::widest_swizzle_bits(64, 4, 2), 0);    // 8-byte rows
}

TEST(Swizzle, KnownOffsets) {
  // 128-byte rows, 128B mode: chunk c of row r at chunk c ^ (r % 8).
  EXPECT_EQ(L::tile_offset(3, 0, 64, 64, 2, 3), 3 * 64 + 3 * 8);
  EXPECT_EQ(L::tile_offset(5, 17, 64, 64, 2, 3), 5 * 64 + (2 ^ 5) * 8 + 1);
  // 64-byte rows: two rows share a line; the line number (row / 2) % 8 flips the chunk field.
  EXPECT_EQ(L::tile_offset(5, 8, 128, 32, 2, 3), 4 * 32 + (((4 + 1) ^ 2) * 8));
  // 512-byte rows: column blocks of 64 elements, each a stack of 128-byte rows.
  EXPECT_EQ(L::tile_offset(2, 70, 32, 256, 2, 3), 1 * 32 * 64 + 2 * 64 + ((0 ^ 2) * 8) + 6);
  // No swizzle: row-major.
  EXPECT_EQ(L::tile_offset(7, 5, 8, 6, 2, 0), 47);
}

// ---- accumulator fragment -----------------------------------------------------------------

struct FragShape {
  int m, n, warp_m, warp_n;
};
class CFragmentTest : public ::testing::TestWithParam<FragShape> {};

TEST_P(CFragmentTest, IsABijectionOntoThreadsAndRegisters) {
  const auto [m, n, wm, wn] = GetParam();
  const int threads = wm * wn * 32, regs = L::c_frag_size(m, n, wm, wn);
  std::vector<int> seen(threads * regs, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const int t = L::c_frag_thread(i, j, m, n, wm, wn), r = L::c_frag_index(i, j, m, n, wm, wn);
      ASSERT_GE(t, 0);
      ASSERT_LT(t, threads);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, regs);
      ++seen[t * regs + r];
    }
  for (int x : seen) ASSERT_EQ(x, 1);
}

// Inside one warp tile the fragment is the PTX m16n8 accumulator: lane = (i % 8) * 4 + (j % 8) / 2,
// register (i / 8) * 2 + j % 2 within each 16 x 8 tile (MODEL.md).
TEST_P(CFragmentTest, MatchesThePtxAccumulatorInsideEachTile) {
  const auto [m, n, wm, wn] = GetParam();
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const int lane = L::c_frag_thread(i, j, m, n, wm, wn) % 32;
      EXPECT_EQ(lane, (i % 8) * 4 + (j % 8) / 2);
      EXPECT_EQ(L::c_frag_index(i, j, m, n, wm, wn) % 4, ((i % 16) / 8) * 2 + j % 2);
    }
}

INSTANTIATE_TEST_SUITE_P(Tiles, CFragmentTest,
                         ::testing::Values(FragShape{128, 256, 2, 4}, FragShape{128, 128, 2, 2}, FragShape{64, 64, 2, 2},
                                           FragShape{16, 8, 1, 1}, FragShape{64, 128, 1, 4}, FragShape{256, 128, 4, 2},
                                           FragShape{32, 64, 2, 1}));

TEST(FmaFragment, IsABijection) {
  const int m = 64, n = 64, tm = 16, tn = 16;
  std::vector<int> seen(tm * tn * (m / tm) * (n / tn), 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) ++seen[L::fma_frag_thread(i, j, tm, tn) * (m / tm) * (n / tn) + L::fma_frag_index(i, j, n, tm, tn)];
  for (int x : seen) ASSERT_EQ(x, 1);
}

// ---- warp simulation ---------------------------------------------------------------------

// Operand kinds as the PTX fragments define them.
enum class Kind { k16bit, kTf32, kInt8 };
int elem_bytes(Kind k) { return k == Kind::k16bit ? 2 : k == Kind::kTf32 ? 4 : 1; }
int mma_k(Kind k) { return k == Kind::k16bit ? 16 : k == Kind::kTf32 ? 8 : 32; }

// A shared-memory tile of small integers stored with the swizzle, byte addressed.
struct SmemTile {
  int rows, cols, e, bits;
  std::vector<uint8_t> bytes;
  SmemTile(int r, int c, int el)
      : rows(r), cols(c), e(el), bits(L::widest_swizzle_bits(r, c, el)), bytes(size_t(r) * c * el) {}
  int offset(int r, int c) const { return L::tile_offset(r, c, rows, cols, e, bits); }
  void set(int r, int c, int64_t v) { std::memcpy(&bytes[size_t(offset(r, c)) * e], &v, e); }  // little endian
  int64_t get(int r, int c) const { return read_elem(size_t(offset(r, c)) * e); }
  int64_t read_elem(size_t byte) const {
    int64_t v = 0;
    std::memcpy(&v, &bytes[byte], e);
    if (e == 1) return int8_t(v);
    if (e == 2) return int16_t(v);
    return int32_t(v);
  }
  size_t byte_of(L::Coord p) const { return size_t(offset(p.row, p.col)) * e; }
  uint32_t word_at(size_t byte) const {
    uint32_t w;
    std::memcpy(&w, &bytes[byte], 4);
    return w;
  }
};

// ldmatrix.m8n8.x{n}[.trans].b16 from per-lane row byte addresses (PTX semantics).
void ldmatrix(const SmemTile& s, const size_t (&addr)[32], int num, bool trans, uint32_t (&out)[32][4]) {
  for (int q = 0; q < num; ++q)
    for (int l = 0; l < 32; ++l) {
      if (!trans) {
        out[l][q] = s.word_at(addr[8 * q + l / 4] + 4 * (l % 4));
      } else {
        uint16_t lo, hi;
        std::memcpy(&lo, &s.bytes[addr[8 * q + 2 * (l % 4)] + 2 * (l / 4)], 2);
        std::memcpy(&hi, &s.bytes[addr[8 * q + 2 * (l % 4) + 1] + 2 * (l / 4)], 2);
        out[l][q] = uint32_t(lo) | (uint32_t(hi) << 16);
      }
    }
}

int64_t unpack(uint32_t reg, int idx, int e) {
  if (e == 4) return int32_t(reg);
  if (e == 2) return int16_t(reg >> (16 * idx));
  return int8_t(reg >> (8 * idx));
}

// One mma.sync: rebuilds the 16 x k A and k x 8 B tiles from the lanes' registers by the PTX
// fragment tables and adds their product into the lanes' accumulators.
void mma(Kind kind, const uint32_t (&a)[32][4], const uint32_t (&b)[32][2], int64_t (&c)[32][4]) {
  const int kk = mma_k(kind), e = elem_bytes(kind), per = 4 / e;
  std::vector<int64_t> A(16 * kk), B(kk * 8);
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int q = 0; q < 4; ++q)
      for (int x = 0; x < per; ++x) {
        int row, col;
        if (kind == Kind::kTf32) {  // a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
          row = g + 8 * (q & 1), col = t + 4 * (q >> 1);
        } else {  // f16: 2 per reg, int8: 4 per reg; reg q: row g + 8 (q & 1), k half q >> 1
          row = g + 8 * (q & 1), col = t * per + x + (kk / 2) * (q >> 1);
        }
        A[row * kk + col] = unpack(a[l][q], x, e);
      }
    for (int q = 0; q < 2; ++q)
      for (int x = 0; x < per; ++x) {
        const int k = kind == Kind::kTf32 ? t + 4 * q : t * per + x + (kk / 2) * q;
        B[k * 8 + g] = unpack(b[l][q], x, e);
      }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int q = 0; q < 4; ++q) {
      const int row = g + 8 * (q >> 1), col = 2 * t + (q & 1);
      for (int k = 0; k < kk; ++k) c[l][q] += A[row * kk + k] * B[k * 8 + col];
    }
  }
}

struct SimCase {
  Kind kind;
  bool trans_a, trans_b;
  int m, n, k, warp_m, warp_n;
};

// Simulates the block GEMM of gemm_sm80.cuh: every warp, k-step, m16 tile and pair of n8
// tiles issues the ldmatrix the device code issues (or, for orientations ldmatrix cannot
// transpose, the element gathers), then the mma; the accumulators are finally read back
// through the fragment layout.
void simulate(const SimCase& sc) {
  const int e = elem_bytes(sc.kind), kk = mma_k(sc.kind);
  const bool a_ldsm = !sc.trans_a || e == 2, b_ldsm = sc.trans_b || e == 2;
  std::mt19937 rng(42 + sc.m + sc.n * 3 + sc.k * 7 + int(sc.kind));
  std::uniform_int_distribution<int> dist(-8, 8);
  // Stored orientations: A is M x K or (trans) K x M; B is K x N or (trans) N x K.
  SmemTile As = sc.trans_a ? SmemTile(sc.k, sc.m, e) : SmemTile(sc.m, sc.k, e);
  SmemTile Bs = sc.trans_b ? SmemTile(sc.n, sc.k, e) : SmemTile(sc.k, sc.n, e);
  std::vector<int64_t> A(sc.m * sc.k), B(sc.k * sc.n);
  for (int i = 0; i < sc.m; ++i)
    for (int k = 0; k < sc.k; ++k) {
      A[i * sc.k + k] = dist(rng);
      sc.trans_a ? As.set(k, i, A[i * sc.k + k]) : As.set(i, k, A[i * sc.k + k]);
    }
  for (int k = 0; k < sc.k; ++k)
    for (int j = 0; j < sc.n; ++j) {
      B[k * sc.n + j] = dist(rng);
      sc.trans_b ? Bs.set(j, k, B[k * sc.n + j]) : Bs.set(k, j, B[k * sc.n + j]);
    }
  const int wm_tile = sc.m / sc.warp_m, wn_tile = sc.n / sc.warp_n, mt_n = wm_tile / 16, nt_n = wn_tile / 8;
  const int regs = L::c_frag_size(sc.m, sc.n, sc.warp_m, sc.warp_n);
  const int threads = sc.warp_m * sc.warp_n * 32;
  std::vector<std::vector<int64_t>> C(threads, std::vector<int64_t>(regs, 0));

  for (int warp = 0; warp < sc.warp_m * sc.warp_n; ++warp) {
    const int m_base = (warp % sc.warp_m) * wm_tile, n_base = (warp / sc.warp_m) * wn_tile;
    for (int ks = 0; ks < sc.k / kk; ++ks) {
      const int k0 = ks * kk;
      std::vector<std::array<std::array<uint32_t, 4>, 32>> afr(mt_n);
      for (int mt = 0; mt < mt_n; ++mt) {
        const int m0 = m_base + mt * 16;
        uint32_t out[32][4];
        if (a_ldsm) {
          size_t addr[32];
          for (int l = 0; l < 32; ++l)
            addr[l] = As.byte_of(sc.trans_a ? L::ldsm_a_mmajor(l, m0, k0) : L::ldsm_a_kmajor(l, m0, k0, e));
          ldmatrix(As, addr, 4, sc.trans_a, out);
        } else {  // gather: register q of lane (g, t) from stored K x M, elements down the K rows
          for (int l = 0; l < 32; ++l)
            for (int q = 0; q < 4; ++q) {
              const int m = m0 + (l >> 2) + 8 * (q & 1), kb = k0 + (kk / 2) * (q >> 1) + (l & 3) * (4 / e);
              uint32_t r = 0;
              for (int x = 0; x < 4 / e; ++x) r |= (uint32_t(As.get(kb + x, m)) & ((1ull << (8 * e)) - 1)) << (8 * e * x);
              out[l][q] = r;
            }
        }
        for (int l = 0; l < 32; ++l)
          for (int q = 0; q < 4; ++q) afr[mt][l][q] = out[l][q];
      }
      std::vector<std::array<std::array<uint32_t, 2>, 32>> bfr(nt_n);
      for (int nt = 0; nt < nt_n; nt += 2) {
        const bool pair = nt + 1 < nt_n;
        const int n0 = n_base + nt * 8;
        uint32_t out[32][4];
        if (b_ldsm) {
          size_t addr[32];
          for (int l = 0; l < 32; ++l)
            addr[l] = Bs.byte_of(sc.trans_b ? L::ldsm_b_kmajor(l, n0, k0, e) : L::ldsm_b_nmajor(l, n0, k0));
          ldmatrix(Bs, addr, pair ? 4 : 2, !sc.trans_b, out);
        } else {
          for (int l = 0; l < 32; ++l)
            for (int q = 0; q < 4; ++q) {
              const int n = n0 + 8 * (q >> 1) + (l >> 2), kb = k0 + (kk / 2) * (q & 1) + (l & 3) * (4 / e);
              uint32_t r = 0;
              if (q < 2 || pair)
                for (int x = 0; x < 4 / e; ++x) r |= (uint32_t(Bs.get(kb + x, n)) & ((1ull << (8 * e)) - 1)) << (8 * e * x);
              out[l][q] = r;
            }
        }
        for (int l = 0; l < 32; ++l) {
          bfr[nt][l] = {out[l][0], out[l][1]};
          if (pair) bfr[nt + 1][l] = {out[l][2], out[l][3]};
        }
      }
      for (int mt = 0; mt < mt_n; ++mt)
        for (int nt = 0; nt < nt_n; ++nt) {
          uint32_t a[32][4], b[32][2];
          int64_t c[32][4];
          for (int l = 0; l < 32; ++l) {
            for (int q = 0; q < 4; ++q) a[l][q] = afr[mt][l][q], c[l][q] = C[warp * 32 + l][(mt * nt_n + nt) * 4 + q];
            for (int q = 0; q < 2; ++q) b[l][q] = bfr[nt][l][q];
          }
          mma(sc.kind, a, b, c);
          for (int l = 0; l < 32; ++l)
            for (int q = 0; q < 4; ++q) C[warp * 32 + l][(mt * nt_n + nt) * 4 + q] = c[l][q];
        }
    }
  }
  for (int i = 0; i < sc.m; ++i)
    for (int j = 0; j < sc.n; ++j) {
      int64_t want = 0;
      for (int k = 0; k < sc.k; ++k) want += A[i * sc.k + k] * B[k * sc.n + j];
      const int t = L::c_frag_thread(i, j, sc.m, sc.n, sc.warp_m, sc.warp_n);
      const int r = L::c_frag_index(i, j, sc.m, sc.n, sc.warp_m, sc.warp_n);
      ASSERT_EQ(C[t][r], want) << "C[" << i << "][" << j << "] (thread " << t << ", register " << r << ")";
    }
}

class WarpSimulation : public ::testing::TestWithParam<SimCase> {};
TEST_P(WarpSimulation, ComputesTheProductThroughTheFragmentLayout) { simulate(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Operands, WarpSimulation,
    ::testing::Values(SimCase{Kind::k16bit, false, false, 64, 64, 32, 2, 2}, SimCase{Kind::k16bit, false, true, 64, 64, 32, 2, 2},
                      SimCase{Kind::k16bit, true, false, 64, 64, 32, 2, 2}, SimCase{Kind::k16bit, true, true, 64, 64, 32, 2, 2},
                      SimCase{Kind::k16bit, false, false, 32, 256, 64, 1, 2},   // 128-byte A rows
                      SimCase{Kind::k16bit, false, true, 16, 24, 16, 1, 1},     // odd number of n8 tiles
                      SimCase{Kind::k16bit, false, false, 64, 40, 16, 2, 1},    // x2 tail, 32-byte rows
                      SimCase{Kind::kTf32, false, false, 32, 32, 32, 2, 1}, SimCase{Kind::kTf32, false, true, 32, 32, 32, 1, 2},
                      SimCase{Kind::kTf32, true, false, 32, 32, 16, 1, 1}, SimCase{Kind::kTf32, true, true, 32, 16, 8, 1, 1},
                      SimCase{Kind::kInt8, false, true, 32, 32, 64, 2, 1}, SimCase{Kind::kInt8, false, false, 32, 32, 64, 1, 2},
                      SimCase{Kind::kInt8, true, true, 16, 16, 32, 1, 1}));

}  // namespace
