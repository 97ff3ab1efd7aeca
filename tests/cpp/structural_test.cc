// Structural equality and hashing: for every node kind, trees built twice (fresh variables and
// buffers, different names) are equal and hash equal; changing any one field makes them
// unequal. Every kind of nodes.def must have a family below (checked at the end).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "tilec/ir/builder.h"
#include "tilec/ir/example_gemm.h"
#include "tilec/ir/structural.h"

using namespace tilec::ir;

namespace {

DataType i32 = DataType::Int(32);
DataType f32 = DataType::Float(32);
DataType f16 = DataType::Float(16);

int counter = 0;
// A different name on every call: names must not matter.
std::string fresh(const std::string& base) { return base + "_" + std::to_string(counter++); }

std::set<NodeKind>& covered() {
  static std::set<NodeKind> s;
  return s;
}

// Variant 0 of a family is the base tree; variant k > 0 differs from it in one field.
void check_family(NodeKind kind, const std::function<Stmt(int)>& make, int variants) {
  covered().insert(kind);
  Stmt a = make(0), b = make(0);
  EXPECT_TRUE(structural_equal(a, b)) << node_kind_name(kind) << ": equal under renaming";
  EXPECT_EQ(structural_hash(a), structural_hash(b)) << node_kind_name(kind);
  for (int k = 1; k <= variants; ++k) {
    Stmt c = make(k);
    EXPECT_FALSE(structural_equal(a, c)) << node_kind_name(kind) << " variant " << k;
    EXPECT_FALSE(structural_equal(c, a)) << node_kind_name(kind) << " variant " << k;
    EXPECT_NE(structural_hash(a), structural_hash(c)) << node_kind_name(kind) << " variant " << k;
  }
}

// The scope every expression family lives in: int vars x, y, float vars f, g, bool vars p, q,
// and a buffer, all defined fresh by each call; `body` builds the expression.
struct Env {
  Var x, y, f, g, p, q;
  Buffer buf, buf2;
};
using ExprMaker = std::function<Expr(const Env&, int)>;

Stmt in_scope(const ExprMaker& body, int variant) {
  Env s;
  s.x = make_var(fresh("x"));
  s.y = make_var(fresh("y"));
  s.f = make_var(fresh("f"), f32);
  s.g = make_var(fresh("g"), f32);
  s.p = make_var(fresh("p"), DataType::Bool());
  s.q = make_var(fresh("q"), DataType::Bool());
  s.buf = make_buffer(fresh("B"), {int_imm(16)}, f32, Scope::kSharedDyn);
  s.buf2 = make_buffer(fresh("C"), {int_imm(16)}, f32, Scope::kSharedDyn);
  Stmt st = evaluate(body(s, variant));
  st = let(s.q, bool_imm(false), st);
  st = let(s.p, bool_imm(true), st);
  st = let(s.g, float_imm(2), st);
  st = let(s.f, float_imm(1), st);
  st = let(s.y, int_imm(2), st);
  st = let(s.x, int_imm(1), st);
  return allocate(s.buf, allocate(s.buf2, st));
}

void check_expr_family(NodeKind kind, const ExprMaker& body, int variants) {
  check_family(kind, [&](int v) { return in_scope(body, v); }, variants);
}

Stmt nop() { return evaluate(int_imm(0)); }

}  // namespace

void families_Immediates() {
  check_expr_family(NodeKind::kIntImm, [](const Env&, int v) {
    return v == 0 ? int_imm(5) : v == 1 ? int_imm(6) : int_imm(5, DataType::Int(64));
  }, 2);
  check_expr_family(NodeKind::kFloatImm, [](const Env&, int v) {
    return v == 0 ? float_imm(1.5) : v == 1 ? float_imm(2.5) : v == 2 ? float_imm(1.5, f16) : float_imm(-1.5);
  }, 3);
  check_expr_family(NodeKind::kStringImm, [](const Env&, int v) { return string_imm(v ? "b" : "a"); }, 1);
  // Floats compare by bit pattern: NaN equals NaN, 0.0 differs from -0.0.
  EXPECT_TRUE(structural_equal(float_imm(NAN), float_imm(NAN)));
  EXPECT_FALSE(structural_equal(float_imm(0.0), float_imm(-0.0)));
}

void families_Vars() {
  Var free_var = make_var("free");
  check_expr_family(NodeKind::kVar, [&](const Env& s, int v) {
    return v == 0 ? s.x + free_var : v == 1 ? s.y + free_var : s.x + make_var("free");
  }, 2);
  // Free variables compare by identity, not by name.
  Var a = make_var("a"), a2 = make_var("a");
  EXPECT_TRUE(structural_equal(Expr(a), Expr(a)));
  EXPECT_FALSE(structural_equal(Expr(a), Expr(a2)));
  EXPECT_EQ(structural_hash(a + 1), structural_hash(a + 1));
}

