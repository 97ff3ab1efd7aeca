// CUDA C codegen: golden snippets of expressions / statements / kernels built by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen_test_util.h"
#include "tilec/ir/builder.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/support/diag.h"
#include "tilec/target/cuda/codegen.h"
#include "tilec/target/cuda/lower.h"

using namespace tilec;
using namespace tilec::ir;
using codegen_test::contains;

namespace {

Var ivar(const std::string& n) { return make_var(n, Int32()); }

TEST(CodegenExpr, PrecedenceAndLiterals) {
  Var a = ivar("a"), b = ivar("b"), c = ivar("c");
  EXPECT_EQ(cuda::codegen_cuda_expr((a + b) * c), "(a + b) * c");
  EXPECT_EQ(cuda::codegen_cuda_expr(a + b * c), "a + b * c");
  EXPECT_EQ(cuda::codegen_cuda_expr(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(cuda::codegen_cuda_expr(a + (b + c)), "a + b + c");  // integer + is associative
  EXPECT_EQ(cuda::codegen_cuda_expr(a - (b + c)), "a - (b + c)");
  Var x = make_var("x", Float32()), y = make_var("y", Float32());
  EXPECT_EQ(cuda::codegen_cuda_expr(x + (y + x)), "x + (y + x)");  // float + is not
  EXPECT_EQ(cuda::codegen_cuda_expr((a - b) - c), "a - b - c");
  EXPECT_EQ(cuda::codegen_cuda_expr(a < b && b <= c), "a < b && b <= c");
  EXPECT_EQ(cuda::codegen_cuda_expr(select(a < b, a, b)), "a < b ? a : b");
  EXPECT_EQ(cuda::codegen_cuda_expr(int_imm(7, Int64())), "7ll");
  EXPECT_EQ(cuda::codegen_cuda_expr(int_imm(-3)), "-3");
  EXPECT_EQ(cuda::codegen_cuda_expr(float_imm(1.0)), "1.0f");
  EXPECT_EQ(cuda::codegen_cuda_expr(float_imm(0.1, DataType::Float(64))), "0.10000000000000001");
  EXPECT_EQ(cuda::codegen_cuda_expr(float_imm(1.5, Float16())), "half(1.5f)");
  EXPECT_EQ(cuda::codegen_cuda_expr(float_imm(-INFINITY)), "tl::neg_inf<float>()");
  EXPECT_EQ(cuda::codegen_cuda_expr(bool_imm(true)), "true");
  EXPECT_EQ(cuda::codegen_cuda_expr(cast(Float32(), a)), "(float)a");
  EXPECT_EQ(cuda::codegen_cuda_expr(cast(Float16(), a)), "tl::cast<half>(a)");
}

TEST(CodegenExpr, FloorDivisionSemantics) {
  Var a = ivar("a");
  // Unknown sign, power of two: shifts and masks are exact floor semantics.
  EXPECT_EQ(cuda::codegen_cuda_expr(floordiv(a, 8)), "a >> 3");
  EXPECT_EQ(cuda::codegen_cuda_expr(floordiv(a + 1, 8)), "(a + 1) >> 3");
  EXPECT_EQ(cuda::codegen_cuda_expr(floormod(a, 8)), "a & 7");
  // Unknown sign, other divisor: the library's floor division.
  EXPECT_EQ(cuda::codegen_cuda_expr(floordiv(a, 6)), "tl::floordiv(a, 6)");
  EXPECT_EQ(cuda::codegen_cuda_expr(floormod(a, 6)), "tl::floormod(a, 6)");
  // Truncating division stays C division.
  EXPECT_EQ(cuda::codegen_cuda_expr(binary(NodeKind::kDiv, a, int_imm(6))), "a / 6");
}

TEST(CodegenExpr, IntrinsicsFromTheTable) {
  Var a = ivar("a"), b = ivar("b");
  Var x = make_var("x", Float32());
  EXPECT_EQ(cuda::codegen_cuda_expr(call(Float32(), "exp", {x})), "tl::exp(x)");
  EXPECT_EQ(cuda::codegen_cuda_expr(call(Float32(), "infinity", {})), "tl::infinity<float>()");
  EXPECT_EQ(cuda::codegen_cuda_expr(call(Int32(), "tl.bitwise_xor", {a, b}) * 2), "(a ^ b) * 2");
  EXPECT_EQ(cuda::codegen_cuda_expr(call(Float32(), "tl.warp_reduce_sum", {int_imm(32), x})),
            "tl::warp_reduce_sum<32>(x)");
  EXPECT_EQ(cuda::codegen_cuda_expr(max(x, x)), "tl::max(x, x)");
  Buffer s = make_buffer("S", {int_imm(64)}, Float32(), Scope::kSharedDyn);
  EXPECT_EQ(cuda::codegen_cuda_expr(call(DataType::Handle(), "tl.address_of", {buffer_load(s, {a + 1})})), "&S[a + 1]");
  // Outside dumps, an intrinsic without a row is a user error (T.call_intrin with a typo).
  Builder bk("k");
  Buffer out = bk.tensor("out", {int_imm(128)}, Float32());
  bk.begin_kernel({int_imm(1)}, {128});
  bk.store(out, {bk.thread_vars()[0]}, call(Float32(), "no_such_intrinsic", {float_imm(1.0)}));
  bk.end_frame();
  PrimFunc f = bk.finish();
  try {
    cuda::codegen_cuda(f, passes::build_launch_plan(f));
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "unknown intrinsic 'no_such_intrinsic'")) << e.message();
  }
}

TEST(CodegenExpr, VectorAccesses) {
  Var i = ivar("i");
  Buffer a = make_buffer("A", {int_imm(1024)}, Float16(), Scope::kGlobal);
  Buffer b = make_buffer("B", {int_imm(1024)}, Float16(), Scope::kGlobal);
  Stmt st = buffer_store(b, {ramp(i * 8, int_imm(1), 8)}, buffer_load(a, {ramp(i * 8, int_imm(1), 8)}));
  EXPECT_EQ(cuda::codegen_cuda_stmt(st), "tl::store(&B[i * 8], tl::load<8>(&A[i * 8]));\n");
}

TEST(CodegenExpr, IdentifiersAreSanitisedAndUnique) {
  EXPECT_EQ(cuda::cuda_identifier("float"), "float_");
  EXPECT_EQ(cuda::cuda_identifier("a.b-c"), "a_b_c");
  EXPECT_EQ(cuda::cuda_identifier("3x"), "v_3x");
  EXPECT_EQ(cuda::cuda_identifier("__x"), "v__x");
  Var x1 = ivar("x"), x2 = ivar("x");
  EXPECT_EQ(cuda::codegen_cuda_expr(x1 + x2), "x + x_1");
}

TEST(CodegenStmt, LoopsIfsLetsAndLocals) {
  Var i = ivar("i"), v = ivar("v");
  Buffer r = make_buffer("r", {int_imm(8)}, Float32(), Scope::kLocal);
  Stmt body = let(v, i * 2, if_then_else(v < int_imm(8), buffer_store(r, {v}, float_imm(0.0)), buffer_store(r, {i}, float_imm(1.0))));
  Stmt loop = make_for(i, int_imm(0), int_imm(4), ForKind::kUnrolled, body);
  Stmt s = allocate(r, loop);
  EXPECT_EQ(cuda::codegen_cuda_stmt(s),
            "alignas(16) float r[8];\n"
            "#pragma unroll\n"
            "for (int i = 0; i < 4; ++i) {\n"
            "  const int v = i * 2;\n"
            "  if (v < 8) {\n"
            "    r[v] = 0.0f;\n"
            "  } else {\n"
            "    r[i] = 1.0f;\n"
            "  }\n"
            "}\n");
}

// Elementwise add over a symbolic length: C[i] = A[i] + B[i] for i < n.
PrimFunc elementwise_add() {
  Builder b("add");
  Var n = b.dynamic("n");
  Buffer A = b.tensor("A", {n}, Float32());
  Buffer B = b.tensor("B", {n}, Float32());
  Buffer C = b.tensor("C", {n}, Float32());
  auto bx = b.begin_kernel({ceildiv(n, int_imm(256))}, {256});
  Var tx = b.thread_vars()[0];
  Var i = b.let("i", bx[0] * 256 + tx);
  b.begin_if(i < n);
  b.store(C, {i}, buffer_load(A, {i}) + buffer_load(B, {i}));
  b.end_frame();
  b.end_frame();
  return b.finish();
}

TEST(CodegenKernel, ElementwiseAddSignatureAndPlan) {
  passes::PassContext ctx;
  auto m = cuda::lower_to_cuda(elementwise_add(), ctx);
  // (The full pipeline may simplify index expressions; only the stable parts are checked.)
  EXPECT_TRUE(contains(m.source, "#include \"tilec/common.cuh\"")) << m.source;
  EXPECT_TRUE(contains(m.source,
                       "extern \"C\" __global__ void __launch_bounds__(256) add(const float* __restrict__ A, "
                       "const float* __restrict__ B, float* __restrict__ C, int n) {"))
      << m.source;
  EXPECT_TRUE(contains(m.source, "  const int bx = blockIdx.x;\n  const int tx = threadIdx.x;\n")) << m.source;
  EXPECT_TRUE(contains(m.source, "C[i] = A[i] + B[i];")) << m.source;

  const auto& plan = m.plan;
  EXPECT_EQ(plan.kernel_name, "add");
  ASSERT_EQ(plan.tensors.size(), 3u);
  EXPECT_EQ(plan.tensors[0].shape[0].symbol, "n");
  EXPECT_EQ(plan.symbols, std::vector<std::string>{"n"});
  ASSERT_EQ(plan.kernel_args.size(), 4u);
  EXPECT_EQ(plan.kernel_args[3].kind, runtime::KernelArg::kSymbol);
  EXPECT_EQ(plan.kernel_args[3].symbol, "n");
  EXPECT_EQ(plan.block[0], 256);
  ASSERT_EQ(plan.grid.size(), 1u);
  EXPECT_EQ(plan.symbol_vars[0]->name, "n");
  EXPECT_TRUE(contains(cuda::codegen_cuda_expr(plan.grid[0]), "n")) << cuda::codegen_cuda_expr(plan.grid[0]);
  EXPECT_EQ(plan.dynamic_shared_bytes, 0);
}

TEST(CodegenKernel, LineDirectives) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  Var tx = b.thread_vars()[0];
  b.store(A, {tx}, float_imm(1.0), SourceLoc{"user.py", 12, 4});
  b.end_frame();
  PrimFunc f = b.finish();
  auto plan = passes::build_launch_plan(f);
  cuda::CodegenOptions opts;
  opts.line_directives = true;
  std::string src = cuda::codegen_cuda(f, plan, opts);
  EXPECT_TRUE(contains(src, "#line 12 \"user.py\"\n  A[tx] = 1.0f;")) << src;
  EXPECT_FALSE(contains(cuda::codegen_cuda(f, plan, {}), "#line")) << src;
}

