// The verifier (see verifier.h).
//
// Input: any PrimFunc (front-end output or the result of a pass).
// Output: nothing; raises a UserError at the first problem, located at the innermost
// enclosing node that has a source location, with a hint that says what to do.
//
// Checks, in one walk with explicit scopes:
//  * every variable is used inside the scope that defines it (parameters, symbolic sizes of
//    parameter shapes, loops, Lets, kernel block/thread indices, layout lambdas) and no
//    variable is defined again inside its own scope;
//  * every buffer is a parameter or used inside its Allocate; parameters are global; on-chip
//    buffers are allocated inside a kernel, global ones never are; T.alloc_var buffers have
//    shape (1,);
//  * kernels are not nested; their grid, thread and cluster lists are well formed;
//  * loads, stores and tile-op regions have one index / range per buffer dimension; indices
//    are integers; stored values have the buffer's element type; a constant region fits in
//    a buffer of constant shape;
//  * fragments are element-indexed only inside T.Parallel loops (tile ops take them whole),
//    except reads of one-element fragments (lower_tile_ops checks every thread holds it);
//  * loop bounds are integers; conditions are bool; Let values have the variable's type;
//    operand types of binary operators agree; tile ops exist and match their schema.
#include "tilec/ir/verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"

namespace tilec::ir {

namespace {

enum class DefSite { kLoop, kLet, kKernel, kLayout };

// Where each variable and buffer is defined anywhere in the function; only consulted to
// word an error message precisely.
class DefinitionSites : public IRVisitor {
 public:
  std::unordered_map<const VarNode*, DefSite> vars;
  std::unordered_set<const BufferNode*> allocated;

 protected:
  void visit_For(const ForNode* op) override {
    vars.emplace(op->loop_var.get(), DefSite::kLoop);
    IRVisitor::visit_For(op);
  }
  void visit_Let(const LetNode* op) override {
    vars.emplace(op->var.get(), DefSite::kLet);
    IRVisitor::visit_Let(op);
  }
  void visit_KernelLaunch(const KernelLaunchNode* op) override {
    for (const auto& v : op->block_vars) vars.emplace(v.get(), DefSite::kKernel);
    for (const auto& v : op->thread_vars) vars.emplace(v.get(), DefSite::kKernel);
    IRVisitor::visit_KernelLaunch(op);
  }
  void visit_Allocate(const AllocateNode* op) override {
    allocated.insert(op->buffer.get());
    IRVisitor::visit_Allocate(op);
  }
};

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Like TILEC_USER_CHECK, but the location falls back to the innermost located node.
#define TILEC_VERIFY(cond, loc, hint) \
  if (cond) {                         \
  } else                              \
    error((loc), (hint))

class Verifier {
 public:
  explicit Verifier(const PrimFunc& f) : f_(f) {
    sites_.visit(f->body);
    loc_ = f->loc;
  }

  void run() {
    for (const auto& p : f_->params) {
      if (p.is_buffer()) {
        TILEC_VERIFY(p.buffer->scope == Scope::kGlobal, p.buffer->loc.known() ? p.buffer->loc : loc_,
              "declare parameters as T.Tensor(shape, dtype)")
            << "parameter '" << p.buffer->name << "' must be a global tensor, not " << scope_name(p.buffer->scope);
        buffers_.insert(p.buffer.get());
      } else {
        TILEC_VERIFY(p.var.defined(), loc_, "") << "a scalar parameter has no variable";
        vars_.insert(p.var.get());
      }
    }
    // Free variables of the parameters' shapes and strides are symbolic sizes (T.dynamic).
    struct Symbolic : IRVisitor {
      std::unordered_set<const VarNode*>* out;
      void visit_Var(const VarNode* op) override { out->insert(op); }
    } symbolic;
    symbolic.out = &vars_;
    for (const auto& p : f_->params) {
      if (!p.is_buffer()) continue;
      for (const auto& e : p.buffer->shape) {
        TILEC_VERIFY(e.defined() && e->dtype.is_integer(), loc_, "shapes are integers")
            << "parameter '" << p.buffer->name << "' has a non-integer extent";
        symbolic.visit(e);
      }
      for (const auto& e : p.buffer->strides) symbolic.visit(e);
    }
    stmt(f_->body);
  }

 private:
  // A UserError at `loc`, or at the innermost enclosing located node when `loc` is unknown.
  detail::UserErrorStream error(const SourceLoc& loc, std::string hint) {
    return detail::UserErrorStream(loc.known() ? loc : loc_, std::move(hint));
  }

