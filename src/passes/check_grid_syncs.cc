// Pass check_grid_syncs: every thread of every block can reach each T.sync_grid().
//
// Input:  a verified PrimFunc (tile IR as the front end builds it: T.ws roles still
//         annotations, T.Parallel / T.Pipelined loops not yet lowered). Both targets run it:
//         the CUDA pipeline right after simplify, the CPU target before it interprets.
// Output: the same function, unchanged; or a UserError at the first tl.sync_grid() call that
//         some thread or block could skip, or reach a different number of times — a grid
//         barrier that not every thread arrives at never opens (the GPU hangs). Refused:
//           * outside a T.Kernel, or in a kernel with thread-block clusters (not supported);
//           * inside T.Parallel (iterations are spread over threads), a thread-bound loop,
//             T.Pipelined (stages of different iterations overlap; on sm_90a the loop is split
//             into producer / consumer warp groups) or T.ws (one warp group's role);
//           * under an If, or inside a For / while, whose condition or bounds vary: use a
//             block or thread index, a variable bound (Let / loop) to a varying value, an
//             impure call, or memory that can differ between blocks or change during the
//             launch (shared, fragment and local buffers; a global tensor the kernel writes).
//             Global tensors the kernel never writes, read at uniform indices, are uniform.
// Why here and not in the front end: the uniformity of a condition is a property of the IR
//   (Lets of block indices, loop variables), and the CPU target needs the same answer.
// Runs after: verify, simplify. Nothing depends on it.
#include <string>
#include <unordered_set>

#include "passes/cuda_back_util.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"
#include "tilec/support/diag.h"

namespace tilec::passes {

using namespace ir;

namespace {

constexpr const char* kGridSyncOp = "tl.sync_grid";

bool is_grid_sync(const EvaluateNode* e) {
  auto* c = e->value.as<CallNode>();
  return c && c->op == kGridSyncOp;
}

std::string line_of(const SourceLoc& loc) { return loc.known() ? " (line " + std::to_string(loc.line) + ")" : ""; }

// Global tensors some statement of the kernel may write: stores, tile ops that name them
// (any region: conservative), and calls that take an element's address.
class WrittenGlobals : public IRVisitor {
 public:
  std::unordered_set<const BufferNode*> written;

 protected:
  void visit_BufferStore(const BufferStoreNode* op) override {
    written.insert(op->buffer.get());
    IRVisitor::visit_BufferStore(op);
  }
  void visit_TileOp(const TileOpNode* op) override {
    for (const auto& a : op->args)
      if (auto* r = std::get_if<BufferRegion>(&a)) written.insert(r->buffer.get());
    IRVisitor::visit_TileOp(op);
  }
  void visit_Call(const CallNode* op) override {
    if (op->op == "tl.address_of" && !op->args.empty())
      if (auto* l = op->args[0].as<BufferLoadNode>()) written.insert(l->buffer.get());
    IRVisitor::visit_Call(op);
  }
};

// Whether an expression may differ between the threads or blocks of a launch.
class Varying : public IRVisitor {
 public:
  Varying(const std::unordered_set<const VarNode*>& vars, const std::unordered_set<const BufferNode*>& written)
      : vars_(vars), written_(written) {}
  bool of(const Expr& e) {
    found_ = false;
    visit(e);
    return found_;
  }

 protected:
  void visit_Var(const VarNode* op) override { found_ |= vars_.count(op) > 0; }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    found_ |= op->buffer->scope != Scope::kGlobal || written_.count(op->buffer.get()) > 0;
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_Call(const CallNode* op) override {
    found_ |= !back::is_pure_intrinsic(op->op);
    IRVisitor::visit_Call(op);
  }

 private:
  const std::unordered_set<const VarNode*>& vars_;
  const std::unordered_set<const BufferNode*>& written_;
  bool found_ = false;
};

class GridSyncChecker : public IRVisitor {
 protected:
  void visit_KernelLaunch(const KernelLaunchNode* op) override {
    const KernelLaunchNode* saved = kernel_;
    kernel_ = op;
    WrittenGlobals w;
    w.visit(op->body);
    written_ = std::move(w.written);
    for (const auto& v : op->block_vars) varying_.insert(v.get());
    for (const auto& v : op->thread_vars) varying_.insert(v.get());
    IRVisitor::visit_KernelLaunch(op);
    kernel_ = saved;
  }

  void visit_Let(const LetNode* op) override {
    if (Varying(varying_, written_).of(op->value)) varying_.insert(op->var.get());
    IRVisitor::visit_Let(op);
  }

  void visit_For(const ForNode* op) override {
    const std::string where = for_where(op);
    if (!where.empty()) return under(where, op->loc, refusal_hint(op), op->body);
    Varying varying(varying_, written_);
    if (varying.of(op->min) || varying.of(op->extent)) {
      varying_.insert(op->loop_var.get());
      return under("a loop whose bounds depend on the block or thread index (or on data that differs between "
                   "blocks)",
                   op->loc, kVaryingLoopHint, op->body);
    }
    IRVisitor::visit_For(op);
  }

