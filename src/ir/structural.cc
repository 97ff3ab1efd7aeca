// Structural equality and hashing.
//
// Contract: two IR trees are equal when they have the same node kinds, types and field
// values, up to a consistent one-to-one renaming of the variables and buffers *defined*
// inside them. Definition sites: function parameters (scalar vars and tensor buffers), the
// free variables of the parameters' shapes and strides (symbolic sizes, T.dynamic), loop
// variables, Let variables, a kernel's block and thread variables, allocated buffers, and a
// layout's lambda variables (including the replication variable). Any other (free) variable
// or buffer compares by identity. Source locations and the names of variables, buffers and
// the function itself are ignored. Floating-point values compare by bit pattern.
// The hash is consistent with equality: equal trees hash equal (defined objects hash by
// the order of their definition, free ones by address).
//
// Algorithm: one list of fields per node (`fields(a, b, r)`), walked by two reducers —
// Equal (walks two trees in lockstep, stops at the first difference) and Hasher (walks one
// tree; `b` is the same tree). Sharing the field lists keeps the two in agreement, and the
// X-macro dispatch makes a missing node kind a compile error.
#include "tilec/ir/structural.h"

#include <cstring>
#include <unordered_map>

namespace tilec::ir {

namespace {

// ---------------------------------------------------------------- reducers

class Equal {
 public:
  bool ok() const { return ok_; }
  void fail() { ok_ = false; }
  // Both present or both absent; returns true when both are present (and the walk goes on).
  bool present(const void* a, const void* b) {
    if ((a == nullptr) != (b == nullptr)) ok_ = false;
    return ok_ && a != nullptr;
  }
  template <typename T>
  void pod(const T& a, const T& b) {
    if (!(a == b)) ok_ = false;
  }
  void real(double a, double b) {
    if (std::memcmp(&a, &b, sizeof a) != 0) ok_ = false;
  }
  void define_var(const VarNode* a, const VarNode* b) {
    if (a->dtype != b->dtype) {
      ok_ = false;
      return;
    }
    rebind(vars_, rvars_, a, b);
  }
  void use_var(const VarNode* a, const VarNode* b) {
    if (auto it = vars_.find(a); it != vars_.end()) {
      if (it->second != b) ok_ = false;
      return;
    }
    if (rvars_.count(b)) {
      ok_ = false;  // b is defined in its tree but a is free in its own
      return;
    }
    if (signature_) {
      define_var(a, b);  // a symbolic size, defined by the signature
      return;
    }
    if (a != b) ok_ = false;
  }
  void define_buffer(const BufferNode* a, const BufferNode* b) { rebind(bufs_, rbufs_, a, b); }
  void use_buffer(const BufferNode* a, const BufferNode* b) {
    if (auto it = bufs_.find(a); it != bufs_.end()) {
      if (it->second != b) ok_ = false;
      return;
    }
    if (rbufs_.count(b) || a != b) ok_ = false;
  }
  bool signature_ = false;

