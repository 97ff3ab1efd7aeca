// Statement, buffer, layout and function constructors.
#include "tilec/ir/stmt.h"

namespace tilec::ir {

namespace {
template <typename N>
Stmt finish(std::shared_ptr<N> n, SourceLoc loc) {
  n->loc = std::move(loc);
  return Stmt(std::shared_ptr<const N>(std::move(n)));
}
}  // namespace

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::kGlobal: return "global";
    case Scope::kShared: return "shared";
    case Scope::kSharedDyn: return "shared.dyn";
    case Scope::kFragment: return "local.fragment";
    case Scope::kLocal: return "local";
    case Scope::kVar: return "local.var";
    case Scope::kBarrier: return "shared.barrier";
    case Scope::kTmem: return "shared.tmem";
  }
  return "?";
}

std::optional<Scope> parse_scope(const std::string& name) {
  for (Scope s : {Scope::kGlobal, Scope::kShared, Scope::kSharedDyn, Scope::kFragment, Scope::kLocal,
                  Scope::kVar, Scope::kBarrier, Scope::kTmem}) {
    if (name == scope_name(s)) return s;
  }
  if (name == "fragment") return Scope::kFragment;
  return std::nullopt;
}

bool is_shared(Scope s) { return s == Scope::kShared || s == Scope::kSharedDyn; }

Buffer make_buffer(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                   std::vector<Expr> strides, SourceLoc loc) {
  auto n = std::make_shared<BufferNode>();
  n->name = std::move(name);
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->scope = scope;
  n->strides = std::move(strides);
  n->loc = std::move(loc);
  for (const auto& e : n->shape) {
    TILEC_USER_CHECK(e.defined() && e->dtype.is_integer(), n->loc, "shapes are integers")
        << "buffer '" << n->name << "' has a non-integer extent";
  }
  TILEC_USER_CHECK(n->strides.empty() || n->strides.size() == n->shape.size(), n->loc,
                   "give one stride per dimension")
      << "buffer '" << n->name << "' has " << n->shape.size() << " dimensions but "
      << n->strides.size() << " strides";
  return Buffer(std::shared_ptr<const BufferNode>(std::move(n)));
}

Buffer make_view(std::string name, std::vector<Expr> shape, const Buffer& base, SourceLoc loc,
                 std::optional<DataType> dtype) {
  const DataType t = dtype.value_or(base->dtype);
  const bool shared = base->scope == Scope::kSharedDyn;
  const char* what = t == base->dtype ? "T.reshape" : "T.view";
  TILEC_USER_CHECK(base->scope != Scope::kShared, loc, "allocate it with the default scope (T.alloc_shared(shape, dtype))")
      << what << " of '" << base->name << "': views of static shared memory (scope=\"shared\") are not supported";
  TILEC_USER_CHECK(shared || base->scope == Scope::kFragment || base->scope == Scope::kLocal, loc,
                   "reshape the buffer the data is in, or index the buffer with arithmetic")
      << what << " of '" << base->name << "' (" << scope_name(base->scope)
      << "): tilec views fragments, local buffers and shared memory";
  TILEC_USER_CHECK(shared || t == base->dtype, loc,
                   "registers hold values, not bytes: convert with T.cast into a buffer of the dtype you need")
      << "T.view of '" << base->name << "' (" << scope_name(base->scope) << ", " << base->dtype.str() << ") as "
      << t.str() << ": tilec reinterprets shared memory only";
  TILEC_USER_CHECK(base->strides.empty(), loc, "") << what << " of '" << base->name << "', which has strides";
  int64_t n = 1, m = 1;
  bool known = true;
  for (const auto& e : shape) {
    auto* c = as_const_int(e);
    known &= c != nullptr;
    if (c) n *= *c;
  }
  for (const auto& e : base->shape) {
    auto* c = as_const_int(e);
    known &= c != nullptr;
    if (c) m *= *c;
  }
  const int64_t view_bits = n * t.bits() * t.lanes(), base_bits = m * base->dtype.bits() * base->dtype.lanes();
  if (t == base->dtype) {
    TILEC_USER_CHECK(!known || n == m, loc, "the new shape must hold exactly the buffer's elements")
        << what << " of '" << base->name << "' (" << m << " elements) to a shape of " << n << " elements";
  } else {
    TILEC_USER_CHECK(known && view_bits == base_bits, loc, "the view must cover exactly the buffer's bytes")
        << what << " of '" << base->name << "' (" << base_bits / 8 << " bytes) as " << n << " " << t.str()
        << " elements (" << view_bits / 8 << " bytes)";
  }
  Buffer b = make_buffer(std::move(name), std::move(shape), t, base->scope, {}, std::move(loc));
  auto node = std::make_shared<BufferNode>(*b);
  node->viewed = base;
  return Buffer(std::shared_ptr<const BufferNode>(std::move(node)));
}

