// Verifier: every error message (checked by text) and the line it reports; well-formed
// functions pass.
#include <gtest/gtest.h>

#include "tilec/ir/builder.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/ir/verifier.h"

using namespace tilec::ir;
using tilec::SourceLoc;

namespace {

DataType f32 = DataType::Float(32);
DataType f16 = DataType::Float(16);

SourceLoc L(int line) { return SourceLoc{"k.py", line, 1}; }

void expect_error(const PrimFunc& f, const std::string& message, int line, bool has_hint = true) {
  try {
    verify(f);
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const tilec::UserError& e) {
    EXPECT_EQ(e.message(), message);
    EXPECT_EQ(e.loc().line, line) << e.what();
    if (has_hint) EXPECT_FALSE(e.hint().empty()) << e.what();
  }
}

template <typename N>
Stmt raw(std::shared_ptr<N> n, SourceLoc loc) {
  n->loc = std::move(loc);
  return Stmt(std::shared_ptr<const N>(std::move(n)));
}

PrimFunc func(std::vector<Param> params, Stmt body) { return make_prim_func("f", std::move(params), std::move(body)); }

// with T.Kernel(1, threads=32): body   (a KernelLaunch made by hand)
Stmt kernel(Stmt body, SourceLoc loc = L(2), std::vector<int64_t> threads = {32}) {
  auto k = std::make_shared<KernelLaunchNode>();
  k->grid = {int_imm(1)};
  k->block_vars = {make_var("bx")};
  k->threads = threads;
  for (size_t i = 0; i < threads.size(); ++i) k->thread_vars.push_back(make_var("t" + std::to_string(i)));
  k->body = std::move(body);
  return raw(k, std::move(loc));
}

Buffer tensor(const char* name, std::vector<int64_t> shape, DataType t = f32, Scope s = Scope::kGlobal) {
  std::vector<Expr> e;
  for (auto x : shape) e.push_back(int_imm(x));
  return make_buffer(name, e, t, s);
}

}  // namespace

TEST(Verifier, WellFormedFunctionsPass) {
  EXPECT_NO_THROW(verify(build_example_gemm()));
  // Symbolic sizes, scalar parameters, thread indices, lets, layouts, if/else.
  Builder b("ok");
  Var m = b.dynamic("m");
  Buffer A = b.tensor("A", {m, int_imm(64)}, f32);
  Var n = b.scalar_param("n", DataType::Int(32));
  auto blk = b.begin_kernel({ceildiv(m, int_imm(32))}, {128});
  Buffer S = b.alloc_shared("S", {int_imm(32), int_imm(64)}, f32);
  Var i = make_var("i"), j = make_var("j");
  b.begin_annotate("layout_map", LayoutMap{{S, make_layout({int_imm(32), int_imm(64)}, {i, j}, {i * 64 + j})}});
  Var row = b.let("row", blk[0] * 32 + b.thread_vars()[0]);
  b.begin_if(row < m);
  b.store(A, {row, n}, float_imm(1));
  b.begin_else();
  b.tile_op("copy", {BufferRegion::full(S), BufferRegion{A, {{blk[0] * 32, int_imm(32)}, {int_imm(0), int_imm(64)}}, {}}});
  b.end_frame();
  b.end_frame();
  b.end_frame();
  EXPECT_NO_THROW(verify(b.finish()));
}

TEST(Verifier, VariableOutsideItsLoop) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(8)}, f32);
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  Var k = b.begin_for("k", int_imm(0), int_imm(8), ForKind::kSerial, {}, {}, L(3));
  b.store(A, {k}, float_imm(0), L(4));
  b.end_frame();
  b.store(A, {k}, float_imm(1), L(5));
  b.end_frame();
  expect_error(b.finish(), "variable 'k' is used outside the loop that defines it", 5);
}

TEST(Verifier, VariableOutsideItsBlock) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(8)}, f32);
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  b.begin_for("k", int_imm(0), int_imm(8), ForKind::kSerial, {}, {}, L(3));
  Var x = b.let("x", int_imm(3), L(4));
  b.end_frame();
  b.store(A, {x}, float_imm(1), L(6));
  b.end_frame();
  expect_error(b.finish(), "variable 'x' is used outside the block that assigns it", 6);
}

