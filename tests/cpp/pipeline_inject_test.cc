// pipeline_planning + inject_pipeline on hand-built loops: printed before / expected.
#include <gtest/gtest.h>

#include "tilec/ir/builder.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/ir/printer.h"
#include "tilec/passes/passes.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

target::Target sm(int arch) {
  target::Target t;
  t.arch = arch;
  return t;
}

PrimFunc run(const PrimFunc& f, const target::Target& t = sm(80)) {
  passes::PassContext ctx(t);
  PrimFunc g = passes::pipeline_planning_pass().run(f, ctx);
  return passes::inject_pipeline_pass().run(g, ctx);
}

std::string error_of(const PrimFunc& f) {
  try {
    run(f);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

// The kernel part of a printed function: from the `with T.Kernel` line on.
std::string kernel_text(const PrimFunc& f) {
  std::string s = script(f);
  return s.substr(s.find("    with T.Kernel"));
}

BufferRegion tile(const Buffer& b, Expr row, Expr col, int64_t rows, int64_t cols) {
  BufferRegion r;
  r.buffer = b;
  r.region = {{std::move(row), int_imm(rows)}, {std::move(col), int_imm(cols)}};
  return r;
}

// A symbolic-K GEMM mainloop with explicit pipeline lists.
PrimFunc gemm_loop(int num_stages, std::vector<int> order = {}, std::vector<int> stage = {}, bool symbolic_k = true) {
  Builder b("mm");
  Var k = b.dynamic("k");
  Expr K = symbolic_k ? Expr(k) : int_imm(64);
  Buffer A = b.tensor("A", {int_imm(128), K}, DataType::Float(16));
  Buffer B = b.tensor("B", {K, int_imm(128)}, DataType::Float(16));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(128), int_imm(32)}, DataType::Float(16));
  Buffer Bs = b.alloc_shared("B_shared", {int_imm(32), int_imm(128)}, DataType::Float(16));
  Buffer C = b.alloc_fragment("C_local", {int_imm(128), int_imm(128)}, DataType::Float(32));
  PipelineInfo p;
  p.num_stages = num_stages;
  p.order = std::move(order);
  p.stage = std::move(stage);
  Var ko = b.begin_for("ko", int_imm(0), ceildiv(K, int_imm(32)), ForKind::kPipelined, p);
  b.tile_op("copy", {tile(A, int_imm(0), ko * 32, 128, 32), BufferRegion::full(As)});
  b.tile_op("copy", {tile(B, ko * 32, int_imm(0), 32, 128), BufferRegion::full(Bs)});
  b.tile_op("gemm", {BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(C)});
  b.end_frame();
  b.end_frame();
  return b.finish();
}

TEST(PipelinePlanning, DefaultStagesPutCopiesAheadOfTheGemm) {
  passes::PassContext ctx(sm(80));
  PrimFunc g = passes::pipeline_planning_pass().run(build_example_gemm({}), ctx);
  std::string s = script(g);
  EXPECT_NE(s.find("T.Pipelined(T.ceildiv(1024, 32), num_stages=3, order=[0, 1, 2], stage=[0, 0, 2])"),
            std::string::npos)
      << s;
}