Buffer make_pointer_tensor(std::string name, std::vector<Expr> shape, DataType dtype, std::vector<Expr> strides,
                           Var data, SourceLoc loc) {
  TILEC_ICHECK(data.defined()) << "T.make_tensor without an address";
  const bool address = data->dtype.lanes() == 1 && ((data->dtype.is_integer() && data->dtype.bits() == 64) ||
                                                     data->dtype.code() == TypeCode::kHandle);
  TILEC_USER_CHECK(address, loc,
                   "pass an address: a pointer parameter (`a: T.ptr`) or an element of a T.Tensor([n], T.ptr) "
                   "(int64) table, e.g. ptrs[i]")
      << "T.make_tensor('" << name << "'): the address is " << data->dtype.str()
      << ", not a pointer or a 64-bit integer";
  TILEC_USER_CHECK(strides.empty() || strides.size() == shape.size(), loc, "give one stride per dimension")
      << "T.make_tensor('" << name << "') has " << shape.size() << " dimensions and " << strides.size() << " strides";
  Buffer b = make_buffer(std::move(name), std::move(shape), dtype, Scope::kGlobal, std::move(strides), std::move(loc));
  auto node = std::make_shared<BufferNode>(*b);
  node->data = std::move(data);
  return Buffer(std::shared_ptr<const BufferNode>(std::move(node)));
}

const BufferNode* storage_root(const BufferNode* b) {
  while (b && b->viewed) b = b->viewed.get();
  return b;
}

std::vector<Expr> buffer_strides(const Buffer& b) {
  if (!b->strides.empty()) return b->strides;
  std::vector<Expr> strides(b->shape.size());
  Expr acc = int_imm(1, b->shape.empty() ? DataType::Int(32) : b->shape.back()->dtype);
  for (int i = b->ndim() - 1; i >= 0; --i) {
    strides[i] = acc;
    if (i > 0) {
      const int64_t* x = as_const_int(acc);
      const int64_t* y = as_const_int(b->shape[i]);
      acc = (x && y) ? int_imm(*x * *y, acc->dtype) : acc * b->shape[i];
    }
  }
  return strides;
}

BufferRegion BufferRegion::full(const Buffer& b) {
  BufferRegion r;
  r.buffer = b;
  for (const auto& e : b->shape) r.region.push_back({int_imm(0, e->dtype), e});
  r.loc = b->loc;
  return r;
}

Layout make_layout(std::vector<Expr> input_shape, std::vector<Var> vars, std::vector<Expr> forward_index) {
  TILEC_ICHECK(input_shape.size() == vars.size()) << "layout arity";
  auto n = std::make_shared<LayoutNode>();
  n->input_shape = std::move(input_shape);
  n->vars = std::move(vars);
  n->forward_index = std::move(forward_index);
  return Layout(std::shared_ptr<const LayoutNode>(std::move(n)));
}

Layout make_fragment(std::vector<Expr> input_shape, std::vector<Var> vars, std::vector<Expr> forward_index,
                     Expr forward_thread, Expr replicate, Var rep_var) {
  TILEC_ICHECK(input_shape.size() == vars.size()) << "fragment arity";
  TILEC_ICHECK(forward_thread.defined()) << "fragment without a thread map";
  auto n = std::make_shared<LayoutNode>();
  n->input_shape = std::move(input_shape);
  n->vars = std::move(vars);
  n->forward_index = std::move(forward_index);
  n->forward_thread = std::move(forward_thread);
  n->replicate = replicate.defined() ? std::move(replicate) : int_imm(1);
  n->rep_var = rep_var.defined() ? std::move(rep_var) : make_var("rep");
  return Layout(std::shared_ptr<const LayoutNode>(std::move(n)));
}

const AttrValue* find_attr(const AttrMap& attrs, const std::string& key) {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "Parallel";
    case ForKind::kPipelined: return "Pipelined";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

Stmt seq(std::vector<Stmt> stmts, SourceLoc loc) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s) continue;
    if (auto* q = s.as<SeqNode>()) flat.insert(flat.end(), q->stmts.begin(), q->stmts.end());
    else flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  return finish(std::make_shared<SeqNode>(std::move(flat)), std::move(loc));
}