TEST(Verifier, BlockIndexOutsideItsKernel) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(8)}, f32);
  auto blk = b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  b.end_frame();
  b.begin_kernel({int_imm(1)}, {32}, {}, L(4));
  b.store(A, {blk[0]}, float_imm(1), L(5));
  b.end_frame();
  expect_error(b.finish(), "variable 'bx' is used outside the T.Kernel that defines it", 5);
}

TEST(Verifier, UndefinedVariable) {
  Buffer A = tensor("A", {8});
  Stmt s = kernel(buffer_store(A, {make_var("z")}, float_imm(1), L(3)));
  expect_error(func({{nullptr, A}}, s), "variable 'z' is not defined", 3);
}

TEST(Verifier, VariableRedefinedInsideItsScope) {
  Buffer A = tensor("A", {8});
  Var i = make_var("i");
  Stmt inner = make_for(i, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(A, {i}, float_imm(1)), L(4));
  Stmt outer = make_for(i, int_imm(0), int_imm(8), ForKind::kSerial, inner, L(3));
  expect_error(func({{nullptr, A}}, kernel(outer)), "variable 'i' is defined again inside its own scope", 4);
}

TEST(Verifier, BufferOutsideItsAllocation) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(32)}, f32);
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  Buffer S = b.alloc_shared("A_shared", {int_imm(32)}, f32, L(3));
  b.tile_op("copy", {BufferRegion::full(A), BufferRegion::full(S)}, {}, L(4));
  b.end_frame();
  b.begin_kernel({int_imm(1)}, {32}, {}, L(6));
  b.tile_op("copy", {BufferRegion::full(S), BufferRegion::full(A)}, {}, L(7));
  b.end_frame();
  expect_error(b.finish(), "buffer 'A_shared' is used outside its allocation", 7);
}

TEST(Verifier, BufferNeitherParameterNorAllocated) {
  Buffer X = tensor("X", {8});
  Stmt s = kernel(buffer_store(X, {int_imm(0)}, float_imm(1), L(3)));
  expect_error(func({}, s), "buffer 'X' is neither a parameter nor allocated", 3);
}

TEST(Verifier, FragmentIndexedOutsideParallel) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(16), int_imm(16)}, f32);
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  Buffer C = b.alloc_fragment("C_local", {int_imm(16), int_imm(16)}, f32, L(3));
  auto ij = b.begin_loop_nest({"i", "j"}, {int_imm(16), int_imm(16)}, ForKind::kParallel, L(4));
  b.store(C, {ij[0], ij[1]}, float_imm(0), L(5));  // fine: inside T.Parallel
  b.end_frame();
  b.tile_op("copy", {BufferRegion::full(C), BufferRegion::full(A)}, {}, L(6));  // fine: whole
  Var k = b.begin_for("k", int_imm(0), int_imm(16), ForKind::kSerial, {}, {}, L(7));
  b.store(A, {k, k}, buffer_load(C, {k, k}), L(8));
  b.end_frame();
  b.end_frame();
  expect_error(b.finish(), "fragment 'C_local' is indexed outside a T.Parallel loop", 8);
}

TEST(Verifier, FragmentStoreOutsideParallel) {
  Builder b("f");
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  Buffer C = b.alloc_fragment("C_local", {int_imm(4)}, f32, L(3));
  b.store(C, {int_imm(0)}, float_imm(0), L(4));
  b.end_frame();
  expect_error(b.finish(), "fragment 'C_local' is indexed outside a T.Parallel loop", 4);
}

TEST(Verifier, NestedKernel) {
  Builder b("f");
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  b.begin_kernel({int_imm(1)}, {32}, {}, L(3));
  b.end_frame();
  b.end_frame();
  expect_error(b.finish(), "T.Kernel inside T.Kernel is not supported", 3);
}

