// Second-half passes on hand-built lowered IR: plan_shared_memory and insert_syncs.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "passes/cuda_back_util.h"
#include "passes/insert_syncs_support.h"
#include "tilec/ir/builder.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/support/diag.h"
#include "tilec/target/cuda/codegen.h"

using namespace tilec;
using namespace tilec::ir;
using codegen_test::contains;

namespace {

std::string body_text(const PrimFunc& f) {
  return cuda::codegen_cuda_stmt(passes::back::find_kernel(f->body)->body);
}

PrimFunc run_passes(std::vector<passes::Pass> list, PrimFunc f) {
  passes::PassContext ctx;
  for (auto& p : list) f = p.run(f, ctx);
  return f;
}

Expr addr(const Buffer& b, Expr i) { return call(DataType::Handle(), "tl.address_of", {buffer_load(b, {std::move(i)})}); }
void call_stmt(Builder& b, const std::string& op, std::vector<Expr> args) {
  b.evaluate(call(DataType::Void(), op, std::move(args)));
}
int64_t dyn_bytes(const PrimFunc& f) {
  auto* a = find_attr(f->attrs, passes::kDynamicSharedBytesAttr);
  return a ? std::get<int64_t>(*a) : -1;
}

// ---------------------------------------------------------------- plan_shared_memory

TEST(PlanSharedMemory, DisjointLifetimesShareBytes) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S1 = b.alloc_shared("S1", {int_imm(1024)}, Float32());  // 4096 bytes
  Buffer S2 = b.alloc_shared("S2", {int_imm(512)}, Float32());   // 2048 bytes
  Buffer S3 = b.alloc_shared("S3", {int_imm(25)}, Float32());    // 100 bytes, alive with S2
  b.store(S1, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S1, {tx}));
  b.store(S2, {tx}, buffer_load(A, {tx}));
  b.store(S3, {int_imm(0)}, buffer_load(S2, {tx}));
  b.store(A, {tx}, buffer_load(S2, {tx}) + buffer_load(S3, {int_imm(0)}));
  b.end_frame();
  PrimFunc out = run_passes({passes::plan_shared_memory_pass()}, b.finish());
  std::string text = body_text(out);
  EXPECT_TRUE(contains(text, "float* S1 = reinterpret_cast<float*>(tilec_smem + 0);")) << text;
  EXPECT_TRUE(contains(text, "float* S2 = reinterpret_cast<float*>(tilec_smem + 0);")) << text;
  EXPECT_TRUE(contains(text, "float* S3 = reinterpret_cast<float*>(tilec_smem + 2048);")) << text;
  EXPECT_EQ(dyn_bytes(out), 4096);
}

TEST(PlanSharedMemory, LoopsKeepTheirBuffersAliveAcrossIterations) {
  // S2 is read at the top of the loop and S3 written at the bottom: the next iteration
  // still needs S2 after S3 was written, so they must not share bytes. S1 dies before the
  // loop and may share with either.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S1 = b.alloc_shared("S1", {int_imm(128)}, Float32());
  Buffer S2 = b.alloc_shared("S2", {int_imm(128)}, Float32());
  Buffer S3 = b.alloc_shared("S3", {int_imm(128)}, Float32());
  b.store(S1, {tx}, float_imm(1.0));
  b.store(S2, {tx}, buffer_load(S1, {tx}));
  Var k = b.begin_for("k", int_imm(0), int_imm(8), ForKind::kSerial);
  b.store(A, {k * 128 + tx}, buffer_load(S2, {tx}));
  b.store(S3, {tx}, buffer_load(A, {tx}));
  b.end_frame();
  b.end_frame();
  PrimFunc out = run_passes({passes::plan_shared_memory_pass()}, b.finish());
  std::string text = body_text(out);
  EXPECT_TRUE(contains(text, "float* S1 = reinterpret_cast<float*>(tilec_smem + 0);")) << text;
  EXPECT_TRUE(contains(text, "float* S2 = reinterpret_cast<float*>(tilec_smem + 512);")) << text;
  EXPECT_TRUE(contains(text, "float* S3 = reinterpret_cast<float*>(tilec_smem + 0);")) << text;
  EXPECT_EQ(dyn_bytes(out), 1024);
}

