// overlap_gemm_mainloop on hand-built lowered IR: which loops it rewrites, into what, and
// which it must leave alone.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/builder.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"
#include "tilec/target/cuda/codegen.h"

using namespace tilec;
using namespace tilec::ir;
using codegen_test::contains;

namespace {

constexpr const char* kTargs =
    "64, 64, 32, 2, 2, false, false, false, tl::SmemTile<64, 32, 2>, tl::SmemTile<32, 64, 3>, tl::kMmaF16";

Expr addr(const Buffer& b, Expr i) { return call(DataType::Handle(), "tl.address_of", {buffer_load(b, {std::move(i)})}); }
void call_stmt(Builder& b, const std::string& op, std::vector<Expr> args) {
  b.evaluate(call(DataType::Void(), op, std::move(args)));
}

struct Variant {
  bool extra_shared_store = false;  // a statement that is not an async copy in the loop
  bool row0_uses_loop_var = false;  // the gemm's operand origin moves with the loop
  bool no_annotation = false;       // a gemm call without its fragment-size annotation
  int64_t acc_words = 32;           // the accumulator's float32 registers per thread
  int64_t threads = 128;
};

// for ko in [0, 8): wait(1); sync; cp.async into stage (ko + 1) % 2; commit;
//                   gemm_ss(stage ko % 2)      -- the shape inject_pipeline + insert_syncs give
PrimFunc main_loop(Variant v = {}) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(8 * 64 * 32)}, Float16());
  b.begin_kernel({int_imm(1)}, {v.threads});
  Var tx = b.thread_vars()[0];
  Buffer As = b.alloc("As", {int_imm(2 * 64 * 32)}, Float16(), Scope::kSharedDyn);
  Buffer Bs = b.alloc("Bs", {int_imm(2 * 32 * 64)}, Float16(), Scope::kSharedDyn);
  Buffer Cl = b.alloc("Cl", {int_imm(v.acc_words)}, Float32(), Scope::kLocal);
  Var ko = b.begin_for("ko", int_imm(0), int_imm(8), ForKind::kSerial);
  call_stmt(b, "tl.cp_async_wait", {int_imm(1)});
  call_stmt(b, "tl.syncthreads", {});
  call_stmt(b, "tl.cp_async_cg16_zfill",
            {addr(As, floormod(ko + 1, 2) * 2048 + tx * 8), addr(A, ko * 2048 + tx * 8), ko < int_imm(7)});
  call_stmt(b, "tl.cp_async_commit", {});
  if (v.extra_shared_store) b.store(Bs, {tx}, buffer_load(As, {tx}));
  Expr row0 = v.row0_uses_loop_var ? Expr(ko) : int_imm(0);
  Stmt gemm = evaluate(call(DataType::Void(), "tl.gemm_ss",
                            {string_imm(kTargs), addr(As, floormod(ko, 2) * 2048), row0, int_imm(0),
                             addr(Bs, floormod(ko, 2) * 2048), int_imm(0), int_imm(0), addr(Cl, int_imm(0)), tx}));
  if (v.no_annotation) b.emit(gemm);
  else b.emit(annotate(passes::kGemmFragmentWordsKey, int64_t{24}, gemm));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

PrimFunc run(const PrimFunc& f, bool disable = false) {
  passes::PassContext ctx;
  if (disable) ctx.set("tl.disable_gemm_overlap", true);
  return passes::overlap_gemm_mainloop_pass().run(f, ctx);
}

std::string cuda_text(const PrimFunc& f) { return cuda::codegen_cuda_stmt(passes::back::find_kernel(f->body)->body); }

int count_calls(const Stmt& s, const std::string& op) {
  int n = 0;
  for_each_node(s, [&](const Node* node) {
    auto* c = dynamic_cast<const CallNode*>(node);
    n += c && c->op == op;
  });
  return n;
}
bool has_annotation(const Stmt& s) {
  bool found = false;
  for_each_node(s, [&](const Node* node) {
    auto* a = dynamic_cast<const AnnotateNode*>(node);
    found |= a && a->key == passes::kGemmFragmentWordsKey;
  });
  return found;
}

