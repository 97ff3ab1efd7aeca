// Swizzled shared layouts: bijection, bank-conflict freedom, agreement with the
// byte-offset definition.
#include <gtest/gtest.h>

#include <set>

#include "tilec/layout/layout.h"
#include "tilec/layout/swizzle.h"

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::layout;

namespace {

struct Case {
  std::vector<int64_t> shape;
  DataType dtype;
  SwizzleMode mode;
};

// 16-byte bank group (0..7 within a 128-byte line) of a physical element offset.
int64_t bank_group(int64_t offset, int elem_bytes) { return (offset * elem_bytes / 16) % 8; }

}  // namespace

TEST(LayoutSwizzle, IsABijectionOntoTheTile) {
  std::vector<Case> cases = {
      {{64, 64}, DataType::Float(16), SwizzleMode::k128B},  // 128-byte rows
      {{32, 128}, DataType::Float(16), SwizzleMode::k128B}, // 256-byte rows: two column blocks
      {{64, 32}, DataType::Float(16), SwizzleMode::k128B},  // 64-byte rows folded into lines
      {{64, 32}, DataType::Float(16), SwizzleMode::k64B},
      {{16, 32}, DataType::Float(32), SwizzleMode::k128B},
      {{32, 16}, DataType::Float(16), SwizzleMode::k32B},
      {{2, 16, 64}, DataType::Int(8), SwizzleMode::k64B},   // leading dims fold into rows
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(swizzle_applicable(c.shape, c.dtype, c.mode)) << swizzle_name(c.mode);
    Layout l = swizzled_layout(c.shape, c.dtype, c.mode);
    int64_t n = num_elements(l);
    EXPECT_EQ(physical_size(l), n) << swizzle_name(c.mode);
    EXPECT_TRUE(is_injective(l)) << swizzle_name(c.mode);
  }
}

TEST(LayoutSwizzle, EightRowsAtOneChunkHitEightBankGroups) {
  // What ldmatrix reads: 8 consecutive rows, the same 16-byte column chunk.
  for (const auto& c : std::vector<Case>{{{64, 64}, DataType::Float(16), SwizzleMode::k128B},
                                         {{32, 128}, DataType::Float(16), SwizzleMode::k128B},
                                         {{64, 32}, DataType::Float(32), SwizzleMode::k128B},
                                         {{64, 32}, DataType::Float(16), SwizzleMode::k64B}}) {
    Layout l = swizzled_layout(c.shape, c.dtype, c.mode);
    int eb = c.dtype.bits() / 8;
    int64_t chunk_elems = 16 / eb;
    for (int64_t r0 = 0; r0 < c.shape[0]; r0 += 8) {
      for (int64_t col = 0; col < c.shape[1]; col += chunk_elems) {
        std::set<int64_t> groups;
        for (int64_t r = r0; r < r0 + 8; ++r) groups.insert(bank_group(eval_index(l, {r, col})[0], eb));
        EXPECT_EQ(groups.size(), 8u) << swizzle_name(c.mode) << " rows " << r0 << " col " << col;
      }
    }
    // Without swizzling the same read is an 8-way (128B rows) conflict.
    Layout plain = row_major(c.shape);
    std::set<int64_t> groups;
    for (int64_t r = 0; r < 8; ++r) groups.insert(bank_group(eval_index(plain, {r, 0})[0], eb));
    EXPECT_LT(groups.size(), 8u);
  }
}

TEST(LayoutSwizzle, KeepsSixteenByteChunksContiguous) {
  Layout l = swizzled_layout({64, 64}, DataType::Float(16), SwizzleMode::k128B);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < 64; c += 8) {
      int64_t base = eval_index(l, {r, c})[0];
      EXPECT_EQ(base % 8, 0);
      for (int64_t e = 1; e < 8; ++e) EXPECT_EQ(eval_index(l, {r, c + e})[0], base + e);
    }
}

TEST(LayoutSwizzle, MatchesTheByteOffsetDefinition) {
  // 128-byte rows: chunk c of row r goes to chunk c ^ (r % 8).
  Layout l = swizzled_layout({16, 64}, DataType::Float(16), SwizzleMode::k128B);
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      int64_t off = eval_index(l, {r, c * 8})[0];
      EXPECT_EQ(off, r * 64 + ((c ^ (r % 8)) * 8));
      EXPECT_EQ(off, swizzle_element_offset(r * 64 + c * 8, 2, SwizzleMode::k128B));
    }
  EXPECT_EQ(widest_swizzle({64, 64}, DataType::Float(16)), SwizzleMode::k128B);
  EXPECT_EQ(widest_swizzle({64, 32}, DataType::Float(16)), SwizzleMode::k128B);
  EXPECT_EQ(widest_swizzle({64, 4}, DataType::Float(16)), SwizzleMode::kNone);
  EXPECT_FALSE(swizzle_applicable({3, 24}, DataType::Float(16), SwizzleMode::k128B));
}