TEST(InjectPipeline, ThreeStageGemmMainloop) {
  PrimFunc f = run(build_example_gemm({}));
  std::string s = kernel_text(f);
  const std::string expected = R"(    with T.Kernel(T.ceildiv(1024, 128), T.ceildiv(1024, 128), threads=128) as (bx, by):
        A_shared = T.alloc_shared((3, 128, 32), "float16")
        B_shared = T.alloc_shared((3, 32, 128), "float16")
        C_local = T.alloc_fragment((128, 128), "float32")
        T.fill(C_local, T.float32(0))
        T.async_copy(A[by * 128:by * 128 + 128, 0:32], A_shared[0, 0:128, 0:32], no_implicit_commit_wait=True)
        T.async_copy(B[0:32, bx * 128:bx * 128 + 128], B_shared[0, 0:32, 0:128], no_implicit_commit_wait=True)
        T.call_intrin("void", "tl.cp_async_commit")
        T.async_copy(A[by * 128:by * 128 + 128, 32:64], A_shared[1, 0:128, 0:32], no_implicit_commit_wait=True)
        T.async_copy(B[32:64, bx * 128:bx * 128 + 128], B_shared[1, 0:32, 0:128], no_implicit_commit_wait=True)
        T.call_intrin("void", "tl.cp_async_commit")
        for ko in T.serial(T.ceildiv(1024, 32), annotations={"tilec.unroll": 3}):
            T.call_intrin("void", "tl.cp_async_wait", 1)
            T.call_intrin("void", "tl.syncthreads")
            T.async_copy(A[by * 128:by * 128 + 128, (ko + 2) * 32:(ko + 2) * 32 + 32], A_shared[(ko + 2) % 3, 0:128, 0:32], no_implicit_commit_wait=True, guard=ko + 2 < T.ceildiv(1024, 32))
            T.async_copy(B[(ko + 2) * 32:(ko + 2) * 32 + 32, bx * 128:bx * 128 + 128], B_shared[(ko + 2) % 3, 0:32, 0:128], no_implicit_commit_wait=True, guard=ko + 2 < T.ceildiv(1024, 32))
            T.call_intrin("void", "tl.cp_async_commit")
            T.gemm(A_shared[ko % 3, 0:128, 0:32], B_shared[ko % 3, 0:32, 0:128], C_local)
        T.call_intrin("void", "tl.cp_async_wait", 0)
)";
  EXPECT_EQ(s.substr(0, expected.size()), expected) << s;
}