TEST(CodegenKernel, UnknownVariableIsAUserError) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(128)}, Float32());
  Var stray = make_var("stray");
  b.begin_kernel({int_imm(1)}, {128});
  b.store(A, {b.thread_vars()[0]}, cast(Float32(), stray));
  b.end_frame();
  try {
    passes::build_launch_plan(b.finish());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.message(), "the kernel uses 'stray'")) << e.message();
  }
}

}  // namespace

namespace {

// Every user-facing error of codegen and the LaunchPlan builder, with its message.
template <typename F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.message();
  }
  return "<no error>";
}

PrimFunc store_kernel(Expr value, std::vector<Expr> shape = {int_imm(128)}) {
  Builder b("k");
  Buffer out = b.tensor("out", std::move(shape), value->dtype.is_float() ? value->dtype : Float32());
  b.begin_kernel({int_imm(1)}, {128});
  std::vector<Expr> idx(out->ndim(), b.thread_vars()[0]);
  b.store(out, idx, value->dtype == out->dtype ? value : cast(out->dtype, value));
  b.end_frame();
  return b.finish();
}

std::string codegen_error(const PrimFunc& f) {
  return user_error_of([&] { cuda::codegen_cuda(f, passes::build_launch_plan(f)); });
}

TEST(CodegenErrors, IntrinsicMisuse) {
  EXPECT_TRUE(contains(codegen_error(store_kernel(call(Float32(), "exp", {float_imm(1.0), float_imm(2.0)}))),
                       "intrinsic 'exp' takes 1 argument(s), got 2"));
  EXPECT_TRUE(contains(codegen_error(store_kernel(call(Float32(), "tl.warp_reduce_sum", {int_imm(32) + 0, float_imm(1.0)}))),
                       "the first argument of 'tl.warp_reduce_sum' must be an integer constant"));
  EXPECT_TRUE(contains(codegen_error(store_kernel(cast(Float32(), call(Int32(), "tl.address_of", {int_imm(3)})))),
                       "tl.address_of takes a buffer element, got IntImm"));
  // float4_e2m1 is stored two elements a byte: a single-element store is refused, naming the buffer.
  EXPECT_TRUE(contains(codegen_error(store_kernel(cast(DataType::Float4E2M1(), float_imm(1.0)))),
                       "float4_e2m1 buffer 'out' is written one element at a time"));
}