TEST(PlanSharedMemory, ASharedViewSitsOnItsStorageWhichLivesForBoth) {
  // V views S's bytes as float32 and is used after S's last access; T (alive only between
  // S's last use and V's first) must not take S's bytes, and the barrier pass sees V and S
  // alias (same bytes): a write of V after reads of S by other threads needs a barrier.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float32());
  Buffer H = b.tensor("H", {int_imm(4096)}, Float16());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(256)}, Float16());  // 512 bytes
  Buffer T = b.alloc_shared("T", {int_imm(128)}, Float32());  // 512 bytes
  Buffer V = b.alloc_view("V", {int_imm(128)}, S, {}, Float32());
  b.store(S, {tx}, buffer_load(H, {tx}));
  b.store(H, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.store(T, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(T, {int_imm(127) - tx}));
  b.store(V, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(V, {tx}));
  b.end_frame();
  PrimFunc out = run_passes({passes::plan_shared_memory_pass(), passes::insert_syncs_pass()}, b.finish());
  std::string text = body_text(out);
  EXPECT_TRUE(contains(text, "half* S = reinterpret_cast<half*>(tilec_smem + 0);")) << text;
  EXPECT_TRUE(contains(text, "float* T = reinterpret_cast<float*>(tilec_smem + 512);")) << text;
  EXPECT_TRUE(contains(text, "float* V = reinterpret_cast<float*>(tilec_smem + 0);")) << text;
  EXPECT_EQ(dyn_bytes(out), 1024);
  // S read by other threads, then V (the same bytes) written: a barrier between.
  const size_t read_s = text.find("S[127 - tx]"), write_v = text.find("V[tx] =");
  ASSERT_NE(read_s, std::string::npos);
  ASSERT_NE(write_v, std::string::npos);
  EXPECT_NE(text.substr(read_s, write_v - read_s).find("__syncthreads()"), std::string::npos) << text;
}

TEST(PlanSharedMemory, SwizzledBuffersAre1024Aligned) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float16());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S1 = b.alloc_shared("S1", {int_imm(64)}, Float16());   // 128 bytes
  Buffer S2 = b.alloc_shared("S2", {int_imm(512)}, Float16());  // 1024 bytes, swizzled
  b.begin_annotate(passes::kSwizzle128BKey, S2);
  b.store(S1, {tx}, buffer_load(A, {tx}));
  b.store(S2, {tx}, buffer_load(S1, {tx}));
  b.store(A, {tx}, buffer_load(S2, {tx}) + buffer_load(S1, {tx}));
  b.end_frame();
  b.end_frame();
  PrimFunc out = run_passes({passes::plan_shared_memory_pass()}, b.finish());
  std::string text = body_text(out);
  EXPECT_TRUE(contains(text, "half* S2 = reinterpret_cast<half*>(tilec_smem + 0);")) << text;
  EXPECT_TRUE(contains(text, "half* S1 = reinterpret_cast<half*>(tilec_smem + 1024);")) << text;
}

TEST(PlanSharedMemory, TooMuchSharedMemoryNamesTheBuffers) {
  Builder b("big");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S1 = b.alloc_shared("A_shared", {int_imm(32768)}, Float32());  // 128 KiB
  Buffer S2 = b.alloc_shared("B_shared", {int_imm(16384)}, Float32());  // 64 KiB
  b.store(S1, {tx}, buffer_load(A, {tx}));
  b.store(S2, {tx}, buffer_load(S1, {tx}));
  b.store(A, {tx}, buffer_load(S2, {tx}) + buffer_load(S1, {tx}));
  b.end_frame();
  passes::PassContext ctx;  // sm_80: 163 KiB
  try {
    passes::plan_shared_memory_pass().run(b.finish(), ctx);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "kernel 'big' needs 196608 bytes of shared memory")) << e.message();
    EXPECT_TRUE(contains(e.message(), "A_shared 131072 bytes, B_shared 65536 bytes")) << e.message();
    EXPECT_TRUE(contains(e.hint(), "num_stages")) << e.hint();
  }
}

// ---------------------------------------------------------------- insert_syncs

PrimFunc syncs(PrimFunc f) { return run_passes({passes::insert_syncs_pass()}, std::move(f)); }

TEST(InsertSyncs, ReadAfterWriteByOtherThreads) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.store(S, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[128];  // not planned yet\n"
            "S[tx] = A[tx];\n"
            "__syncthreads();\n"
            "A[tx] = S[127 - tx];\n");
}

TEST(InsertSyncs, SameThreadSameAddressNeedsNoBarrier) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(512)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(512)}, Float32());
  Buffer S2 = b.alloc_shared("S2", {int_imm(512)}, Float32());
  b.store(S, {tx * 4 + 1}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S, {tx * 4 + 1}));
  b.store(S2, {ramp(tx * 4, int_imm(1), 4)}, broadcast(float_imm(0.0), 4));
  b.store(A, {ramp(tx * 4, int_imm(1), 4)}, buffer_load(S2, {ramp(tx * 4, int_imm(1), 4)}));
  b.end_frame();
  PrimFunc in = b.finish();
  EXPECT_TRUE(syncs(in).same_as(in)) << body_text(syncs(in));
}

Expr bit(const char* op, Expr a, Expr b) { return call(DataType::Int(32), op, {std::move(a), std::move(b)}); }

