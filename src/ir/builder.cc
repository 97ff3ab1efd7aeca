#include "tilec/ir/builder.h"

#include <algorithm>

namespace tilec::ir {

Builder::Builder(std::string func_name, SourceLoc loc) : name_(std::move(func_name)), loc_(std::move(loc)) {
  frames_.push_back(make_frame(FrameKind::kFunction, loc_));
}

Builder::Frame& Builder::top() {
  TILEC_ICHECK(!frames_.empty()) << "builder used after finish()";
  return frames_.back();
}

void Builder::check_open(const SourceLoc& loc) const {
  TILEC_USER_CHECK(!frames_.empty(), loc, "") << "the function '" << name_ << "' is already finished";
}

Buffer Builder::tensor(const std::string& name, std::vector<Expr> shape, DataType dtype,
                       std::vector<Expr> strides, SourceLoc loc) {
  TILEC_USER_CHECK(frames_.size() == 1, loc, "declare tensors as function parameters")
      << "tensor parameter '" << name << "' declared inside the function body";
  Buffer b = make_buffer(name, std::move(shape), dtype, Scope::kGlobal, std::move(strides), loc);
  params_.push_back(Param{nullptr, b});
  return b;
}

Var Builder::scalar_param(const std::string& name, DataType dtype, SourceLoc loc) {
  Var v = make_var(name, dtype, loc);
  params_.push_back(Param{v, nullptr});
  return v;
}

void Builder::reorder_params(const std::vector<std::string>& names, SourceLoc loc) {
  TILEC_USER_CHECK(names.size() == params_.size(), loc, "name every parameter once")
      << "function '" << name_ << "' has " << params_.size() << " parameters, the new order names " << names.size();
  std::vector<Param> ordered;
  ordered.reserve(params_.size());
  for (const auto& name : names) {
    auto it = std::find_if(params_.begin(), params_.end(), [&](const Param& p) { return p.name() == name; });
    TILEC_USER_CHECK(it != params_.end(), loc, "name every parameter once")
        << "function '" << name_ << "' has no parameter '" << name << "'";
    for (const auto& done : ordered) {
      TILEC_USER_CHECK(done.name() != name, loc, "name every parameter once")
          << "parameter '" << name << "' is named twice in the new order";
    }
    ordered.push_back(*it);
  }
  params_ = std::move(ordered);
}

Var Builder::dynamic(const std::string& name, DataType dtype, SourceLoc loc) {
  return make_var(name, dtype, std::move(loc));
}

std::vector<Var> Builder::begin_kernel(std::vector<Expr> grid, std::vector<int64_t> threads,
                                       std::vector<int64_t> cluster, SourceLoc loc) {
  check_open(loc);
  TILEC_USER_CHECK(!grid.empty() && grid.size() <= 3, loc, "write T.Kernel(gx[, gy[, gz]], threads=...)")
      << "T.Kernel takes 1 to 3 grid extents, got " << grid.size();
  TILEC_USER_CHECK(!threads.empty() && threads.size() <= 3, loc, "threads=128 or threads=(x, y[, z])")
      << "T.Kernel takes 1 to 3 thread extents, got " << threads.size();
  int64_t total = 1;
  for (auto t : threads) {
    TILEC_USER_CHECK(t > 0, loc, "") << "thread extents must be positive, got " << t;
    total *= t;
  }
  TILEC_USER_CHECK(total <= 1024, loc, "use at most 1024 threads per block")
      << "T.Kernel asks for " << total << " threads per block";
  TILEC_USER_CHECK(cluster.size() <= 3, loc, "") << "cluster_dims takes at most 3 extents";
  for (const auto& g : grid)
    TILEC_USER_CHECK(g->dtype.is_integer(), loc, "") << "grid extents must be integers, got " << g->dtype.str();
  auto k = std::make_shared<KernelLaunchNode>();
  static const char* kBlockNames[] = {"bx", "by", "bz"};
  static const char* kThreadNames[] = {"tx", "ty", "tz"};
  for (size_t i = 0; i < grid.size(); ++i) k->block_vars.push_back(make_var(kBlockNames[i], DataType::Int(32), loc));
  for (size_t i = 0; i < threads.size(); ++i)
    k->thread_vars.push_back(make_var(kThreadNames[i], DataType::Int(32), loc));
  k->grid = std::move(grid);
  k->threads = std::move(threads);
  k->cluster = std::move(cluster);
  k->loc = loc;
  Frame f = make_frame(FrameKind::kKernel, loc);
  f.kernel = k;
  frames_.push_back(std::move(f));
  thread_var_stack_.push_back(k->thread_vars);
  return k->block_vars;
}

const std::vector<Var>& Builder::thread_vars() const {
  if (thread_var_stack_.empty()) throw_user_error("thread index used outside T.Kernel", loc_);
  return thread_var_stack_.back();
}

Var Builder::begin_for(const std::string& var_name, Expr min, Expr extent, ForKind kind, PipelineInfo pipeline,
                       AttrMap annotations, SourceLoc loc, std::string thread_tag) {
  check_open(loc);
  TILEC_USER_CHECK((kind == ForKind::kThreadBinding) == !thread_tag.empty(), loc,
                   "write T.thread_binding(n, thread=\"threadIdx.x\")")
      << "a thread-binding loop needs a thread tag, and only thread-binding loops take one";
  auto n = std::make_shared<ForNode>();
  n->loop_var = make_var(var_name, extent->dtype.is_integer() ? extent->dtype : DataType::Int(32), loc);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->for_kind = kind;
  n->pipeline = std::move(pipeline);
  n->annotations = std::move(annotations);
  n->thread_tag = std::move(thread_tag);
  n->loc = loc;
  Frame f = make_frame(FrameKind::kFor, loc);
  f.loops.push_back(n);
  frames_.push_back(std::move(f));
  return n->loop_var;
}

std::vector<Var> Builder::begin_loop_nest(const std::vector<std::string>& names, std::vector<Expr> extents,
                                          ForKind kind, SourceLoc loc) {
  check_open(loc);
  TILEC_ICHECK(names.size() == extents.size()) << "loop nest arity";
  Frame f = make_frame(FrameKind::kLoopNest, loc);
  std::vector<Var> vars;
  for (size_t i = 0; i < names.size(); ++i) {
    auto n = std::make_shared<ForNode>();
    DataType t = extents[i]->dtype.is_integer() ? extents[i]->dtype : DataType::Int(32);
    n->loop_var = make_var(names[i], t, loc);
    n->min = int_imm(0, t);
    n->extent = extents[i];
    n->for_kind = kind;
    n->loc = loc;
    vars.push_back(n->loop_var);
    f.loops.push_back(n);
  }
  frames_.push_back(std::move(f));
  return vars;
}

void Builder::begin_if(Expr cond, SourceLoc loc) {
  check_open(loc);
  TILEC_USER_CHECK(cond->dtype.is_bool(), loc, "write a comparison, e.g. `if i < n:`")
      << "if-condition has type " << cond->dtype.str() << ", expected bool";
  Frame f = make_frame(FrameKind::kThen, loc);
  f.cond = std::move(cond);
  frames_.push_back(std::move(f));
}

void Builder::begin_while(Expr cond, SourceLoc loc) {
  check_open(loc);
  TILEC_USER_CHECK(cond->dtype.is_bool(), loc, "write a comparison, e.g. `while i[0] < n:`")
      << "while-condition has type " << cond->dtype.str() << ", expected bool";
  Frame f = make_frame(FrameKind::kWhile, loc);
  f.cond = std::move(cond);
  frames_.push_back(std::move(f));
}

void Builder::begin_else(SourceLoc loc) {
  TILEC_USER_CHECK(frames_.size() > 1 && top().kind == FrameKind::kThen, loc, "") << "else without an if";
  Frame then = std::move(frames_.back());
  frames_.pop_back();
  Frame f = make_frame(FrameKind::kElse, loc);
  f.cond = then.cond;
  f.then_body = close_body(then);
  f.loc = then.loc;
  frames_.push_back(std::move(f));
}

void Builder::begin_annotate(std::string key, AttrValue value, SourceLoc loc) {
  check_open(loc);
  Frame f = make_frame(FrameKind::kAnnotate, loc);
  f.key = std::move(key);
  f.value = std::move(value);
  frames_.push_back(std::move(f));
}

Stmt Builder::close_body(Frame& f) {
  // Lets enclose the statements that follow them; walk them innermost first.
  std::vector<Stmt> stmts = std::move(f.stmts);
  for (size_t li = f.lets.size(); li-- > 0;) {
    size_t start = f.let_starts[li];
    std::vector<Stmt> tail(stmts.begin() + static_cast<long>(start), stmts.end());
    Stmt body = tail.empty() ? ir::evaluate(int_imm(0)) : seq(std::move(tail));
    stmts.resize(start);
    if (const Buffer& b = f.let_buffers[li]) {
      stmts.push_back(ir::allocate(b, body, b->loc));
    } else {
      stmts.push_back(ir::let(f.lets[li].first, f.lets[li].second, body, f.lets[li].first->loc));
    }
  }
  Stmt body = stmts.empty() ? ir::evaluate(int_imm(0), f.loc) : seq(std::move(stmts), f.loc);
  for (size_t i = f.allocs.size(); i-- > 0;) body = ir::allocate(f.allocs[i], body, f.allocs[i]->loc);
  return body;
}

void Builder::end_frame() {
  TILEC_USER_CHECK(frames_.size() > 1, loc_, "") << "end_frame() without an open frame";
  Frame f = std::move(frames_.back());
  frames_.pop_back();
  Stmt body = close_body(f);
  Stmt result;
  switch (f.kind) {
    case FrameKind::kKernel:
      f.kernel->body = body;
      result = Stmt(std::shared_ptr<const KernelLaunchNode>(f.kernel));
      thread_var_stack_.pop_back();
      break;
    case FrameKind::kFor:
    case FrameKind::kLoopNest:
      for (size_t i = f.loops.size(); i-- > 0;) {
        f.loops[i]->body = body;
        body = Stmt(std::shared_ptr<const ForNode>(f.loops[i]));
      }
      result = body;
      break;
    case FrameKind::kWhile:
      result = make_while(f.cond, body, f.loc);
      break;
    case FrameKind::kThen:
      result = if_then_else(f.cond, body, nullptr, f.loc);
      break;
    case FrameKind::kElse:
      result = if_then_else(f.cond, f.then_body, body, f.loc);
      break;
    case FrameKind::kAnnotate:
      result = ir::annotate(f.key, f.value, body, f.loc);
      break;
    case FrameKind::kFunction:
      TILEC_UNREACHABLE() << "function frame closed by end_frame";
  }
  top().stmts.push_back(result);
}

Buffer Builder::alloc(const std::string& name, std::vector<Expr> shape, DataType dtype, Scope scope, SourceLoc loc) {
  check_open(loc);
  TILEC_USER_CHECK(frames_.size() > 1, loc, "allocate buffers inside `with T.Kernel(...)`")
      << "buffer '" << name << "' allocated outside a kernel";
  TILEC_USER_CHECK(scope != Scope::kGlobal, loc, "") << "cannot allocate global buffer '" << name << "' in a kernel";
  for (const auto& e : shape) {
    TILEC_USER_CHECK(as_const_int(e) && *as_const_int(e) > 0, loc,
                     "on-chip buffers need constant, positive extents (block sizes)")
        << "buffer '" << name << "' has a non-constant or non-positive extent";
  }
  Buffer b = make_buffer(name, std::move(shape), dtype, scope, {}, loc);
  top().allocs.push_back(b);
  return b;
}

Buffer Builder::alloc_view(const std::string& name, std::vector<Expr> shape, const Buffer& base, SourceLoc loc,
                           std::optional<DataType> dtype) {
  check_open(loc);
  TILEC_USER_CHECK(frames_.size() > 1, loc, "reshape buffers inside `with T.Kernel(...)`")
      << "T.reshape of '" << base->name << "' outside a kernel";
  for (const auto& e : shape)
    TILEC_USER_CHECK(as_const_int(e) && *as_const_int(e) > 0, loc, "on-chip buffers need constant, positive extents")
        << "T.reshape of '" << base->name << "' to a non-constant or non-positive extent";
  Buffer b = make_view(name, std::move(shape), base, loc, dtype);
  top().allocs.push_back(b);
  return b;
}

void Builder::emit(Stmt s) {
  check_open(s ? s->loc : loc_);
  TILEC_USER_CHECK(frames_.size() > 1, s->loc, "put statements inside `with T.Kernel(...)`")
      << "statement outside a kernel";
  top().stmts.push_back(std::move(s));
}

void Builder::store(const Buffer& b, std::vector<Expr> indices, Expr value, SourceLoc loc) {
  emit(buffer_store(b, std::move(indices), std::move(value), std::move(loc)));
}

void Builder::tile_op(const std::string& op, std::vector<TileArg> args, AttrMap attrs, SourceLoc loc) {
  emit(make_tile_op(op, std::move(args), std::move(attrs), std::move(loc)));
}

void Builder::evaluate(Expr e, SourceLoc loc) { emit(ir::evaluate(std::move(e), std::move(loc))); }

Var Builder::let(const std::string& name, Expr value, SourceLoc loc) {
  check_open(loc);
  Var v = make_var(name, value->dtype, loc);
  Frame& f = top();
  f.let_starts.push_back(f.stmts.size());
  f.lets.emplace_back(v, std::move(value));
  f.let_buffers.emplace_back();
  return v;
}

Buffer Builder::make_tensor(const std::string& name, Expr address, std::vector<Expr> shape, DataType dtype,
                            std::vector<Expr> strides, SourceLoc loc) {
  check_open(loc);
  TILEC_USER_CHECK(frames_.size() > 1, loc, "call T.make_tensor inside `with T.Kernel(...)`")
      << "T.make_tensor('" << name << "') outside a kernel";
  Var data = address.as<VarNode>() ? Var(std::static_pointer_cast<const VarNode>(address.shared()))
                                   : let(name + "_ptr", std::move(address), loc);
  Buffer b = make_pointer_tensor(name, std::move(shape), dtype, std::move(strides), data, loc);
  // Declared like a let: from this statement on (inside the address's let when there is one).
  Frame& f = top();
  f.let_starts.push_back(f.stmts.size());
  f.lets.emplace_back(data, Expr());
  f.let_buffers.push_back(b);
  return b;
}

void Builder::kernel(std::vector<Expr> grid, std::vector<int64_t> threads,
                     const std::function<void(const std::vector<Var>&)>& body) {
  auto vars = begin_kernel(std::move(grid), std::move(threads));
  body(vars);
  end_frame();
}

void Builder::loop(const std::string& name, Expr extent, ForKind kind, const std::function<void(Var)>& body,
                   PipelineInfo pipeline) {
  Var v = begin_for(name, int_imm(0, extent->dtype), extent, kind, std::move(pipeline));
  body(v);
  end_frame();
}

PrimFunc Builder::finish(AttrMap attrs) {
  TILEC_USER_CHECK(frames_.size() == 1, loc_, "close every `with`/`for`/`if` before finishing")
      << "function '" << name_ << "' finished with " << frames_.size() - 1 << " open frame(s)";
  Frame f = std::move(frames_.back());
  frames_.clear();
  return make_prim_func(name_, params_, close_body(f), std::move(attrs), loc_);
}

}  // namespace tilec::ir