 private:
  template <typename N>
  static void rebind(std::unordered_map<const N*, const N*>& fwd, std::unordered_map<const N*, const N*>& rev,
                     const N* a, const N* b) {
    if (auto it = fwd.find(a); it != fwd.end()) rev.erase(it->second);
    if (auto it = rev.find(b); it != rev.end()) fwd.erase(it->second);
    fwd[a] = b;
    rev[b] = a;
  }
  bool ok_ = true;
  std::unordered_map<const VarNode*, const VarNode*> vars_, rvars_;
  std::unordered_map<const BufferNode*, const BufferNode*> bufs_, rbufs_;
};

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Hasher {
 public:
  bool ok() const { return true; }
  bool present(const void* a, const void*) {
    add(a != nullptr ? 0x51 : 0x50);
    return a != nullptr;
  }
  template <typename T>
  void pod(const T& a, const T&) {
    if constexpr (std::is_same_v<T, DataType>) {
      add((static_cast<uint64_t>(a.code()) << 32) ^ (static_cast<uint64_t>(a.bits()) << 16) ^ a.lanes());
    } else if constexpr (std::is_same_v<T, std::string>) {
      uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: stable across runs and builds
      for (unsigned char c : a) h = (h ^ c) * 0x100000001b3ULL;
      add(h);
      add(a.size());
    } else {
      add(static_cast<uint64_t>(a));
    }
  }
  void real(double a, double) {
    uint64_t bits;
    std::memcpy(&bits, &a, sizeof bits);
    add(bits);
  }
  void define_var(const VarNode* a, const VarNode*) {
    pod(a->dtype, a->dtype);
    vars_[a] = next_++;
  }
  void use_var(const VarNode* a, const VarNode*) {
    auto it = vars_.find(a);
    if (it == vars_.end() && signature_) {
      define_var(a, a);
      it = vars_.find(a);
    }
    if (it != vars_.end()) {
      add(0xdef0 ^ it->second);
    } else {
      add(reinterpret_cast<uintptr_t>(a));
    }
  }
  void define_buffer(const BufferNode* a, const BufferNode*) { bufs_[a] = next_++; }
  void use_buffer(const BufferNode* a, const BufferNode*) {
    auto it = bufs_.find(a);
    add(it != bufs_.end() ? (0xbef0 ^ it->second) : reinterpret_cast<uintptr_t>(a));
  }
  uint64_t value() const { return h_; }
  bool signature_ = false;

 private:
  void add(uint64_t v) { h_ = mix64(h_ ^ mix64(v)); }
  uint64_t h_ = 0x7117ec;
  uint64_t next_ = 1;
  std::unordered_map<const VarNode*, uint64_t> vars_;
  std::unordered_map<const BufferNode*, uint64_t> bufs_;
};

// ---------------------------------------------------------------- compound fields

template <class R> void expr(R& r, const Expr& a, const Expr& b);
template <class R> void stmt(R& r, const Stmt& a, const Stmt& b);

template <class R>
void exprs(R& r, const std::vector<Expr>& a, const std::vector<Expr>& b) {
  r.pod(a.size(), b.size());
  for (size_t i = 0; r.ok() && i < a.size(); ++i) expr(r, a[i], b[i]);
}

template <class R, typename T>
void pods(R& r, const std::vector<T>& a, const std::vector<T>& b) {
  r.pod(a.size(), b.size());
  for (size_t i = 0; r.ok() && i < a.size(); ++i) r.pod(a[i], b[i]);
}

template <class R>
void define_var(R& r, const Var& a, const Var& b) {
  if (r.present(a.get(), b.get())) r.define_var(a.get(), b.get());
}

template <class R>
void define_vars(R& r, const std::vector<Var>& a, const std::vector<Var>& b) {
  r.pod(a.size(), b.size());
  for (size_t i = 0; r.ok() && i < a.size(); ++i) define_var(r, a[i], b[i]);
}

template <class R>
void use_buffer(R& r, const Buffer& a, const Buffer& b);

// A buffer's declaration: type, scope, shape and strides (names ignored), the buffer a
// view views, and the address variable of a T.make_tensor buffer.
template <class R>
void buffer_decl(R& r, const Buffer& a, const Buffer& b) {
  r.pod(a->dtype, b->dtype);
  r.pod(a->scope, b->scope);
  exprs(r, a->shape, b->shape);
  exprs(r, a->strides, b->strides);
  r.pod(a->viewed.defined(), b->viewed.defined());
  if (r.ok() && a->viewed && b->viewed) use_buffer(r, a->viewed, b->viewed);
  r.pod(a->data.defined(), b->data.defined());
  if (r.ok() && a->data && b->data) expr(r, Expr(a->data), Expr(b->data));
}

template <class R>
void define_buffer(R& r, const Buffer& a, const Buffer& b) {
  if (!r.present(a.get(), b.get())) return;
  buffer_decl(r, a, b);
  if (r.ok()) r.define_buffer(a.get(), b.get());
}

template <class R>
void use_buffer(R& r, const Buffer& a, const Buffer& b) {
  if (r.present(a.get(), b.get())) r.use_buffer(a.get(), b.get());
}

template <class R>
void region(R& r, const BufferRegion& a, const BufferRegion& b) {
  use_buffer(r, a.buffer, b.buffer);
  r.pod(a.region.size(), b.region.size());
  for (size_t i = 0; r.ok() && i < a.region.size(); ++i) {
    expr(r, a.region[i].min, b.region[i].min);
    expr(r, a.region[i].extent, b.region[i].extent);
  }
}

template <class R>
void layout(R& r, const Layout& a, const Layout& b) {
  if (!r.present(a.get(), b.get())) return;
  exprs(r, a->input_shape, b->input_shape);
  define_vars(r, a->vars, b->vars);
  define_var(r, a->rep_var, b->rep_var);
  exprs(r, a->forward_index, b->forward_index);
  expr(r, a->forward_thread, b->forward_thread);
  expr(r, a->replicate, b->replicate);
}

template <class R>
void attr(R& r, const AttrValue& a, const AttrValue& b) {
  r.pod(a.index(), b.index());
  if (!r.ok()) return;
  if (auto* x = std::get_if<bool>(&a)) r.pod(*x, std::get<bool>(b));
  else if (auto* x = std::get_if<int64_t>(&a)) r.pod(*x, std::get<int64_t>(b));
  else if (auto* x = std::get_if<double>(&a)) r.real(*x, std::get<double>(b));
  else if (auto* x = std::get_if<std::string>(&a)) r.pod(*x, std::get<std::string>(b));
  else if (auto* x = std::get_if<Expr>(&a)) expr(r, *x, std::get<Expr>(b));
  else if (auto* x = std::get_if<Buffer>(&a)) use_buffer(r, *x, std::get<Buffer>(b));
  else if (auto* x = std::get_if<Layout>(&a)) layout(r, *x, std::get<Layout>(b));
  else if (auto* x = std::get_if<std::vector<int64_t>>(&a)) pods(r, *x, std::get<std::vector<int64_t>>(b));
  else if (auto* x = std::get_if<LayoutMap>(&a)) {
    const auto& y = std::get<LayoutMap>(b);
    r.pod(x->size(), y.size());
    for (size_t i = 0; r.ok() && i < x->size(); ++i) {
      use_buffer(r, (*x)[i].first, y[i].first);
      layout(r, (*x)[i].second, y[i].second);
    }
  }
  static_assert(std::variant_size_v<AttrValue> == 10, "a new AttrValue alternative needs a case above");
}

template <class R>
void attrs(R& r, const AttrMap& a, const AttrMap& b) {
  r.pod(a.size(), b.size());
  for (size_t i = 0; r.ok() && i < a.size(); ++i) {
    r.pod(a[i].first, b[i].first);
    attr(r, a[i].second, b[i].second);
  }
}

// ---------------------------------------------------------------- per-node fields

template <class R> void fields(const IntImmNode& a, const IntImmNode& b, R& r) { r.pod(a.value, b.value); }
template <class R> void fields(const FloatImmNode& a, const FloatImmNode& b, R& r) { r.real(a.value, b.value); }
template <class R> void fields(const StringImmNode& a, const StringImmNode& b, R& r) { r.pod(a.value, b.value); }
template <class R> void fields(const VarNode& a, const VarNode& b, R& r) { r.use_var(&a, &b); }
template <class R> void fields(const BinaryNode& a, const BinaryNode& b, R& r) {
  expr(r, a.a, b.a);
  expr(r, a.b, b.b);
}
template <class R> void fields(const NotNode& a, const NotNode& b, R& r) { expr(r, a.a, b.a); }
template <class R> void fields(const SelectNode& a, const SelectNode& b, R& r) {
  expr(r, a.cond, b.cond);
  expr(r, a.true_value, b.true_value);
  expr(r, a.false_value, b.false_value);
}
template <class R> void fields(const CastNode& a, const CastNode& b, R& r) { expr(r, a.value, b.value); }
template <class R> void fields(const RampNode& a, const RampNode& b, R& r) {
  expr(r, a.base, b.base);
  expr(r, a.stride, b.stride);
  r.pod(a.lanes, b.lanes);
}
template <class R> void fields(const BroadcastNode& a, const BroadcastNode& b, R& r) {
  expr(r, a.value, b.value);
  r.pod(a.lanes, b.lanes);
}
template <class R> void fields(const BufferLoadNode& a, const BufferLoadNode& b, R& r) {
  use_buffer(r, a.buffer, b.buffer);
  exprs(r, a.indices, b.indices);
}
template <class R> void fields(const CallNode& a, const CallNode& b, R& r) {
  r.pod(a.op, b.op);
  exprs(r, a.args, b.args);
}

template <class R> void fields(const SeqNode& a, const SeqNode& b, R& r) {
  r.pod(a.stmts.size(), b.stmts.size());
  for (size_t i = 0; r.ok() && i < a.stmts.size(); ++i) stmt(r, a.stmts[i], b.stmts[i]);
}
template <class R> void fields(const ForNode& a, const ForNode& b, R& r) {
  expr(r, a.min, b.min);
  expr(r, a.extent, b.extent);
  r.pod(a.for_kind, b.for_kind);
  r.pod(a.thread_tag, b.thread_tag);
  r.pod(a.pipeline.num_stages, b.pipeline.num_stages);
  pods(r, a.pipeline.order, b.pipeline.order);
  pods(r, a.pipeline.stage, b.pipeline.stage);
  attrs(r, a.annotations, b.annotations);
  define_var(r, a.loop_var, b.loop_var);
  stmt(r, a.body, b.body);
}
template <class R> void fields(const WhileNode& a, const WhileNode& b, R& r) {
  expr(r, a.cond, b.cond);
  stmt(r, a.body, b.body);
}
template <class R> void fields(const IfNode& a, const IfNode& b, R& r) {
  expr(r, a.cond, b.cond);
  stmt(r, a.then_case, b.then_case);
  stmt(r, a.else_case, b.else_case);
}
template <class R> void fields(const LetNode& a, const LetNode& b, R& r) {
  expr(r, a.value, b.value);
  define_var(r, a.var, b.var);
  stmt(r, a.body, b.body);
}
template <class R> void fields(const BufferStoreNode& a, const BufferStoreNode& b, R& r) {
  use_buffer(r, a.buffer, b.buffer);
  exprs(r, a.indices, b.indices);
  expr(r, a.value, b.value);
}
template <class R> void fields(const EvaluateNode& a, const EvaluateNode& b, R& r) { expr(r, a.value, b.value); }
template <class R> void fields(const AllocateNode& a, const AllocateNode& b, R& r) {
  define_buffer(r, a.buffer, b.buffer);
  stmt(r, a.body, b.body);
}
template <class R> void fields(const KernelLaunchNode& a, const KernelLaunchNode& b, R& r) {
  exprs(r, a.grid, b.grid);
  pods(r, a.threads, b.threads);
  pods(r, a.cluster, b.cluster);
  define_vars(r, a.block_vars, b.block_vars);
  define_vars(r, a.thread_vars, b.thread_vars);
  stmt(r, a.body, b.body);
}
template <class R> void fields(const TileOpNode& a, const TileOpNode& b, R& r) {
  r.pod(a.op, b.op);
  r.pod(a.args.size(), b.args.size());
  for (size_t i = 0; r.ok() && i < a.args.size(); ++i) {
    r.pod(a.args[i].index(), b.args[i].index());
    if (!r.ok()) return;
    if (auto* e = std::get_if<Expr>(&a.args[i])) expr(r, *e, std::get<Expr>(b.args[i]));
    else region(r, std::get<BufferRegion>(a.args[i]), std::get<BufferRegion>(b.args[i]));
  }
  attrs(r, a.attrs, b.attrs);
}
template <class R> void fields(const AnnotateNode& a, const AnnotateNode& b, R& r) {
  r.pod(a.key, b.key);
  attr(r, a.value, b.value);
  stmt(r, a.body, b.body);
}

// ---------------------------------------------------------------- dispatch

template <class R>
void expr(R& r, const Expr& a, const Expr& b) {
  if (!r.ok() || !r.present(a.get(), b.get())) return;
  r.pod(a->kind, b->kind);
  r.pod(a->dtype, b->dtype);
  if (!r.ok()) return;
  switch (a->kind) {
#define TILEC_EXPR(Kind, NodeClass)                                                                \
  case NodeKind::k##Kind:                                                                          \
    fields(static_cast<const NodeClass&>(*a.get()), static_cast<const NodeClass&>(*b.get()), r); \
    return;
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "statement kind in expression position";
  }
}

template <class R>
void stmt(R& r, const Stmt& a, const Stmt& b) {
  if (!r.ok() || !r.present(a.get(), b.get())) return;
  r.pod(a->kind, b->kind);
  if (!r.ok()) return;
  switch (a->kind) {
#define TILEC_STMT(Kind, NodeClass)                                                                \
  case NodeKind::k##Kind:                                                                          \
    fields(static_cast<const NodeClass&>(*a.get()), static_cast<const NodeClass&>(*b.get()), r); \
    return;
#include "tilec/ir/nodes.def"
    default:
      TILEC_UNREACHABLE() << "expression kind in statement position";
  }
}

template <class R>
void func(R& r, const PrimFunc& a, const PrimFunc& b) {
  if (!r.present(a.get(), b.get())) return;
  r.pod(a->params.size(), b->params.size());
  r.signature_ = true;  // free variables of parameter shapes are symbolic sizes, defined here
  for (size_t i = 0; r.ok() && i < a->params.size(); ++i) {
    const Param& pa = a->params[i];
    const Param& pb = b->params[i];
    r.pod(pa.is_buffer(), pb.is_buffer());
    if (!r.ok()) break;
    if (pa.is_buffer()) define_buffer(r, pa.buffer, pb.buffer);
    else define_var(r, pa.var, pb.var);
  }
  r.signature_ = false;
  attrs(r, a->attrs, b->attrs);
  stmt(r, a->body, b->body);
}

}  // namespace

bool structural_equal(const PrimFunc& a, const PrimFunc& b) {
  Equal r;
  func(r, a, b);
  return r.ok();
}
bool structural_equal(const Stmt& a, const Stmt& b) {
  Equal r;
  stmt(r, a, b);
  return r.ok();
}
bool structural_equal(const Expr& a, const Expr& b) {
  Equal r;
  expr(r, a, b);
  return r.ok();
}
uint64_t structural_hash(const PrimFunc& f) {
  Hasher r;
  func(r, f, f);
  return r.value();
}
uint64_t structural_hash(const Stmt& s) {
  Hasher r;
  stmt(r, s, s);
  return r.value();
}
uint64_t structural_hash(const Expr& e) {
  Hasher r;
  expr(r, e, e);
  return r.value();
}

}  // namespace tilec::ir