TEST(CodegenErrors, LaunchPlanShapes) {
  Var m = make_var("m"), m2 = make_var("m");
  EXPECT_TRUE(contains(user_error_of([&] { passes::build_launch_plan(store_kernel(float_imm(1.0), {m + 2})); }),
                       "tensor 'out' dimension 0 is an expression; only constants, T.dynamic variables and constant "
                       "multiples of them"));
  // A constant multiple of a symbol (upstream's `seq_len * heads`): the symbol, scaled.
  for (Expr dim : {m * 32, int_imm(32) * m}) {
    runtime::LaunchPlan plan = passes::build_launch_plan(store_kernel(float_imm(1.0), {dim}));
    ASSERT_EQ(plan.tensors.size(), 1u);
    EXPECT_EQ(plan.tensors[0].shape[0].symbol, "m");
    EXPECT_EQ(plan.tensors[0].shape[0].scale, 32);
    EXPECT_EQ(plan.symbols, std::vector<std::string>{"m"});
    EXPECT_EQ(runtime::dim_spec_text(plan.tensors[0].shape[0]), "32*m");
  }
  Builder b("k");
  Buffer A = b.tensor("A", {m}, Float32()), B = b.tensor("B", {m2}, Float32());
  b.begin_kernel({int_imm(1)}, {128});
  b.store(A, {b.thread_vars()[0]}, buffer_load(B, {b.thread_vars()[0]}));
  b.end_frame();
  PrimFunc f = b.finish();
  EXPECT_TRUE(contains(user_error_of([&] { passes::build_launch_plan(f); }),
                       "two different symbolic dimensions are named 'm'"));
}

TEST(CodegenErrors, GridFromAScalarParameter) {
  Builder b("k");
  Buffer A = b.tensor("A", {int_imm(1024)}, Float32());
  Var n = b.scalar_param("n", Int32());
  Var other = make_var("blocks");
  b.begin_kernel({n}, {128});
  b.store(A, {b.thread_vars()[0]}, float_imm(0.0));
  b.end_frame();
  PrimFunc f = b.finish();
  EXPECT_TRUE(contains(user_error_of([&] { passes::build_launch_plan(f); }),
                       "the grid extent depends on the scalar parameter 'n'"));
  Builder b2("k");
  Buffer A2 = b2.tensor("A", {int_imm(1024)}, Float32());
  b2.begin_kernel({other}, {128});
  b2.store(A2, {b2.thread_vars()[0]}, float_imm(0.0));
  b2.end_frame();
  PrimFunc f2 = b2.finish();
  EXPECT_TRUE(contains(user_error_of([&] { passes::build_launch_plan(f2); }),
                       "the grid extent uses 'blocks', which is not a symbolic dimension"));
}

}  // namespace
