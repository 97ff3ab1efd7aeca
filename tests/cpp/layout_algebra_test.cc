// Layout algebra: apply, sizes, inverse, projection, repeat, defaults, equality.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "layout/digit_form.h"
#include "layout/int_eval.h"
#include "tilec/layout/layout.h"

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::layout;

namespace {

// The mma.sync m16n8k16 f32 accumulator of one warp (PTX ISA, "mma-fragments").
Layout mma_c_16x8() {
  return layout::make_fragment(
      {16, 8}, [](const std::vector<Var>& v, const Var&) { return floormod(v[0], 8) * 4 + floordiv(floormod(v[1], 8), 2); },
      [](const std::vector<Var>& v) { return floordiv(v[0], 8) * 2 + floormod(v[1], 2); });
}

// Checks that `inverse` enumerates every (element, replica) exactly once and agrees with
// the forward map.
void expect_inverse_roundtrip(const Layout& frag, int64_t num_threads) {
  Var t = make_var("t"), k = make_var("k");
  auto inv = inverse(frag, t, k, num_threads);
  ASSERT_TRUE(inv.has_value());
  auto df = fit_digit_form(frag);
  ASSERT_TRUE(df.has_value());
  int64_t K = df->local_size();
  auto shape = const_shape(frag);
  int64_t R = replicate_factor(frag);
  std::map<std::vector<int64_t>, int> hits;
  std::vector<Var> fslots = frag->vars;
  fslots.push_back(frag->rep_var);
  IntProgram fwd_local(frag->forward_index[0], fslots), fwd_thread(frag->forward_thread, fslots);
  std::optional<IntProgram> valid;
  if (inv->valid) valid.emplace(inv->valid, std::vector<Var>{t, k});
  std::vector<IntProgram> index;
  for (const auto& e : inv->indices) index.emplace_back(e, std::vector<Var>{t, k});
  for (int64_t tv = 0; tv < num_threads; ++tv) {
    for (int64_t kv = 0; kv < K; ++kv) {
      int64_t tk[2] = {tv, kv};
      if (valid && !valid->eval(tk)) continue;
      std::vector<int64_t> idx;
      for (size_t d = 0; d < shape.size(); ++d) {
        idx.push_back(index[d].eval(tk));
        ASSERT_GE(idx.back(), 0);
        ASSERT_LT(idx.back(), shape[d]);
      }
      std::vector<int64_t> slots = idx;
      slots.push_back(0);
      EXPECT_EQ(fwd_local.eval(slots.data()), kv);
      std::set<int64_t> owners;
      for (int64_t r = 0; r < R; ++r) {
        slots.back() = r;
        owners.insert(fwd_thread.eval(slots.data()));
      }
      EXPECT_TRUE(owners.count(tv)) << "thread " << tv << " does not hold the element it is given";
      hits[idx]++;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(hits.size()), num_elements(frag));
  for (auto& [idx, n] : hits) EXPECT_EQ(n, R);
}

}  // namespace

TEST(LayoutAlgebra, RowMajorApplyAndSize) {
  Layout l = row_major({4, 8, 16});
  EXPECT_EQ(physical_size(l), 512);
  EXPECT_EQ(eval_index(l, {1, 2, 3})[0], 1 * 128 + 2 * 16 + 3);
  EXPECT_TRUE(is_injective(l));
  Var a = make_var("a"), b = make_var("b"), c = make_var("c");
  auto e = apply_index(l, {a, b, c});
  EXPECT_EQ(eval_int(e[0], {a, b, c}, {3, 7, 15}), 511);
}

TEST(LayoutAlgebra, MmaAccumulatorFragment) {
  Layout c = mma_c_16x8();
  EXPECT_EQ(fragment_local_size(c), 4);
  EXPECT_EQ(thread_extent(c), 32);
  EXPECT_EQ(replicate_factor(c), 1);
  EXPECT_TRUE(is_injective(c));
  // Row 9, column 5: lane (9 % 8) * 4 + 5 / 2 = 6, register (9 / 8) * 2 + 1 = 3.
  EXPECT_EQ(eval_thread(c, {9, 5}), 6);
  EXPECT_EQ(eval_index(c, {9, 5})[0], 3);
  auto df = fit_digit_form(c);
  ASSERT_TRUE(df.has_value());
  EXPECT_EQ(df->digits.size(), 4u);  // i%8 -> lane, i/8 -> reg, j%2 -> reg, j/2 -> lane
  EXPECT_TRUE(layout_equal(c, to_layout(*df)));
  expect_inverse_roundtrip(c, 32);
}

TEST(LayoutAlgebra, RepeatOverTilesAndWarps) {
  Layout c = mma_c_16x8();
  Layout per_warp = repeat(c, {2, 4}, RepeatOn::kRegisters);  // 32 x 32 per warp
  EXPECT_EQ(const_shape(per_warp), (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(fragment_local_size(per_warp), 32);
  EXPECT_EQ(thread_extent(per_warp), 32);
  Layout block = repeat(per_warp, {2, 2}, RepeatOn::kThreads);  // 64 x 64 over 4 warps
  EXPECT_EQ(const_shape(block), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(thread_extent(block), 128);
  EXPECT_EQ(fragment_local_size(block), 32);
  EXPECT_TRUE(is_injective(block));
  // Warp (1, 0) holds rows 32..63, columns 0..31: element (40, 3) is in warp 2.
  EXPECT_EQ(eval_thread(block, {40, 3}) / 32, 2);
  EXPECT_EQ(eval_thread(block, {8, 40}) / 32, 1);
  expect_inverse_roundtrip(block, 128);
  Layout col_major_warps = repeat(per_warp, {2, 2}, RepeatOn::kThreads, /*copies_row_major=*/false);
  EXPECT_EQ(eval_thread(col_major_warps, {40, 3}) / 32, 1);
}

TEST(LayoutAlgebra, ProjectDropsReducedDimensionIntoReplicas) {
  Layout c = mma_c_16x8();
  Layout rows = project(c, {0});
  ASSERT_TRUE(rows);
  EXPECT_EQ(const_shape(rows), (std::vector<int64_t>{16}));
  EXPECT_EQ(replicate_factor(rows), 4);  // the 4 lanes of a quad share a row
  EXPECT_EQ(fragment_local_size(rows), 2);
  EXPECT_EQ(thread_extent(rows), 32);
  // Row 9 lives in lanes 4..7 (i % 8 == 1), register 1.
  std::set<int64_t> owners;
  for (int r = 0; r < 4; ++r) owners.insert(eval_thread(rows, {9}, r));
  EXPECT_EQ(owners, (std::set<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(eval_index(rows, {9})[0], 1);
  expect_inverse_roundtrip(rows, 32);
}

TEST(LayoutAlgebra, CoalescedLayouts) {
  // 128 x 128 float32 over 128 threads, 4-element vectors: a warp covers one row.
  Layout l = coalesced_layout({128, 128}, 128, 4);
  EXPECT_EQ(fragment_local_size(l), 128);
  EXPECT_EQ(thread_extent(l), 128);
  EXPECT_EQ(eval_thread(l, {0, 4}), 1);
  EXPECT_EQ(eval_thread(l, {1, 0}), 32);
  EXPECT_EQ(eval_index(l, {0, 3})[0], 3);
  EXPECT_TRUE(is_injective(l));
  expect_inverse_roundtrip(l, 128);
  // Awkward extents: 100 x 3 over 128 threads (some threads idle, partial registers).
  Layout odd = coalesced_layout({100, 3}, 128, 1);
  EXPECT_TRUE(is_injective(odd));
  EXPECT_LE(thread_extent(odd), 128);
  expect_inverse_roundtrip(odd, 128);
  // Fewer elements than threads.
  Layout small = coalesced_layout({64}, 128, 1);
  EXPECT_EQ(thread_extent(small), 64);
  expect_inverse_roundtrip(small, 128);
  // 1000 elements over 256 threads with 4-element vectors: the top register digit is open.
  Layout open = coalesced_layout({1000}, 256, 4);
  expect_inverse_roundtrip(open, 256);
}

TEST(LayoutAlgebra, DefaultFragmentVectorWidth) {
  EXPECT_EQ(vector_elems(DataType::Float(16), 128), 8);
  EXPECT_EQ(vector_elems(DataType::Float(32), 128), 4);
  EXPECT_EQ(vector_elems(DataType::Float(32), 6), 2);
  EXPECT_EQ(vector_elems(DataType::Float(32), 7), 1);
  Layout f = default_fragment({64, 64}, 128, DataType::Float(16));
  EXPECT_EQ(fragment_local_size(f), 32);  // 4096 / 128
  EXPECT_EQ(eval_index(f, {0, 7})[0], 7);  // 8 contiguous registers
}

TEST(LayoutAlgebra, EqualityIsSemantic) {
  Layout a = layout::make_fragment(
      {8, 4}, [](const std::vector<Var>& v, const Var&) { return v[0] * 4 + v[1]; },
      [](const std::vector<Var>&) { return int_imm(0); });
  // Same mapping, written through floordiv/floormod of a flat index.
  Layout b = layout::make_fragment(
      {8, 4},
      [](const std::vector<Var>& v, const Var&) {
        Expr flat = v[0] * 4 + v[1];
        return floordiv(flat, 4) * 4 + floormod(flat, 4);
      },
      [](const std::vector<Var>&) { return int_imm(0); });
  EXPECT_TRUE(layout_equal(a, b));
  Layout c = permute_dims(a, {1, 0});
  EXPECT_TRUE(layout_equal(a, permute_dims(c, {1, 0})));
  EXPECT_EQ(const_shape(c), (std::vector<int64_t>{4, 8}));
  Layout d = replicate(a, 2);
  EXPECT_EQ(replicate_factor(d), 2);
  EXPECT_EQ(thread_extent(d), 64);
  EXPECT_FALSE(layout_equal(a, d));
}

// threads_hold(readers, holders): a fragment-to-fragment copy may run thread by thread when
// every thread reading an element in `readers` holds it in `holders` (ops/copy.cc refuses it
// otherwise instead of reading registers that another thread holds).
TEST(LayoutAlgebra, ThreadsHoldWhatTheyRead) {
  auto frag = [](auto thread) {
    return layout::make_fragment(
        {8, 4}, [thread](const std::vector<Var>& v, const Var&) { return thread(v[0], v[1]); },
        [](const std::vector<Var>& v) { return v[0] * 0 + v[1] * 0; });
  };
  Layout a = frag([](Expr i, Expr j) { return i * 4 + j; });
  Layout swapped = frag([](Expr i, Expr j) { return j * 8 + i; });  // the same 32 threads, other elements
  Layout twice = replicate(a, 2);                                      // threads 0..31 and 32..63
  EXPECT_TRUE(threads_hold(a, a));
  EXPECT_TRUE(threads_hold(a, twice));   // a's threads hold the element in the replicated one too
  EXPECT_FALSE(threads_hold(twice, a));  // threads 32..63 would read what they do not hold
  EXPECT_FALSE(threads_hold(a, swapped));
  EXPECT_FALSE(threads_hold(a, permute_dims(a, {1, 0})));  // another shape
}

TEST(LayoutAlgebra, NonDigitLayoutHasNoInverse) {
  Layout rot = layout::make_fragment(
      {32, 32}, [](const std::vector<Var>& v, const Var&) { return floormod(v[0] + v[1], 32); },
      [](const std::vector<Var>& v) { return v[0]; });
  EXPECT_TRUE(is_injective(rot));
  EXPECT_FALSE(inverse(rot, make_var("t"), make_var("k"), 32).has_value());
}

TEST(LayoutAlgebra, ExtractDigitSplitsAtoms) {
  // x = (k % 8) + 8 * (t % 4): digits of x at stride 4 (extent 4) mix both sources.
  Var t = make_var("t"), k = make_var("k");
  MixedRadix x = {{k, 1, 8, 8, 1}, {t, 1, 4, 4, 8}};
  auto d = extract_digit(x, 4, 4);
  ASSERT_TRUE(d.has_value());
  for (int64_t tv = 0; tv < 4; ++tv)
    for (int64_t kv = 0; kv < 8; ++kv) {
      int64_t xv = kv + 8 * tv;
      EXPECT_EQ(eval_int(*d, {t, k}, {tv, kv}), (xv / 4) % 4);
    }
  // A boundary inside an atom of odd extent cannot be split.
  MixedRadix y = {{k, 1, 3, 3, 1}};
  EXPECT_FALSE(extract_digit(y, 2, 0).has_value());
}