TEST(Verifier, RankMismatchOfLoadAndStore) {
  Buffer A = tensor("A", {8, 8});
  Stmt store = raw(std::make_shared<BufferStoreNode>(A, std::vector<Expr>{int_imm(0)}, float_imm(1)), L(3));
  expect_error(func({{nullptr, A}}, kernel(store)), "buffer 'A' has 2 dimensions but is indexed with 1", 3);
  Buffer B = tensor("B", {8});
  Expr load = Expr(std::make_shared<const BufferLoadNode>(f32, B, std::vector<Expr>{int_imm(0), int_imm(1)}));
  Stmt s2 = buffer_store(A, {int_imm(0), int_imm(0)}, load, L(4));
  expect_error(func({{nullptr, A}, {nullptr, B}}, kernel(s2)), "buffer 'B' has 1 dimension but is indexed with 2", 4);
}

TEST(Verifier, StoreTypeMismatch) {
  Buffer A = tensor("A", {8});
  Var h = make_var("h", f16);
  Stmt store = raw(std::make_shared<BufferStoreNode>(A, std::vector<Expr>{int_imm(0)}, Expr(h)), L(3));
  Stmt s = let(h, float_imm(1, f16), store);
  expect_error(func({{nullptr, A}}, kernel(s)), "cannot store a value of type float16 into buffer 'A' of type float32", 3);
}

TEST(Verifier, FloatIndex) {
  Buffer A = tensor("A", {8});
  Expr load = Expr(std::make_shared<const BufferLoadNode>(f32, A, std::vector<Expr>{float_imm(1)}));
  Stmt s = buffer_store(A, {int_imm(0)}, load, L(3));
  expect_error(func({{nullptr, A}}, kernel(s)), "index of buffer 'A' has type float32", 3);
}

TEST(Verifier, LoopBoundTypes) {
  Buffer A = tensor("A", {8});
  auto loop = std::make_shared<ForNode>();
  loop->loop_var = make_var("i");
  loop->min = int_imm(0);
  loop->extent = float_imm(8);
  loop->body = evaluate(int_imm(0));
  expect_error(func({{nullptr, A}}, kernel(raw(loop, L(3)))), "the extent of the loop over 'i' has type float32", 3);
  auto loop2 = std::make_shared<ForNode>(*loop);
  loop2->extent = int_imm(8);
  loop2->min = float_imm(0);
  expect_error(func({{nullptr, A}}, kernel(raw(loop2, L(4)))), "the start of the loop over 'i' has type float32", 4);
}

TEST(Verifier, OnChipBufferOutsideKernel) {
  Buffer S = tensor("S", {8}, f32, Scope::kSharedDyn);
  Stmt s = allocate(S, evaluate(int_imm(0)), L(2));
  expect_error(func({}, s), "on-chip buffer 'S' (shared.dyn) is allocated outside T.Kernel", 2);
  Buffer G = tensor("G", {8});
  expect_error(func({}, kernel(allocate(G, evaluate(int_imm(0)), L(3)))), "cannot allocate global buffer 'G'", 3);
  Buffer V = tensor("v", {2}, DataType::Int(32), Scope::kVar);
  expect_error(func({}, kernel(allocate(V, evaluate(int_imm(0)), L(4)))), "variable buffer 'v' must have shape (1,)", 4);
}

TEST(Verifier, TileOpRegionRank) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(64), int_imm(64)}, f32);
  b.begin_kernel({int_imm(1)}, {32}, {}, L(2));
  Buffer S = b.alloc_shared("S", {int_imm(64)}, f32, L(3));
  BufferRegion one_dim{A, {{int_imm(0), int_imm(64)}}, {}};
  b.emit(raw([&] {
    auto n = std::make_shared<TileOpNode>();
    n->op = "copy";
    n->args = {one_dim, BufferRegion::full(S)};
    return n;
  }(), L(4)));
  b.end_frame();
  expect_error(b.finish(), "region of 'A' in T.copy has 1 dimension but the buffer has 2", 4);
}