Stmt make_for(Var v, Expr min, Expr extent, ForKind kind, Stmt body, SourceLoc loc, PipelineInfo pipeline,
              std::string thread_tag, AttrMap annotations) {
  TILEC_USER_CHECK(extent->dtype.is_integer(), loc, "loop extents are integers")
      << "loop over '" << v->name << "' has extent of type " << extent->dtype.str();
  if (kind == ForKind::kPipelined) {
    TILEC_USER_CHECK(pipeline.num_stages >= 0, loc, "use num_stages=0 to disable pipelining")
        << "num_stages must be >= 0, got " << pipeline.num_stages;
    TILEC_USER_CHECK(pipeline.order.empty() || pipeline.stage.empty() ||
                         pipeline.order.size() == pipeline.stage.size(),
                     loc, "give one order and one stage entry per statement of the loop body")
        << "order has " << pipeline.order.size() << " entries but stage has " << pipeline.stage.size();
  }
  auto n = std::make_shared<ForNode>();
  n->loop_var = std::move(v);
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->for_kind = kind;
  n->body = std::move(body);
  n->pipeline = std::move(pipeline);
  n->thread_tag = std::move(thread_tag);
  n->annotations = std::move(annotations);
  return finish(std::move(n), std::move(loc));
}

Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case, SourceLoc loc) {
  TILEC_USER_CHECK(cond->dtype.is_bool(), loc, "write a comparison, e.g. `if i < n:`")
      << "if-condition has type " << cond->dtype.str() << ", expected bool";
  return finish(std::make_shared<IfNode>(std::move(cond), std::move(then_case), std::move(else_case)),
                std::move(loc));
}

Stmt make_while(Expr cond, Stmt body, SourceLoc loc) {
  TILEC_USER_CHECK(cond->dtype.is_bool(), loc, "write a comparison, e.g. `while i[0] < n:`")
      << "while-condition has type " << cond->dtype.str() << ", expected bool";
  return finish(std::make_shared<WhileNode>(std::move(cond), std::move(body)), std::move(loc));
}

Stmt let(Var v, Expr value, Stmt body, SourceLoc loc) {
  return finish(std::make_shared<LetNode>(std::move(v), std::move(value), std::move(body)), std::move(loc));
}

Stmt buffer_store(Buffer b, std::vector<Expr> indices, Expr value, SourceLoc loc) {
  TILEC_ICHECK(b.defined()) << "store to a null buffer";
  if (static_cast<int>(indices.size()) != b->ndim()) {
    throw_user_error("buffer '" + b->name + "' has " + std::to_string(b->ndim()) +
                         " dimensions but is indexed with " + std::to_string(indices.size()),
                     loc, "give one index per dimension");
  }
  if (value->dtype.element_of() != b->dtype) {
    if (value.as<IntImmNode>() && (b->dtype.is_integer() || b->dtype.is_float())) {
      value = b->dtype.is_float() ? float_imm(static_cast<double>(value.as<IntImmNode>()->value), b->dtype, value->loc)
                                  : int_imm(value.as<IntImmNode>()->value, b->dtype, value->loc);
    } else if (value.as<FloatImmNode>() && b->dtype.is_float()) {
      value = float_imm(value.as<FloatImmNode>()->value, b->dtype, value->loc);
    } else {
      throw_user_error("cannot store a value of type " + value->dtype.str() + " into buffer '" + b->name +
                           "' of type " + b->dtype.str(),
                       loc, "insert T.cast(value, \"" + b->dtype.str() + "\")");
    }
  }
  return finish(std::make_shared<BufferStoreNode>(std::move(b), std::move(indices), std::move(value)),
                std::move(loc));
}

Stmt evaluate(Expr value, SourceLoc loc) { return finish(std::make_shared<EvaluateNode>(std::move(value)), std::move(loc)); }

Stmt allocate(Buffer b, Stmt body, SourceLoc loc) {
  return finish(std::make_shared<AllocateNode>(std::move(b), std::move(body)), std::move(loc));
}

Stmt allocate_all(const std::vector<Buffer>& buffers, Stmt body, SourceLoc loc) {
  for (size_t i = buffers.size(); i-- > 0;) body = allocate(buffers[i], std::move(body), loc);
  return body;
}

Stmt annotate(std::string key, AttrValue value, Stmt body, SourceLoc loc) {
  auto n = std::make_shared<AnnotateNode>();
  n->key = std::move(key);
  n->value = std::move(value);
  n->body = std::move(body);
  return finish(std::move(n), std::move(loc));
}

const std::string& Param::name() const { return buffer ? buffer->name : var->name; }

PrimFunc make_prim_func(std::string name, std::vector<Param> params, Stmt body, AttrMap attrs, SourceLoc loc) {
  auto n = std::make_shared<PrimFuncNode>();
  n->name = std::move(name);
  n->params = std::move(params);
  n->body = std::move(body);
  n->attrs = std::move(attrs);
  n->loc = std::move(loc);
  return PrimFunc(std::shared_ptr<const PrimFuncNode>(std::move(n)));
}

PrimFunc with_body(const PrimFunc& f, Stmt body) {
  if (f->body.same_as(body)) return f;
  return make_prim_func(f->name, f->params, std::move(body), f->attrs, f->loc);
}

}  // namespace tilec::ir