// A swizzled tile updated in place (a scan of its own chunk per thread): the index XORs the
// chunk with the row, not affine, yet injective in the thread for every x — no barrier
// between a thread's read and its write of one element. The same with an XOR that sends two
// threads to one element keeps its barrier.
TEST(InsertSyncs, SwizzledSameThreadSameAddressNeedsNoBarrier) {
  auto build = [](bool injective) {
    Builder b("k");
    Buffer A = b.tensor("A", {int_imm(2048)}, Float32());
    b.begin_kernel({int_imm(1)}, {128});
    Var tx = b.thread_vars()[0];
    Buffer S = b.alloc_shared("S", {int_imm(2048)}, Float32());
    Var x = b.begin_for("x", int_imm(0), int_imm(16), ForKind::kSerial);
    Expr row = floordiv(tx, 8), chunk = floormod(tx, 8);
    Expr swz = injective ? bit("tl.bitwise_xor", chunk, floormod(row, 8)) : bit("tl.bitwise_and", chunk, int_imm(3));
    Expr idx = row * 128 + swz * 16 + x;
    b.store(S, {idx}, buffer_load(S, {idx}) + buffer_load(A, {tx}));
    b.end_frame();
    b.end_frame();
    return b.finish();
  };
  PrimFunc ok = build(true);
  EXPECT_TRUE(syncs(ok).same_as(ok)) << body_text(syncs(ok));
  EXPECT_TRUE(contains(body_text(syncs(build(false))), "__syncthreads();"));
}

TEST(InsertSyncs, InjectivityByEnumeration) {
  Var t = make_var("t"), x = make_var("x");
  using passes::syncs::injective_in;
  EXPECT_TRUE(injective_in(bit("tl.bitwise_xor", t, x), {t}, {32}, {x}, {32}, 1, 0));         // a permutation per x
  EXPECT_FALSE(injective_in(bit("tl.bitwise_xor", t, x), {t, x}, {32, 2}, {}, {}, 1, 0));  // x varying too
  EXPECT_FALSE(injective_in(floordiv(t, 2), {t}, {32}, {}, {}, 1, 0));
  EXPECT_TRUE(injective_in(t * 4, {t}, {32}, {}, {}, 4, 1));   // 4 lanes each
  EXPECT_FALSE(injective_in(t * 4, {t}, {32}, {}, {}, 5, 1));  // the fifth lane is the next thread's
  EXPECT_FALSE(injective_in(t, {t}, {1 << 20}, {}, {}, 1, 0));  // too many points to enumerate
}

TEST(InsertSyncs, LoopBackEdge) {
  // Each iteration reads a neighbour's value at the top and writes its own at the bottom:
  // the write must wait for the reads (WAR) and the next iteration's read for the write (RAW).
  Builder b("k");
  Var n = b.dynamic("n");
  Buffer A = b.tensor("A", {n}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  Buffer r = b.alloc("r", {int_imm(1)}, Float32(), Scope::kLocal);
  b.store(S, {tx}, float_imm(0.0));
  Var k = b.begin_for("k", int_imm(0), n, ForKind::kSerial);
  b.store(r, {int_imm(0)}, buffer_load(S, {floormod(tx + 1, 128)}));
  b.store(S, {tx}, buffer_load(r, {int_imm(0)}) + cast(Float32(), k));
  b.end_frame();
  b.store(A, {tx}, buffer_load(S, {tx}));
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[128];  // not planned yet\n"
            "float r[1];\n"
            "S[tx] = 0.0f;\n"
            "for (int k = 0; k < n; ++k) {\n"
            "  __syncthreads();\n"
            "  r[0] = S[(tx + 1) & 127];\n"
            "  __syncthreads();\n"
            "  S[tx] = r[0] + (float)k;\n"
            "}\n"
            "A[tx] = S[tx];\n");
}

TEST(InsertSyncs, BarrierBeforeALoopRatherThanInsideIt) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.store(S, {tx}, buffer_load(A, {tx}));
  Var k = b.begin_for("k", int_imm(0), int_imm(32), ForKind::kSerial);
  b.store(A, {k * 128 + tx}, buffer_load(S, {floormod(tx + k, 128)}));
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[128];  // not planned yet\n"
            "S[tx] = A[tx];\n"
            "__syncthreads();\n"
            "for (int k = 0; k < 32; ++k) {\n"
            "  A[k * 128 + tx] = S[(tx + k) & 127];\n"
            "}\n");
}