  void visit_While(const WhileNode* op) override {
    if (Varying(varying_, written_).of(op->cond))
      return under("a while loop whose condition depends on the block or thread index (or on data that differs "
                   "between blocks)",
                   op->loc, kVaryingLoopHint, op->body);
    IRVisitor::visit_While(op);
  }

  void visit_If(const IfNode* op) override {
    if (Varying(varying_, written_).of(op->cond)) {
      under("a branch whose condition depends on the block or thread index (or on data that differs between "
            "blocks)",
            op->loc, kBranchHint, op->then_case);
      if (op->else_case) under("the else branch of that condition", op->loc, kBranchHint, op->else_case);
      return;
    }
    IRVisitor::visit_If(op);
  }

  void visit_Annotate(const AnnotateNode* op) override {
    if (op->key == "ws")
      return under("a T.ws warp-group role (only that warp group's threads run it)", op->loc,
                   "call T.sync_grid() outside the T.ws blocks, where every thread of the block runs it", op->body);
    IRVisitor::visit_Annotate(op);
  }

  void visit_Evaluate(const EvaluateNode* op) override {
    if (is_grid_sync(op)) {
      TILEC_USER_CHECK(kernel_ != nullptr, op->loc, "call it inside `with T.Kernel(...)`")
          << "T.sync_grid() synchronizes the blocks of a kernel; this one is outside any T.Kernel";
      int64_t cluster = 1;
      for (int64_t c : kernel_->cluster) cluster *= c;
      TILEC_USER_CHECK(cluster == 1, op->loc, "use T.Kernel (without cluster_dims) for a kernel that syncs its grid")
          << "T.sync_grid() in a kernel with thread-block clusters (T.ClusterKernel) is not supported: its "
             "cooperative launch would need the co-residency of whole clusters";
    }
    IRVisitor::visit_Evaluate(op);
  }

 private:
  static constexpr const char* kVaryingLoopHint =
      "every block must reach T.sync_grid() the same number of times: loop the same number of times in every "
      "block (e.g. over T.ceildiv(total, num_blocks) waves) and guard the work inside the loop with an if";
  static constexpr const char* kBranchHint =
      "call T.sync_grid() unconditionally and guard the work around it instead: `if cond: <phase 1>`, then "
      "`T.sync_grid()`, then `if cond: <phase 2>`";

  static std::string for_where(const ForNode* op) {
    switch (op->for_kind) {
      case ForKind::kParallel: return "a T.Parallel loop (its iterations are spread over the block's threads)";
      case ForKind::kPipelined:
        return "a T.Pipelined loop (the pipeline overlaps the stages of different iterations and, on sm_90a, "
               "splits the block into producer and consumer warp groups)";
      case ForKind::kThreadBinding: return "a loop bound to a thread index";
      default: return "";
    }
  }
  static std::string refusal_hint(const ForNode* op) {
    if (op->for_kind == ForKind::kParallel)
      return "split the T.Parallel loop in two at the barrier and call T.sync_grid() between the two loops";
    if (op->for_kind == ForKind::kPipelined)
      return "write the loop as T.serial, or call T.sync_grid() before or after the T.Pipelined loop";
    return "call T.sync_grid() outside the loop, where every thread of the block runs it";
  }

  // A statement under `what` may not hold a grid barrier.
  void under(const std::string& what, const SourceLoc& where, const std::string& hint, const Stmt& body) {
    if (!body) return;
    for_each_node(body, [&](const Node* n) {
      auto* e = dynamic_cast<const EvaluateNode*>(n);
      if (!e || !is_grid_sync(e)) return;
      throw_user_error("T.sync_grid() inside " + what + line_of(where) +
                           ": a grid barrier must be reached by every thread of every block, the same number of "
                           "times, or the blocks that reach it wait forever",
                       e->loc, hint);
    });
    // No grid barrier below: the rest of the checks (and the varying set) still apply to
    // nested kernels, which the verifier refuses anyway.
  }

  const KernelLaunchNode* kernel_ = nullptr;
  std::unordered_set<const VarNode*> varying_;
  std::unordered_set<const BufferNode*> written_;
};

}  // namespace

bool contains_grid_sync(const Stmt& s) {
  bool found = false;
  if (!s) return false;
  for_each_node(s, [&](const Node* n) {
    auto* e = dynamic_cast<const EvaluateNode*>(n);
    found |= e && is_grid_sync(e);
  });
  return found;
}

void check_grid_syncs(const PrimFunc& f) {
  if (contains_grid_sync(f->body)) GridSyncChecker().visit(f->body);
}

Pass check_grid_syncs_pass() {
  return {"check_grid_syncs", [](const PrimFunc& f, PassContext&) {
            check_grid_syncs(f);
            return f;
          }};
}

}  // namespace tilec::passes
