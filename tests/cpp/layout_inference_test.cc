// Layout inference on hand-built kernels: results, replication, conflicts.
#include <gtest/gtest.h>

#include <set>

#include "layout_test_util.h"
#include "tilec/layout/layout.h"

using namespace tilec;
using namespace tilec::ir;
using namespace tilec::testing;

namespace {

const DataType f32 = DataType::Float(32);

Expr ci(int64_t v) { return int_imm(v); }

BufferRegion rows(const Buffer& A, const Expr& r0, int64_t nr, int64_t nc) {
  return BufferRegion{A, {{r0, ci(nr)}, {ci(0), ci(nc)}}};
}

// Softmax over rows of a 4 x 128 tile held in registers.
struct Softmax {
  PrimFunc f;
  Buffer x, row_max, row_sum;
};
Softmax build_softmax() {
  Softmax s;
  Builder b("softmax");
  Var m = b.dynamic("m");
  Buffer A = b.tensor("A", {m, ci(128)}, f32);
  Buffer O = b.tensor("O", {m, ci(128)}, f32);
  auto bx = b.begin_kernel({ceildiv(m, ci(4))}, {128}, {}, line(3))[0];
  s.x = b.alloc_fragment("x", {ci(4), ci(128)}, f32, line(4));
  s.row_max = b.alloc_fragment("row_max", {ci(4)}, f32, line(5));
  s.row_sum = b.alloc_fragment("row_sum", {ci(4)}, f32, line(6));
  b.tile_op("copy", {rows(A, bx * 4, 4, 128), BufferRegion::full(s.x)}, {}, line(7));
  b.tile_op("reduce_max", {BufferRegion::full(s.x), BufferRegion::full(s.row_max)}, {{"dim", int64_t{1}}}, line(8));
  auto ij = b.begin_loop_nest({"i", "j"}, {ci(4), ci(128)}, ForKind::kParallel, line(9));
  b.store(s.x, {ij[0], ij[1]},
          call(f32, "exp", {buffer_load(s.x, {ij[0], ij[1]}) - buffer_load(s.row_max, {ij[0]})}), line(10));
  b.end_frame();
  b.tile_op("reduce_sum", {BufferRegion::full(s.x), BufferRegion::full(s.row_sum)}, {{"dim", int64_t{1}}}, line(11));
  auto ij2 = b.begin_loop_nest({"i", "j"}, {ci(4), ci(128)}, ForKind::kParallel, line(12));
  b.store(s.x, {ij2[0], ij2[1]},
          binary(NodeKind::kDiv, buffer_load(s.x, {ij2[0], ij2[1]}), buffer_load(s.row_sum, {ij2[0]})), line(13));
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(s.x), rows(O, bx * 4, 4, 128)}, {}, line(14));
  b.end_frame();
  s.f = b.finish();
  return s;
}

std::set<int64_t> owners(const Layout& l, const std::vector<int64_t>& idx) {
  std::set<int64_t> s;
  for (int64_t r = 0; r < layout::replicate_factor(l); ++r) s.insert(layout::eval_thread(l, idx, r));
  return s;
}

}  // namespace

TEST(LayoutInference, SoftmaxRowStatisticsAreReplicatedOverTheirRow) {
  Softmax s = build_softmax();
  PrimFunc g = run_layout_inference(s.f);
  Layout x = layout_of(g, s.x), mx = layout_of(g, s.row_max), sm = layout_of(g, s.row_sum);
  ASSERT_TRUE(x && mx && sm);
  // The default fragment: 4-element vectors, a warp per row.
  EXPECT_TRUE(layout::layout_equal(x, layout::default_fragment({4, 128}, 128, f32)));
  EXPECT_EQ(layout::fragment_local_size(x), 4);
  // Row statistics: every thread of the row's warp holds the row's value.
  EXPECT_EQ(layout::replicate_factor(mx), 32);
  for (int64_t i = 0; i < 4; ++i) {
    std::set<int64_t> row_threads;
    for (int64_t j = 0; j < 128; ++j) row_threads.insert(layout::eval_thread(x, {i, j}));
    EXPECT_EQ(owners(mx, {i}), row_threads);
  }
  EXPECT_TRUE(layout::layout_equal(mx, sm));
  // Both parallel nests follow x.
  auto loops = loop_layouts_of(g);
  ASSERT_EQ(loops.size(), 2u);
  for (const auto& l : loops) EXPECT_TRUE(layout::layout_equal(l, x));
}

