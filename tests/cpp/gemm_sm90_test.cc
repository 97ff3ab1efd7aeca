// The Hopper form of the quickstart GEMM and the team's 128x256 GEMM on sm_90a: a
// warp-specialized kernel (producer warpgroup with TMA loads on mbarriers, consumer
// warpgroups with wgmma), checked in the lowered IR, the CUDA source and the PTX NVRTC
// makes of it. The sm_80 form stays mma.sync + cp.async (gemm_end_to_end_test.cc).
#include <gtest/gtest.h>

#include <string>

#include "ops/gemm_operands.h"
#include "ops/smem_tile.h"
#include "codegen_test_util.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/visitor.h"
#include "tilec/layout/layout.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/runtime/nvrtc.h"
#include "tilec/target/cuda/lower.h"

#include "../../src/device/cuda/gemm_sm90_layout.cuh"

using namespace tilec;
using namespace tilec::ir;

namespace {

target::Target sm90a() {
  target::Target t;
  t.arch = 90;
  t.arch_specific = true;
  return t;
}

GemmExampleConfig team_gemm() {
  GemmExampleConfig c;
  c.name = "gemm_team";
  c.M = c.N = c.K = 4096;
  c.block_M = 128, c.block_N = 256, c.block_K = 64;
  c.threads = 256;
  c.num_stages = 3;
  c.in_dtype = DataType::BFloat16();
  c.relu = false;
  return c;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

struct Compiled {
  cuda::DeviceModule mod;
  runtime::CudaBinary bin;
};

Compiled compile(const PrimFunc& f, passes::PassContext& ctx) {
  Compiled c;
  c.mod = cuda::lower_to_cuda(f, ctx);
  std::string why;
  if (!runtime::nvrtc_available(&why)) return c;
  c.bin = codegen_test::compile_module(c.mod, ctx.target().str());
  return c;
}

TEST(GemmSm90, TeamGemmIsWarpSpecializedWithTmaAndWgmma) {
  passes::PassContext ctx(sm90a());
  Compiled c = compile(build_example_gemm(team_gemm()), ctx);
  const std::string& src = c.mod.source;
  // 256 consumer threads + one producer warpgroup; one block per SM for setmaxnreg.
  EXPECT_NE(src.find("__launch_bounds__(384, 1)"), std::string::npos) << src;
  EXPECT_NE(src.find("tl::setmaxnreg_dec<24>()"), std::string::npos);
  EXPECT_NE(src.find("tl::setmaxnreg_inc<240>()"), std::string::npos);
  // Three tensor maps: A (box 64 x 128), B (box 64 x 64, four per stage) and C, whose tile
  // leaves through shared memory (stage_output_tiles) in four 64-column TMA stores.
  ASSERT_EQ(c.mod.plan.tma_descs.size(), 3u);
  EXPECT_EQ(c.mod.plan.tma_descs[0].box, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(c.mod.plan.tma_descs[1].box, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(c.mod.plan.tma_descs[0].swizzle, 3);
  EXPECT_EQ(count(src, "tl::tma_load("), 5) << src;
  EXPECT_EQ(count(src, "tl::tma_store("), 4) << src;
  EXPECT_EQ(count(src, "const __grid_constant__ tl::TmaDescriptor"), 3);
  EXPECT_NE(src.find("tl::wgmma_gemm_ss<128, 256, 64, 2, 1, false, false, false, tl::WgTile<128, 64, 3>, "
                     "tl::WgTile<64, 256, 3>, tl::kWgmmaBF16, 256, -1>"),
            std::string::npos)
      << src;
  // One wgmma group stays in flight: a step waits for the previous one and releases its
  // slot (one arrival per consumer warpgroup); the loop ends with a full wait.
  EXPECT_NE(src.find("tl::wgmma_wait<1>();"), std::string::npos);
  EXPECT_NE(src.find("tl::wgmma_wait<0>();"), std::string::npos);
  EXPECT_NE(src.find("tl::mbarrier_init(&ko_empty[0], 2);"), std::string::npos) << src;
  EXPECT_EQ(c.mod.plan.block[0], 384);
  // Persistent: the grid counts the 16 x 32 tiles, the runtime launches one block per SM;
  // each role loops over its block's tiles, and the consumers hand the last slot of a tile
  // back before the next.
  EXPECT_EQ(c.mod.plan.persistent_blocks_per_sm, 1);
  EXPECT_EQ(ir::script(c.mod.plan.grid[0]), "512");
  EXPECT_GE(count(src, "tl::grid_dim_x()"), 4) << src;
  // 3 stages of 48 KiB, the staged 128 x 256 bf16 C tile (64 KiB, beside them: the producer
  // fills the next tile's stages during this tile's store) and the 1 KiB the kernel aligns
  // its arena with.
  EXPECT_EQ(c.mod.plan.dynamic_shared_bytes, 3 * 49152 + 65536 + 1024);
  if (c.bin.ptx.empty()) GTEST_SKIP() << "NVRTC not found";
  for (const char* ins : {"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "wgmma.fence.sync.aligned",
                          "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
                          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                          "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.expect_tx",
                          "setmaxnreg.inc.sync.aligned.u32 240", "setmaxnreg.dec.sync.aligned.u32 24"})
    EXPECT_NE(c.bin.ptx.find(ins), std::string::npos) << "PTX lacks " << ins;
  EXPECT_EQ(c.bin.ptx.find("mma.sync"), std::string::npos);
  EXPECT_EQ(c.bin.ptx.find("cp.async.cg"), std::string::npos);
  EXPECT_EQ(c.bin.ptxas.spill_stores_bytes, 0) << c.bin.ptxas.log;
  EXPECT_EQ(c.bin.ptxas.spill_loads_bytes, 0) << c.bin.ptxas.log;
  EXPECT_EQ(c.bin.ptx.find("ld.local"), std::string::npos);
}

TEST(GemmSm90, QuickstartGemmGetsTmaAndWgmmaUnchanged) {
  passes::PassContext ctx(sm90a());
  Compiled c = compile(build_example_gemm({}), ctx);  // 128x128x32, 3 stages, 128 threads
  const std::string& src = c.mod.source;
  EXPECT_EQ(c.mod.plan.block[0], 256) << src;
  // One consumer warpgroup of m64n128 atoms: two CTAs per SM (128 registers each at launch),
  // the consumers raised to 232.
  EXPECT_NE(src.find("__launch_bounds__(256, 2)"), std::string::npos) << src;
  EXPECT_NE(src.find("tl::setmaxnreg_inc<232>()"), std::string::npos) << src;
  // K tile of 32 halves = 64-byte rows: the 64B swizzle for A, 128B for B (128 columns).
  EXPECT_NE(src.find("tl::WgTile<128, 32, 2>, tl::WgTile<32, 128, 3>"), std::string::npos) << src;
  ASSERT_EQ(c.mod.plan.tma_descs.size(), 3u);  // A, B, and the staged C tile's store
  EXPECT_EQ(c.mod.plan.tma_descs[0].swizzle, 2);
  if (c.bin.ptx.empty()) GTEST_SKIP() << "NVRTC not found";
  EXPECT_NE(c.bin.ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"), std::string::npos);
  EXPECT_EQ(c.bin.ptxas.spill_stores_bytes, 0) << c.bin.ptxas.log;
}

TEST(GemmSm90, ConfigsTurnThePartsOff) {
  {
    passes::PassContext ctx(sm90a());
    ctx.set("tilec.persistent", false);
    cuda::DeviceModule m = cuda::lower_to_cuda(build_example_gemm(team_gemm()), ctx);
    EXPECT_EQ(m.plan.persistent_blocks_per_sm, 0);
    EXPECT_EQ(m.plan.grid.size(), 2u);
    EXPECT_EQ(m.source.find("grid_dim_x"), std::string::npos);
  }
  {
    passes::PassContext ctx(sm90a());
    ctx.set("tl.disable_warp_specialized", true);
    cuda::DeviceModule m = cuda::lower_to_cuda(build_example_gemm(team_gemm()), ctx);
    // No producer: cp.async pipeline, still wgmma, 256 threads; TMA only for the staged C
    // tile's store.
    EXPECT_EQ(m.plan.block[0], 256);
    ASSERT_EQ(m.plan.tma_descs.size(), 1u);
    EXPECT_EQ(m.source.find("tl::tma_load"), std::string::npos);
    EXPECT_NE(m.source.find("tl::wgmma_gemm_ss<"), std::string::npos);
    EXPECT_NE(m.source.find("tl::cp_async_cg16"), std::string::npos);
    // cp.async writes reach wgmma through the async proxy: fenced before the barrier.
    const size_t fence = m.source.find("tl::fence_proxy_async();");
    ASSERT_NE(fence, std::string::npos) << m.source;
    const size_t next = m.source.find_first_not_of(" \n", fence + 24);
    EXPECT_EQ(m.source.compare(next, 16, "__syncthreads();"), 0) << m.source;
  }
  {
    passes::PassContext ctx(sm90a());
    ctx.set("tl.disable_wgmma", true);
    cuda::DeviceModule m = cuda::lower_to_cuda(build_example_gemm(team_gemm()), ctx);
    EXPECT_EQ(m.plan.block[0], 256);
    EXPECT_NE(m.source.find("tl::gemm_ss"), std::string::npos);
    EXPECT_EQ(m.source.find("wgmma"), std::string::npos);
  }
}

// The accumulator fragment the compiler builds (IR) is the device formula, element by
// element, and matches the PTX wgmma D layout: warp w of a warpgroup holds rows
// 16w..16w+15 of each 64-row atom; lane l holds row (l / 4) (+8) and columns 2 (l % 4)
// (+1) of every 8-column group.
TEST(GemmSm90, AccumulatorFragmentMatchesTheDeviceFormulas) {
  for (auto [m, n, wgm, wgn, atom] : std::vector<std::tuple<int, int, int, int, int>>{
           {128, 256, 1, 2, 128}, {128, 256, 2, 1, 256}, {64, 64, 1, 1, 64}, {256, 128, 2, 1, 128}, {128, 128, 1, 1, 64}}) {
    Layout l = ops::wgmma_fragment_layout(m, n, wgm, wgn, atom);
    for (int i = 0; i < m; i += 3)
      for (int j = 0; j < n; j += 5) {
        const int t = static_cast<int>(layout::eval_thread(l, {i, j}));
        const int r = static_cast<int>(layout::eval_index(l, {i, j})[0]);
        ASSERT_EQ(t, tl::layout::wg_acc_thread(i, j, m, n, wgm, wgn)) << i << "," << j;
        ASSERT_EQ(r, tl::layout::wg_acc_index(i, j, m, n, wgm, wgn, atom)) << i << "," << j;
        // PTX: within the warpgroup's atom, lane = (row % 8) * 4 + (col % 8) / 2, warp = row % 64 / 16.
        const int row = i % (m / wgm) % 64, col = j % (n / wgn) % atom;
        EXPECT_EQ(t % 32, (row % 8) * 4 + (col % 8) / 2);
        EXPECT_EQ(t % 128 / 32, row / 16);
        // Register i of the atom: col = 8 (i / 4) + 2 (l % 4) + i % 2, row = l / 4 + 8 ((i / 2) % 2).
        const int reg = r % (atom / 2);
        EXPECT_EQ(col, 8 * (reg / 4) + 2 * (t % 4) + reg % 2);
        EXPECT_EQ(row % 16, (t % 32) / 4 + 8 * ((reg / 2) % 2));
      }
    EXPECT_EQ(layout::fragment_local_size(l), int64_t(m) * n / (128 * wgm * wgn));
  }
}

}  // namespace

namespace {

// TMA and the descriptors XOR with the address's row-in-period bits: a swizzled tile needs
// whole 8-row periods in each column block (a 4-row float tile of 512 columns would put
// column block 1 at 512 bytes, mid-period).
TEST(SmemTile, SwizzledTilesNeedWhole8RowPeriods) {
  using layout::SwizzleMode;
  EXPECT_FALSE(ops::smem_tile_mode_fits(4, 512, DataType::Float(32), SwizzleMode::k128B));
  EXPECT_TRUE(ops::smem_tile_mode_fits(4, 512, DataType::Float(32), SwizzleMode::kNone));
  EXPECT_TRUE(ops::smem_tile_mode_fits(8, 512, DataType::Float(32), SwizzleMode::k128B));
  EXPECT_EQ(ops::widest_smem_tile_mode(4, 512, 512, DataType::Float(32)), SwizzleMode::kNone);
  EXPECT_EQ(ops::widest_smem_tile_mode(128, 32, 32, DataType::Float(16)), SwizzleMode::k64B);
  EXPECT_EQ(ops::widest_smem_tile_mode(64, 256, 256, DataType::BFloat16()), SwizzleMode::k128B);
}

}  // namespace