// A pipelined GEMM main loop as inject_pipeline + copy/gemm lowering produce it (3 stages):
// two prologue groups, then per step: wait for the oldest group, issue the copies for step
// k + 2 into the slot read two steps ago, commit, compute on slot k % 3 (ldmatrix reads).
PrimFunc pipelined_gemm_shape() {
  Builder b("gemm");
  Buffer A = b.tensor("A", {int_imm(1 << 20)}, Float16()), B = b.tensor("B", {int_imm(1 << 20)}, Float16());
  Buffer C = b.tensor("C", {int_imm(1 << 20)}, Float32());
  auto bx = b.begin_kernel({int_imm(64)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer As = b.alloc_shared("A_shared", {int_imm(3 * 1024)}, Float16());
  Buffer Bs = b.alloc_shared("B_shared", {int_imm(3 * 1024)}, Float16());
  Buffer af = b.alloc("a_frag", {int_imm(8)}, Float16(), Scope::kLocal);
  Buffer bf = b.alloc("b_frag", {int_imm(8)}, Float16(), Scope::kLocal);
  Buffer acc = b.alloc("acc", {int_imm(4)}, Float32(), Scope::kLocal);
  auto copy_stage = [&](Expr slot, Expr step) {
    call_stmt(b, "tl.cp_async_cg16", {addr(As, slot * 1024 + tx * 8), addr(A, step * 16384 + bx[0] * 1024 + tx * 8)});
    call_stmt(b, "tl.cp_async_cg16", {addr(Bs, slot * 1024 + tx * 8), addr(B, step * 16384 + bx[0] * 1024 + tx * 8)});
    call_stmt(b, "tl.cp_async_commit", {});
  };
  auto compute = [&](Expr slot) {
    Var kk = b.begin_for("kk", int_imm(0), int_imm(2), ForKind::kUnrolled);
    call_stmt(b, "tl.ldmatrix_x4", {addr(af, int_imm(0)), addr(As, slot * 1024 + kk * 512 + tx * 4)});
    call_stmt(b, "tl.ldmatrix_x4", {addr(bf, int_imm(0)), addr(Bs, slot * 1024 + kk * 512 + tx * 4)});
    b.store(acc, {int_imm(0)}, buffer_load(acc, {int_imm(0)}) + cast(Float32(), buffer_load(af, {int_imm(0)}) *
                                                                                buffer_load(bf, {int_imm(0)})));
    b.end_frame();
  };
  b.store(acc, {int_imm(0)}, float_imm(0.0));
  copy_stage(int_imm(0), int_imm(0));
  copy_stage(int_imm(1), int_imm(1));
  Var k = b.begin_for("k", int_imm(0), int_imm(14), ForKind::kSerial);
  call_stmt(b, "tl.cp_async_wait", {int_imm(1)});
  copy_stage(floormod(k + 2, 3), k + 2);
  compute(floormod(k, 3));
  b.end_frame();
  call_stmt(b, "tl.cp_async_wait", {int_imm(0)});
  Var j = b.begin_for("j", int_imm(0), int_imm(2), ForKind::kUnrolled);
  compute(floormod(j + 14, 3));
  b.end_frame();
  b.store(C, {bx[0] * 128 + tx}, buffer_load(acc, {int_imm(0)}));
  b.end_frame();
  return b.finish();
}

TEST(InsertSyncs, PipelinedGemmMainLoopHasExactlyTheNeededBarriers) {
  PrimFunc out = run_passes({passes::plan_shared_memory_pass(), passes::insert_syncs_pass()}, pipelined_gemm_shape());
  std::string text = body_text(out);
  const std::string main_loop =
      "for (int k = 0; k < 14; ++k) {\n"
      "  tl::cp_async_wait(1);\n"
      "  __syncthreads();\n"
      "  tl::cp_async_cg16(&A_shared[(k + 2) % 3 * 1024 + tx * 8], &A[(k + 2) * 16384 + bx * 1024 + tx * 8]);\n"
      "  tl::cp_async_cg16(&B_shared[(k + 2) % 3 * 1024 + tx * 8], &B[(k + 2) * 16384 + bx * 1024 + tx * 8]);\n"
      "  tl::cp_async_commit();\n"
      "  #pragma unroll\n"
      "  for (int kk = 0; kk < 2; ++kk) {\n"
      "    tl::ldmatrix_x4(&a_frag[0], &A_shared[k % 3 * 1024 + kk * 512 + tx * 4]);\n"
      "    tl::ldmatrix_x4(&b_frag[0], &B_shared[k % 3 * 1024 + kk * 512 + tx * 4]);\n";
  EXPECT_TRUE(contains(text, main_loop)) << text;
  const std::string epilogue =
      "tl::cp_async_wait(0);\n"
      "__syncthreads();\n"
      "#pragma unroll\n"
      "for (int j = 0; j < 2; ++j) {\n";
  EXPECT_TRUE(contains(text, epilogue)) << text;
  // Exactly two barriers in the whole kernel: one per main-loop step, one before the epilogue.
  size_t count = 0;
  for (size_t p = text.find("__syncthreads"); p != std::string::npos; p = text.find("__syncthreads", p + 1)) ++count;
  EXPECT_EQ(count, 2u) << text;
  // No barrier in the prologue: nothing was read or written before the first copies.
  EXPECT_LT(text.find("tl::cp_async_commit();\ntl::cp_async_cg16"), text.find("__syncthreads")) << text;
  // 16-byte cp.async reads of A and B: the runtime must check 16-byte alignment.
  auto plan = passes::build_launch_plan(out);
  ASSERT_EQ(plan.tensors.size(), 3u);
  EXPECT_EQ(plan.tensors[0].alignment_bytes, 16);
  EXPECT_EQ(plan.tensors[1].alignment_bytes, 16);
  EXPECT_EQ(plan.tensors[2].alignment_bytes, 4);  // C: scalar float stores
  EXPECT_EQ(plan.dynamic_shared_bytes, 2 * 3 * 1024 * 2);
}

TEST(InsertSyncs, IssueAfterComputeOrderNeedsTwoBarriersPerStep) {
  // The other order: copy for step k + 2, commit, wait, compute. The copy overwrites the slot
  // read by the previous step's compute (WAR) and the compute reads what the wait completed
  // (RAW); nothing lies between them, so both barriers are needed.
  Builder b("gemm2");
  Buffer A = b.tensor("A", {int_imm(1 << 20)}, Float16());
  b.begin_kernel({int_imm(64)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer As = b.alloc_shared("A_shared", {int_imm(3 * 1024)}, Float16());
  Buffer af = b.alloc("a_frag", {int_imm(8)}, Float16(), Scope::kLocal);
  Var k = b.begin_for("k", int_imm(0), int_imm(14), ForKind::kSerial);
  call_stmt(b, "tl.cp_async_cg16", {addr(As, floormod(k + 2, 3) * 1024 + tx * 8), addr(A, k * 1024 + tx * 8)});
  call_stmt(b, "tl.cp_async_commit", {});
  call_stmt(b, "tl.cp_async_wait", {int_imm(2)});
  call_stmt(b, "tl.ldmatrix_x4", {addr(af, int_imm(0)), addr(As, floormod(k, 3) * 1024 + tx * 4)});
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(run_passes({passes::plan_shared_memory_pass(), passes::insert_syncs_pass()}, b.finish())),
            "half* A_shared = reinterpret_cast<half*>(tilec_smem + 0);\n"
            "alignas(16) half a_frag[8];\n"
            "for (int k = 0; k < 14; ++k) {\n"
            "  __syncthreads();\n"
            "  tl::cp_async_cg16(&A_shared[(k + 2) % 3 * 1024 + tx * 8], &A[k * 1024 + tx * 8]);\n"
            "  tl::cp_async_commit();\n"
            "  tl::cp_async_wait(2);\n"
            "  __syncthreads();\n"
            "  tl::ldmatrix_x4(&a_frag[0], &A_shared[k % 3 * 1024 + tx * 4]);\n"
            "}\n");
}

TEST(InsertSyncs, AliasedArenaBytesAreOrdered) {
  // S1 and S2 share bytes after planning: S2's first write must wait for S1's last reads.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(4096)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S1 = b.alloc_shared("S1", {int_imm(128)}, Float32());
  Buffer S2 = b.alloc_shared("S2", {int_imm(128)}, Float32());
  b.store(S1, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S1, {int_imm(127) - tx}));
  b.store(S2, {tx}, buffer_load(A, {tx + 128}));
  b.store(A, {tx + 128}, buffer_load(S2, {int_imm(127) - tx}));
  b.end_frame();
  PrimFunc out = run_passes({passes::plan_shared_memory_pass(), passes::insert_syncs_pass()}, b.finish());
  EXPECT_EQ(body_text(out),
            "float* S1 = reinterpret_cast<float*>(tilec_smem + 0);\n"
            "float* S2 = reinterpret_cast<float*>(tilec_smem + 0);\n"
            "S1[tx] = A[tx];\n"
            "__syncthreads();\n"
            "A[tx] = S1[127 - tx];\n"
            "__syncthreads();\n"
            "S2[tx] = A[tx + 128];\n"
            "__syncthreads();\n"
            "A[tx + 128] = S2[127 - tx];\n");
}

TEST(InsertSyncs, UniformBranchGetsItsBarrierInside) {
  Builder b("k");
  Var n = b.dynamic("n");
  Buffer A = b.tensor("A", {n}, Float32());
  auto bx = b.begin_kernel({int_imm(8)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.begin_if(bx[0] < int_imm(4));
  b.store(S, {tx}, float_imm(1.0));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[128];  // not planned yet\n"
            "if (bx < 4) {\n"
            "  S[tx] = 1.0f;\n"
            "  __syncthreads();\n"
            "  A[tx] = S[127 - tx];\n"
            "}\n");
}

TEST(InsertSyncs, BranchOnThreadIndexIsSplitAtTheBarrier) {
  // A barrier inside `if (tx < 64)` would be reached by half the block only: the branch is
  // split and the barrier placed between the two halves, where every thread reaches it.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(64)}, Float32());
  b.begin_if(tx < int_imm(64));
  b.store(S, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S, {int_imm(63) - tx}));
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[64];  // not planned yet\n"
            "if (tx < 64) {\n"
            "  S[tx] = A[tx];\n"
            "}\n"
            "__syncthreads();\n"
            "if (tx < 64) {\n"
            "  A[tx] = S[63 - tx];\n"
            "}\n");
}

TEST(InsertSyncs, ReductionThroughSharedMemory) {
  // Warp partials to shared memory, then the first warp combines them: one barrier between.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer red = b.alloc_shared("red", {int_imm(4)}, Float32());
  Buffer v = b.alloc("v", {int_imm(1)}, Float32(), Scope::kLocal);
  b.store(v, {int_imm(0)}, call(Float32(), "tl.warp_reduce_sum", {int_imm(32), buffer_load(A, {tx})}));
  b.begin_if(binary(NodeKind::kEQ, floormod(tx, 32), int_imm(0)));
  b.store(red, {floordiv(tx, 32)}, buffer_load(v, {int_imm(0)}));
  b.end_frame();
  b.begin_if(tx < int_imm(4));
  b.store(A, {tx}, buffer_load(red, {tx}));
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float red[4];  // not planned yet\n"
            "float v[1];\n"
            "v[0] = tl::warp_reduce_sum<32>(A[tx]);\n"
            "if ((tx & 31) == 0) {\n"
            "  red[tx >> 5] = v[0];\n"
            "}\n"
            "__syncthreads();\n"
            "if (tx < 4) {\n"
            "  A[tx] = red[tx];\n"
            "}\n");
}