  // Keeps loc_ at the innermost located node while a node is being checked.
  struct LocScope {
    LocScope(Verifier* v, const SourceLoc& loc) : v_(v), saved_(v->loc_) {
      if (loc.known()) v->loc_ = loc;
    }
    ~LocScope() { v_->loc_ = saved_; }
    Verifier* v_;
    SourceLoc saved_;
  };

  void define(const Var& v) {
    TILEC_VERIFY(v.defined(), loc_, "") << "a definition without a variable";
    TILEC_VERIFY(!vars_.count(v.get()), loc_, "use a fresh variable for each loop or assignment")
        << "variable '" << v->name << "' is defined again inside its own scope";
    vars_.insert(v.get());
  }
  void undefine(const Var& v) { vars_.erase(v.get()); }

  void use_var(const VarNode* v) {
    if (vars_.count(v)) return;
    auto it = sites_.vars.find(v);
    std::string where, hint;
    if (it == sites_.vars.end()) {
      error(loc_, "declare it as a parameter or with T.dynamic(...), or assign it before use")
          << "variable '" << v->name << "' is not defined";
    }
    switch (it->second) {
      case DefSite::kLoop:
        where = "the loop that defines it";
        hint = "move the use into the loop body, or keep the value in a T.alloc_var buffer";
        break;
      case DefSite::kLet:
        where = "the block that assigns it";
        hint = "an assignment is visible only in the rest of the block that contains it";
        break;
      case DefSite::kKernel:
        where = "the T.Kernel that defines it";
        hint = "block and thread indices exist only inside `with T.Kernel(...)`";
        break;
      case DefSite::kLayout:
        where = "the layout function that defines it";
        break;
    }
    error(loc_, hint) << "variable '" << v->name << "' is used outside " << where;
  }

  void use_buffer(const Buffer& b) {
    TILEC_VERIFY(b.defined(), loc_, "") << "a reference to a null buffer";
    if (buffers_.count(b.get())) return;
    if (sites_.allocated.count(b.get())) {
      error(loc_, "an allocation lasts until the end of the block that contains it; allocate '" + b->name +
                      "' in a block that encloses every use")
          << "buffer '" << b->name << "' is used outside its allocation";
    }
    error(loc_, "pass it as a T.Tensor parameter or allocate it with T.alloc_shared / T.alloc_fragment / ...")
        << "buffer '" << b->name << "' is neither a parameter nor allocated";
  }

  void indices(const Buffer& b, const std::vector<Expr>& idx, const SourceLoc& loc, bool load = false) {
    use_buffer(b);
    TILEC_VERIFY(static_cast<int>(idx.size()) == b->ndim(), loc, "give one index per dimension")
        << "buffer '" << b->name << "' has " << plural(b->ndim(), "dimension") << " but is indexed with "
        << idx.size();
    for (const auto& i : idx) {
      expr(i);
      TILEC_VERIFY(i->dtype.is_integer(), i->loc, "indices are integers; use T.cast(x, \"int32\")")
          << "index of buffer '" << b->name << "' has type " << i->dtype.str();
    }
    // A read of a one-element fragment (a T.reduce_* result) outside T.Parallel is TileLang's
    // scalar read: lower_tile_ops checks that every thread holds the element.
    const bool scalar_read = load && std::all_of(b->shape.begin(), b->shape.end(), [](const Expr& e) { return is_one(e); });
    if (b->scope == Scope::kFragment && !scalar_read) {
      TILEC_VERIFY(parallel_depth_ > 0, loc,
            "index fragments inside `for i, j in T.Parallel(...)`, or pass the whole fragment to a tile op "
            "such as T.copy")
          << "fragment '" << b->name << "' is indexed outside a T.Parallel loop";
    }
  }

  // ---------------------------------------------------------------- expressions