TEST(OverlapGemmMainLoop, RotatesTheBarrierIntoTheGemm) {
  PrimFunc out = run(main_loop());
  std::string text = cuda_text(out);
  // Before the loop: the first wait + barrier and k-step 0 of iteration 0.
  EXPECT_TRUE(contains(text, "unsigned int gemm_frag[24];")) << text;
  size_t wait = text.find("tl::cp_async_wait(1);"), sync = text.find("__syncthreads();");
  size_t pre = text.find("tl::gemm_ss_prefetch<" + std::string(kTargs) + ", 24>(&As[0], 0, 0, &Bs[0], 0, 0, &gemm_frag[0], tx);");
  size_t loop = text.find("for (int ko = 0; ko < 8; ++ko)");
  ASSERT_NE(pre, std::string::npos) << text;
  EXPECT_TRUE(wait < sync && sync < pre && pre < loop) << text;
  // In the loop: the copies, then the overlapped gemm with W = 1, the next stage and the guard.
  EXPECT_TRUE(contains(text, "tl::gemm_ss_overlap<" + std::string(kTargs) +
                                 ", 1, 24>(&As[ko % 2 * 2048], 0, 0, &Bs[ko % 2 * 2048], 0, 0, &Cl[0], tx, "
                                 "&gemm_frag[0], &As[(ko + 1) % 2 * 2048], &Bs[(ko + 1) % 2 * 2048], ko < 7);"))
      << text;
  EXPECT_EQ(count_calls(out->body, "tl.syncthreads"), 1) << text;  // the loop's own moved into the call
  EXPECT_EQ(count_calls(out->body, "tl.cp_async_wait"), 1) << text;
  EXPECT_GT(text.find("tl::cp_async_commit();"), loop) << text;
  EXPECT_FALSE(has_annotation(out->body));
}

TEST(OverlapGemmMainLoop, LeavesOtherLoopsAlone) {
  for (Variant v : {Variant{true, false, false}, Variant{false, true, false}, Variant{false, false, true}}) {
    PrimFunc out = run(main_loop(v));
    std::string text = cuda_text(out);
    EXPECT_EQ(count_calls(out->body, "tl.gemm_ss_overlap"), 0) << text;
    EXPECT_EQ(count_calls(out->body, "tl.gemm_ss"), 1) << text;
    EXPECT_EQ(count_calls(out->body, "tl.syncthreads"), 1) << text;
    EXPECT_FALSE(has_annotation(out->body)) << "the annotation is dropped everywhere";
  }
}

// The accumulator and the 24 carried words must fit a thread's registers: min(255, 65536 /
// threads). Beyond that the overlapped kernel spills for certain and would be built twice.
TEST(OverlapGemmMainLoop, NotWhenTheFragmentsCannotStayInRegisters) {
  auto overlapped = [](int64_t acc_words, int64_t threads) {
    Variant v;
    v.acc_words = acc_words;
    v.threads = threads;
    return count_calls(run(main_loop(v))->body, "tl.gemm_ss_overlap") == 1;
  };
  EXPECT_TRUE(overlapped(231, 128));   // 231 + 24 = 255
  EXPECT_FALSE(overlapped(232, 128));  // 256 > 255
  EXPECT_FALSE(overlapped(512, 32));   // fuzz seed 796: a 128x128 float32 tile on one warp
  EXPECT_TRUE(overlapped(104, 512));   // 104 + 24 = 128 = 65536 / 512
  EXPECT_FALSE(overlapped(105, 512));
}

TEST(OverlapGemmMainLoop, DisabledByConfig) {
  PrimFunc out = run(main_loop(), /*disable=*/true);
  EXPECT_EQ(count_calls(out->body, "tl.gemm_ss_overlap"), 0);
  EXPECT_EQ(count_calls(out->body, "tl.gemm_ss"), 1);
  EXPECT_FALSE(has_annotation(out->body));
}

}  // namespace