TEST(InsertSyncs, ExistingBarriersAreKeptAndNotDoubled) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.store(S, {tx}, buffer_load(A, {tx}));
  call_stmt(b, "tl.syncthreads", {});
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  call_stmt(b, "tl.syncthreads", {});
  b.end_frame();
  PrimFunc in = b.finish();
  EXPECT_EQ(body_text(syncs(in)),
            "__shared__ float S[128];  // not planned yet\n"
            "S[tx] = A[tx];\n"
            "__syncthreads();\n"
            "A[tx] = S[127 - tx];\n"
            "__syncthreads();\n");
}

TEST(InsertSyncs, DataDependentBranchIsEvaluatedOnceAndSplit) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.begin_if(buffer_load(A, {tx}) > float_imm(0.0));
  b.store(S, {tx}, float_imm(1.0));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[128];  // not planned yet\n"
            "const bool cond = A[tx] > 0.0f;\n"
            "if (cond) {\n"
            "  S[tx] = 1.0f;\n"
            "}\n"
            "__syncthreads();\n"
            "if (cond) {\n"
            "  A[tx] = S[127 - tx];\n"
            "}\n");
}

TEST(InsertSyncs, BranchOnThreadIndexAroundALoopMovesTheLoopOutside) {
  // A double-buffered exchange inside `if (tx < 64)`: the loop has uniform bounds, so it is
  // hoisted out of the condition and the barriers sit in the loop, reached by every thread.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(64)}, Float32());
  Buffer r = b.alloc("r", {int_imm(1)}, Float32(), Scope::kLocal);
  b.begin_if(tx < int_imm(64));
  Var k = b.begin_for("k", int_imm(0), int_imm(4), ForKind::kSerial);
  b.store(S, {tx}, buffer_load(r, {int_imm(0)}));
  b.store(r, {int_imm(0)}, buffer_load(S, {floormod(tx + k, 64)}));
  b.end_frame();
  b.end_frame();
  b.store(A, {tx}, buffer_load(r, {int_imm(0)}));
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[64];  // not planned yet\n"
            "float r[1];\n"
            "for (int k = 0; k < 4; ++k) {\n"
            "  __syncthreads();\n"
            "  if (tx < 64) {\n"
            "    S[tx] = r[0];\n"
            "  }\n"
            "  __syncthreads();\n"
            "  if (tx < 64) {\n"
            "    r[0] = S[(tx + k) & 63];\n"
            "  }\n"
            "}\n"
            "A[tx] = r[0];\n");
}

