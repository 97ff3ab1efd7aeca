// Builder: the one way front ends construct kernels.
//
// It keeps a stack of open frames (the function, a kernel, a loop, an if/else arm).
// Statements are appended to the innermost frame; closing a frame wraps what it
// collected into the frame's statement. Allocations made in a frame enclose the
// frame's statements (they live until the frame closes).
//
// The Python front end calls begin_*/end_frame as it walks `with`/`for`/`if`; C++
// users can use the same calls or the lambda helpers (kernel(...), loop(...)).
//
//   Builder b("matmul");
//   auto A = b.tensor("A", {M, K}, DataType::Float(16));
//   ...
//   auto k = b.begin_kernel({ceildiv(N, 128), ceildiv(M, 128)}, {128});
//   auto As = b.alloc_shared("A_shared", {128, 32}, f16);
//   ...
//   b.end_frame();
//   PrimFunc f = b.finish();
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tilec/ir/stmt.h"
#include "tilec/ir/tile_op.h"

namespace tilec::ir {

class Builder {
 public:
  explicit Builder(std::string func_name, SourceLoc loc = {});

  // ---- parameters ----
  Buffer tensor(const std::string& name, std::vector<Expr> shape, DataType dtype,
                std::vector<Expr> strides = {}, SourceLoc loc = {});
  Var scalar_param(const std::string& name, DataType dtype, SourceLoc loc = {});
  // A symbolic dimension (T.dynamic("m")): a variable bound from the tensors' shapes at launch.
  Var dynamic(const std::string& name, DataType dtype = DataType::Int(32), SourceLoc loc = {});
  // Puts the parameters in the order `names` gives (each parameter named exactly once). The
  // eager-JIT front end declares parameters where their annotations stand in the body
  // (`A: T.Tensor(...)`, `C = T.empty(...)`) and then restores the signature's order.
  void reorder_params(const std::vector<std::string>& names, SourceLoc loc = {});

  // ---- frames ----
  // Returns the block index variables (bx, by, bz) — one per grid extent.
  std::vector<Var> begin_kernel(std::vector<Expr> grid, std::vector<int64_t> threads,
                                std::vector<int64_t> cluster = {}, SourceLoc loc = {});
  // Thread index variables of the innermost kernel (tx, ty, tz).
  const std::vector<Var>& thread_vars() const;
  // `thread_tag` ("threadIdx.x", ...) is for ForKind::kThreadBinding loops only.
  Var begin_for(const std::string& var_name, Expr min, Expr extent, ForKind kind,
                PipelineInfo pipeline = {}, AttrMap annotations = {}, SourceLoc loc = {},
                std::string thread_tag = {});
  // Several nested loops opened (and later closed) as one frame: T.Parallel(M, N).
  std::vector<Var> begin_loop_nest(const std::vector<std::string>& names, std::vector<Expr> extents,
                                   ForKind kind, SourceLoc loc = {});
  void begin_if(Expr cond, SourceLoc loc = {});
  void begin_else(SourceLoc loc = {});  // closes the then-arm of the innermost if
  void begin_while(Expr cond, SourceLoc loc = {});
  void begin_annotate(std::string key, AttrValue value, SourceLoc loc = {});
  void end_frame();
  size_t depth() const { return frames_.size(); }

  // ---- allocations (in the innermost frame) ----
  Buffer alloc(const std::string& name, std::vector<Expr> shape, DataType dtype, Scope scope,
               SourceLoc loc = {});
  Buffer alloc_shared(const std::string& name, std::vector<Expr> shape, DataType dtype, SourceLoc loc = {}) {
    return alloc(name, std::move(shape), dtype, Scope::kSharedDyn, std::move(loc));
  }
  Buffer alloc_fragment(const std::string& name, std::vector<Expr> shape, DataType dtype, SourceLoc loc = {}) {
    return alloc(name, std::move(shape), dtype, Scope::kFragment, std::move(loc));
  }

  // T.reshape / T.view: a view of `base` (a fragment, local or shared.dyn buffer) with another
  // shape, and for shared memory possibly another dtype (make_view).
  Buffer alloc_view(const std::string& name, std::vector<Expr> shape, const Buffer& base, SourceLoc loc = {},
                    std::optional<DataType> dtype = std::nullopt);

  // T.make_tensor: a global buffer at `address` (a 64-bit integer), declared from here to the
  // end of the innermost frame. An address that is not a variable is bound to `<name>_ptr`
  // first, so the buffer keeps the address it had here.
  Buffer make_tensor(const std::string& name, Expr address, std::vector<Expr> shape, DataType dtype,
                     std::vector<Expr> strides = {}, SourceLoc loc = {});

  // ---- statements ----
  void emit(Stmt s);
  void store(const Buffer& b, std::vector<Expr> indices, Expr value, SourceLoc loc = {});
  void tile_op(const std::string& op, std::vector<TileArg> args, AttrMap attrs = {}, SourceLoc loc = {});
  void evaluate(Expr e, SourceLoc loc = {});
  // Binds a fresh variable to `value` for the rest of the innermost frame.
  Var let(const std::string& name, Expr value, SourceLoc loc = {});

  // ---- lambda helpers for C++ ----
  void kernel(std::vector<Expr> grid, std::vector<int64_t> threads,
              const std::function<void(const std::vector<Var>&)>& body);
  void loop(const std::string& name, Expr extent, ForKind kind, const std::function<void(Var)>& body,
            PipelineInfo pipeline = {});

  // Closes the function. All frames must have been closed.
  PrimFunc finish(AttrMap attrs = {});

 private:
  enum class FrameKind { kFunction, kKernel, kFor, kLoopNest, kWhile, kThen, kElse, kAnnotate };
  struct Frame {
    FrameKind kind;
    SourceLoc loc;
    std::vector<Stmt> stmts;
    std::vector<Buffer> allocs;
    std::vector<std::pair<Var, Expr>> lets;  // with the index into stmts they start at
    std::vector<size_t> let_starts;
    std::vector<Buffer> let_buffers;  // per let: null, or a T.make_tensor buffer declared there
    // payload
    std::shared_ptr<KernelLaunchNode> kernel;
    std::vector<std::shared_ptr<ForNode>> loops;  // kFor: one; kLoopNest: outer to inner
    Expr cond;
    Stmt then_body;
    std::string key;
    AttrValue value;
  };
  static Frame make_frame(FrameKind kind, SourceLoc loc) {
    Frame f;
    f.kind = kind;
    f.loc = std::move(loc);
    return f;
  }
  Frame& top();
  Stmt close_body(Frame& f);
  void check_open(const SourceLoc& loc) const;

  std::string name_;
  SourceLoc loc_;
  std::vector<Param> params_;
  std::vector<Frame> frames_;
  std::vector<std::vector<Var>> thread_var_stack_;
};

}  // namespace tilec::ir