TEST(InjectPipeline, SymbolicTripCountGuardsThePrologue) {
  PrimFunc f = run(gemm_loop(3));
  std::string s = kernel_text(f);
  // Iteration 0 and 1 of the copies only when the loop has that many iterations.
  EXPECT_NE(s.find("T.async_copy(A[0:128, 0:32], A_shared[0, 0:128, 0:32], no_implicit_commit_wait=True, "
                   "guard=0 < T.ceildiv(k, 32))"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("T.async_copy(A[0:128, 32:64], A_shared[1, 0:128, 0:32], no_implicit_commit_wait=True, "
                   "guard=1 < T.ceildiv(k, 32))"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("for ko in T.serial(T.ceildiv(k, 32), annotations={\"tilec.unroll\": 3}):"), std::string::npos) << s;
}

TEST(InjectPipeline, ExplicitOrderAndStageIssueTheCopiesAfterTheGemm) {
  // order=[1, 2, 0], stage=[0, 0, 1]: two versions, the next tile's copies after the gemm.
  PrimFunc f = run(gemm_loop(3, {1, 2, 0}, {0, 0, 1}, /*symbolic_k=*/false));
  std::string s = kernel_text(f);
  const std::string expected_loop = R"(        for ko in T.serial(T.ceildiv(64, 32), annotations={"tilec.unroll": 2}):
            T.call_intrin("void", "tl.cp_async_wait", 0)
            T.call_intrin("void", "tl.syncthreads")
            T.gemm(A_shared[ko % 2, 0:128, 0:32], B_shared[ko % 2, 0:32, 0:128], C_local)
            T.async_copy(A[0:128, (ko + 1) * 32:(ko + 1) * 32 + 32], A_shared[(ko + 1) % 2, 0:128, 0:32], no_implicit_commit_wait=True, guard=ko + 1 < T.ceildiv(64, 32))
            T.async_copy(B[(ko + 1) * 32:(ko + 1) * 32 + 32, 0:128], B_shared[(ko + 1) % 2, 0:32, 0:128], no_implicit_commit_wait=True, guard=ko + 1 < T.ceildiv(64, 32))
            T.call_intrin("void", "tl.cp_async_commit")
)";
  EXPECT_NE(s.find(expected_loop), std::string::npos) << s;
  EXPECT_NE(s.find("A_shared = T.alloc_shared((2, 128, 32), \"float16\")"), std::string::npos) << s;
}

TEST(InjectPipeline, NumStagesZeroOrOneMeansNoPipelining) {
  for (int stages : {0, 1}) {
    PrimFunc f = run(gemm_loop(stages));
    std::string s = kernel_text(f);
    EXPECT_NE(s.find("for ko in T.serial(T.ceildiv(k, 32)):\n            T.copy(A[0:128, ko * 32:ko * 32 + 32], A_shared)"),
              std::string::npos)
        << s;
    EXPECT_EQ(s.find("cp_async"), std::string::npos) << s;
    EXPECT_NE(s.find("A_shared = T.alloc_shared((128, 32), \"float16\")"), std::string::npos) << s;
  }
}

TEST(InjectPipeline, NoCpAsyncBeforeAmpereButStillMultiBuffered) {
  PrimFunc f = run(gemm_loop(2, {}, {}, false), sm(75));
  std::string s = kernel_text(f);
  EXPECT_EQ(s.find("cp_async"), std::string::npos) << s;
  EXPECT_EQ(s.find("async_copy"), std::string::npos) << s;
  EXPECT_NE(s.find("T.copy(A[0:128, (ko + 1) * 32:(ko + 1) * 32 + 32], A_shared[(ko + 1) % 2, 0:128, 0:32])"),
            std::string::npos)
      << s;
}

TEST(InjectPipeline, LayoutAnnotationsFollowTheVersions) {
  Builder b("mm");
  Buffer A = b.tensor("A", {int_imm(128), int_imm(64)}, DataType::Float(16));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(128), int_imm(32)}, DataType::Float(16));
  Buffer C = b.alloc_fragment("C_local", {int_imm(128), int_imm(32)}, DataType::Float(16));
  // A padded layout: rows of 40 elements, so a version is 128 * 40 elements.
  Var i = make_var("i"), j = make_var("j");
  Layout padded = make_layout({int_imm(128), int_imm(32)}, {i, j}, {i * 40 + j});
  b.begin_annotate("layout_map", LayoutMap{{As, padded}});
  PipelineInfo p;
  p.num_stages = 2;
  Var ko = b.begin_for("ko", int_imm(0), int_imm(2), ForKind::kPipelined, p);
  b.tile_op("copy", {tile(A, int_imm(0), ko * 32, 128, 32), BufferRegion::full(As)});
  b.tile_op("copy", {BufferRegion::full(As), BufferRegion::full(C)});
  b.end_frame();
  b.end_frame();
  b.end_frame();
  std::string s = kernel_text(run(b.finish()));
  EXPECT_NE(s.find("T.annotate_layout({A_shared: T.Layout((2, 128, 32), lambda v, i, j: [v * 5120 + (i * 40 + j)])})"),
            std::string::npos)
      << s;
}

TEST(InjectPipeline, BadStageListsAreUserErrors) {
  EXPECT_NE(error_of(gemm_loop(3, {}, {0, 1})).find("T.Pipelined: `stage` [0, 1] has 2 entries but the loop body has 3 statements"),
            std::string::npos);
  EXPECT_NE(error_of(gemm_loop(3, {0, 0, 1})).find("T.Pipelined: `order` [0, 0, 1] must list each of 0..2 once"),
            std::string::npos);
  EXPECT_NE(error_of(gemm_loop(3, {}, {0, -1, 1})).find("has a negative stage"), std::string::npos);
}

