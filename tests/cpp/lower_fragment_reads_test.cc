// Fragments read in T.Parallel nests through indices other than the nest variables
// themselves (issue 9, upstream's dequantize and decode examples): `j // c` (two 4-bit
// values per byte), and fragments indexed with an enclosing serial loop's variable. Each
// kernel is lowered and run on the lowered-IR interpreter against a reference.
#include <gtest/gtest.h>

#include <cmath>

#include "layout/digit_form.h"
#include "layout_test_util.h"
#include "lowered_interp.h"
#include "tilec/layout/layout.h"

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::testing;

namespace {

const DataType f32 = DataType::Float(32);
Expr ci(int64_t v) { return int_imm(v); }

HostTensor random_tensor(std::vector<int64_t> shape, uint64_t seed) {
  HostTensor t(std::move(shape));
  t.data = random_values(t.data.size(), seed, -2, 2);
  for (auto& v : t.data) v = static_cast<double>(static_cast<float>(v));
  return t;
}
HostTensor poisoned(std::vector<int64_t> shape) { return HostTensor(std::move(shape), std::nan("")); }

void expect_close(const HostTensor& got, const std::vector<double>& want) {
  ASSERT_EQ(got.data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "at flat index " << i;
}

// The layout inference gives `name` in `f`.
Layout inferred_layout(const PrimFunc& f, const std::string& name) {
  passes::PassContext ctx(target::Target{});
  PrimFunc g = passes::run_passes({passes::layout_inference_pass()}, f, ctx);
  for (const auto& [b, l] : layout_map_of(g))
    if (b->name == name) return l;
  return nullptr;
}

// Y[i, j] = X[i, j // 2] * (j % 2 + 1), X read into a fragment of half the width.
// `thread_on_low_bit`: Y's layout puts consecutive j on consecutive threads, so each element
// of the half-width fragment is held by two threads (replicas).
PrimFunc halves_kernel(bool thread_on_low_bit) {
  Builder b("halves");
  Buffer X = b.tensor("X", {ci(16), ci(32)}, f32);
  Buffer Y = b.tensor("Y", {ci(16), ci(64)}, f32);
  b.begin_kernel({ci(1)}, {128});
  Buffer xh = b.alloc_fragment("xh", {ci(16), ci(32)}, f32);
  Buffer y = b.alloc_fragment("y", {ci(16), ci(64)}, f32);
  if (thread_on_low_bit) {
    Layout rows = layout::make_fragment(
        {16, 64}, [](const std::vector<Var>& v, const Var&) { return floormod(v[0] * 64 + v[1], 128); },
        [](const std::vector<Var>& v) { return floordiv(v[0] * 64 + v[1], 128); });
    b.begin_annotate("layout_map", LayoutMap{{y, rows}});
  }
  b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(xh)});
  auto ij = b.begin_loop_nest({"i", "j"}, {ci(16), ci(64)}, ForKind::kParallel);
  Expr half = buffer_load(xh, {ij[0], floordiv(ij[1], 2)});
  b.store(y, {ij[0], ij[1]}, half * cast(f32, floormod(ij[1], 2) + 1));
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(y), BufferRegion::full(Y)});
  if (thread_on_low_bit) b.end_frame();
  b.end_frame();
  return b.finish();
}

void check_halves(bool thread_on_low_bit) {
  PrimFunc g = run_lowering(halves_kernel(thread_on_low_bit));
  HostTensor xt = random_tensor({16, 32}, 7), yt = poisoned({16, 64});
  run_lowered(g, {{"X", &xt}, {"Y", &yt}});
  std::vector<double> want;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 64; ++j) want.push_back(xt.data[i * 32 + j / 2] * (j % 2 + 1));
  expect_close(yt, want);
}

}  // namespace