TEST(LayoutInference, RmsNormScalarIsHeldByEveryThread) {
  Builder b("rmsnorm");
  Buffer X = b.tensor("X", {ci(64), ci(1024)}, f32);
  Buffer Y = b.tensor("Y", {ci(64), ci(1024)}, f32);
  auto bx = b.begin_kernel({ci(64)}, {128})[0];
  Buffer x = b.alloc_fragment("x", {ci(1024)}, f32);
  Buffer sq = b.alloc_fragment("sq", {ci(1024)}, f32);
  Buffer ss = b.alloc_fragment("ss", {ci(1)}, f32);
  b.tile_op("copy", {BufferRegion{X, {{bx, ci(1)}, {ci(0), ci(1024)}}}, BufferRegion::full(x)});
  auto i = b.begin_loop_nest({"i"}, {ci(1024)}, ForKind::kParallel);
  b.store(sq, {i[0]}, buffer_load(x, {i[0]}) * buffer_load(x, {i[0]}));
  b.end_frame();
  b.tile_op("reduce_sum", {BufferRegion::full(sq), BufferRegion::full(ss)}, {{"dim", int64_t{0}}});
  auto i2 = b.begin_loop_nest({"i"}, {ci(1024)}, ForKind::kParallel);
  b.store(x, {i2[0]}, buffer_load(x, {i2[0]}) * call(f32, "rsqrt", {buffer_load(ss, {ci(0)})}));
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(x), BufferRegion{Y, {{bx, ci(1)}, {ci(0), ci(1024)}}}});
  b.end_frame();
  PrimFunc g = run_layout_inference(b.finish());
  Layout lx = layout_of(g, x), lsq = layout_of(g, sq), lss = layout_of(g, ss);
  ASSERT_TRUE(lx && lsq && lss);
  EXPECT_TRUE(layout::layout_equal(lx, lsq));
  EXPECT_EQ(layout::thread_extent(lx), 128);
  EXPECT_EQ(layout::fragment_local_size(lx), 8);
  EXPECT_EQ(layout::const_shape(lss), (std::vector<int64_t>{1}));
  EXPECT_EQ(owners(lss, {0}).size(), 128u);
}

TEST(LayoutInference, ElementwiseOverGlobalGetsACoalescedVectorLayout) {
  Builder b("add");
  Buffer A = b.tensor("A", {ci(1024), ci(1024)}, f32);
  Buffer B = b.tensor("B", {ci(1024), ci(1024)}, f32);
  Buffer C = b.tensor("C", {ci(1024), ci(1024)}, f32);
  auto bx = b.begin_kernel({ci(1024 / 16)}, {128})[0];
  auto ij = b.begin_loop_nest({"i", "j"}, {ci(16), ci(1024)}, ForKind::kParallel);
  Expr r = bx * 16 + ij[0];
  b.store(C, {r, ij[1]}, buffer_load(A, {r, ij[1]}) + buffer_load(B, {r, ij[1]}));
  b.end_frame();
  b.end_frame();
  PrimFunc g = run_layout_inference(b.finish());
  auto loops = loop_layouts_of(g);
  ASSERT_EQ(loops.size(), 1u);
  Layout l = loops[0];
  EXPECT_EQ(layout::thread_extent(l), 128);
  // Thread 0 owns 4 contiguous elements; thread 1 the next 4.
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(layout::eval_thread(l, {0, j}), 0);
  EXPECT_EQ(layout::eval_thread(l, {0, 4}), 1);
  EXPECT_EQ(layout::eval_index(l, {0, 3})[0], 3);
  EXPECT_TRUE(layout_map_of(g).empty());
}

TEST(LayoutInference, CopyThroughSharedKeepsRowMajorShared) {
  Builder b("copy2");
  Buffer A = b.tensor("A", {ci(256), ci(64)}, DataType::Float(16));
  Buffer B = b.tensor("B", {ci(256), ci(64)}, DataType::Float(16));
  auto bx = b.begin_kernel({ci(4)}, {128})[0];
  Buffer S = b.alloc_shared("S", {ci(64), ci(64)}, DataType::Float(16));
  b.tile_op("copy", {rows(A, bx * 64, 64, 64), BufferRegion::full(S)});
  b.tile_op("copy", {BufferRegion::full(S), rows(B, bx * 64, 64, 64)});
  b.end_frame();
  PrimFunc g = run_layout_inference(b.finish());
  Layout s = layout_of(g, S);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->is_fragment());
  EXPECT_TRUE(layout::layout_equal(s, layout::row_major({64, 64})));
}