  void expr(const Expr& e) {
    TILEC_VERIFY(e.defined(), loc_, "") << "a missing expression";
    LocScope scope(this, e->kind == NodeKind::kVar ? SourceLoc{} : e->loc);  // a Var's loc is its definition
    switch (e->kind) {
#define TILEC_EXPR(Kind, NodeClass)                         \
  case NodeKind::k##Kind:                                   \
    expr_##Kind(static_cast<const NodeClass*>(e.get())); \
    return;
#define TILEC_BINARY(Kind, Symbol, Category)                 \
  case NodeKind::k##Kind:                                    \
    expr_binary(static_cast<const BinaryNode*>(e.get())); \
    return;
#include "tilec/ir/nodes.def"
      default:
        error(loc_, "") << "a statement (" << node_kind_name(e->kind) << ") in expression position";
    }
  }
  void expr_IntImm(const IntImmNode*) {}
  void expr_FloatImm(const FloatImmNode*) {}
  void expr_StringImm(const StringImmNode*) {}
  void expr_Var(const VarNode* op) { use_var(op); }
  void expr_binary(const BinaryNode* op) {
    expr(op->a);
    expr(op->b);
    TILEC_VERIFY(op->a->dtype == op->b->dtype, loc_, "insert an explicit T.cast(...) on one side")
        << "operands of '" << binary_symbol(op->kind) << "' have different types: " << op->a->dtype.str()
        << " and " << op->b->dtype.str();
    if (is_logic_kind(op->kind)) {
      TILEC_VERIFY(op->a->dtype.is_bool(), loc_, "compare the values first, e.g. (x > 0)")
          << "operands of '" << binary_symbol(op->kind) << "' must be bool, got " << op->a->dtype.str();
    }
  }
  void expr_Not(const NotNode* op) {
    expr(op->a);
    TILEC_VERIFY(op->a->dtype.is_bool(), loc_, "") << "'not' needs a bool operand, got " << op->a->dtype.str();
  }
  void expr_Select(const SelectNode* op) {
    expr(op->cond);
    expr(op->true_value);
    expr(op->false_value);
    TILEC_VERIFY(op->cond->dtype.is_bool(), loc_, "the condition must be a comparison")
        << "condition of T.if_then_else has type " << op->cond->dtype.str();
    TILEC_VERIFY(op->true_value->dtype == op->false_value->dtype, loc_, "insert a T.cast(...) on one branch")
        << "the branches of T.if_then_else have different types: " << op->true_value->dtype.str() << " and "
        << op->false_value->dtype.str();
  }
  void expr_Cast(const CastNode* op) { expr(op->value); }
  void expr_Ramp(const RampNode* op) {
    expr(op->base);
    expr(op->stride);
  }
  void expr_Broadcast(const BroadcastNode* op) { expr(op->value); }
  void expr_BufferLoad(const BufferLoadNode* op) { indices(op->buffer, op->indices, loc_, /*load=*/true); }
  void expr_Call(const CallNode* op) {
    for (const auto& a : op->args) expr(a);
  }

  void attr(const AttrValue& v) {
    if (auto* e = std::get_if<Expr>(&v)) expr(*e);
    else if (auto* b = std::get_if<Buffer>(&v)) use_buffer(*b);
    else if (auto* l = std::get_if<Layout>(&v)) layout(*l);
    else if (auto* m = std::get_if<LayoutMap>(&v)) {
      for (const auto& [buf, lay] : *m) {
        use_buffer(buf);
        layout(lay);
      }
    }
  }

  void layout(const Layout& l) {
    if (!l) return;
    for (const auto& e : l->input_shape) expr(e);
    TILEC_VERIFY(l->vars.size() == l->input_shape.size(), loc_, "give the layout function one parameter per dimension")
        << "a layout over " << plural(l->input_shape.size(), "dimension") << " has "
        << plural(l->vars.size(), "parameter");
    // Layout parameters are local to the layout; they may shadow nothing in scope.
    std::vector<Var> params = l->vars;
    if (l->rep_var) params.push_back(l->rep_var);
    for (const auto& v : params) {
      sites_.vars.emplace(v.get(), DefSite::kLayout);
      define(v);
    }
    for (const auto& e : l->forward_index) expr(e);
    if (l->forward_thread) expr(l->forward_thread);
    if (l->replicate) expr(l->replicate);
    for (const auto& v : params) undefine(v);
  }

  // ---------------------------------------------------------------- statements

  void stmt(const Stmt& s) {
    TILEC_VERIFY(s.defined(), loc_, "") << "a missing statement";
    LocScope scope(this, s->loc);
    switch (s->kind) {
#define TILEC_STMT(Kind, NodeClass)                         \
  case NodeKind::k##Kind:                                   \
    stmt_##Kind(static_cast<const NodeClass*>(s.get())); \
    return;
#include "tilec/ir/nodes.def"
      default:
        error(loc_, "") << "an expression (" << node_kind_name(s->kind) << ") in statement position";
    }
  }

