// T-script printer: every node kind, precedence, naming, and the builder GEMM (golden text).
#include <gtest/gtest.h>

#include <cmath>

#include "tilec/ir/builder.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/ir/printer.h"

using namespace tilec::ir;

namespace {

DataType i32 = DataType::Int(32);
DataType f32 = DataType::Float(32);
DataType f16 = DataType::Float(16);

Expr bin(NodeKind k, Expr a, Expr b) { return binary(k, std::move(a), std::move(b)); }

Stmt nop() { return evaluate(int_imm(0)); }

Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, PipelineInfo p = {}, std::string tag = "",
              AttrMap annotations = {}) {
  return make_for(std::move(v), std::move(min), std::move(extent), kind, std::move(body), {}, std::move(p),
                  std::move(tag), std::move(annotations));
}

Stmt kernel(std::vector<Expr> grid, std::vector<Var> block, std::vector<int64_t> threads, std::vector<Var> tvars,
            Stmt body, std::vector<int64_t> cluster = {}) {
  auto k = std::make_shared<KernelLaunchNode>();
  k->grid = std::move(grid);
  k->block_vars = std::move(block);
  k->threads = std::move(threads);
  k->thread_vars = std::move(tvars);
  k->cluster = std::move(cluster);
  k->body = std::move(body);
  return Stmt(std::shared_ptr<const KernelLaunchNode>(k));
}

class PrinterExpr : public ::testing::Test {
 protected:
  Var a = make_var("a"), b = make_var("b"), c = make_var("c"), d = make_var("d");
  Expr p = make_var("p", DataType::Bool()), q = make_var("q", DataType::Bool()), r = make_var("r", DataType::Bool());
  Var x = make_var("x", f32), y = make_var("y", f32);
};

}  // namespace

TEST_F(PrinterExpr, Immediates) {
  EXPECT_EQ(script(int_imm(5)), "5");
  EXPECT_EQ(script(int_imm(-3)), "-3");
  EXPECT_EQ(script(int_imm(5, DataType::Int(64))), "T.int64(5)");
  EXPECT_EQ(script(int_imm(3, DataType::UInt(8))), "T.uint8(3)");
  EXPECT_EQ(script(bool_imm(true)), "True");
  EXPECT_EQ(script(bool_imm(false)), "False");
  EXPECT_EQ(script(float_imm(1.5)), "T.float32(1.5)");
  EXPECT_EQ(script(float_imm(0, f16)), "T.float16(0)");
  EXPECT_EQ(script(float_imm(-2, f32)), "T.float32(-2)");
  EXPECT_EQ(script(float_imm(0.1, DataType::Float(64))), "T.float64(0.1)");
  EXPECT_EQ(script(float_imm(1e20)), "T.float32(1e+20)");
  EXPECT_EQ(script(float_imm(-0.0)), "T.float32(-0.0)");
  EXPECT_EQ(script(float_imm(INFINITY)), "T.float32(\"inf\")");
  EXPECT_EQ(script(float_imm(-INFINITY)), "T.float32(\"-inf\")");
  EXPECT_EQ(script(float_imm(NAN)), "T.float32(\"nan\")");
  EXPECT_EQ(script(float_imm(1, DataType::BFloat16())), "T.bfloat16(1)");
  EXPECT_EQ(script(string_imm("a\"b\\c\nd\x01")), "\"a\\\"b\\\\c\\nd\\x01\"");
}