TEST(InjectPipeline, FragmentCrossingStagesIsAUserError) {
  Builder b("mm");
  Buffer A = b.tensor("A", {int_imm(64), int_imm(64)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(64), int_imm(16)}, DataType::Float(32));
  Buffer F = b.alloc_fragment("F", {int_imm(64), int_imm(16)}, DataType::Float(32));
  Buffer G = b.alloc_fragment("G", {int_imm(64), int_imm(16)}, DataType::Float(32));
  PipelineInfo p;
  p.num_stages = 3;
  p.stage = {0, 1, 2};
  Var ko = b.begin_for("ko", int_imm(0), int_imm(4), ForKind::kPipelined, p, {}, SourceLoc{"k.py", 7, 5});
  b.tile_op("copy", {tile(A, int_imm(0), ko * 16, 64, 16), BufferRegion::full(As)});
  b.tile_op("copy", {BufferRegion::full(As), BufferRegion::full(F)});
  b.tile_op("copy", {BufferRegion::full(F), BufferRegion::full(G)});
  b.end_frame();
  b.end_frame();
  std::string e = error_of(b.finish());
  EXPECT_NE(e.find("k.py:7:5"), std::string::npos) << e;
  EXPECT_NE(e.find("T.Pipelined: local.fragment buffer 'F' is written at stage 1 and read at stage 2"), std::string::npos)
      << e;
}

TEST(InjectPipeline, VersionedBufferUsedAfterTheLoopIsAUserError) {
  Builder b("mm");
  Buffer A = b.tensor("A", {int_imm(64), int_imm(64)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(64), int_imm(16)}, DataType::Float(32));
  Buffer F = b.alloc_fragment("F", {int_imm(64), int_imm(16)}, DataType::Float(32));
  PipelineInfo p;
  p.num_stages = 2;
  Var ko = b.begin_for("ko", int_imm(0), int_imm(4), ForKind::kPipelined, p);
  b.tile_op("copy", {tile(A, int_imm(0), ko * 16, 64, 16), BufferRegion::full(As)});
  b.tile_op("copy", {BufferRegion::full(As), BufferRegion::full(F)});
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(As), BufferRegion::full(F)}, {}, SourceLoc{"k.py", 12, 5});
  b.end_frame();
  std::string e = error_of(b.finish());
  EXPECT_NE(e.find("k.py:12:5"), std::string::npos) << e;
  EXPECT_NE(e.find("shared buffer 'A_shared' is filled in a T.Pipelined loop (one version per stage) and also used "
                   "outside it"),
            std::string::npos)
      << e;
}

TEST(InjectPipeline, IntermediateStagesWaitInThePrologueToo) {
  // stage [0, 1, 2]: the shared -> fragment copy at stage 1 reads what stage 0 fetched.
  Builder b("mm");
  Buffer A = b.tensor("A", {int_imm(64), int_imm(64)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(64), int_imm(16)}, DataType::Float(32));
  Buffer Bs = b.alloc_shared("B_shared", {int_imm(64), int_imm(16)}, DataType::Float(32));
  Buffer F = b.alloc_fragment("F", {int_imm(64), int_imm(16)}, DataType::Float(32));
  PipelineInfo p;
  p.num_stages = 3;
  p.stage = {0, 1, 2};
  Var ko = b.begin_for("ko", int_imm(0), int_imm(4), ForKind::kPipelined, p);
  b.tile_op("copy", {tile(A, int_imm(0), ko * 16, 64, 16), BufferRegion::full(As)});
  b.tile_op("copy", {BufferRegion::full(As), BufferRegion::full(Bs)});
  b.tile_op("copy", {BufferRegion::full(Bs), BufferRegion::full(F)});
  b.end_frame();
  b.end_frame();
  std::string s = kernel_text(run(b.finish()));
  // Prologue step 1 runs the stage-1 copy of iteration 0: it waits for step 0's group.
  const std::string step1 = R"(        T.call_intrin("void", "tl.cp_async_commit")
        T.call_intrin("void", "tl.cp_async_wait", 0)
        T.call_intrin("void", "tl.syncthreads")
        T.async_copy(A[0:64, 16:32], A_shared[1, 0:64, 0:16], no_implicit_commit_wait=True)
        T.call_intrin("void", "tl.cp_async_commit")
        T.copy(A_shared[0, 0:64, 0:16], B_shared[0, 0:64, 0:16])
)";
  EXPECT_NE(s.find(step1), std::string::npos) << s;
  EXPECT_NE(s.find("B_shared = T.alloc_shared((3, 64, 16), \"float32\")"), std::string::npos) << s;
}

}  // namespace