  void stmt_Seq(const SeqNode* op) {
    for (const auto& s : op->stmts) stmt(s);
  }

  void stmt_For(const ForNode* op) {
    const std::string& name = op->loop_var->name;
    expr(op->min);
    expr(op->extent);
    TILEC_VERIFY(op->extent->dtype.is_integer() && op->extent->dtype.is_scalar(), loc_, "loop extents are integers")
        << "the extent of the loop over '" << name << "' has type " << op->extent->dtype.str();
    TILEC_VERIFY(op->min->dtype.is_integer() && op->min->dtype.is_scalar(), loc_, "loop bounds are integers")
        << "the start of the loop over '" << name << "' has type " << op->min->dtype.str();
    TILEC_VERIFY(op->loop_var->dtype.is_integer(), loc_, "")
        << "loop variable '" << name << "' has type " << op->loop_var->dtype.str() << ", expected an integer";
    if (op->for_kind == ForKind::kPipelined) {
      TILEC_VERIFY(op->pipeline.num_stages >= 0, loc_, "use num_stages=0 to disable pipelining")
          << "num_stages must be >= 0, got " << op->pipeline.num_stages;
      TILEC_VERIFY(op->pipeline.order.empty() || op->pipeline.stage.empty() ||
                op->pipeline.order.size() == op->pipeline.stage.size(),
            loc_, "give one order and one stage entry per statement of the loop body")
          << "order has " << op->pipeline.order.size() << " entries but stage has " << op->pipeline.stage.size();
    }
    if (op->for_kind == ForKind::kThreadBinding) {
      TILEC_VERIFY(!op->thread_tag.empty(), loc_, "write T.thread_binding(n, thread=\"threadIdx.x\")")
          << "thread-binding loop over '" << name << "' has no thread tag";
    }
    for (const auto& kv : op->annotations) attr(kv.second);
    define(op->loop_var);
    bool parallel = op->for_kind == ForKind::kParallel;
    parallel_depth_ += parallel;
    stmt(op->body);
    parallel_depth_ -= parallel;
    undefine(op->loop_var);
  }

  void stmt_While(const WhileNode* op) {
    expr(op->cond);
    TILEC_VERIFY(op->cond->dtype.is_bool(), loc_, "write a comparison, e.g. `while i[0] < n:`")
        << "while-condition has type " << op->cond->dtype.str() << ", expected bool";
    TILEC_VERIFY(parallel_depth_ == 0, loc_, "put the while loop around the T.Parallel loop, or use T.serial inside it")
        << "a while loop inside a T.Parallel loop: its iterations are spread over threads, so there is no one "
           "sequence of iterations to repeat until the condition fails";
    stmt(op->body);
  }

  void stmt_If(const IfNode* op) {
    expr(op->cond);
    TILEC_VERIFY(op->cond->dtype.is_bool(), loc_, "write a comparison, e.g. `if i < n:`")
        << "if-condition has type " << op->cond->dtype.str() << ", expected bool";
    stmt(op->then_case);
    if (op->else_case) stmt(op->else_case);
  }

  void stmt_Let(const LetNode* op) {
    expr(op->value);
    TILEC_VERIFY(op->var->dtype == op->value->dtype, loc_, "cast the value, e.g. T.cast(x, \"" + op->var->dtype.str() + "\")")
        << "variable '" << op->var->name << "' has type " << op->var->dtype.str() << " but its value has type "
        << op->value->dtype.str();
    define(op->var);
    stmt(op->body);
    undefine(op->var);
  }

  void stmt_BufferStore(const BufferStoreNode* op) {
    indices(op->buffer, op->indices, loc_);
    expr(op->value);
    const Buffer& b = op->buffer;
    TILEC_VERIFY(op->value->dtype.element_of() == b->dtype, loc_, "insert T.cast(value, \"" + b->dtype.str() + "\")")
        << "cannot store a value of type " << op->value->dtype.str() << " into buffer '" << b->name
        << "' of type " << b->dtype.str();
    int index_lanes = 1;
    for (const auto& i : op->indices) index_lanes = std::max(index_lanes, i->dtype.lanes());
    TILEC_VERIFY(op->value->dtype.lanes() == index_lanes, loc_, "store as many lanes as the indices address")
        << "a store of " << plural(op->value->dtype.lanes(), "lane") << " into buffer '" << b->name
        << "' with indices of " << plural(index_lanes, "lane");
  }

