// defer_bulk_read_waits: a TMA store in a loop waits for its shared source at the next block
// barrier (of this step or, wrapping around, of the next step, with one more wait after the
// loop), and keeps its wait when a write of the source's bytes, or a barrier it cannot reach,
// comes first.
#include <gtest/gtest.h>

#include "tilec/ir/printer.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "passes/cuda_back_util.h"

using namespace tilec::ir;
namespace back = tilec::passes::back;

namespace {

const DataType i32 = DataType::Int(32);

struct Kernel {
  Var tx = make_var("tx", i32, {});
  Var k = make_var("k", i32, {});
  Buffer S = make_buffer("S", {int_imm(1024)}, DataType::Float(32), Scope::kSharedDyn);
  Buffer T = make_buffer("T", {int_imm(1024)}, DataType::Float(32), Scope::kSharedDyn);
  Buffer G = make_buffer("G", {int_imm(1 << 20)}, DataType::Float(32), Scope::kGlobal);

  Stmt write(const Buffer& b) const { return buffer_store(b, {Expr(tx)}, FloatImm(1.0)); }
  static Expr FloatImm(double v) { return float_imm(v, DataType::Float(32)); }
  Stmt barrier() const { return back::call_stmt("tl.named_barrier_sync", {int_imm(1), int_imm(256)}); }
  Stmt store() const {
    Expr desc = call(DataType::Handle(), "tl.tma_descriptor", {string_imm("G"), int_imm(0), int_imm(256)});
    Expr src = call(DataType::Handle(), "tl.address_of", {buffer_load(S, {int_imm(0)})});
    return if_then_else(binary(NodeKind::kEQ, Expr(tx), int_imm(0, i32)),
                        seq({back::call_stmt("tl.tma_store", {desc, src, Expr(k) * int_imm(256, i32)}),
                             back::call_stmt("tl.tma_store_commit", {}),
                             back::call_stmt("tl.tma_store_wait_read", {int_imm(0)})}));
  }
  // S at bytes [0, 4096), T at `t_offset`; a loop over k of `steps`.
  std::string run(std::vector<Stmt> steps, int64_t t_offset = 4096, bool on = true) const {
    Stmt body = make_for(k, int_imm(0, i32), int_imm(8, i32), ForKind::kSerial, seq(std::move(steps)));
    body = annotate(tilec::passes::kSmemOffsetKey, int_imm(t_offset, i32), allocate(T, body));
    body = annotate(tilec::passes::kSmemOffsetKey, int_imm(0, i32), allocate(S, body));
    PrimFunc f = make_prim_func("f", {}, body);
    tilec::passes::PassContext ctx;
    if (!on) ctx.set("tilec.defer_bulk_read_waits", false);
    return script(tilec::passes::defer_bulk_read_waits_pass().run(f, ctx)->body);
  }
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(DeferBulkReadWaits, WaitsAtTheNextStepsBarrier) {
  Kernel k;
  // step: barrier; write S; barrier; store S (insert_syncs' barrier before the write). The next
  // step's first barrier orders its write after the wait.
  std::string out = k.run({k.barrier(), k.write(k.S), k.barrier(), k.store()});
  const size_t wait1 = out.find("tl.tma_store_wait_read");
  const size_t barrier = out.find("tl.named_barrier_sync");
  const size_t commit = out.find("tl.tma_store_commit");
  ASSERT_NE(wait1, std::string::npos) << out;
  EXPECT_LT(wait1, barrier) << out;                  // inside the loop, before its barrier
  EXPECT_EQ(count(out, "tl.tma_store_wait_read"), 2u) << out;  // and once after the loop
  EXPECT_GT(out.rfind("tl.tma_store_wait_read"), commit) << out;
  // Off: unchanged (the wait right after the commit).
  std::string off = k.run({k.barrier(), k.write(k.S), k.barrier(), k.store()}, 4096, false);
  EXPECT_EQ(count(off, "tl.tma_store_wait_read"), 1u);
  EXPECT_LT(off.find("tl.tma_store_commit"), off.find("tl.tma_store_wait_read"));
}

TEST(DeferBulkReadWaits, WritesOfOtherBuffersMayComeFirst) {
  Kernel k;
  std::string out = k.run({k.write(k.T), k.barrier(), k.write(k.S), k.barrier(), k.store()});
  EXPECT_EQ(count(out, "tl.tma_store_wait_read"), 2u) << out;
  EXPECT_LT(out.find("tl.tma_store_wait_read"), out.find("tl.named_barrier_sync")) << out;
}

TEST(DeferBulkReadWaits, KeepsTheWaitWhenTheSourceIsWrittenFirst) {
  Kernel k;
  // A write of S before any barrier (in this step, or at the next step's start): the wait stays.
  std::string direct = k.run({k.barrier(), k.store(), k.write(k.S)});
  EXPECT_EQ(count(direct, "tl.tma_store_wait_read"), 1u) << direct;
  direct = k.run({k.write(k.S), k.barrier(), k.store()});
  EXPECT_EQ(count(direct, "tl.tma_store_wait_read"), 1u) << direct;
  // The same through T placed over S's bytes.
  std::string aliased = k.run({k.write(k.T), k.barrier(), k.store()}, 0);
  EXPECT_EQ(count(aliased, "tl.tma_store_wait_read"), 1u) << aliased;
  // A store whose condition reads the loop variable: its wait cannot be re-evaluated elsewhere.
  Stmt stepwise = k.store();
  auto* i = stepwise.as<IfNode>();
  stepwise = if_then_else(binary(NodeKind::kLT, Expr(k.k), int_imm(4, i32)), i->then_case);
  std::string varying = k.run({k.barrier(), k.write(k.S), k.barrier(), stepwise});
  EXPECT_EQ(count(varying, "tl.tma_store_wait_read"), 1u) << varying;
  // A barrier nested in a statement (an If) is not a place to wait at.
  Stmt nested = if_then_else(binary(NodeKind::kLT, Expr(k.k), int_imm(4, i32)), k.barrier());
  std::string inside = k.run({nested, k.store()});
  EXPECT_EQ(count(inside, "tl.tma_store_wait_read"), 1u) << inside;
}