TEST(InsertSyncs, LoopWithPerThreadTripCountThatNeedsABarrierIsAnError) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.begin_for("k", int_imm(0), tx, ForKind::kSerial);
  b.store(S, {tx}, float_imm(1.0));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  b.end_frame();
  try {
    syncs(b.finish());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "trip count depends on the thread index")) << e.message();
  }
}

// ---- loops bounded by memory reads (uniformity of reads of tensors the kernel does not write)

// for k < lens[index] (a software pipeline already put a barrier at the top of the body):
// each thread stores S[tx], then reads another thread's element.
PrimFunc loop_bounded_by_lens(const std::function<Expr(Var tx, Var bx)>& index,
                              const std::function<void(Builder&, Buffer lens, Var tx)>& extra = {}) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  Buffer lens = b.tensor("lens", {int_imm(128)}, Int32());
  Var bx = b.begin_kernel({int_imm(1)}, {128})[0];
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  if (extra) extra(b, lens, tx);
  b.begin_for("k", int_imm(0), buffer_load(lens, {index(tx, bx)}), ForKind::kSerial);
  call_stmt(b, "tl.syncthreads", {});
  b.store(S, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

void expect_per_thread_trip_count_error(PrimFunc f) {
  try {
    syncs(std::move(f));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "trip count depends on the thread index")) << e.message();
    EXPECT_TRUE(contains(e.hint(), "reads of tensors the kernel does not write")) << e.hint();
  }
}

TEST(InsertSyncs, LoopBoundedByAReadOnlyTensorIsUniformAndGetsItsBarriers) {
  // lens is never written by the kernel and read at a block index: every thread sees the same
  // trip count, so the loop is an ordinary loop (before the fix, the barrier between the
  // stores and the loads was dropped silently because of the pipeline's barrier).
  EXPECT_EQ(body_text(syncs(loop_bounded_by_lens([](Var, Var bx) { return Expr(bx); }))),
            "__shared__ float S[128];  // not planned yet\n"
            "for (int k = 0; k < lens[bx]; ++k) {\n"
            "  __syncthreads();\n"
            "  S[tx] = A[tx];\n"
            "  __syncthreads();\n"
            "  A[tx] = S[127 - tx];\n"
            "}\n");
}

