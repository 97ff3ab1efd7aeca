// Layouts evaluated at every element for the layout plots (tilec/layout/layout_maps.h):
// the maps agree with the one-point queries, a swizzle's offsets with its offset arithmetic,
// and a compiled program's inferred layouts come back by buffer name.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "tilec/ir/example_gemm.h"
#include "tilec/layout/index_space.h"
#include "tilec/layout/layout.h"
#include "tilec/layout/layout_maps.h"
#include "tilec/layout/swizzle.h"
#include "tilec/runtime/compiler.h"
#include "tilec/support/diag.h"

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::layout;

namespace {

TEST(LayoutMaps, FragmentMapsMatchThePointQueries) {
  Layout frag = coalesced_layout({16, 32}, 64, 4);
  LayoutMaps m = evaluate_maps(frag);
  ASSERT_TRUE(m.fragment);
  EXPECT_EQ(m.shape, (std::vector<int64_t>{16, 32}));
  ASSERT_EQ(m.thread.size(), 16u * 32u);
  ASSERT_EQ(m.local.size(), 16u * 32u);
  EXPECT_EQ(m.threads, thread_extent(frag));
  EXPECT_EQ(m.registers, fragment_local_size(frag));
  EXPECT_EQ(m.replicate, 1);
  size_t k = 0;
  for_each_index(m.shape, [&](const std::vector<int64_t>& idx) {
    EXPECT_EQ(m.thread[k], eval_thread(frag, idx));
    EXPECT_EQ(m.local[k], eval_index(frag, idx)[0]);
    ++k;
  });
  EXPECT_NE(m.text.find("Fragment"), std::string::npos);
}

TEST(LayoutMaps, ReplicatedFragmentShowsReplicaZeroAndCountsAllThreads) {
  Layout frag = replicate(coalesced_layout({8, 8}, 16, 4), 2);
  LayoutMaps m = evaluate_maps(frag);
  EXPECT_EQ(m.replicate, 2);
  EXPECT_EQ(m.threads, 32);  // replica 1 at thread offset 16
  EXPECT_LT(*std::max_element(m.thread.begin(), m.thread.end()), 16);
}

TEST(LayoutMaps, SwizzleOffsetsMatchTheOffsetArithmetic) {
  const auto t = DataType::Float(16);
  Layout l = swizzled_layout({8, 64}, t, SwizzleMode::k128B);
  LayoutMaps m = evaluate_maps(l);
  ASSERT_FALSE(m.fragment);
  ASSERT_EQ(m.offset.size(), 512u);
  for (int64_t x = 0; x < 512; ++x) EXPECT_EQ(m.offset[x], swizzle_element_offset(x, 2, SwizzleMode::k128B)) << x;
  EXPECT_EQ(m.physical_size, 512);
  std::vector<int64_t> sorted = m.offset;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(512);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);  // a permutation of the tile
  // Row r's first 16-byte chunk lands at chunk r: rows spread over the banks.
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(m.offset[r * 64] % 64, r * 8);
}

TEST(LayoutMaps, MultiOutputPlainLayoutsFlattenRowMajor) {
  Layout l = make_plain({4, 6}, [](const std::vector<Var>& v) { return std::vector<Expr>{v[1], v[0]}; });
  LayoutMaps m = evaluate_maps(l);  // (i, j) -> (j, i): the transpose, flattened over (6, 4)
  EXPECT_EQ(m.offset[0 * 6 + 1], 1 * 4 + 0);
  EXPECT_EQ(m.offset[3 * 6 + 5], 5 * 4 + 3);
  EXPECT_EQ(m.physical_size, 24);
}

TEST(LayoutMaps, SymbolicShapeIsAUserError) {
  Var n = make_var("n");
  Layout l = make_layout({n}, {make_var("i")}, {int_imm(0)});
  try {
    evaluate_maps(l);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic shape"), std::string::npos) << e.what();
  }
}

TEST(LayoutMaps, ProgramLayoutsNameTheBuffers) {
  GemmExampleConfig c;
  c.relu = false;
  PrimFunc f = build_example_gemm(c);
  for (const char* target : {"sm_80", "sm_90a"}) {
    runtime::CompileOptions o;
    o.target = target;
    std::vector<InferredLayout> layouts = runtime::program_layouts(f, o);
    bool a_shared = false, c_local = false;
    for (const auto& l : layouts) {
      if (l.buffer->name == "A_shared") {
        a_shared = true;
        EXPECT_FALSE(l.layout->is_fragment()) << target;
        LayoutMaps m = evaluate_maps(l.layout);
        EXPECT_GE(m.physical_size, 128 * 32) << target;
      }
      if (l.buffer->name == "C_local") {
        c_local = true;
        ASSERT_TRUE(l.layout->is_fragment()) << target;
        LayoutMaps m = evaluate_maps(l.layout);
        EXPECT_EQ(m.shape, (std::vector<int64_t>{128, 128})) << target;
        EXPECT_EQ(m.threads, 128) << target;
        EXPECT_EQ(m.registers, 128) << target;  // 128 x 128 fp32 over 128 threads
      }
    }
    EXPECT_TRUE(a_shared) << target;
    EXPECT_TRUE(c_local) << target;
  }
}

}  // namespace
