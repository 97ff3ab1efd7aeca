// The builder GEMM through the whole CUDA pipeline: the lowered main loop has one barrier,
// one cp.async group and one tl.gemm_ss; the generated CUDA compiles with NVRTC for sm_80
// and sm_90a (with tl.disable_wgmma) into mma.sync (HMMA), ldmatrix (LDSM) and cp.async (LDGSTS).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "gemm_test_nvrtc.h"
#include "codegen_test_util.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"
#include "tilec/pipeline/pipeline.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/target/cuda/lower.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

target::Target sm(int arch, bool a = false) {
  target::Target t;
  t.arch = arch;
  t.arch_specific = a;
  return t;
}

// Calls of `op` and barriers directly in the body of the serial loop over `ko`.
struct LoopCounts {
  int barriers = 0, gemms = 0, overlapped_gemms = 0, commits = 0, waits = 0, loops = 0;
};
LoopCounts main_loop_counts(const PrimFunc& f) {
  LoopCounts n;
  for_each_node(f->body, [&](const Node* node) {
    auto* loop = dynamic_cast<const ForNode*>(node);
    if (!loop || loop->loop_var->name != "ko") return;
    ++n.loops;
    for_each_node(loop->body, [&](const Node* inner) {
      auto* c = dynamic_cast<const CallNode*>(inner);
      if (!c) return;
      n.barriers += c->op == "tl.syncthreads";
      n.gemms += c->op == "tl.gemm_ss";
      n.overlapped_gemms += c->op == "tl.gemm_ss_overlap";
      n.commits += c->op == "tl.cp_async_commit";
      n.waits += c->op == "tl.cp_async_wait";
    });
  });
  return n;
}

struct Case {
  const char* name;
  std::function<PrimFunc()> build;
  // Static shapes: one barrier in the loop after insert_syncs too. With symbolic strides
  // the copies branch at run time to a SIMT fallback, whose writes insert_syncs fences
  // with barriers of its own.
  bool one_barrier_after_syncs = true;
};

PrimFunc bf16_128x256() {
  GemmExampleConfig c;
  c.name = "gemm_bf16";
  c.M = c.N = c.K = 4096;
  c.block_M = 128, c.block_N = 256, c.block_K = 32;
  c.threads = 256;
  c.num_stages = 4;
  c.in_dtype = DataType::BFloat16();
  c.relu = false;
  return build_example_gemm(c);
}

BufferRegion tile(const Buffer& b, Expr row, Expr col, int64_t rows, int64_t cols) {
  BufferRegion r;
  r.buffer = b;
  r.region = {{std::move(row), int_imm(rows)}, {std::move(col), int_imm(cols)}};
  return r;
}

// C = A^T B^T with a symbolic M and K (partial tiles), float16.
PrimFunc transposed_symbolic() {
  Builder b("gemm_tt");
  Var m = b.dynamic("m"), k = b.dynamic("k");
  Buffer A = b.tensor("A", {k, m}, DataType::Float(16));
  Buffer B = b.tensor("B", {int_imm(256), k}, DataType::Float(16));
  Buffer C = b.tensor("C", {m, int_imm(256)}, DataType::Float(32));
  auto blk = b.begin_kernel({int_imm(2), ceildiv(m, int_imm(64))}, {128});
  Buffer As = b.alloc_shared("A_shared", {int_imm(32), int_imm(64)}, DataType::Float(16));
  Buffer Bs = b.alloc_shared("B_shared", {int_imm(128), int_imm(32)}, DataType::Float(16));
  Buffer Cl = b.alloc_fragment("C_local", {int_imm(64), int_imm(128)}, DataType::Float(32));
  b.tile_op("fill", {BufferRegion::full(Cl), float_imm(0)});
  PipelineInfo p;
  p.num_stages = 3;
  Var ko = b.begin_for("ko", int_imm(0), ceildiv(k, int_imm(32)), ForKind::kPipelined, p);
  b.tile_op("copy", {tile(A, ko * 32, blk[1] * 64, 32, 64), BufferRegion::full(As)});
  b.tile_op("copy", {tile(B, blk[0] * 128, ko * 32, 128, 32), BufferRegion::full(Bs)});
  b.tile_op("gemm", {BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(Cl)},
            {{"transpose_A", true}, {"transpose_B", true}});
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(Cl), tile(C, blk[1] * 64, blk[0] * 128, 64, 128)});
  b.end_frame();
  return b.finish();
}

class GemmEndToEnd : public ::testing::TestWithParam<Case> {};