  void stmt_Evaluate(const EvaluateNode* op) { expr(op->value); }

  void stmt_Allocate(const AllocateNode* op) {
    const Buffer& b = op->buffer;
    TILEC_VERIFY(b.defined(), loc_, "") << "an allocation without a buffer";
    TILEC_VERIFY(b->scope != Scope::kGlobal || b->data, loc_,
                 "global tensors are function parameters or T.make_tensor views of an address")
        << "cannot allocate global buffer '" << b->name << "'";
    if (b->data) expr(Expr(b->data));  // the address must be in scope
    TILEC_VERIFY(kernel_depth_ > 0, loc_, "allocate shared, fragment and local buffers inside `with T.Kernel(...)`")
        << "on-chip buffer '" << b->name << "' (" << scope_name(b->scope) << ") is allocated outside T.Kernel";
    for (const auto& e : b->shape) {
      expr(e);
      TILEC_VERIFY(e->dtype.is_integer(), loc_, "shapes are integers")
          << "buffer '" << b->name << "' has an extent of type " << e->dtype.str();
    }
    for (const auto& e : b->strides) expr(e);
    if (b->scope == Scope::kVar) {
      TILEC_VERIFY(b->ndim() == 1 && is_one(b->shape[0]), loc_, "T.alloc_var holds one value; use T.alloc_local for arrays")
          << "variable buffer '" << b->name << "' must have shape (1,)";
    }
    TILEC_VERIFY(!buffers_.count(b.get()), loc_, "allocate a fresh buffer")
        << "buffer '" << b->name << "' is allocated again inside its own allocation";
    buffers_.insert(b.get());
    stmt(op->body);
    buffers_.erase(b.get());
  }

  void stmt_KernelLaunch(const KernelLaunchNode* op) {
    TILEC_VERIFY(kernel_depth_ == 0, loc_, "write one T.Kernel per function; use loops inside the kernel")
        << "T.Kernel inside T.Kernel is not supported";
    TILEC_VERIFY(!op->grid.empty() && op->grid.size() <= 3, loc_, "write T.Kernel(gx[, gy[, gz]], threads=...)")
        << "T.Kernel takes 1 to 3 grid extents, got " << op->grid.size();
    TILEC_VERIFY(op->block_vars.size() == op->grid.size(), loc_, "")
        << "T.Kernel has " << plural(op->grid.size(), "grid extent") << " but "
        << plural(op->block_vars.size(), "block index") << "";
    TILEC_VERIFY(!op->threads.empty() && op->threads.size() <= 3, loc_, "threads=128 or threads=(x, y[, z])")
        << "T.Kernel takes 1 to 3 thread extents, got " << op->threads.size();
    TILEC_VERIFY(op->thread_vars.size() == op->threads.size(), loc_, "")
        << "T.Kernel has " << plural(op->threads.size(), "thread extent") << " but "
        << plural(op->thread_vars.size(), "thread index");
    int64_t total = 1;
    for (int64_t t : op->threads) {
      TILEC_VERIFY(t > 0, loc_, "") << "thread extents must be positive, got " << t;
      total *= t;
    }
    TILEC_VERIFY(total <= 1024, loc_, "use at most 1024 threads per block") << "T.Kernel asks for " << total << " threads per block";
    TILEC_VERIFY(op->cluster.size() <= 3, loc_, "") << "cluster_dims takes at most 3 extents";
    for (int64_t c : op->cluster) TILEC_VERIFY(c > 0, loc_, "") << "cluster extents must be positive, got " << c;
    for (const auto& g : op->grid) {
      expr(g);
      TILEC_VERIFY(g->dtype.is_integer(), loc_, "") << "grid extents must be integers, got " << g->dtype.str();
    }
    for (const auto& v : op->block_vars) define(v);
    for (const auto& v : op->thread_vars) define(v);
    ++kernel_depth_;
    int saved_parallel = parallel_depth_;
    parallel_depth_ = 0;
    stmt(op->body);
    parallel_depth_ = saved_parallel;
    --kernel_depth_;
    for (const auto& v : op->block_vars) undefine(v);
    for (const auto& v : op->thread_vars) undefine(v);
  }