TEST(SplitDimForm, CutsADigitAtTheDivisorAndKeepsTheMaps) {
  // 8 x 8: j's low 2 bits on threads, the rest in registers; i on threads above.
  layout::DigitForm f;
  f.shape = {8, 8};
  f.digits = {{1, 1, 4, true, 1}, {1, 4, 2, false, 1}, {0, 1, 8, true, 4}};
  ASSERT_TRUE(f.well_formed());
  auto s = layout::split_dim_form(f, 1, 2);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->shape, (std::vector<int64_t>{8, 4, 2}));
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      int64_t whole[2] = {i, j}, split[3] = {i, j / 2, j % 2};
      EXPECT_EQ(f.thread_of(whole, 0), s->thread_of(split, 0));
      EXPECT_EQ(f.local_of(whole), s->local_of(split));
    }
  EXPECT_FALSE(layout::split_dim_form(f, 1, 3).has_value());  // 3 does not divide 8
  layout::DigitForm g;
  g.shape = {12};
  g.digits = {{0, 1, 12, true, 1}};
  EXPECT_TRUE(layout::split_dim_form(g, 0, 4).has_value());
  layout::DigitForm h;
  h.shape = {12};
  h.digits = {{0, 1, 3, true, 1}, {0, 3, 4, false, 1}};
  EXPECT_FALSE(layout::split_dim_form(h, 0, 2).has_value());  // 2 falls inside the extent-3 digit
}

TEST(FragmentReads, HalfIndexFollowsTheLoop) {
  // The loop follows y; xh[i, j // 2] gets the loop's layout read through j // 2.
  check_halves(false);
  Layout xh = inferred_layout(halves_kernel(false), "xh");
  ASSERT_TRUE(xh);
  EXPECT_EQ(layout::replicate_factor(xh), 1);
}

TEST(FragmentReads, HalfIndexReplicatesAcrossThreadsThatShareAnElement) {
  check_halves(true);
  Layout xh = inferred_layout(halves_kernel(true), "xh");
  ASSERT_TRUE(xh);
  EXPECT_EQ(layout::replicate_factor(xh), 2);  // threads 2t and 2t+1 both read xh[i, t % 32]
}

namespace {

// Y[i, j] = sum over jj of X[i, jj*4 + j]^2: a fragment read in blocks of 4 columns by a
// T.Parallel nest inside a serial loop (upstream's mHC pre). X reaches `xf` through a
// second fragment, so a copy could hand `xf` a default whose threads cross the blocks.
PrimFunc block_sums_kernel() {
  Builder b("block_sums");
  Buffer X = b.tensor("X", {ci(8), ci(64)}, f32);
  Buffer Y = b.tensor("Y", {ci(8), ci(4)}, f32);
  b.begin_kernel({ci(1)}, {32});
  Buffer xa = b.alloc_fragment("xa", {ci(8), ci(64)}, f32);
  Buffer xf = b.alloc_fragment("xf", {ci(8), ci(64)}, f32);
  Buffer acc = b.alloc_fragment("acc", {ci(8), ci(4)}, f32);
  b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(xa)});
  b.tile_op("copy", {BufferRegion::full(xa), BufferRegion::full(xf)});
  b.tile_op("fill", {BufferRegion::full(acc), float_imm(0.0)});
  Var jj = b.begin_for("jj", ci(0), ci(16), ForKind::kSerial);
  auto ij = b.begin_loop_nest({"i", "j"}, {ci(8), ci(4)}, ForKind::kParallel);
  Expr x = buffer_load(xf, {ij[0], jj * 4 + ij[1]});
  b.store(acc, {ij[0], ij[1]}, buffer_load(acc, {ij[0], ij[1]}) + x * x);
  b.end_frame();
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(acc), BufferRegion::full(Y)});
  b.end_frame();
  return b.finish();
}