TEST(InsertSyncs, LoopBoundedByAThreadIndexedReadThatNeedsABarrierIsAnError) {
  // lens[tx]: a trip count per thread. The body already holds a barrier (the pipeline's):
  // that must not hide the one it still needs.
  expect_per_thread_trip_count_error(loop_bounded_by_lens([](Var tx, Var) { return Expr(tx); }));
}

TEST(InsertSyncs, LoopBoundedByATensorTheKernelWritesIsNotUniform) {
  // A store, an atomic, or a TMA store through lens's tensor map: its values may change
  // during the launch, so threads may read different trip counts.
  expect_per_thread_trip_count_error(loop_bounded_by_lens(
      [](Var, Var bx) { return Expr(bx); },
      [](Builder& b, Buffer lens, Var tx) { b.store(lens, {int_imm(127) - tx}, int_imm(1, Int32())); }));
  expect_per_thread_trip_count_error(loop_bounded_by_lens(
      [](Var, Var bx) { return Expr(bx); },
      [](Builder& b, Buffer lens, Var tx) { call_stmt(b, "tl.atomic_add", {addr(lens, int_imm(0)), int_imm(1, Int32())}); }));
  expect_per_thread_trip_count_error(loop_bounded_by_lens(
      [](Var, Var bx) { return Expr(bx); }, [](Builder& b, Buffer lens, Var tx) {
        Expr desc = call(DataType::Handle(), passes::kTmaDescriptorOp, {string_imm("lens"), int_imm(0), int_imm(128)});
        Buffer T = b.alloc_shared("T", {int_imm(128)}, Int32());
        call_stmt(b, "tl.tma_store", {desc, addr(T, int_imm(0)), int_imm(0)});
      }));
}

TEST(InsertSyncs, TensorReadThroughReadOnlyIntrinsicsStaysUniform) {
  // A cp.async from lens (its EFFECT letter for lens is 'r') does not make lens written: the
  // loop stays uniform.
  std::string text = body_text(syncs(loop_bounded_by_lens(
      [](Var, Var bx) { return Expr(bx); }, [](Builder& b, Buffer lens, Var tx) {
        Buffer T = b.alloc_shared("T", {int_imm(128)}, Int32());
        call_stmt(b, "tl.cp_async_ca4", {addr(T, tx), addr(lens, tx)});
      })));
  EXPECT_TRUE(contains(text, "  __syncthreads();\n  A[tx] = S[127 - tx];\n")) << text;
}

TEST(InsertSyncs, BackEdgeConflictInAPerThreadLoopIsAnError) {
  // In-body order is fine (write, barrier, read); the next iteration's write races with this
  // iteration's reads of other threads: a barrier is needed at the end of the body.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.begin_for("k", int_imm(0), tx, ForKind::kSerial);
  b.store(S, {tx}, float_imm(1.0));
  call_stmt(b, "tl.syncthreads", {});
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  b.end_frame();
  try {
    syncs(b.finish());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "trip count depends on the thread index")) << e.message();
  }
}

TEST(InsertSyncs, PerThreadLoopInsideABranchOnTheThreadIndexIsAnError) {
  // if (tx < 64) { for k < tx { S[tx] = ..; sync; .. = S[63 - tx] } }: the barrier cannot be
  // moved out of the branch, because the loop cannot be moved out of it.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(64)}, Float32());
  b.begin_if(tx < int_imm(64));
  b.begin_for("k", int_imm(0), tx, ForKind::kSerial);
  b.store(S, {tx}, float_imm(1.0));
  call_stmt(b, "tl.syncthreads", {});
  b.store(A, {tx}, buffer_load(S, {int_imm(63) - tx}));
  b.end_frame();
  b.end_frame();
  b.end_frame();
  try {
    syncs(b.finish());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "trip count depends on the thread index")) << e.message();
  }
}

TEST(InsertSyncs, LoopBoundedByMemoryInsideABranchOnTheThreadIndexIsAnError) {
  // The trip count is uniform, but the loop would have to move out of `if (tx < 64)` for its
  // barriers, and the threads that skip the branch would then read lens too.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  Buffer lens = b.tensor("lens", {int_imm(4)}, Int32());
  Var bx = b.begin_kernel({int_imm(4)}, {128})[0];
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(64)}, Float32());
  b.begin_if(tx < int_imm(64));
  b.begin_for("k", int_imm(0), buffer_load(lens, {bx}), ForKind::kSerial);
  b.store(S, {tx}, float_imm(1.0));
  b.store(A, {tx}, buffer_load(S, {int_imm(63) - tx}));
  b.end_frame();
  b.end_frame();
  b.end_frame();
  try {
    syncs(b.finish());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "trip count reads memory, inside a branch")) << e.message();
    EXPECT_TRUE(contains(e.hint(), "before the branch")) << e.hint();
  }
}

