// T.async_copy lowering (src/ops/copy_async.cc): chunk width, predicates, runtime
// alignment checks, the SIMT fallback, implicit commit/wait and errors.
#include <gtest/gtest.h>

#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/passes/passes.h"
#include "tilec/pipeline/pipeline.h"

using namespace tilec;
using namespace tilec::ir;

namespace {

std::string lowered(const PrimFunc& f) {
  target::Target t;
  t.arch = 80;
  passes::PassContext ctx(t);
  std::vector<passes::Pass> list;
  for (auto& p : pipeline::cuda_pipeline(t)) {
    list.push_back(p);
    if (p.name == "lower_tile_ops") break;
  }
  return script(passes::run_passes(list, f, ctx));
}

BufferRegion tile(const Buffer& b, Expr row, Expr col, int64_t rows, int64_t cols) {
  BufferRegion r;
  r.buffer = b;
  r.region = {{std::move(row), int_imm(rows)}, {std::move(col), int_imm(cols)}};
  return r;
}

// T.async_copy(A[0:rows, k0:k0+cols], S) with A of `k` columns, written by hand.
PrimFunc one_copy(Expr k, int64_t rows, int64_t cols, Var* kvar = nullptr, SourceLoc loc = {}) {
  Builder b("cp");
  if (kvar) *kvar = b.dynamic("k");
  Expr K = kvar ? Expr(*kvar) : k;
  Buffer A = b.tensor("A", {int_imm(256), K}, DataType::Float(16));
  Buffer O = b.tensor("O", {int_imm(rows), int_imm(cols)}, DataType::Float(16));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer S = b.alloc_shared("S", {int_imm(rows), int_imm(cols)}, DataType::Float(16));
  b.tile_op("async_copy", {tile(A, int_imm(0), int_imm(0), rows, cols), BufferRegion::full(S)}, {}, loc);
  b.tile_op("copy", {BufferRegion::full(S), BufferRegion::full(O)});
  b.end_frame();
  return b.finish();
}

TEST(AsyncCopy, SixteenByteChunksCommitAndWaitWhenWrittenByHand) {
  std::string s = lowered(one_copy(int_imm(1024), 64, 32));
  EXPECT_NE(s.find("tl.cp_async_cg16"), std::string::npos) << s;
  // 64 x 32 halves = 256 chunks of 16 bytes over 128 threads: two per thread.
  EXPECT_NE(s.find("in T.unroll(2)"), std::string::npos) << s;
  const size_t commit = s.find("tl.cp_async_commit"), wait = s.find("\"tl.cp_async_wait\", 0");
  EXPECT_NE(commit, std::string::npos) << s;
  EXPECT_NE(wait, std::string::npos) << s;
  EXPECT_LT(commit, wait);
  EXPECT_NE(s.find("T.annotate(\"tilec.assume_aligned:16\", A)"), std::string::npos) << s;
}

TEST(AsyncCopy, NarrowTilesUseNarrowerChunks) {
  std::string s = lowered(one_copy(int_imm(1024), 64, 4));  // 8-byte rows
  EXPECT_NE(s.find("tl.cp_async_ca8"), std::string::npos) << s;
  EXPECT_EQ(s.find("tl.cp_async_cg16"), std::string::npos) << s;
}

TEST(AsyncCopy, UnalignedRowsFallBackToTheSimtCopy) {
  std::string s = lowered(one_copy(int_imm(1001), 64, 32));  // rows 1001 halves apart
  EXPECT_EQ(s.find("tl.cp_async_cg"), std::string::npos) << s;
  EXPECT_EQ(s.find("tl.cp_async_ca"), std::string::npos) << s;
  // ... which still commits/waits (an empty group) as the op promises.
  EXPECT_NE(s.find("tl.cp_async_commit"), std::string::npos) << s;
}

TEST(AsyncCopy, SymbolicRowPitchIsCheckedAtRunTime) {
  Var k;
  std::string s = lowered(one_copy(nullptr, 64, 32, &k));
  EXPECT_NE(s.find("if k % 8 == 0:"), std::string::npos) << s;
  EXPECT_NE(s.find("tl.cp_async_cg16_zfill"), std::string::npos) << s;  // columns may run past k
}

TEST(AsyncCopy, WrongDirectionIsAUserError) {
  Builder b("cp");
  Buffer A = b.tensor("A", {int_imm(64), int_imm(32)}, DataType::Float(16));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer S = b.alloc_shared("S", {int_imm(64), int_imm(32)}, DataType::Float(16));
  b.tile_op("fill", {BufferRegion::full(S), float_imm(0, DataType::Float(16))});
  b.tile_op("async_copy", {BufferRegion::full(S), BufferRegion::full(A)}, {}, SourceLoc{"k.py", 4, 9});
  b.end_frame();
  try {
    lowered(b.finish());
    FAIL() << "no error";
  } catch (const UserError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("k.py:4:9"), std::string::npos) << m;
    EXPECT_NE(m.find("T.async_copy copies from global to shared memory, not from shared.dyn to global"),
              std::string::npos)
        << m;
  }
}

TEST(AsyncCopy, PipelinedCopiesNeedOnlyTheGuardAsPredicate) {
  // K = 1024, 32-wide tiles: inside the guard every chunk is in bounds.
  Builder b("mm");
  Buffer A = b.tensor("A", {int_imm(128), int_imm(1024)}, DataType::Float(16));
  Buffer O = b.tensor("O", {int_imm(128), int_imm(32)}, DataType::Float(16));
  b.begin_kernel({int_imm(1)}, {128});
  Buffer S = b.alloc_shared("S", {int_imm(128), int_imm(32)}, DataType::Float(16));
  Buffer F = b.alloc_fragment("F", {int_imm(128), int_imm(32)}, DataType::Float(16));
  PipelineInfo p;
  p.num_stages = 3;
  Var ko = b.begin_for("ko", int_imm(0), int_imm(32), ForKind::kPipelined, p);
  b.tile_op("copy", {tile(A, int_imm(0), ko * 32, 128, 32), BufferRegion::full(S)});
  b.tile_op("copy", {BufferRegion::full(S), BufferRegion::full(F)});
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(F), BufferRegion::full(O)});
  b.end_frame();
  std::string s = lowered(b.finish());
  const size_t loop = s.find("for ko in");
  ASSERT_NE(loop, std::string::npos) << s;
  std::string body = s.substr(loop, s.find("tl.cp_async_commit", loop) - loop);
  EXPECT_NE(body.find(", ko < 30)"), std::string::npos) << body;
  EXPECT_EQ(body.find(" < 1024"), std::string::npos) << "a per-chunk column predicate is left\n" << body;
}

}  // namespace