// S[j] = sum over k of L[k, j]: `l` is filled by a (k, j) nest, then read row by row by a
// j nest inside a serial loop over k (upstream's GQA decode combine).
PrimFunc serial_rows_kernel() {
  Builder b("serial_rows");
  Buffer L = b.tensor("L", {ci(4), ci(32)}, f32);
  Buffer S = b.tensor("S", {ci(32)}, f32);
  b.begin_kernel({ci(1)}, {32});
  Buffer l = b.alloc_fragment("l", {ci(4), ci(32)}, f32);
  Buffer s = b.alloc_fragment("s", {ci(32)}, f32);
  b.tile_op("fill", {BufferRegion::full(s), float_imm(0.0)});
  auto kj = b.begin_loop_nest({"k", "j"}, {ci(4), ci(32)}, ForKind::kParallel);
  b.store(l, {kj[0], kj[1]}, buffer_load(L, {kj[0], kj[1]}));
  b.end_frame();
  Var k = b.begin_for("k", ci(0), ci(4), ForKind::kSerial);
  auto j = b.begin_loop_nest({"j"}, {ci(32)}, ForKind::kParallel);
  b.store(s, {j[0]}, buffer_load(s, {j[0]}) + buffer_load(l, {k, j[0]}));
  b.end_frame();
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(s), BufferRegion::full(S)});
  b.end_frame();
  return b.finish();
}

}  // namespace

TEST(FragmentReads, BlocksReadByAnOuterSerialLoopStayInTheirThreads) {
  PrimFunc g = run_lowering(block_sums_kernel());
  HostTensor xt = random_tensor({8, 64}, 11), yt = poisoned({8, 4});
  run_lowered(g, {{"X", &xt}, {"Y", &yt}});
  std::vector<double> want;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) {
      double sum = 0;
      for (int jj = 0; jj < 16; ++jj) sum += xt.data[i * 64 + jj * 4 + j] * xt.data[i * 64 + jj * 4 + j];
      want.push_back(sum);
    }
  expect_close(yt, want);
  // xf's threads reach only within a block of 4 columns; its copy source follows it.
  Layout xf = inferred_layout(block_sums_kernel(), "xf");
  ASSERT_TRUE(xf);
  EXPECT_TRUE(layout::threads_within(xf, {8, 4}));
  EXPECT_FALSE(layout::threads_within(layout::default_fragment({8, 64}, 32, f32), {8, 4}));
  EXPECT_TRUE(layout::layout_equal(inferred_layout(block_sums_kernel(), "xa"), xf));
}

TEST(FragmentReads, RowsReadByAnOuterSerialLoopStayInRegisters) {
  PrimFunc g = run_lowering(serial_rows_kernel());
  HostTensor lt = random_tensor({4, 32}, 13), st = poisoned({32});
  run_lowered(g, {{"L", &lt}, {"S", &st}});
  std::vector<double> want(32, 0.0);
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 32; ++j) want[j] += lt.data[k * 32 + j];
  expect_close(st, want);
  Layout l = inferred_layout(serial_rows_kernel(), "l");
  ASSERT_TRUE(l);
  EXPECT_TRUE(layout::threads_within(l, {1, 32}));
  EXPECT_EQ(layout::thread_extent(l), 32);  // the vector narrows so that every thread holds a column
}

TEST(FragmentDefaults, WithinCapsKeepCappedDimensionsInRegisters) {
  Layout f = layout::default_fragment_within({16, 128}, 128, DataType::Float(16), {1, 128});
  EXPECT_TRUE(layout::threads_within(f, {1, 128}));
  EXPECT_EQ(layout::thread_extent(f), 128);
  Layout g = layout::default_fragment_within({32, 256}, 128, f32, {32, 4});
  EXPECT_TRUE(layout::threads_within(g, {32, 4}));
  EXPECT_EQ(layout::thread_extent(g), 128);  // 4 column threads x 32 rows
}