TEST(InsertSyncs, UniformLetFromMemoryBoundsAnOrdinaryLoop) {
  // n = lens[bx] (lens read-only) bounds the loop: uniform, barriers inside.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  Buffer lens = b.tensor("lens", {int_imm(4)}, Int32());
  Var bx = b.begin_kernel({int_imm(4)}, {128})[0];
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  Var n = b.let("n", buffer_load(lens, {bx}));
  b.begin_for("k", int_imm(0), n, ForKind::kSerial);
  b.store(S, {tx}, float_imm(1.0));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  b.end_frame();
  std::string text = body_text(syncs(b.finish()));
  EXPECT_TRUE(contains(text, "for (int k = 0; k < n; ++k) {\n"
                             "  __syncthreads();\n"
                             "  S[tx] = 1.0f;\n"
                             "  __syncthreads();\n"
                             "  A[tx] = S[127 - tx];\n"
                             "}\n")) << text;
}

TEST(InsertSyncs, InjectiveIndicesAcrossIterationsNeedNoBarrier) {
  // Thread tx, iteration k writes S[k * 512 + tx * 4 + lane]: every (k, tx, lane) has its own
  // address, so iterations need no barrier between them. S2 is read-modified-written by each
  // thread at its own addresses. Only the final read by other threads needs a barrier.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(1024)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(1024)}, Float32());
  Buffer S2 = b.alloc_shared("S2", {int_imm(1024)}, Float32());
  Var k = b.begin_for("k", int_imm(0), int_imm(2), ForKind::kUnrolled);
  b.store(S, {ramp(k * 512 + tx * 4, int_imm(1), 4)}, buffer_load(A, {ramp(k * 512 + tx * 4, int_imm(1), 4)}));
  b.end_frame();
  Var x = b.begin_for("x", int_imm(0), int_imm(8), ForKind::kSerial);
  b.store(S2, {tx * 8 + x}, buffer_load(S2, {tx * 8 + x}) + float_imm(1.0));
  b.end_frame();
  b.store(A, {tx}, buffer_load(S, {int_imm(1023) - tx}) + buffer_load(S2, {int_imm(1023) - tx}));
  b.end_frame();
  std::string text = body_text(syncs(b.finish()));
  EXPECT_EQ(text,
            "__shared__ float S[1024];  // not planned yet\n"
            "__shared__ float S2[1024];  // not planned yet\n"
            "#pragma unroll\n"
            "for (int k = 0; k < 2; ++k) {\n"
            "  tl::store(&S[k * 512 + tx * 4], tl::load<4>(&A[k * 512 + tx * 4]));\n"
            "}\n"
            "for (int x = 0; x < 8; ++x) {\n"
            "  S2[tx * 8 + x] = S2[tx * 8 + x] + 1.0f;\n"
            "}\n"
            "__syncthreads();\n"
            "A[tx] = S[1023 - tx] + S2[1023 - tx];\n");
}

TEST(InsertSyncs, OverlappingIterationsOfDifferentThreadsAreOrdered) {
  // Iteration k of thread tx writes S[k * 64 + tx]: thread 64 in iteration 0 and thread 0 in
  // iteration 1 write the same element, so the iterations must be ordered.
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(1024)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(1024)}, Float32());
  Var k = b.begin_for("k", int_imm(0), int_imm(4), ForKind::kSerial);
  b.store(S, {k * 64 + tx}, buffer_load(A, {k * 128 + tx}));
  b.end_frame();
  b.end_frame();
  EXPECT_TRUE(contains(body_text(syncs(b.finish())), "for (int k = 0; k < 4; ++k) {\n  __syncthreads();\n"));
}

TEST(InsertSyncs, ConflictBeforeADivergentBranchGetsOneBarrierBeforeIt) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.store(S, {tx}, buffer_load(A, {tx}));
  b.begin_if(tx < int_imm(64));
  b.store(A, {tx}, buffer_load(S, {tx + 64}));
  b.begin_else();
  b.store(A, {tx}, buffer_load(S, {tx - 64}));
  b.end_frame();
  b.end_frame();
  EXPECT_EQ(body_text(syncs(b.finish())),
            "__shared__ float S[128];  // not planned yet\n"
            "S[tx] = A[tx];\n"
            "__syncthreads();\n"
            "if (tx < 64) {\n"
            "  A[tx] = S[tx + 64];\n"
            "} else {\n"
            "  A[tx] = S[tx - 64];\n"
            "}\n");
}

TEST(InsertSyncs, DisabledByConfig) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  Buffer S = b.alloc_shared("S", {int_imm(128)}, Float32());
  b.store(S, {tx}, buffer_load(A, {tx}));
  b.store(A, {tx}, buffer_load(S, {int_imm(127) - tx}));
  b.end_frame();
  PrimFunc in = b.finish();
  passes::PassContext ctx;
  ctx.set("tl.disable_thread_storage_sync", true);
  EXPECT_TRUE(passes::insert_syncs_pass().run(in, ctx).same_as(in));
}

}  // namespace