// The first half of the CUDA pipeline (up to tile-op lowering).
PrimFunc first_half(const PrimFunc& f, passes::PassContext& ctx) {
  std::vector<passes::Pass> list;
  for (auto& p : pipeline::cuda_pipeline(ctx.target())) {
    list.push_back(p);
    if (p.name == "lower_tile_ops") break;
  }
  return passes::run_passes(list, f, ctx);
}

void check_main_loop(const PrimFunc& lowered, bool one_barrier = true) {
  LoopCounts n = main_loop_counts(lowered);
  ASSERT_EQ(n.loops, 1) << script(lowered);
  if (one_barrier) EXPECT_EQ(n.barriers, 1) << "the pipelined main loop needs exactly one barrier\n" << script(lowered);
  else EXPECT_GE(n.barriers, 1) << script(lowered);
  EXPECT_EQ(n.gemms, 1) << script(lowered);
  EXPECT_EQ(n.commits, 1) << script(lowered);
  EXPECT_EQ(n.waits, 1) << script(lowered);
}

// After overlap_gemm_mainloop: the loop's wait and its one barrier live inside the one
// tl.gemm_ss_overlap call (before its last k-step); the loop commits one group.
void check_overlapped_main_loop(const PrimFunc& lowered) {
  LoopCounts n = main_loop_counts(lowered);
  ASSERT_EQ(n.loops, 1) << script(lowered);
  EXPECT_EQ(n.barriers, 0) << script(lowered);
  EXPECT_EQ(n.waits, 0) << script(lowered);
  EXPECT_EQ(n.gemms, 0) << script(lowered);
  EXPECT_EQ(n.overlapped_gemms, 1) << script(lowered);
  EXPECT_EQ(n.commits, 1) << script(lowered);
}

// sm_90a with wgmma turned off keeps the Ampere form (gemm_sm90_test.cc has the Hopper one).
passes::PassContext ampere_form(const target::Target& t) {
  passes::PassContext ctx(t);
  if (t.has_wgmma()) ctx.set("tl.disable_wgmma", true);
  return ctx;
}

TEST_P(GemmEndToEnd, LoweredMainLoop) {
  for (auto target : {sm(80), sm(90, true)}) {
    passes::PassContext ctx = ampere_form(target);
    check_main_loop(first_half(GetParam().build(), ctx));
  }
}

TEST_P(GemmEndToEnd, CompilesToMmaLdmatrixCpAsync) {
  PrimFunc f = GetParam().build();
  for (auto target : {sm(80), sm(90, true)}) {
    passes::PassContext ctx = ampere_form(target);
    cuda::DeviceModule mod;
    try {
      mod = cuda::lower_to_cuda(f, ctx);
    } catch (const InternalError& e) {
      // While the codegen half is still stubbed on main its checks name the missing pass.
      if (std::string(e.what()).find("reached codegen") != std::string::npos)
        GTEST_SKIP() << "the codegen half of the CUDA pipeline is incomplete: " << e.what();
      throw;
    }
    if (GetParam().one_barrier_after_syncs) {  // insert_syncs adds none: the loop is overlapped
      check_overlapped_main_loop(mod.lowered);
      EXPECT_NE(mod.source.find("tl::gemm_ss_prefetch<"), std::string::npos) << mod.source;
      EXPECT_NE(mod.source.find("tl::gemm_ss_overlap<"), std::string::npos) << mod.source;
    } else {  // extra barriers of the SIMT fallback copies: left as it is
      check_main_loop(mod.lowered, false);
      EXPECT_NE(mod.source.find("tl::gemm_ss<"), std::string::npos) << mod.source;
    }
    EXPECT_NE(mod.source.find("tl::cp_async_cg16"), std::string::npos) << mod.source;

    std::string why;
    if (!runtime::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not found: " << why;
    runtime::CudaBinary out = codegen_test::compile_module(mod, target.str());
    for (const char* ins : {"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned.m8n8.x4", "cp.async.cg.shared.global",
                            "cp.async.wait_group"})
      EXPECT_NE(out.ptx.find(ins), std::string::npos) << "PTX lacks " << ins;
    EXPECT_EQ(out.ptxas.spill_stores_bytes, 0) << out.ptxas.log;
    EXPECT_EQ(out.ptxas.spill_loads_bytes, 0) << out.ptxas.log;
    if (auto sass = gemm_test::disassemble(out.cubin)) {
      for (const char* ins : {"HMMA.16816.F32", "LDSM.16", "LDGSTS.E.BYPASS"})
        EXPECT_NE(sass->find(ins), std::string::npos) << "SASS lacks " << ins;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GemmEndToEnd,
                         ::testing::Values(Case{"example_f16", [] { return build_example_gemm({}); }},
                                           Case{"bf16_128x256x32_4stages", bf16_128x256},
                                           Case{"f16_tt_symbolic", transposed_symbolic, false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