TEST(LayoutInference, BroadcastReadOverSharedFollowsTheReplicas) {
  // Out = X_s * scale[i]: the nest touches no full-rank fragment, so its threads must be
  // chosen among the holders of scale[i].
  Builder b("scale_rows");
  Buffer X = b.tensor("X", {ci(8), ci(256)}, f32);
  Buffer O = b.tensor("O", {ci(8), ci(256)}, f32);
  b.begin_kernel({ci(1)}, {128});
  Buffer xs = b.alloc_shared("xs", {ci(8), ci(256)}, f32);
  Buffer xf = b.alloc_fragment("xf", {ci(8), ci(256)}, f32);
  Buffer scale = b.alloc_fragment("scale", {ci(8)}, f32);
  b.tile_op("copy", {BufferRegion::full(X), BufferRegion::full(xs)});
  b.tile_op("copy", {BufferRegion::full(xs), BufferRegion::full(xf)});
  b.tile_op("reduce_absmax", {BufferRegion::full(xf), BufferRegion::full(scale)}, {{"dim", int64_t{1}}});
  auto ij = b.begin_loop_nest({"i", "j"}, {ci(8), ci(256)}, ForKind::kParallel);
  b.store(O, {ij[0], ij[1]}, buffer_load(xs, {ij[0], ij[1]}) * buffer_load(scale, {ij[0]}));
  b.end_frame();
  b.end_frame();
  PrimFunc g = run_layout_inference(b.finish());
  auto loops = loop_layouts_of(g);
  ASSERT_EQ(loops.size(), 1u);
  Layout sc = layout_of(g, scale);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 256; j += 37) {
      int64_t t = layout::eval_thread(loops[0], {i, j});
      EXPECT_TRUE(owners(sc, {i}).count(t)) << "thread " << t << " runs (" << i << ", " << j << ")";
    }
}

TEST(LayoutInference, ConflictBetweenOpsNamesBothAndTheBuffer) {
  Builder b("conflict");
  b.begin_kernel({ci(1)}, {128});
  Buffer x = b.alloc_fragment("x", {ci(64), ci(64)}, f32);
  Buffer y = b.alloc_fragment("y", {ci(64), ci(64)}, f32);
  Layout lx = layout::default_fragment({64, 64}, 128, f32);
  Layout ly = layout::permute_dims(layout::default_fragment({64, 64}, 128, f32), {1, 0});
  b.begin_annotate("layout_map", LayoutMap{{x, lx}, {y, ly}}, line(20));
  b.tile_op("copy", {BufferRegion::full(x), BufferRegion::full(y)}, {}, line(21));
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  std::string msg = user_error_of([&] { run_layout_inference(f); });
  EXPECT_NE(msg.find("layout conflict on fragment"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.annotate_layout at kernel.py:20"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.copy at kernel.py:21"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("'y'") != std::string::npos || msg.find("'x'") != std::string::npos) << msg;
}

TEST(LayoutInference, ReduceOutputConflictNamesTheReduce) {
  Builder b("conflict2");
  b.begin_kernel({ci(1)}, {128});
  Buffer x = b.alloc_fragment("x", {ci(4), ci(128)}, f32);
  Buffer r = b.alloc_fragment("r", {ci(4)}, f32);
  // r spread over 4 threads: the reduce wants it replicated over each row's warp.
  b.begin_annotate("layout_map", LayoutMap{{r, layout::coalesced_layout({4}, 128, 1)}}, line(30));
  b.tile_op("fill", {BufferRegion::full(x), float_imm(1.0)}, {}, line(31));
  b.tile_op("reduce_sum", {BufferRegion::full(x), BufferRegion::full(r)}, {{"dim", int64_t{1}}}, line(32));
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  std::string msg = user_error_of([&] { run_layout_inference(f); });
  EXPECT_NE(msg.find("fragment 'r'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.annotate_layout at kernel.py:30"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.reduce_sum at kernel.py:32"), std::string::npos) << msg;
}

TEST(LayoutInference, IncompatibleFragmentsInOneLoopAreAnError) {
  Builder b("transpose_regs");
  b.begin_kernel({ci(1)}, {128});
  Buffer x = b.alloc_fragment("x", {ci(64), ci(64)}, f32, line(40));
  Buffer z = b.alloc_fragment("z", {ci(64), ci(64)}, f32, line(41));
  Layout l = layout::default_fragment({64, 64}, 128, f32);
  b.begin_annotate("layout_map", LayoutMap{{x, l}, {z, l}}, line(42));
  auto ij = b.begin_loop_nest({"i", "j"}, {ci(64), ci(64)}, ForKind::kParallel, line(43));
  b.store(x, {ij[0], ij[1]}, buffer_load(z, {ij[1], ij[0]}), line(44));
  b.end_frame();
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  std::string msg = user_error_of([&] { run_layout_inference(f); });
  EXPECT_NE(msg.find("fragment 'z'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.Parallel loop at kernel.py:43"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fragment 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.annotate_layout at kernel.py:42"), std::string::npos) << msg;
}

TEST(LayoutInference, UserLayoutWithTooManyThreadsIsRejected) {
  Builder b("too_many");
  b.begin_kernel({ci(1)}, {64});
  Buffer x = b.alloc_fragment("x", {ci(128)}, f32, line(50));
  b.begin_annotate("layout_map", LayoutMap{{x, layout::coalesced_layout({128}, 128, 1)}}, line(51));
  b.tile_op("fill", {BufferRegion::full(x), float_imm(0.0)});
  b.end_frame();
  b.end_frame();
  PrimFunc f = b.finish();
  std::string msg = user_error_of([&] { run_layout_inference(f); });
  EXPECT_NE(msg.find("uses 128 threads, but the kernel has 64"), std::string::npos) << msg;
}