TEST(Verifier, TileOpRegionExceedsBuffer) {
  Builder b("f");
  Buffer A = b.tensor("A", {int_imm(64), int_imm(64)}, f16);
  b.begin_kernel({int_imm(1)}, {128}, {}, L(2));
  Buffer S = b.alloc_shared("A_shared", {int_imm(64), int_imm(32)}, f16, L(3));
  BufferRegion too_wide{S, {{int_imm(0), int_imm(64)}, {int_imm(0), int_imm(64)}}, {}};
  b.tile_op("copy", {BufferRegion::full(A), too_wide}, {}, L(4));
  b.end_frame();
  expect_error(b.finish(), "region of 'A_shared' in T.copy has extent 64 in dimension 1 but the buffer's extent there is 32",
               4);

  Builder b2("f");
  Buffer A2 = b2.tensor("A", {int_imm(64), int_imm(64)}, f16);
  b2.begin_kernel({int_imm(1)}, {128}, {}, L(2));
  Buffer S2 = b2.alloc_shared("A_shared", {int_imm(32), int_imm(32)}, f16, L(3));
  BufferRegion shifted{S2, {{int_imm(16), int_imm(32)}, {int_imm(0), int_imm(32)}}, {}};
  BufferRegion src{A2, {{int_imm(0), int_imm(32)}, {int_imm(0), int_imm(32)}}, {}};
  b2.tile_op("copy", {src, shifted}, {}, L(5));
  b2.end_frame();
  expect_error(b2.finish(),
               "region of 'A_shared' in T.copy covers [16, 48) in dimension 0 but the buffer's extent there is 32", 5);
}

TEST(Verifier, UnknownTileOp) {
  auto n = std::make_shared<TileOpNode>();
  n->op = "frobnicate";
  expect_error(func({}, kernel(raw(n, L(3)))), "unknown tile op 'T.frobnicate'", 3);
}

TEST(Verifier, KernelShape) {
  expect_error(func({}, kernel(evaluate(int_imm(0)), L(2), {64, 32})), "T.Kernel asks for 2048 threads per block", 2);
}

TEST(Verifier, TypesOfConditionsLetsAndOperands) {
  Buffer A = tensor("A", {8});
  Var x = make_var("x");
  Stmt bad_if = raw(std::make_shared<IfNode>(Expr(x), evaluate(int_imm(0)), Stmt()), L(4));
  expect_error(func({{nullptr, A}}, kernel(let(x, int_imm(1), bad_if, L(3)))), "if-condition has type int32, expected bool",
               4);
  Var y = make_var("y", DataType::Int(64));
  expect_error(func({}, kernel(let(y, int_imm(1), evaluate(int_imm(0)), L(5)))),
               "variable 'y' has type int64 but its value has type int32", 5);
  Expr mixed = Expr(std::make_shared<const BinaryNode>(NodeKind::kAdd, DataType::Int(32), int_imm(1),
                                                       int_imm(1, DataType::Int(64))));
  expect_error(func({}, kernel(evaluate(mixed, L(6)))), "operands of '+' have different types: int32 and int64", 6);
}

TEST(Verifier, ParameterMustBeGlobal) {
  Buffer S = make_buffer("S", {int_imm(8)}, f32, Scope::kSharedDyn, {}, L(1));
  expect_error(func({{nullptr, S}}, kernel(evaluate(int_imm(0)))), "parameter 'S' must be a global tensor, not shared.dyn",
               1);
}

TEST(Verifier, LocationFallsBackToEnclosingStatement) {
  // The store has no location: the error points at the innermost located node, the loop.
  Buffer A = tensor("A", {8});
  Stmt store = buffer_store(A, {make_var("z")}, float_imm(1));
  Stmt loop = make_for(make_var("i"), int_imm(0), int_imm(8), ForKind::kSerial, store, L(9));
  expect_error(func({{nullptr, A}}, kernel(loop)), "variable 'z' is not defined", 9);
}

TEST(Verifier, LayoutVariablesAreLocal) {
  Buffer S = tensor("S", {8}, f32, Scope::kSharedDyn);
  Var i = make_var("i");
  Layout l = make_layout({int_imm(8)}, {i}, {i});
  Stmt uses_i = buffer_store(S, {i}, float_imm(0), L(5));
  Stmt s = kernel(allocate(S, annotate("layout_map", LayoutMap{{S, l}}, uses_i, L(4)), L(3)));
  expect_error(func({}, s), "variable 'i' is used outside the layout function that defines it", 5, false);
}