void families_EveryBinaryKind() {
  std::vector<NodeKind> arith, compare, logic;
#define TILEC_BINARY(Kind, Symbol, Category) \
  (std::string(#Category) == "Arith" ? arith : std::string(#Category) == "Compare" ? compare : logic) \
      .push_back(NodeKind::k##Kind);
#include "tilec/ir/nodes.def"
  ASSERT_FALSE(arith.empty());
  ASSERT_FALSE(compare.empty());
  ASSERT_FALSE(logic.empty());
  auto family = [](const std::vector<NodeKind>& kinds, bool use_bool) {
    for (size_t i = 0; i < kinds.size(); ++i) {
      NodeKind k = kinds[i], other = kinds[(i + 1) % kinds.size()];
      check_expr_family(k, [&](const Env& s, int v) -> Expr {
        Expr a = use_bool ? Expr(s.p) : Expr(s.x), b = use_bool ? Expr(s.q) : Expr(s.y);
        switch (v) {
          case 0: return binary(k, a, b);
          case 1: return binary(k, b, a);
          case 2: return binary(k, a, a);
          default: return binary(other, a, b);
        }
      }, 3);
    }
  };
  family(arith, false);
  family(compare, false);
  family(logic, true);
}

void families_OtherExpressions() {
  check_expr_family(NodeKind::kNot, [](const Env& s, int v) { return logical_not(v ? s.q : s.p); }, 1);
  check_expr_family(NodeKind::kSelect, [](const Env& s, int v) {
    return select(v == 1 ? s.q : s.p, v == 2 ? s.g : s.f, v == 3 ? s.f : s.g);
  }, 3);
  check_expr_family(NodeKind::kCast, [](const Env& s, int v) {
    return cast(v == 1 ? DataType::BFloat16() : f16, v == 2 ? s.g : s.f);
  }, 2);
  check_expr_family(NodeKind::kRamp, [](const Env& s, int v) {
    return ramp(v == 1 ? s.y : s.x, int_imm(v == 2 ? 2 : 1), v == 3 ? 8 : 4);
  }, 3);
  check_expr_family(NodeKind::kBroadcast, [](const Env& s, int v) {
    return broadcast(v == 1 ? s.g : s.f, v == 2 ? 8 : 4);
  }, 2);
  check_expr_family(NodeKind::kBufferLoad, [](const Env& s, int v) {
    return buffer_load(v == 1 ? s.buf2 : s.buf, {v == 2 ? s.x + 1 : Expr(s.x)});
  }, 2);
  check_expr_family(NodeKind::kCall, [](const Env& s, int v) {
    return call(v == 1 ? f16 : f32, v == 2 ? "log" : "exp", {v == 3 ? s.g : s.f});
  }, 3);
}

void families_Statements() {
  Buffer G = make_buffer("G", {int_imm(8), int_imm(8)}, f32, Scope::kGlobal);  // free: identity
  check_family(NodeKind::kSeq, [&](int v) {
    Stmt a = buffer_store(G, {int_imm(0), int_imm(0)}, float_imm(1));
    Stmt b = buffer_store(G, {int_imm(0), int_imm(1)}, float_imm(1));
    return v == 0 ? seq({a, b}) : v == 1 ? seq({b, a}) : seq({a, b, a});
  }, 2);
  check_family(NodeKind::kFor, [&](int v) {
    Var i = make_var(fresh("i"), v == 1 ? DataType::Int(64) : i32);
    PipelineInfo p;
    p.num_stages = v == 5 ? 3 : 2;
    p.order = v == 6 ? std::vector<int>{1, 0} : std::vector<int>{0, 1};
    p.stage = v == 7 ? std::vector<int>{0, 0} : std::vector<int>{0, 1};
    AttrMap ann = {{v == 8 ? "other" : "key", v == 9 ? AttrValue(int64_t{2}) : AttrValue(int64_t{1})}};
    Stmt body = buffer_store(G, {v == 10 ? Expr(int_imm(0)) : Expr(i), int_imm(0)}, float_imm(1));
    return make_for(i, int_imm(v == 2 ? 1 : 0), int_imm(v == 3 ? 9 : 8),
                    v == 4 ? ForKind::kSerial : ForKind::kPipelined, body, {}, p, v == 11 ? "x" : "", ann);
  }, 11);
  check_family(NodeKind::kIf, [&](int v) {
    Var a = make_var(fresh("a"));
    Stmt then = buffer_store(G, {a, int_imm(0)}, float_imm(v == 2 ? 2 : 1));
    Stmt other = v == 3 ? Stmt() : buffer_store(G, {a, int_imm(v == 4 ? 2 : 1)}, float_imm(1));
    return let(a, int_imm(0), if_then_else(v == 1 ? a > int_imm(0) : a < int_imm(0), then, other));
  }, 4);
  check_family(NodeKind::kWhile, [&](int v) {
    Var a = make_var(fresh("a"));
    Stmt body = buffer_store(G, {a, int_imm(0)}, float_imm(v == 2 ? 2 : 1));
    return let(a, int_imm(0), make_while(v == 1 ? a > int_imm(0) : a < int_imm(0), body));
  }, 2);
  check_family(NodeKind::kLet, [&](int v) {
    Var a = make_var(fresh("a"), v == 2 ? DataType::Int(64) : i32);
    Var b = make_var(fresh("b"));
    Expr use = v == 3 ? Expr(b) : Expr(a);
    return let(a, v == 2 ? int_imm(1, DataType::Int(64)) : int_imm(v == 1 ? 2 : 1),
               let(b, int_imm(5), buffer_store(G, {use * 0 + 1, int_imm(0)}, float_imm(1))));
  }, 3);
  check_family(NodeKind::kBufferStore, [&](int v) {
    Buffer S = make_buffer(fresh("S"), {int_imm(8), int_imm(8)}, f32, Scope::kSharedDyn);
    Buffer target = v == 1 ? G : S;
    return allocate(S, buffer_store(target, {int_imm(v == 2 ? 1 : 0), int_imm(0)}, float_imm(v == 3 ? 2 : 1)));
  }, 3);
  check_family(NodeKind::kEvaluate, [](int v) { return evaluate(int_imm(v)); }, 1);
  check_family(NodeKind::kAllocate, [&](int v) {
    std::vector<Expr> strides;
    if (v == 4) strides = {int_imm(16), int_imm(1)};
    Buffer S = make_buffer(fresh("S"), {int_imm(8), int_imm(v == 3 ? 4 : 8)}, v == 1 ? f16 : f32,
                           v == 2 ? Scope::kFragment : Scope::kSharedDyn, strides);
    Buffer T2 = make_buffer(fresh("T"), {int_imm(8), int_imm(8)}, f32, Scope::kSharedDyn);
    Stmt body = buffer_store(v == 5 ? T2 : S, {int_imm(0), int_imm(0)}, float_imm(1));
    return allocate(S, allocate(T2, body));
  }, 5);
}

void families_KernelLaunch() {
  Buffer G = make_buffer("G", {int_imm(64)}, i32, Scope::kGlobal);
  check_family(NodeKind::kKernelLaunch, [&](int v) {
    auto k = std::make_shared<KernelLaunchNode>();
    k->grid = {int_imm(v == 1 ? 4 : 2), int_imm(3)};
    k->block_vars = {make_var(fresh("bx")), make_var(fresh("by"))};
    k->threads = {v == 2 ? 64 : 32, 4};
    k->thread_vars = {make_var(fresh("tx")), make_var(fresh("ty"))};
    if (v == 3) k->cluster = {2, 1};
    Expr idx = v == 4 ? k->block_vars[1] + k->thread_vars[0] : v == 5 ? k->block_vars[0] + k->thread_vars[1]
                                                                      : k->block_vars[0] + k->thread_vars[0];
    k->body = buffer_store(G, {idx}, int_imm(1));
    return Stmt(std::shared_ptr<const KernelLaunchNode>(k));
  }, 5);
}

void families_TileOps() {
  Buffer A = make_buffer("A", {int_imm(64), int_imm(64)}, f16, Scope::kGlobal);
  check_family(NodeKind::kTileOp, [&](int v) {
    // Variant 2's narrower source region copies into a narrower S (make_tile_op checks shapes).
    Buffer S = make_buffer(fresh("S"), {int_imm(32), int_imm(v == 2 ? 16 : 32)}, f16, Scope::kSharedDyn);
    Buffer S2 = make_buffer(fresh("S2"), {int_imm(32), int_imm(32)}, f16, Scope::kSharedDyn);
    Var k = make_var(fresh("k"));
    BufferRegion src;
    src.buffer = A;
    src.region = {{v == 1 ? k * 16 : k * 32, int_imm(32)}, {int_imm(0), int_imm(v == 2 ? 16 : 32)}};
    BufferRegion dst = BufferRegion::full(v == 3 ? S2 : S);
    Stmt op;
    switch (v) {
      case 4: op = make_tile_op("copy", {src, dst}, {{"disable_tma", true}}); break;
      case 5: op = make_tile_op("tma_copy", {src, dst}, {}); break;
      case 6: op = make_tile_op("atomic_add", {src, float_imm(1, f16)}, {}); break;
      case 7: op = make_tile_op("atomic_add", {src, dst}, {}); break;
      case 8: op = make_tile_op("copy", {src, dst}, {{"coalesced_width", int64_t{4}}}); break;
      default: op = make_tile_op("copy", {src, dst}, {}); break;  // 0-3: the fields above
    }
    return allocate(S, allocate(S2, let(k, int_imm(1), op)));
  }, 8);
  // A region argument and an expression argument differ.
  BufferRegion r = BufferRegion::full(A);
  Stmt with_expr = make_tile_op("atomic_add", {r, float_imm(1, f16)}, {});
  Stmt with_region = make_tile_op("atomic_add", {r, r}, {});
  EXPECT_FALSE(structural_equal(with_expr, with_region));
}

void families_AnnotationsAndEveryAttrValue() {
  Buffer G = make_buffer("G", {int_imm(8)}, f32, Scope::kGlobal);
  auto value = [&](int alt, int tweak, const Buffer& local, Var i) -> AttrValue {
    switch (alt) {
      case 0: return std::monostate{};
      case 1: return tweak ? false : true;
      case 2: return int64_t{tweak ? 3 : 2};
      case 3: return tweak ? 0.25 : 0.5;
      case 4: return std::string(tweak ? "b" : "a");
      case 5: return Expr(tweak ? int_imm(4) : int_imm(3));
      case 6: return tweak ? G : local;
      case 7: return make_layout({int_imm(8)}, {i}, {tweak ? i * 2 : i});
      case 8: return std::vector<int64_t>{1, tweak ? 3 : 2};
      default: return LayoutMap{{local, make_layout({int_imm(8)}, {i}, {tweak ? i + 1 : i})}};
    }
  };
  static_assert(std::variant_size_v<AttrValue> == 10);
  for (int alt = 0; alt < 10; ++alt) {
    SCOPED_TRACE("AttrValue alternative " + std::to_string(alt));
    check_family(NodeKind::kAnnotate, [&](int v) {
      Buffer local = make_buffer(fresh("L"), {int_imm(8)}, f32, Scope::kSharedDyn);
      Var i = make_var(fresh("i"));
      // 1: another alternative; 2: the body; 3: the key; 4: the value (not for None)
      AttrValue val = v == 1 ? value((alt + 1) % 10, 0, local, i) : value(alt, v == 4, local, i);
      Stmt body = buffer_store(v == 2 ? G : local, {int_imm(0)}, float_imm(1));
      return allocate(local, annotate(v == 3 ? "k2" : "k", val, body));
    }, alt == 0 ? 3 : 4);
  }
}

TEST(Structural, Immediates) { families_Immediates(); }
TEST(Structural, Vars) { families_Vars(); }
TEST(Structural, EveryBinaryKind) { families_EveryBinaryKind(); }
TEST(Structural, OtherExpressions) { families_OtherExpressions(); }
TEST(Structural, Statements) { families_Statements(); }
TEST(Structural, KernelLaunch) { families_KernelLaunch(); }
TEST(Structural, TileOps) { families_TileOps(); }
TEST(Structural, AnnotationsAndEveryAttrValue) { families_AnnotationsAndEveryAttrValue(); }

TEST(Structural, Layouts) {
  auto frag = [](int v) {
    Var i = make_var(fresh("i")), j = make_var(fresh("j")), rep = make_var(fresh("rep"));
    return make_fragment({int_imm(16), int_imm(v == 1 ? 4 : 8)}, {i, j}, {v == 2 ? j : i},
                         v == 3 ? i * 4 + rep : j * 4 + rep, int_imm(v == 4 ? 4 : 2), rep);
  };
  Buffer F = make_buffer("F", {int_imm(16), int_imm(8)}, f32, Scope::kFragment);
  auto wrap = [&](Layout l) { return annotate("layout_map", LayoutMap{{F, l}}, nop()); };
  EXPECT_TRUE(structural_equal(wrap(frag(0)), wrap(frag(0))));
  EXPECT_EQ(structural_hash(wrap(frag(0))), structural_hash(wrap(frag(0))));
  for (int v = 1; v <= 4; ++v) EXPECT_FALSE(structural_equal(wrap(frag(0)), wrap(frag(v)))) << v;
  Var i = make_var("i"), j = make_var("j");
  Layout plain = make_layout({int_imm(16), int_imm(8)}, {i, j}, {i});
  EXPECT_FALSE(structural_equal(wrap(frag(0)), wrap(plain)));
}

TEST(Structural, RenamingMustBeConsistent) {
  Buffer G = make_buffer("G", {int_imm(8), int_imm(8)}, f32, Scope::kGlobal);
  auto nest = [&](bool swap) {
    Var i = make_var("i"), j = make_var("j");
    Stmt body = buffer_store(G, {swap ? j : i, swap ? i : j}, float_imm(0));
    return make_for(i, int_imm(0), int_imm(8), ForKind::kSerial, make_for(j, int_imm(0), int_imm(8), ForKind::kSerial, body));
  };
  EXPECT_TRUE(structural_equal(nest(false), nest(false)));
  EXPECT_FALSE(structural_equal(nest(false), nest(true)));
  EXPECT_NE(structural_hash(nest(false)), structural_hash(nest(true)));
  // A variable defined in one tree cannot match a free one in the other.
  Var i = make_var("i");
  Stmt defines = make_for(i, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(G, {i, i}, float_imm(0)));
  Var k = make_var("k");
  Stmt uses_free = make_for(k, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(G, {i, i}, float_imm(0)));
  EXPECT_FALSE(structural_equal(defines, uses_free));
  EXPECT_FALSE(structural_equal(uses_free, defines));
  // Same object defined twice in a row (sibling loops) still compares position by position.
  Stmt twice = seq({make_for(i, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(G, {i, i}, float_imm(0))),
                    make_for(i, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(G, {i, i}, float_imm(0)))});
  Var a = make_var("a"), b = make_var("b");
  Stmt two = seq({make_for(a, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(G, {a, a}, float_imm(0))),
                  make_for(b, int_imm(0), int_imm(8), ForKind::kSerial, buffer_store(G, {b, b}, float_imm(0)))});
  EXPECT_TRUE(structural_equal(twice, two));
  EXPECT_TRUE(structural_equal(two, twice));
  EXPECT_EQ(structural_hash(twice), structural_hash(two));
}

TEST(Structural, Functions) {
  auto build = [](int v) {
    Builder b(v == 0 ? "f" : fresh("g"));
    Var m = b.dynamic("m"), n = b.dynamic("n");
    Buffer A = b.tensor(fresh("A"), {m, n}, v == 2 ? f16 : f32);
    Buffer B = b.tensor(fresh("B"), {v == 3 ? m : n, m}, f32);
    Var s = b.scalar_param(fresh("s"), v == 4 ? DataType::Int(64) : i32);
    auto blk = b.begin_kernel({int_imm(4)}, {128});
    b.store(A, {blk[0], int_imm(0)}, float_imm(v == 5 ? 2 : 1));
    b.store(B, {int_imm(0), int_imm(0)}, float_imm(1));
    (void)s;
    b.end_frame();
    AttrMap attrs;
    if (v == 6) attrs = {{"note", std::string("x")}};
    return b.finish(attrs);
  };
  // v == 1: only the function's and the parameters' names differ.
  EXPECT_TRUE(structural_equal(build(0), build(1)));
  EXPECT_EQ(structural_hash(build(0)), structural_hash(build(1)));
  for (int v = 2; v <= 6; ++v) {
    EXPECT_FALSE(structural_equal(build(0), build(v))) << v;
    EXPECT_NE(structural_hash(build(0)), structural_hash(build(v))) << v;
  }
  // The builder GEMM, built twice.
  EXPECT_TRUE(structural_equal(build_example_gemm(), build_example_gemm()));
  EXPECT_EQ(structural_hash(build_example_gemm()), structural_hash(build_example_gemm()));
  GemmExampleConfig c;
  c.block_K = 64;
  EXPECT_FALSE(structural_equal(build_example_gemm(), build_example_gemm(c)));
}

TEST(Structural, EveryNodeKindHasAFamily) {
  // Tests may run one per process (ctest), so build every family here again.
  families_Immediates();
  families_Vars();
  families_EveryBinaryKind();
  families_OtherExpressions();
  families_Statements();
  families_KernelLaunch();
  families_TileOps();
  families_AnnotationsAndEveryAttrValue();
#define TILEC_EXPR(Kind, NodeClass) EXPECT_TRUE(covered().count(NodeKind::k##Kind)) << #Kind " has no test family";
#define TILEC_STMT(Kind, NodeClass) TILEC_EXPR(Kind, NodeClass)
#include "tilec/ir/nodes.def"
}
