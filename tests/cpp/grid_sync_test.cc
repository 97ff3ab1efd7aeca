// T.sync_grid() (tl.sync_grid): the placement checks (check_grid_syncs), the CPU target's
// barrier semantics (blocks in turns, each block's state kept), the CUDA lowering (the
// device library's cooperative-groups barrier, NVRTC for sm_80 / sm_90a), the launch plan's
// cooperative flag and its text form, and the co-residency error text.
#include <gtest/gtest.h>

#include <functional>

#include "codegen_test_util.h"
#include "target/cpu/machine.h"
#include "tilec/ir/builder.h"
#include "tilec/passes/passes.h"
#include "tilec/runtime/launch_errors.h"
#include "tilec/runtime/plan_text.h"
#include "tilec/target/cpu/interpreter.h"
#include "tilec/target/cuda/lower.h"
#include "user_error_test_util.h"

namespace {

using namespace tilec;
using namespace tilec::ir;
using cpu::HostArray;
using tilec::testing::at;
using tilec::testing::user_error_of;

const DataType f32 = DataType::Float(32);
constexpr int64_t kBlocks = 4, kThreads = 64, kN = kBlocks * kThreads;


HostArray array_of(std::vector<float>& v) { return HostArray{v.data(), f32, {static_cast<int64_t>(v.size())}, {1}}; }


void grid_sync(Builder& b, int line) { b.evaluate(call(DataType::Void(), "tl.sync_grid", {}), at(line)); }

// Phase 1: block bx writes A[bx*64 + i] = bx*64 + i and keeps its values in shared memory;
// grid barrier; phase 2: B[bx*64 + i] = A of the mirrored block (written by another block) +
// the block's own shared copy. Without the barrier's semantics block 0 reads A before block 3
// wrote it.
PrimFunc two_phase() {
  Builder b("two_phase");
  Buffer A = b.tensor("A", {int_imm(kN)}, f32);
  Buffer B = b.tensor("B", {int_imm(kN)}, f32);
  Var bx = b.begin_kernel({int_imm(kBlocks)}, {kThreads})[0];
  Buffer mine = b.alloc_shared("mine", {int_imm(kThreads)}, f32);
  b.loop("i", int_imm(kThreads), ForKind::kParallel, [&](Var i) {
    Expr j = bx * int_imm(kThreads) + i;
    b.store(A, {j}, cast(f32, j));
    b.store(mine, {i}, cast(f32, j) * float_imm(10.0, f32));
  });
  grid_sync(b, 7);
  b.loop("i", int_imm(kThreads), ForKind::kParallel, [&](Var i) {
    Expr other = (int_imm(kBlocks - 1) - bx) * int_imm(kThreads) + i;
    b.store(B, {bx * int_imm(kThreads) + i}, buffer_load(A, {other}) + buffer_load(mine, {i}));
  });
  b.end_frame();
  return b.finish();
}

TEST(GridSyncCpu, PhaseTwoReadsWhatOtherBlocksWroteInPhaseOne) {
  std::vector<float> a(kN, -1.0f), out(kN, 0.0f);
  cpu::run_on_cpu(two_phase(), {array_of(a), array_of(out)});
  for (int64_t bx = 0; bx < kBlocks; ++bx)
    for (int64_t i = 0; i < kThreads; ++i) {
      const int64_t j = bx * kThreads + i, other = (kBlocks - 1 - bx) * kThreads + i;
      ASSERT_EQ(out[j], static_cast<float>(other) + 10.0f * static_cast<float>(j)) << "block " << bx << " i " << i;
    }
}

TEST(GridSyncCpu, BlocksRunInTurnsThroughTheBarrier) {
  std::vector<std::vector<int64_t>> started;
  cpu::CpuOptions options;
  options.on_block = [&](const std::vector<int64_t>& block) { started.push_back(block); };
  std::vector<float> a(kN, -1.0f), out(kN, 0.0f);
  cpu::run_on_cpu(two_phase(), {array_of(a), array_of(out)}, options);
  ASSERT_EQ(started.size(), static_cast<size_t>(kBlocks));
  for (int64_t bx = 0; bx < kBlocks; ++bx) EXPECT_EQ(started[bx], std::vector<int64_t>{bx});
}

// An error in one block after the barrier stops every block and is raised (no hang).
TEST(GridSyncCpu, AnErrorInOneBlockIsRaised) {
  Builder b("fails_late");
  Buffer A = b.tensor("A", {int_imm(kN)}, f32);
  Var bx = b.begin_kernel({int_imm(kBlocks)}, {kThreads})[0];
  Buffer s = b.alloc_shared("s", {int_imm(4)}, f32);
  grid_sync(b, 3);
  b.begin_if(binary(NodeKind::kEQ, bx, int_imm(2)), at(4));
  b.store(s, {int_imm(9)}, float_imm(1.0, f32), at(5));
  b.end_frame();
  b.store(A, {bx}, float_imm(1.0, f32));
  b.end_frame();
  std::vector<float> a(kN, 0.0f);
  std::string e = user_error_of([&] { cpu::run_on_cpu(b.finish(), {array_of(a)}); });
  EXPECT_NE(e.find("out-of-bounds write of 's'"), std::string::npos) << e;
  EXPECT_NE(e.find("kernel.py:5"), std::string::npos) << e;
}

// Blocks that reach the barrier different numbers of times would hang a GPU; the CPU target
// says so even when the static check is skipped (the Machine run directly).
TEST(GridSyncCpu, MismatchedBarrierCountsAreAnErrorNotAHang) {
  Builder b("mismatch");
  Buffer A = b.tensor("A", {int_imm(kN)}, f32);
  Var bx = b.begin_kernel({int_imm(kBlocks)}, {kThreads})[0];
  b.begin_if(bx < int_imm(2), at(3));
  grid_sync(b, 4);
  b.end_frame();
  b.store(A, {bx}, float_imm(1.0, f32));
  b.end_frame();
  PrimFunc f = b.finish();
  std::vector<float> a(kN, 0.0f);
  cpu::CpuOptions options;
  std::string e = user_error_of([&] {
    cpu::Machine m(f, options);
    m.run({array_of(a)});
  });
  EXPECT_NE(e.find("T.sync_grid() call(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("on a GPU the grid would hang"), std::string::npos) << e;
  // run_on_cpu refuses it before running anything, with the placement error.
  e = user_error_of([&] { cpu::run_on_cpu(f, {array_of(a)}); });
  EXPECT_NE(e.find("T.sync_grid() inside a branch whose condition depends on the block or thread index"),
            std::string::npos)
      << e;
}

// ---- placement checks ----

std::string placement_error(const std::function<void(Builder&, Var)>& body, std::vector<int64_t> cluster = {}) {
  Builder b("placed");
  Buffer A = b.tensor("A", {int_imm(kN)}, f32);
  Var bx = b.begin_kernel({int_imm(kBlocks)}, {kThreads}, cluster)[0];
  body(b, bx);
  b.store(A, {bx}, float_imm(1.0, f32));
  b.end_frame();
  PrimFunc f = b.finish();
  return user_error_of([&] { passes::check_grid_syncs(f); });
}

TEST(GridSyncChecks, AtTheTopLevelOrUnderUniformControlFlowIsFine) {
  EXPECT_EQ(placement_error([](Builder& b, Var) { grid_sync(b, 3); }), "(no error)");
  EXPECT_EQ(placement_error([](Builder& b, Var) {
              b.loop("w", int_imm(3), ForKind::kSerial, [&](Var) { grid_sync(b, 3); });
            }),
            "(no error)");
  // A condition on a loop variable of a uniform loop is the same in every block.
  EXPECT_EQ(placement_error([](Builder& b, Var) {
              b.loop("w", int_imm(3), ForKind::kSerial, [&](Var w) {
                b.begin_if(w > int_imm(0));
                grid_sync(b, 3);
                b.end_frame();
              });
            }),
            "(no error)");
}

TEST(GridSyncChecks, InsideParallelPipelinedOrRolesIsAnError) {
  std::string e = placement_error([](Builder& b, Var) {
    b.begin_for("i", int_imm(0), int_imm(kThreads), ForKind::kParallel, {}, {}, at(2));
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("T.sync_grid() inside a T.Parallel loop"), std::string::npos) << e;
  EXPECT_NE(e.find("(line 2)"), std::string::npos) << e;
  EXPECT_NE(e.find("@kernel.py:3:5"), std::string::npos) << e;
  EXPECT_NE(e.find("split the T.Parallel loop in two"), std::string::npos) << e;

  e = placement_error([](Builder& b, Var) {
    PipelineInfo p;
    p.num_stages = 2;
    b.begin_for("k", int_imm(0), int_imm(8), ForKind::kPipelined, p, {}, at(2));
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("inside a T.Pipelined loop"), std::string::npos) << e;
  EXPECT_NE(e.find("write the loop as T.serial"), std::string::npos) << e;

  e = placement_error([](Builder& b, Var) {
    b.begin_annotate("ws", std::vector<int64_t>{0}, at(2));
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("inside a T.ws warp-group role"), std::string::npos) << e;
}

TEST(GridSyncChecks, UnderBlockDependentControlFlowIsAnError) {
  std::string e = placement_error([](Builder& b, Var bx) {
    Var half = b.let("half", floordiv(bx, int_imm(2)));  // varying through a Let
    b.begin_if(binary(NodeKind::kEQ, half, int_imm(0)), at(2));
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("inside a branch whose condition depends on the block or thread index"), std::string::npos) << e;
  EXPECT_NE(e.find("call T.sync_grid() unconditionally"), std::string::npos) << e;

  e = placement_error([](Builder& b, Var bx) {
    b.begin_for("w", int_imm(0), bx + int_imm(1), ForKind::kSerial, {}, {}, at(2));
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("inside a loop whose bounds depend on the block or thread index"), std::string::npos) << e;
  EXPECT_NE(e.find("the same number of times"), std::string::npos) << e;

  e = placement_error([](Builder& b, Var) {
    Buffer n = b.alloc("n", {int_imm(1)}, DataType::Int(32), Scope::kVar);
    b.begin_while(buffer_load(n, {int_imm(0)}) < int_imm(3), at(2));
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("inside a while loop whose condition depends"), std::string::npos) << e;

  e = placement_error([](Builder& b, Var) {
    const Var& tx = b.thread_vars()[0];
    b.begin_if(tx < int_imm(32), at(2));
    b.begin_else();
    grid_sync(b, 3);
    b.end_frame();
  });
  EXPECT_NE(e.find("inside the else branch"), std::string::npos) << e;
}

TEST(GridSyncChecks, ClustersAreRefused) {
  std::string e = placement_error([](Builder& b, Var) { grid_sync(b, 3); }, {2});
  EXPECT_NE(e.find("thread-block clusters"), std::string::npos) << e;
}

// ---- CUDA ----

target::Target arch(int sm, bool specific) {
  target::Target t;
  t.arch = sm;
  t.arch_specific = specific;
  return t;
}

TEST(GridSyncCuda, LowersToTheGridBarrierAndACooperativePlan) {
  for (auto [sm, specific, name] : {std::tuple{80, false, "sm_80"}, std::tuple{90, true, "sm_90a"}}) {
    passes::PassContext ctx(arch(sm, specific));
    cuda::DeviceModule mod = cuda::lower_to_cuda(two_phase(), ctx);
    EXPECT_TRUE(codegen_test::contains(mod.source, "#include \"tilec/grid_sync.cuh\"")) << mod.source;
    EXPECT_TRUE(codegen_test::contains(mod.source, "tl::sync_grid();")) << mod.source;
    EXPECT_TRUE(mod.plan.cooperative);
    EXPECT_EQ(mod.plan.persistent_blocks_per_sm, 0);
    EXPECT_TRUE(codegen_test::contains(runtime::launch_plan_to_text(mod.plan), "cooperative 1"));
    if (!codegen_test::have_nvrtc()) GTEST_SKIP() << "NVRTC not found";
    tilec::runtime::CudaBinary bin = codegen_test::compile_module(mod, name);
    EXPECT_FALSE(bin.cubin.empty()) << name;
    // The cooperative-groups barrier: the driver's grid workspace (environment registers),
    // an atomic arrival and block barriers around it.
    EXPECT_TRUE(codegen_test::contains(bin.ptx, "%envreg")) << name;
    EXPECT_TRUE(codegen_test::contains(bin.ptx, "atom.")) << name;
    EXPECT_TRUE(codegen_test::contains(bin.ptx, "barrier.sync") || codegen_test::contains(bin.ptx, "bar.sync")) << name;
  }
}

TEST(GridSyncCuda, AKernelWithoutItIsNotCooperative) {
  Builder b("plain");
  Buffer A = b.tensor("A", {int_imm(kN)}, f32);
  Var bx = b.begin_kernel({int_imm(kBlocks)}, {kThreads})[0];
  b.store(A, {bx}, float_imm(1.0, f32));
  b.end_frame();
  passes::PassContext ctx(arch(80, false));
  cuda::DeviceModule mod = cuda::lower_to_cuda(b.finish(), ctx);
  EXPECT_FALSE(mod.plan.cooperative);
  EXPECT_FALSE(codegen_test::contains(runtime::launch_plan_to_text(mod.plan), "cooperative"));
  EXPECT_FALSE(codegen_test::contains(mod.source, "grid_sync"));
}

// ---- launch plan and runtime texts ----

runtime::LaunchPlan cooperative_plan() {
  runtime::LaunchPlan p;
  p.kernel_name = "two_phase";
  p.tensors = {{"A", f32, {{kN, ""}}, {}, 4, false}};
  p.param_order = {{true, 0}};
  p.kernel_args = {{runtime::KernelArg::kTensorData, 0}};
  p.grid = {int_imm(132)};
  p.block[0] = 256;
  p.cooperative = true;
  return p;
}

TEST(GridSyncPlan, CooperativeRoundTripsThroughText) {
  runtime::LaunchPlan p = cooperative_plan();
  std::string text = runtime::launch_plan_to_text(p);
  EXPECT_TRUE(codegen_test::contains(text, "\ncooperative 1\n")) << text;
  runtime::LaunchPlan q = runtime::launch_plan_from_text(text);
  EXPECT_TRUE(q.cooperative);
  EXPECT_EQ(runtime::launch_plan_to_text(q), text);
  // A plan written before the field existed is not cooperative.
  q = runtime::launch_plan_from_text(text.substr(0, text.find("cooperative")));
  EXPECT_FALSE(q.cooperative);
}

TEST(GridSyncPlan, CooperativeExcludesPersistenceAndClusters) {
  runtime::LaunchPlan p = cooperative_plan();
  p.persistent_blocks_per_sm = 1;
  EXPECT_NE(user_error_of([&] { runtime::check_launch_plan(p); }).find("cannot be persistent"), std::string::npos);
  p = cooperative_plan();
  p.cluster[0] = 2;
  p.grid = {int_imm(132)};
  EXPECT_NE(user_error_of([&] { runtime::check_launch_plan(p); }).find("thread-block clusters"), std::string::npos);
}

TEST(GridSyncPlan, TooLargeAGridNamesKernelGridAndLimit) {
  runtime::CooperativeFit fit;
  fit.kernel = "two_phase";
  fit.grid[0] = 1024;
  fit.block_threads = 256;
  fit.dynamic_shared_bytes = 49152;
  fit.device = 0;
  fit.device_name = "NVIDIA H200";
  fit.sms = 132;
  fit.blocks_per_sm = 4;
  EXPECT_EQ(runtime::cooperative_grid_error(fit),
            "kernel 'two_phase' calls T.sync_grid(), so all of its blocks must be resident on the GPU at once (a "
            "cooperative launch), but its grid (1024, 1, 1) has 1024 blocks and cuda:0 (NVIDIA H200) holds at most "
            "528 of them: 132 SMs x 4 block(s) per SM for this kernel (256 threads, 49152 bytes of dynamic shared "
            "memory per block)");
  EXPECT_TRUE(codegen_test::contains(runtime::cooperative_grid_hint(fit), "launch at most 528 blocks"));
  fit.grid[0] = 528;
  EXPECT_EQ(runtime::cooperative_grid_error(fit), "");
}

}  // namespace
