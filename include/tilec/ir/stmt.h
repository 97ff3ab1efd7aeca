// Statement nodes, attribute values, tile ops and PrimFunc.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "tilec/ir/buffer.h"
#include "tilec/ir/expr.h"

namespace tilec::ir {

struct StmtNode : Node {
  explicit StmtNode(NodeKind k) : Node(k) {}
};
using Stmt = Ref<StmtNode>;

// buffer -> layout, in insertion order (T.annotate_layout, results of layout inference).
using LayoutMap = std::vector<std::pair<Buffer, Layout>>;

// A value attached to a tile op keyword, an annotation or a function attribute.
using AttrValue = std::variant<std::monostate, bool, int64_t, double, std::string, Expr,
                               Buffer, Layout, std::vector<int64_t>, LayoutMap>;
using AttrMap = std::vector<std::pair<std::string, AttrValue>>;  // ordered: printing is stable
const AttrValue* find_attr(const AttrMap& attrs, const std::string& key);

struct SeqNode : StmtNode {
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(NodeKind::kSeq), stmts(std::move(s)) {}
  std::vector<Stmt> stmts;
};

enum class ForKind : uint8_t {
  kSerial,
  kParallel,    // T.Parallel: iterations are distributed over threads by a loop layout
  kPipelined,   // T.Pipelined: software pipelined; see PipelineInfo
  kUnrolled,
  kVectorized,
  kThreadBinding,  // bound to a hardware index (thread_tag: "threadIdx.x", ...)
};
const char* for_kind_name(ForKind k);

struct PipelineInfo {
  int num_stages = 0;          // 0: no pipelining
  std::vector<int> order;      // optional: issue order of the body statements
  std::vector<int> stage;      // optional: stage of each body statement
};

struct ForNode : StmtNode {
  ForNode() : StmtNode(NodeKind::kFor) {}
  Var loop_var;
  Expr min;
  Expr extent;
  ForKind for_kind = ForKind::kSerial;
  std::string thread_tag;  // kThreadBinding only
  PipelineInfo pipeline;   // kPipelined only
  AttrMap annotations;
  Stmt body;
};

// `while cond: body`: a sequential loop of unknown trip count; `cond` is evaluated before each
// iteration (by every thread that runs the loop).
struct WhileNode : StmtNode {
  WhileNode(Expr c, Stmt b) : StmtNode(NodeKind::kWhile), cond(std::move(c)), body(std::move(b)) {}
  Expr cond;
  Stmt body;
};

struct IfNode : StmtNode {
  IfNode(Expr c, Stmt t, Stmt e)
      : StmtNode(NodeKind::kIf), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  Expr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
};

struct LetNode : StmtNode {
  LetNode(Var v, Expr val, Stmt b)
      : StmtNode(NodeKind::kLet), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  Var var;
  Expr value;
  Stmt body;
};

struct BufferStoreNode : StmtNode {
  BufferStoreNode(Buffer b, std::vector<Expr> idx, Expr v)
      : StmtNode(NodeKind::kBufferStore), buffer(std::move(b)), indices(std::move(idx)), value(std::move(v)) {}
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
};

struct EvaluateNode : StmtNode {
  explicit EvaluateNode(Expr v) : StmtNode(NodeKind::kEvaluate), value(std::move(v)) {}
  Expr value;
};

// Declares `buffer` for the duration of `body`.
struct AllocateNode : StmtNode {
  AllocateNode(Buffer b, Stmt s) : StmtNode(NodeKind::kAllocate), buffer(std::move(b)), body(std::move(s)) {}
  Buffer buffer;
  Stmt body;
};

// T.Kernel(*grid, threads=..., cluster_dims=...) as (bx, by, bz)
struct KernelLaunchNode : StmtNode {
  KernelLaunchNode() : StmtNode(NodeKind::kKernelLaunch) {}
  std::vector<Expr> grid;          // 1..3 extents
  std::vector<Var> block_vars;     // one per grid extent (blockIdx.x, .y, .z)
  std::vector<int64_t> threads;    // 1..3 block extents (constants)
  std::vector<Var> thread_vars;    // one per block extent (threadIdx.x, .y, .z)
  std::vector<int64_t> cluster;    // empty or 1..3 cluster extents
  Stmt body;
  // The block's thread count (the product of `threads`).
  int64_t block_threads() const {
    int64_t n = 1;
    for (int64_t t : threads) n *= t;
    return n;
  }
};

// An argument of a tile op: a scalar expression or a buffer region.
using TileArg = std::variant<Expr, BufferRegion>;

// T.copy, T.gemm, T.fill, T.reduce_*, ...: a tile operation by registered name. The
// registry (ir/tile_op.h) holds each op's schema and behaviour.
struct TileOpNode : StmtNode {
  TileOpNode() : StmtNode(NodeKind::kTileOp) {}
  std::string op;
  std::vector<TileArg> args;
  AttrMap attrs;  // keyword arguments
};

// Annotates `body` with a key/value (layout maps, swizzle, warp-group roles, ...).
struct AnnotateNode : StmtNode {
  AnnotateNode() : StmtNode(NodeKind::kAnnotate) {}
  std::string key;
  AttrValue value;
  Stmt body;
};

// ---- constructors ----
Stmt seq(std::vector<Stmt> stmts, SourceLoc loc = {});
Stmt make_for(Var v, Expr min, Expr extent, ForKind kind, Stmt body, SourceLoc loc = {},
              PipelineInfo pipeline = {}, std::string thread_tag = "", AttrMap annotations = {});
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = nullptr, SourceLoc loc = {});
Stmt make_while(Expr cond, Stmt body, SourceLoc loc = {});
Stmt let(Var v, Expr value, Stmt body, SourceLoc loc = {});
Stmt buffer_store(Buffer b, std::vector<Expr> indices, Expr value, SourceLoc loc = {});
Stmt evaluate(Expr value, SourceLoc loc = {});
Stmt allocate(Buffer b, Stmt body, SourceLoc loc = {});
// Allocate nodes for `buffers` around `body`, the first buffer outermost.
Stmt allocate_all(const std::vector<Buffer>& buffers, Stmt body, SourceLoc loc = {});
Stmt annotate(std::string key, AttrValue value, Stmt body, SourceLoc loc = {});

// ---- functions ----
// A parameter is a global buffer (a tensor) or a scalar variable.
struct Param {
  Var var;        // for scalars; null for buffers
  Buffer buffer;  // for tensors; null for scalars
  bool is_buffer() const { return buffer.defined(); }
  const std::string& name() const;
};

struct PrimFuncNode {
  std::string name;
  std::vector<Param> params;
  Stmt body;
  AttrMap attrs;
  SourceLoc loc;
};
using PrimFunc = Ref<PrimFuncNode>;
PrimFunc make_prim_func(std::string name, std::vector<Param> params, Stmt body,
                        AttrMap attrs = {}, SourceLoc loc = {});
// A copy of `f` with a new body (same name, params and attrs).
PrimFunc with_body(const PrimFunc& f, Stmt body);

}  // namespace tilec::ir