TEST_F(PrinterExpr, ArithmeticAndPrecedence) {
  EXPECT_EQ(script(a + b), "a + b");
  EXPECT_EQ(script(a - b), "a - b");
  EXPECT_EQ(script(a * b), "a * b");
  EXPECT_EQ(script((a + b) + c), "a + b + c");
  EXPECT_EQ(script(a + (b + c)), "a + (b + c)");
  EXPECT_EQ(script(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(script(a - (b + c)), "a - (b + c)");
  EXPECT_EQ(script(a * (b + c)), "a * (b + c)");
  EXPECT_EQ(script((a - b) * c), "(a - b) * c");
  EXPECT_EQ(script(a * b + c * d), "a * b + c * d");
  EXPECT_EQ(script(a * (b * c)), "a * (b * c)");
  EXPECT_EQ(script(floordiv(a * b, c)), "a * b // c");
  EXPECT_EQ(script(a * floordiv(b, c)), "a * (b // c)");
  EXPECT_EQ(script(floormod(a + 1, 8)), "(a + 1) % 8");
  EXPECT_EQ(script(a - int_imm(-5)), "a - -5");
  EXPECT_EQ(script(int_imm(-5) * a), "-5 * a");
  EXPECT_EQ(script(bin(NodeKind::kDiv, x, y)), "x / y");
  EXPECT_EQ(script(bin(NodeKind::kDiv, x, y + x)), "x / (y + x)");
  EXPECT_EQ(script(bin(NodeKind::kDiv, a, b)), "T.truncdiv(a, b)");
  EXPECT_EQ(script(bin(NodeKind::kMod, a, b)), "T.truncmod(a, b)");
  EXPECT_EQ(script(floordiv(a, b)), "a // b");
  EXPECT_EQ(script(floormod(a, b)), "a % b");
  EXPECT_EQ(script(min(a, b + c)), "T.min(a, b + c)");
  EXPECT_EQ(script(max(x, y)), "T.max(x, y)");
  EXPECT_EQ(script(ceildiv(a, int_imm(128))), "T.ceildiv(a, 128)");
  EXPECT_EQ(script(floordiv(a + 127, 128)), "(a + 127) // 128");  // not ceildiv: 127 != 128 - 1 form
}

TEST_F(PrinterExpr, ComparisonsAndLogic) {
  EXPECT_EQ(script(a < b), "a < b");
  EXPECT_EQ(script(a <= b), "a <= b");
  EXPECT_EQ(script(a > b), "a > b");
  EXPECT_EQ(script(a >= b), "a >= b");
  EXPECT_EQ(script(bin(NodeKind::kEQ, a, b)), "a == b");
  EXPECT_EQ(script(bin(NodeKind::kNE, a + 1, b)), "a + 1 != b");
  EXPECT_EQ(script(bin(NodeKind::kEQ, a < b, c < d)), "(a < b) == (c < d)");
  EXPECT_EQ(script(bin(NodeKind::kEQ, p, q)), "p == q");
  EXPECT_EQ(script((a < b) && (c < d)), "a < b and c < d");
  EXPECT_EQ(script((p && q) || r), "p and q or r");
  EXPECT_EQ(script(p && (q || r)), "p and (q or r)");
  EXPECT_EQ(script((p || q) && r), "(p or q) and r");
  EXPECT_EQ(script(p && (q && r)), "p and (q and r)");
  EXPECT_EQ(script((p && q) && r), "p and q and r");
  EXPECT_EQ(script(logical_not(p && q)), "not (p and q)");
  EXPECT_EQ(script(logical_not(a < b)), "not a < b");
  EXPECT_EQ(script(logical_not(logical_not(p))), "not not p");
  EXPECT_EQ(script(bin(NodeKind::kEQ, logical_not(p), q)), "(not p) == q");
  EXPECT_EQ(script(logical_not(p) && q), "not p and q");
}

TEST_F(PrinterExpr, OtherExpressions) {
  EXPECT_EQ(script(select(a < b, x, y)), "T.if_then_else(a < b, x, y)");
  EXPECT_EQ(script(cast(f16, x + y)), "T.cast(x + y, \"float16\")");
  EXPECT_EQ(script(ramp(a * 4, int_imm(1), 4)), "T.Ramp(a * 4, 1, 4)");
  EXPECT_EQ(script(broadcast(x, 8)), "T.Broadcast(x, 8)");
  Buffer A = make_buffer("A", {int_imm(16), int_imm(16)}, f32, Scope::kGlobal);
  EXPECT_EQ(script(buffer_load(A, {a, b + 1})), "A[a, b + 1]");
  Buffer S = make_buffer("S", {}, f32, Scope::kGlobal);
  EXPECT_EQ(script(buffer_load(S, {})), "S[()]");
  EXPECT_EQ(script(call(f32, "exp", {x})), "T.exp(x)");
  EXPECT_EQ(script(call(f32, "exp", {x * y})), "T.exp(x * y)");
  EXPECT_EQ(script(call(f16, "exp", {x})), "T.call_intrin(\"float16\", \"exp\", x)");
  EXPECT_EQ(script(call(f32, "infinity", {})), "T.infinity(\"float32\")");
  EXPECT_EQ(script(call(DataType::Void(), "print", {a, x})), "T.print(a, x)");
  EXPECT_EQ(script(call(i32, "print", {a})), "T.call_intrin(\"int32\", \"print\", a)");
  EXPECT_EQ(script(call(f32, "tl.shfl_xor", {x, int_imm(16)})), "T.call_intrin(\"float32\", \"tl.shfl_xor\", x, 16)");
  EXPECT_EQ(script(call(DataType::Void(), "tl.syncthreads", {})), "T.call_intrin(\"void\", \"tl.syncthreads\")");
  EXPECT_EQ(script(call(f32, "my_fn", {x})), "T.call_intrin(\"float32\", \"my_fn\", x)");
}

TEST_F(PrinterExpr, Layouts) {
  Var i = make_var("i"), j = make_var("j");
  Layout l = make_layout({int_imm(128), int_imm(32)}, {i, j}, {i * 32 + j});
  EXPECT_EQ(script(l), "T.Layout((128, 32), lambda i, j: [i * 32 + j])");
  Layout one_d = make_layout({int_imm(64)}, {i}, {floormod(i, 8), floordiv(i, 8)});
  EXPECT_EQ(script(one_d), "T.Layout((64,), lambda i: [i % 8, i // 8])");
  Layout frag = make_fragment({int_imm(16), int_imm(8)}, {i, j}, {floordiv(i, 8) * 2 + floormod(j, 2)},
                              floormod(i, 8) * 4 + floordiv(floormod(j, 8), 2));
  EXPECT_EQ(script(frag),
            "T.Fragment((16, 8), forward_thread=lambda i, j: i % 8 * 4 + j % 8 // 2, "
            "forward_index=lambda i, j: [i // 8 * 2 + j % 2])");
  Var rep = make_var("rep");
  Layout replicated = make_fragment({int_imm(16)}, {i}, {int_imm(0)}, i + rep * 16, int_imm(2), rep);
  EXPECT_EQ(script(replicated),
            "T.Fragment((16,), forward_thread=lambda i, rep: i + rep * 16, forward_index=lambda i: [0], "
            "replicate=2)");
}

TEST(Printer, Statements) {
  Buffer A = make_buffer("A", {int_imm(8)}, DataType::Float(32), Scope::kGlobal);
  Var i = make_var("i"), n = make_var("n");
  // Seq, For (serial from 0 / with a start / each kind), BufferStore, Evaluate.
  Stmt s = seq({
      for_loop(i, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(A, {i}, float_imm(1))),
      for_loop(make_var("k"), int_imm(2), int_imm(6), ForKind::kSerial, nop()),
      for_loop(make_var("k"), n, int_imm(4), ForKind::kUnrolled, nop()),
      for_loop(make_var("k"), int_imm(1), n - 1, ForKind::kVectorized, nop()),
      for_loop(make_var("t"), int_imm(0), int_imm(32), ForKind::kThreadBinding, nop(), {}, "threadIdx.x"),
      evaluate(call(DataType::Void(), "print", {n})),
      evaluate(n + 1),
  });
  EXPECT_EQ(script(s),
            "for i in T.serial(8):\n"
            "    A[i] = T.float32(1)\n"
            "for k in T.serial(2, 8):\n"
            "    T.evaluate(0)\n"
            "for k_1 in T.unroll(n, n + 4):\n"
            "    T.evaluate(0)\n"
            "for k_2 in T.vectorized(1, 1 + (n - 1)):\n"
            "    T.evaluate(0)\n"
            "for t in T.thread_binding(32, thread=\"threadIdx.x\"):\n"
            "    T.evaluate(0)\n"
            "T.print(n)\n"
            "T.evaluate(n + 1)\n");
}

TEST(Printer, PipelinedAndAnnotatedLoops) {
  PipelineInfo p;
  p.num_stages = 2;
  p.order = {0, 1};
  p.stage = {0, 1};
  Stmt s = for_loop(make_var("ko"), int_imm(0), int_imm(16), ForKind::kPipelined, nop(), p);
  EXPECT_EQ(script(s), "for ko in T.Pipelined(16, num_stages=2, order=[0, 1], stage=[0, 1]):\n    T.evaluate(0)\n");
  PipelineInfo none;
  Stmt s0 = for_loop(make_var("ko"), int_imm(0), int_imm(16), ForKind::kPipelined, nop(), none);
  EXPECT_EQ(script(s0), "for ko in T.Pipelined(16, num_stages=0):\n    T.evaluate(0)\n");
  Stmt ann = for_loop(make_var("i"), int_imm(0), int_imm(4), ForKind::kSerial, nop(), {}, "",
                      {{"pragma_unroll", int64_t{4}}, {"note", std::string("x")}});
  EXPECT_EQ(script(ann), "for i in T.serial(4, annotations={\"pragma_unroll\": 4, \"note\": \"x\"}):\n"
                         "    T.evaluate(0)\n");
}

TEST(Printer, ParallelNestsMerge) {
  Buffer F = make_buffer("F", {int_imm(4), int_imm(8), int_imm(2)}, DataType::Float(32), Scope::kGlobal);
  Var i = make_var("i"), j = make_var("j"), k = make_var("k");
  Stmt inner = buffer_store(F, {i, j, k}, float_imm(0));
  Stmt nest = for_loop(i, int_imm(0), int_imm(4), ForKind::kParallel,
                       for_loop(j, int_imm(0), int_imm(8), ForKind::kParallel,
                                for_loop(k, int_imm(0), int_imm(2), ForKind::kParallel, inner)));
  EXPECT_EQ(script(nest), "for i, j, k in T.Parallel(4, 8, 2):\n    F[i, j, k] = T.float32(0)\n");
  // An inner extent that depends on the outer variable cannot be merged.
  Stmt tri = for_loop(i, int_imm(0), int_imm(4), ForKind::kParallel,
                      for_loop(j, int_imm(0), i + 1, ForKind::kParallel, buffer_store(F, {i, j, int_imm(0)}, float_imm(0))));
  EXPECT_EQ(script(tri),
            "for i in T.Parallel(4):\n"
            "    for j in T.Parallel(i + 1):\n"
            "        F[i, j, 0] = T.float32(0)\n");
  // A Parallel loop inside a serial loop, and one with a start.
  Stmt mixed = for_loop(i, int_imm(0), int_imm(4), ForKind::kSerial,
                        for_loop(j, int_imm(2), int_imm(8), ForKind::kParallel, nop()));
  EXPECT_EQ(script(mixed), "for i in T.serial(4):\n    for j in T.Parallel(8, min=2):\n        T.evaluate(0)\n");
}

TEST(Printer, IfElifElse) {
  Var a = make_var("a");
  Buffer A = make_buffer("A", {int_imm(4)}, DataType::Int(32), Scope::kGlobal);
  Stmt s = if_then_else(a < int_imm(1), buffer_store(A, {int_imm(0)}, a),
                        if_then_else(a < int_imm(2), buffer_store(A, {int_imm(1)}, a),
                                     if_then_else(a < int_imm(3), buffer_store(A, {int_imm(2)}, a), buffer_store(A, {int_imm(3)}, a))));
  EXPECT_EQ(script(s),
            "if a < 1:\n    A[0] = a\nelif a < 2:\n    A[1] = a\nelif a < 3:\n    A[2] = a\nelse:\n    A[3] = a\n");
  Stmt only_then = if_then_else(a < int_imm(1), buffer_store(A, {int_imm(0)}, a));
  EXPECT_EQ(script(only_then), "if a < 1:\n    A[0] = a\n");
  // An else arm that holds more than an if stays an else.
  Stmt nested = if_then_else(a < int_imm(1), nop(), seq({if_then_else(a < int_imm(2), nop()), nop()}));
  EXPECT_EQ(script(nested), "if a < 1:\n    T.evaluate(0)\nelse:\n    if a < 2:\n        T.evaluate(0)\n    T.evaluate(0)\n");
}

TEST(Printer, LetsAndUniqueNames) {
  Var a = make_var("a");
  Var x1 = make_var("x"), x2 = make_var("x"), x3 = make_var("x_1");
  Buffer A = make_buffer("A", {int_imm(4)}, DataType::Int(32), Scope::kGlobal);
  // x = a + 1; x_1 = x * 2 (a second variable named x); x_1_1 (named "x_1", taken)
  Stmt s = let(x1, a + 1, let(x2, x1 * 2, let(x3, x2 + x1, buffer_store(A, {int_imm(0)}, x3))));
  EXPECT_EQ(script(s), "x = a + 1\nx_1 = x * 2\nx_1_1 = x_1 + x\nA[0] = x_1_1\n");
  // Names that are not identifiers, keywords and T.
  Var bad = make_var("my var"), kw = make_var("lambda"), t = make_var("T"), digit = make_var("3d"), empty = make_var("");
  Stmt s2 = let(bad, int_imm(1), let(kw, int_imm(2), let(t, int_imm(3), let(digit, int_imm(4), let(empty, bad + kw + t + digit,
                                                                                                        evaluate(empty))))));
  EXPECT_EQ(script(s2), "my_var = 1\nlambda_ = 2\nT_ = 3\nv3d = 4\nv = my_var + lambda_ + T_ + v3d\nT.evaluate(v)\n");
}

TEST(Printer, AllocationsAndTileOps) {
  Buffer A = make_buffer("A", {int_imm(64), int_imm(64)}, DataType::Float(16), Scope::kGlobal);
  auto alloc = [](const char* name, std::vector<int64_t> shape, DataType t, Scope sc) {
    std::vector<Expr> s;
    for (auto e : shape) s.push_back(int_imm(e));
    return make_buffer(name, s, t, sc);
  };
  Buffer sd = alloc("A_shared", {32, 32}, DataType::Float(16), Scope::kSharedDyn);
  // Shapes fit the ops below (make_tile_op checks them): S takes a row of 32, r a row max.
  Buffer ss = alloc("S", {32}, DataType::Float(32), Scope::kShared);
  Buffer fr = alloc("C_local", {32, 32}, DataType::Float(32), Scope::kFragment);
  Buffer lo = alloc("r", {32}, DataType::Float(32), Scope::kLocal);
  Buffer va = alloc("v", {1}, DataType::Int(32), Scope::kVar);
  Buffer ba = alloc("bar", {2}, DataType::UInt(64), Scope::kBarrier);
  Var k = make_var("k");
  BufferRegion tile;
  tile.buffer = A;
  tile.region = {{k * 32, int_imm(32)}, {int_imm(0), int_imm(32)}};
  BufferRegion row;
  row.buffer = A;
  row.region = {{k, int_imm(1)}, {int_imm(32), int_imm(32)}};
  BufferRegion elem;
  elem.buffer = A;
  elem.region = {{k, int_imm(1)}, {int_imm(3), int_imm(1)}};
  BufferRegion elem2 = elem;
  elem2.region[1] = {k + 1, int_imm(1)};
  BufferRegion sym;
  sym.buffer = A;
  sym.region = {{int_imm(0), k}, {k, k + 2}};
  std::vector<Stmt> ops = {
      make_tile_op("copy", {tile, BufferRegion::full(sd)}, {}),
      make_tile_op("copy", {BufferRegion::full(sd), tile}, {{"disable_tma", true}}),
      make_tile_op("copy", {row, BufferRegion::full(ss)}, {}),
      make_tile_op("copy", {elem, BufferRegion::full(va)}, {}),
      make_tile_op("copy", {elem2, BufferRegion::full(va)}, {}),
      make_tile_op("copy", {sym, BufferRegion::full(sd)}, {{"coalesced_width", int64_t{4}}}),
      make_tile_op("gemm", {BufferRegion::full(sd), BufferRegion::full(sd), BufferRegion::full(fr)},
                   {{"transpose_B", true}, {"policy", std::string("FullRow")}, {"k_pack", int64_t{1}}}),
      make_tile_op("fill", {BufferRegion::full(fr), float_imm(0)}, {}),
      make_tile_op("reduce_max", {BufferRegion::full(fr), BufferRegion::full(lo)}, {{"dim", int64_t{1}}, {"clear", false}}),
      make_tile_op("atomic_add", {elem, float_imm(1, DataType::Float(16))}, {}),
      evaluate(buffer_load(va, {int_imm(0)}) + 1),
  };
  Stmt body = seq(ops);
  for (const Buffer& b : {ba, va, lo, fr, ss, sd}) body = allocate(b, body);
  EXPECT_EQ(script(body),
            "A_shared = T.alloc_shared((32, 32), \"float16\")\n"
            "S = T.alloc_shared((32,), \"float32\", scope=\"shared\")\n"
            "C_local = T.alloc_fragment((32, 32), \"float32\")\n"
            "r = T.alloc_local((32,), \"float32\")\n"
            "v = T.alloc_var(\"int32\")\n"
            "bar = T.alloc_buffer((2,), \"uint64\", scope=\"shared.barrier\")\n"
            "T.copy(A[k * 32:k * 32 + 32, 0:32], A_shared)\n"
            "T.copy(A_shared, A[k * 32:k * 32 + 32, 0:32], disable_tma=True)\n"
            "T.copy(A[k, 32:64], S)\n"
            "T.copy(A[k, 3:4], v)\n"
            "T.copy(A[k, k + 1:k + 1 + 1], v)\n"
            "T.copy(A[0:k, k:k + (k + 2)], A_shared, coalesced_width=4)\n"
            "T.gemm(A_shared, A_shared, C_local, transpose_B=True, policy=\"FullRow\")\n"
            "T.fill(C_local, T.float32(0))\n"
            "T.reduce_max(C_local, r, dim=1, clear=False)\n"
            "T.atomic_add(A[k, 3], T.float16(1))\n"
            "T.evaluate(v[0] + 1)\n");
}

TEST(Printer, Annotations) {
  Buffer S = make_buffer("S", {int_imm(8), int_imm(8)}, DataType::Float(16), Scope::kSharedDyn);
  Var i = make_var("i"), j = make_var("j");
  Layout swz = make_layout({int_imm(8), int_imm(8)}, {i, j}, {i * 8 + floormod(j + i, 8)});
  Stmt s = annotate("layout_map", LayoutMap{{S, swz}},
                    annotate("use_swizzle", int64_t{10},
                             annotate("warp_role", std::string("producer"),
                                      annotate("stages", std::vector<int64_t>{1, 2}, annotate("scale", 0.5, nop())))));
  EXPECT_EQ(script(allocate(S, s)),
            "S = T.alloc_shared((8, 8), \"float16\")\n"
            "T.annotate_layout({S: T.Layout((8, 8), lambda i, j: [i * 8 + (j + i) % 8])})\n"
            "T.use_swizzle(panel_size=10)\n"
            "T.annotate(\"warp_role\", \"producer\")\n"
            "T.annotate(\"stages\", [1, 2])\n"
            "T.annotate(\"scale\", 0.5)\n"
            "T.evaluate(0)\n");
  EXPECT_EQ(script(annotate("flag", true, annotate("none", std::monostate{}, annotate("f", 2.0, nop())))),
            "T.annotate(\"flag\", True)\nT.annotate(\"none\", None)\nT.annotate(\"f\", 2.0)\nT.evaluate(0)\n");
}

TEST(Printer, AnnotationFollowedBySiblingsPrintsAsWithBlock) {
  // As a statement an annotation covers the rest of its block, so one that siblings follow
  // (also through an enclosing Seq or an Allocate) is a `with` block; one that ends its
  // block, or ends a loop body, stays a statement.
  Buffer v = make_buffer("v", {int_imm(1)}, DataType::Int(32), Scope::kVar);
  Stmt store1 = buffer_store(v, {int_imm(0)}, int_imm(1));
  Stmt store2 = buffer_store(v, {int_imm(0)}, int_imm(2));
  Stmt s = seq({annotate("note", std::string("a"), store1), store2});
  EXPECT_EQ(script(s), "with T.annotate(\"note\", \"a\"):\n    v[0] = 1\nv[0] = 2\n");
  Stmt last = seq({store1, annotate("note", std::string("a"), store2)});
  EXPECT_EQ(script(last), "v[0] = 1\nT.annotate(\"note\", \"a\")\nv[0] = 2\n");
  Stmt through = seq({seq({store1, annotate("use_swizzle", int64_t{4}, store1)}), store2});
  EXPECT_EQ(script(through), "v[0] = 1\nwith T.use_swizzle(panel_size=4):\n    v[0] = 1\nv[0] = 2\n");
  Stmt loop = seq({for_loop(make_var("i"), int_imm(0), int_imm(2), ForKind::kSerial,
                            annotate("note", int64_t{1}, store1)),
                   store2});
  EXPECT_EQ(script(loop), "for i in T.serial(2):\n    T.annotate(\"note\", 1)\n    v[0] = 1\nv[0] = 2\n");
}

TEST(Printer, WarpSpecializationAndBarriers) {
  Buffer A = make_buffer("A", {int_imm(256), int_imm(64)}, DataType::Float(16), Scope::kGlobal);
  Buffer S = make_buffer("S", {int_imm(128), int_imm(64)}, DataType::Float(16), Scope::kSharedDyn);
  Buffer mbar = make_buffer("mbar", {int_imm(2)}, DataType::UInt(64), Scope::kBarrier);
  Var ko = make_var("ko");
  Expr bar0 = buffer_load(mbar, {int_imm(0)});
  Expr bar1 = buffer_load(mbar, {int_imm(1)});
  BufferRegion tile;
  tile.buffer = A;
  tile.region = {{ko * 128, int_imm(128)}, {int_imm(0), int_imm(64)}};
  Stmt producer = seq({
      evaluate(call(DataType::Void(), "barrier_wait", {bar0, floormod(ko + 1, 2)})),
      make_tile_op("tma_copy", {tile, BufferRegion::full(S)}, {{"barrier", bar0}}),
      evaluate(call(DataType::Void(), "barrier_arrive", {bar0})),
  });
  Stmt consumer = seq({
      evaluate(call(DataType::Void(), "mbarrier_wait_parity", {bar1, floormod(ko, 2)})),
      evaluate(call(DataType::Void(), "mbarrier_arrive", {bar0})),
  });
  Stmt loop = for_loop(ko, int_imm(0), int_imm(2), ForKind::kPipelined,
                       seq({annotate("ws", std::vector<int64_t>{0}, producer),
                            annotate("ws", std::vector<int64_t>{1}, consumer)}));
  Stmt body = seq({make_tile_op("barrier_init", {BufferRegion::full(mbar)}, {{"arrive_count", std::vector<int64_t>{128, 1}}}),
                   loop, annotate("ws", std::vector<int64_t>{0, 1}, nop())});
  EXPECT_EQ(script(allocate(S, allocate(mbar, body))),
            "S = T.alloc_shared((128, 64), \"float16\")\n"
            "mbar = T.alloc_buffer((2,), \"uint64\", scope=\"shared.barrier\")\n"
            "T.barrier_init(mbar, arrive_count=[128, 1])\n"
            "for ko in T.Pipelined(2, num_stages=0):\n"
            "    with T.ws(0):\n"
            "        T.barrier_wait(mbar[0], (ko + 1) % 2)\n"
            "        T.tma_copy(A[ko * 128:ko * 128 + 128, 0:64], S, barrier=mbar[0])\n"
            "        T.barrier_arrive(mbar[0])\n"
            "    with T.ws(1):\n"
            "        T.mbarrier_wait_parity(mbar[1], ko % 2)\n"
            "        T.mbarrier_arrive(mbar[0])\n"
            "with T.ws(0, 1):\n"
            "    T.evaluate(0)\n");
  // Forms T.barrier_wait(...) would not read back as: another type or argument count, and
  // a "ws" annotation without warp groups (T.ws() is an error).
  EXPECT_EQ(script(evaluate(call(DataType::Int(32), "barrier_arrive", {bar0}))),
            "T.call_intrin(\"int32\", \"barrier_arrive\", mbar[0])\n");
  EXPECT_EQ(script(evaluate(call(DataType::Void(), "barrier_wait", {bar0}))),
            "T.call_intrin(\"void\", \"barrier_wait\", mbar[0])\n");
  EXPECT_EQ(script(annotate("ws", std::vector<int64_t>{}, nop())), "T.annotate(\"ws\", [])\nT.evaluate(0)\n");
}

TEST(Printer, LayoutLambdaNamesDoNotLeak) {
  // The lambda parameters may reuse names in scope outside (they shadow nothing: fresh
  // names are picked), and are released afterwards.
  Var i = make_var("i"), li = make_var("i");
  Buffer S = make_buffer("S", {int_imm(4)}, DataType::Float(32), Scope::kSharedDyn);
  Layout l = make_layout({int_imm(4)}, {li}, {li + i});
  Stmt s = for_loop(i, int_imm(0), int_imm(4), ForKind::kSerial,
                    annotate("layout_map", LayoutMap{{S, l}}, let(make_var("i"), i, nop())));
  EXPECT_EQ(script(s),
            "for i in T.serial(4):\n"
            "    T.annotate_layout({S: T.Layout((4,), lambda i_1: [i_1 + i])})\n"
            "    i_1 = i\n"
            "    T.evaluate(0)\n");
}

TEST(Printer, KernelLaunches) {
  Var bx = make_var("bx"), by = make_var("by"), bz = make_var("bz");
  Var tx = make_var("tx"), ty = make_var("ty"), tz = make_var("tz");
  Buffer A = make_buffer("A", {int_imm(8)}, DataType::Int(32), Scope::kGlobal);
  Stmt k1 = kernel({int_imm(8)}, {bx}, {128}, {tx}, buffer_store(A, {bx}, int_imm(1)));
  EXPECT_EQ(script(k1), "with T.Kernel(8, threads=128) as bx:\n    A[bx] = 1\n");
  Stmt k3 = kernel({int_imm(2), int_imm(3), int_imm(4)}, {bx, by, bz}, {32, 4, 2}, {tx, ty, tz},
                   buffer_store(A, {tx + tz}, bx + by + bz), {2, 1, 1});
  EXPECT_EQ(script(k3),
            "with T.Kernel(2, 3, 4, threads=(32, 4, 2), cluster_dims=(2, 1, 1)) as (bx, by, bz):\n"
            "    tx = T.get_thread_binding(0)\n"
            "    tz = T.get_thread_binding(2)\n"
            "    A[tx + tz] = bx + by + bz\n");
  Stmt kc = kernel({int_imm(2)}, {bx}, {64}, {tx}, nop(), {2});
  EXPECT_EQ(script(kc), "with T.Kernel(2, threads=64, cluster_dims=2) as bx:\n    T.evaluate(0)\n");
}

TEST(Printer, FunctionSignature) {
  Builder b("f");
  Var m = b.dynamic("m");
  Var big = b.dynamic("big", DataType::Int(64));
  Buffer A = b.tensor("A", {m, int_imm(1024)}, DataType::Float(16));
  Buffer B = b.tensor("B", {int_imm(64), int_imm(64)}, DataType::Float(32), {int_imm(128), int_imm(1)});
  Buffer C = b.tensor("C", {big}, DataType::Float(32));
  Var n = b.scalar_param("n", DataType::Int(32));
  Var s = b.scalar_param("scale", DataType::Float(32));
  auto blk = b.begin_kernel({ceildiv(m, int_imm(128))}, {128});
  b.store(A, {blk[0], int_imm(0)}, cast(DataType::Float(16), s));
  b.store(B, {n, int_imm(0)}, float_imm(0));
  b.store(C, {cast(DataType::Int(64), n)}, float_imm(0));
  b.end_frame();
  PrimFunc f = b.finish({{"tl.note", std::string("hi")}});
  EXPECT_EQ(script(f),
            "m = T.dynamic(\"m\")\n"
            "big = T.dynamic(\"big\", \"int64\")\n"
            "\n"
            "@T.prim_func\n"
            "def f(A: T.Tensor((m, 1024), \"float16\"),\n"
            "      B: T.StridedTensor((64, 64), (128, 1), \"float32\"),\n"
            "      C: T.Tensor((big,), \"float32\"),\n"
            "      n: T.int32,\n"
            "      scale: T.float32):\n"
            "    T.func_attr({\"tl.note\": \"hi\"})\n"
            "    with T.Kernel(T.ceildiv(m, 128), threads=128) as bx:\n"
            "        A[bx, 0] = T.cast(scale, \"float16\")\n"
            "        B[n, 0] = T.float32(0)\n"
            "        C[T.cast(n, \"int64\")] = T.float32(0)\n");
  Builder e("empty");
  EXPECT_EQ(script(e.finish()), "@T.prim_func\ndef empty():\n    T.evaluate(0)\n");
}

TEST(Printer, ShowLocations) {
  tilec::SourceLoc l1{"k.py", 3, 5}, l2{"k.py", 4, 9}, l3{"", 7, 0};
  Builder b("g", tilec::SourceLoc{"k.py", 1, 1});
  Buffer A = b.tensor("A", {int_imm(4)}, DataType::Float(32));
  b.begin_kernel({int_imm(1)}, {32}, {}, l1);
  b.begin_for("i", int_imm(0), int_imm(4), ForKind::kSerial, {}, {}, l2);
  b.store(A, {b.thread_vars()[0] * 0}, float_imm(1), l3);
  b.end_frame();
  b.end_frame();
  PrintOptions opts;
  opts.show_loc = true;
  EXPECT_EQ(script(b.finish(), opts),
            "@T.prim_func\n"
            "def g(A: T.Tensor((4,), \"float32\")):  # k.py:1:1\n"
            "    with T.Kernel(1, threads=32) as bx:  # k.py:3:5\n"
            "        tx = T.get_thread_binding(0)\n"
            "        for i in T.serial(4):  # k.py:4:9\n"
            "            A[tx * 0] = T.float32(1)  # <kernel>:7\n");
}

TEST(Printer, EmptySeqAndDeterminism) {
  EXPECT_EQ(script(Stmt(std::make_shared<const SeqNode>(std::vector<Stmt>{}))), "pass\n");
  PrimFunc f1 = build_example_gemm();
  PrimFunc f2 = build_example_gemm();
  EXPECT_EQ(script(f1), script(f2));
  EXPECT_EQ(script(f1), script(f1));
}

TEST(Printer, GemmExampleGolden) {
  EXPECT_EQ(script(build_example_gemm()),
            "@T.prim_func\n"
            "def gemm_relu(A: T.Tensor((1024, 1024), \"float16\"),\n"
            "              B: T.Tensor((1024, 1024), \"float16\"),\n"
            "              C: T.Tensor((1024, 1024), \"float16\")):\n"
            "    with T.Kernel(T.ceildiv(1024, 128), T.ceildiv(1024, 128), threads=128) as (bx, by):\n"
            "        A_shared = T.alloc_shared((128, 32), \"float16\")\n"
            "        B_shared = T.alloc_shared((32, 128), \"float16\")\n"
            "        C_local = T.alloc_fragment((128, 128), \"float32\")\n"
            "        T.fill(C_local, T.float32(0))\n"
            "        for ko in T.Pipelined(T.ceildiv(1024, 32), num_stages=3):\n"
            "            T.copy(A[by * 128:by * 128 + 128, ko * 32:ko * 32 + 32], A_shared)\n"
            "            T.copy(B[ko * 32:ko * 32 + 32, bx * 128:bx * 128 + 128], B_shared)\n"
            "            T.gemm(A_shared, B_shared, C_local)\n"
            "        for i, j in T.Parallel(128, 128):\n"
            "            C_local[i, j] = T.max(C_local[i, j], T.float32(0))\n"
            "        T.copy(C_local, C[by * 128:by * 128 + 128, bx * 128:bx * 128 + 128])\n");
  GemmExampleConfig c;
  c.relu = false;
  c.num_stages = 2;
  c.name = "gemm";
  std::string no_relu = script(build_example_gemm(c));
  EXPECT_EQ(no_relu.find("T.Parallel"), std::string::npos);
  EXPECT_NE(no_relu.find("num_stages=2"), std::string::npos);
}