  void region(const BufferRegion& r, const std::string& op) {
    // Errors point at the tile op: a whole-buffer region carries its buffer's location.
    const Buffer& b = r.buffer;
    use_buffer(b);
    TILEC_VERIFY(static_cast<int>(r.region.size()) == b->ndim(), loc_, "give a range or an index for every dimension")
        << "region of '" << b->name << "' in T." << op << " has " << plural(r.region.size(), "dimension")
        << " but the buffer has " << b->ndim();
    for (size_t d = 0; d < r.region.size(); ++d) {
      const Range& rg = r.region[d];
      expr(rg.min);
      expr(rg.extent);
      TILEC_VERIFY(rg.min->dtype.is_integer() && rg.extent->dtype.is_integer(), loc_, "region bounds are integers")
          << "region of '" << b->name << "' in T." << op << " has a non-integer bound in dimension " << d;
      const int64_t* lo = as_const_int(rg.min);
      const int64_t* ext = as_const_int(rg.extent);
      const int64_t* dim = as_const_int(b->shape[d]);
      if (ext) {
        TILEC_VERIFY(*ext > 0, loc_, "") << "region of '" << b->name << "' in T." << op << " has extent " << *ext
                                  << " in dimension " << d;
      }
      // A T.copy region of a global tensor may run past its end (TileLang predicates the copy:
      // the part outside is neither read nor written, and a tile it fills gets zeros there).
      const bool clipped = b->scope == Scope::kGlobal && op == "copy";
      if (ext && dim && clipped) {
        TILEC_VERIFY(!lo || (*lo >= 0 && *lo < *dim), loc_, "the region must start inside the buffer")
            << "region of '" << b->name << "' in T." << op << " starts at " << *lo << " in dimension " << d
            << " but the buffer's extent there is " << *dim;
        continue;
      }
      if (ext && dim) {
        TILEC_VERIFY(*ext <= *dim, loc_, "the region must fit in the buffer; check the tile sizes")
            << "region of '" << b->name << "' in T." << op << " has extent " << *ext << " in dimension " << d
            << " but the buffer's extent there is " << *dim;
      }
      if (lo && ext && dim) {
        TILEC_VERIFY(*lo >= 0 && *lo + *ext <= *dim, loc_, "the region must fit in the buffer")
            << "region of '" << b->name << "' in T." << op << " covers [" << *lo << ", " << *lo + *ext
            << ") in dimension " << d << " but the buffer's extent there is " << *dim;
      }
    }
  }

  void stmt_TileOp(const TileOpNode* op) {
    const TileOpSchema* schema = find_tile_op(op->op);
    TILEC_VERIFY(schema != nullptr, loc_, "see docs/LANGUAGE.md for the T primitives") << "unknown tile op 'T." << op->op << "'";
    size_t required = 0;
    for (const auto& a : schema->args) required += a.optional ? 0 : 1;
    TILEC_VERIFY(op->args.size() >= required && op->args.size() <= schema->args.size(), loc_, "")
        << "T." << op->op << " takes " << required
        << (required == schema->args.size() ? "" : "-" + std::to_string(schema->args.size()))
        << " positional arguments but " << op->args.size() << " were given";
    for (size_t i = 0; i < op->args.size(); ++i) {
      const auto& spec = schema->args[i];
      if (auto* e = std::get_if<Expr>(&op->args[i])) {
        TILEC_VERIFY(spec.kind != ArgKind::kRegion, loc_, "pass a buffer (A_shared) or a region (A[i, j] / A[0:64, k])")
            << "argument '" << spec.name << "' of T." << op->op << " must be a buffer or a buffer region";
        expr(*e);
      } else {
        TILEC_VERIFY(spec.kind != ArgKind::kExpr, loc_, "")
            << "argument '" << spec.name << "' of T." << op->op << " must be a scalar expression, not a buffer";
        region(std::get<BufferRegion>(op->args[i]), op->op);
      }
    }
    for (const auto& kv : op->attrs) attr(kv.second);
  }

  void stmt_Annotate(const AnnotateNode* op) {
    attr(op->value);
    stmt(op->body);
  }
#undef TILEC_VERIFY

  const PrimFunc& f_;
  DefinitionSites sites_;
  SourceLoc loc_;
  std::unordered_set<const VarNode*> vars_;
  std::unordered_set<const BufferNode*> buffers_;
  int kernel_depth_ = 0;
  int parallel_depth_ = 0;
};

}  // namespace

void verify(const PrimFunc& f) {
  TILEC_ICHECK(f.defined()) << "verify of a null function";
  Verifier(f).run();
}

}  // namespace tilec::ir