namespace {

// Out[i, q] = sum over h of max(A[i, q*16 + h], 0) * W[q, h], with the (64, 64) fragment
// seen as (64, 4, 16) through T.reshape (upstream's DeepSeek v3.2 indexer).
PrimFunc grouped_sum_kernel() {
  Builder b("grouped_sum");
  Buffer A = b.tensor("A", {ci(64), ci(64)}, f32);
  Buffer W = b.tensor("W", {ci(4), ci(16)}, f32);
  Buffer Out = b.tensor("Out", {ci(64), ci(4)}, f32);
  b.begin_kernel({ci(1)}, {128});
  Buffer s = b.alloc_fragment("s", {ci(64), ci(64)}, f32);
  Buffer s3 = b.alloc_view("s3", {ci(64), ci(4), ci(16)}, s);
  Buffer w = b.alloc_fragment("w", {ci(4), ci(16)}, f32);
  Buffer sums = b.alloc_fragment("sums", {ci(64), ci(4)}, f32);
  b.tile_op("copy", {BufferRegion::full(A), BufferRegion::full(s)});
  b.tile_op("copy", {BufferRegion::full(W), BufferRegion::full(w)});
  auto iqh = b.begin_loop_nest({"i", "q", "h"}, {ci(64), ci(4), ci(16)}, ForKind::kParallel);
  Expr v = buffer_load(s3, {iqh[0], iqh[1], iqh[2]});
  b.store(s3, {iqh[0], iqh[1], iqh[2]}, max(v, float_imm(0.0)) * buffer_load(w, {iqh[1], iqh[2]}));
  b.end_frame();
  b.tile_op("reduce_sum", {BufferRegion::full(s3), BufferRegion::full(sums)}, {{"dim", int64_t{2}}});
  b.tile_op("copy", {BufferRegion::full(sums), BufferRegion::full(Out)});
  b.end_frame();
  return b.finish();
}

}  // namespace

TEST(FragmentViews, ReshapedFragmentSharesRegistersAndLayout) {
  PrimFunc g = run_lowering(grouped_sum_kernel());
  HostTensor at = random_tensor({64, 64}, 17), wt = random_tensor({4, 16}, 19), ot = poisoned({64, 4});
  run_lowered(g, {{"A", &at}, {"W", &wt}, {"Out", &ot}});
  std::vector<double> want;
  for (int i = 0; i < 64; ++i)
    for (int q = 0; q < 4; ++q) {
      double sum = 0;
      for (int h = 0; h < 16; ++h) sum += std::max(at.data[i * 64 + q * 16 + h], 0.0) * wt.data[q * 16 + h];
      want.push_back(sum);
    }
  expect_close(ot, want);
  // One register array: the view allocates nothing.
  int allocs = 0;
  for_each_node(g->body, [&](const Node* n) {
    if (n->kind == NodeKind::kAllocate) allocs += static_cast<const AllocateNode*>(n)->buffer->name == "s3";
  });
  EXPECT_EQ(allocs, 0);
  Layout s = inferred_layout(grouped_sum_kernel(), "s"), s3 = inferred_layout(grouped_sum_kernel(), "s3");
  ASSERT_TRUE(s && s3);
  EXPECT_TRUE(layout::layout_equal(layout::reshape(s, {64, 4, 16}), s3));
}

TEST(FragmentViews, ReshapeNeedsTheSameElementCount) {
  Builder b("bad_view");
  b.begin_kernel({ci(1)}, {32});
  Buffer s = b.alloc_fragment("s", {ci(8), ci(8)}, f32);
  std::string msg = user_error_of([&] { b.alloc_view("v", {ci(8), ci(4)}, s); });
  EXPECT_NE(msg.find("(64 elements) to a shape of 32 elements"), std::string::npos) << msg;
  Buffer sh = b.alloc_shared("sh", {ci(8), ci(8)}, f32);
  msg = user_error_of([&] { b.alloc_view("v", {ci(32)}, sh); });  // shared views: the same rule
  EXPECT_NE(msg.find("(64 elements) to a shape of 32 elements"), std::string::npos) << msg;
  msg = user_error_of([&] { b.alloc_view("v", {ci(64)}, s, {}, DataType::Int(32)); });
  EXPECT_NE(msg.find("tilec reinterprets shared memory only"), std::string::npos) << msg;
}
