#include "passes/cuda_back_util.h"

#include <cctype>
#include <functional>
#include <numeric>
#include <unordered_map>

#include "ops/op_util.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"

namespace tilec::passes::back {

using namespace ir;

// Visits every expression node of `e` in pre-order; stops early when fn returns true.
bool any_node(const Expr& e, const std::function<bool(const ExprNode*)>& fn) {
  if (!e) return false;
  if (fn(e.get())) return true;
  switch (e->kind) {
    case NodeKind::kNot: return any_node(e.as<NotNode>()->a, fn);
    case NodeKind::kSelect: {
      auto* s = e.as<SelectNode>();
      return any_node(s->cond, fn) || any_node(s->true_value, fn) || any_node(s->false_value, fn);
    }
    case NodeKind::kCast: return any_node(e.as<CastNode>()->value, fn);
    case NodeKind::kRamp: {
      auto* r = e.as<RampNode>();
      return any_node(r->base, fn) || any_node(r->stride, fn);
    }
    case NodeKind::kBroadcast: return any_node(e.as<BroadcastNode>()->value, fn);
    case NodeKind::kBufferLoad:
      for (const auto& i : e.as<BufferLoadNode>()->indices)
        if (any_node(i, fn)) return true;
      return false;
    case NodeKind::kCall:
      for (const auto& a : e.as<CallNode>()->args)
        if (any_node(a, fn)) return true;
      return false;
    default:
      if (is_binary_kind(e->kind)) {
        auto* b = static_cast<const BinaryNode*>(e.get());
        return any_node(b->a, fn) || any_node(b->b, fn);
      }
      return false;
  }
}

bool is_pure_intrinsic(const std::string& op) {
  static const std::unordered_set<std::string> kPure = [] {
    std::unordered_set<std::string> s;
#define TILEC_INTRIN(name, arity, pure, cuda) \
  if (pure) s.insert(name);
#include "tilec/ir/intrinsics.def"
    return s;
  }();
  return kPure.count(op) > 0;
}

bool is_pure_call(const CallNode* c) { return is_pure_intrinsic(c->op) && c->op != "tl.address_of"; }

namespace {

int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

// A sum as a list of (constant factor, term); term null means the constant part.
void collect_terms(const Expr& e, int64_t scale, std::vector<std::pair<int64_t, Expr>>* out) {
  if (auto* c = as_const_int(e)) {
    out->push_back({*c * scale, nullptr});
    return;
  }
  if (e->kind == NodeKind::kAdd || e->kind == NodeKind::kSub) {
    auto* b = e.as<BinaryNode>();
    collect_terms(b->a, scale, out);
    collect_terms(b->b, e->kind == NodeKind::kAdd ? scale : -scale, out);
    return;
  }
  if (e->kind == NodeKind::kMul) {
    auto* b = e.as<BinaryNode>();
    if (auto* c = as_const_int(b->b)) return collect_terms(b->a, scale * *c, out);
    if (auto* c = as_const_int(b->a)) return collect_terms(b->b, scale * *c, out);
    // (x * k) * y: the constant factor of either side multiplies the product, which keeps
    // the rest of each side: (gl * x') * (gr * y') = (gl gr) * (x' y'). (The term is
    // coefficient times expression: the expression must not keep the factor too — it once
    // did, and a runtime alignment check read bz * (107 M) as bz * 107 * M * 107.)
    std::vector<std::pair<int64_t, Expr>> left, right;
    collect_terms(b->a, 1, &left);
    collect_terms(b->b, 1, &right);
    int64_t gl = 0, gr = 0;
    for (auto& [k, t] : left) gl = gcd64(gl, k);
    for (auto& [k, t] : right) gr = gcd64(gr, k);
    gl = gl == 0 ? 1 : gl;
    gr = gr == 0 ? 1 : gr;
    auto rest = [&](const std::vector<std::pair<int64_t, Expr>>& terms, int64_t g) {
      Expr r;
      for (const auto& [k, t] : terms) {
        Expr term = t ? (k / g == 1 ? t : mul(t, int_imm(k / g, e->dtype))) : int_imm(k / g, e->dtype);
        r = r ? add(r, term) : term;
      }
      return r;
    };
    out->push_back({scale * gl * gr, gl == 1 && gr == 1 ? e : mul(rest(left, gl), rest(right, gr))});
    return;
  }
  out->push_back({scale, e});
}

}  // namespace

std::optional<PairSplit> split_into_pairs(const ForNode* loop) {
  const int64_t* mn = as_const_int(loop->min);
  const int64_t* ext = as_const_int(loop->extent);
  if (!mn || !ext || *mn % 2 != 0 || *ext % 2 != 0 || *ext < 2) return std::nullopt;
  const DataType t = loop->loop_var->dtype;
  PairSplit s;
  s.pair = make_var(loop->loop_var->name + "_pair", t, loop->loc);
  s.lane = make_var(loop->loop_var->name, t, loop->loc);
  s.pairs = *ext / 2;
  const Expr v = add(int_imm(*mn, t), add(mul(s.pair, int_imm(2, t)), s.lane));
  s.body = substitute(loop->body, VarMap{{loop->loop_var.get(), v}});
  return s;
}

int64_t shared_alloc_bytes(const Buffer& b) {
  int64_t n = b->dtype.bytes();
  for (const auto& e : b->shape) n *= as_const_int(e) ? *as_const_int(e) : int64_t{1} << 20;
  return (n + 1023) / 1024 * 1024;
}

const Stmt& sole_statement(const Stmt& s) {
  auto* q = s.as<ir::SeqNode>();
  return q && q->stmts.size() == 1 ? sole_statement(q->stmts[0]) : s;
}

namespace {

bool is_constant_zero(const Expr& e) {
  if (is_zero(e)) return true;
  if (auto* f = e.as<ir::FloatImmNode>()) return f->value == 0.0;
  if (auto* c = e.as<ir::CastNode>()) return is_constant_zero(c->value);
  return false;
}

}  // namespace

const ir::BufferNode* cleared_fragment(const Stmt& s) {
  auto* t = s.as<ir::TileOpNode>();
  if (!t || t->op != "fill" || t->args.size() != 2) return nullptr;
  auto* r = std::get_if<ir::BufferRegion>(&t->args[0]);
  auto* v = std::get_if<Expr>(&t->args[1]);
  if (!r || !v || r->buffer->scope != ir::Scope::kFragment || !ops::region_is_full(*r) || !is_constant_zero(*v))
    return nullptr;
  return r->buffer.get();
}

bool uses_var(const Expr& e, const VarNode* v) {
  return any_node(e, [&](const ExprNode* n) { return n == v; });
}

bool uses_any_var(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  if (vars.empty()) return false;
  return any_node(e, [&](const ExprNode* n) {
    return n->kind == NodeKind::kVar && vars.count(static_cast<const VarNode*>(n)) > 0;
  });
}

bool reads_memory(const Expr& e) {
  return any_node(e, [](const ExprNode* n) {
    if (n->kind == NodeKind::kBufferLoad) return true;
    if (n->kind == NodeKind::kCall) return !is_pure_call(static_cast<const CallNode*>(n));
    return false;
  });
}

std::vector<Var> free_vars(const Expr& e) {
  // A mutator that changes nothing hands out the handles (not just raw nodes) of the vars.
  class Collect : public IRMutator {
   public:
    std::vector<Var> out;
    std::unordered_set<const VarNode*> seen;

   protected:
    Expr mutate_Var(const Expr& e, const VarNode* op) override {
      if (seen.insert(op).second) out.push_back(Var(std::static_pointer_cast<const VarNode>(e.shared())));
      return e;
    }
  } c;
  c.mutate(e);
  return c.out;
}

std::vector<Var> free_vars_of_stmt(const Stmt& s) {
  class Collect : public IRMutator {
   public:
    std::vector<Var> used;
    std::unordered_set<const VarNode*> seen, bound;

   protected:
    Expr mutate_Var(const Expr& e, const VarNode* op) override {
      if (seen.insert(op).second) used.push_back(Var(std::static_pointer_cast<const VarNode>(e.shared())));
      return e;
    }
    Stmt mutate_For(const Stmt& s, const ForNode* op) override {
      bound.insert(op->loop_var.get());
      return IRMutator::mutate_For(s, op);
    }
    Stmt mutate_Let(const Stmt& s, const LetNode* op) override {
      bound.insert(op->var.get());
      return IRMutator::mutate_Let(s, op);
    }
    Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
      for (const auto& v : op->block_vars) bound.insert(v.get());
      for (const auto& v : op->thread_vars) bound.insert(v.get());
      return IRMutator::mutate_KernelLaunch(s, op);
    }
  } c;
  c.mutate(s);
  std::vector<Var> out;
  for (auto& v : c.used)
    if (!c.bound.count(v.get())) out.push_back(v);
  return out;
}

std::optional<AffineInVar> affine_in(const Expr& e, const VarNode* v) {
  if (!uses_var(e, v)) return AffineInVar{0, e};
  if (e.get() == v) return AffineInVar{1, int_imm(0, e->dtype)};
  switch (e->kind) {
    case NodeKind::kAdd:
    case NodeKind::kSub: {
      auto* b = e.as<BinaryNode>();
      auto x = affine_in(b->a, v), y = affine_in(b->b, v);
      if (!x || !y) return std::nullopt;
      if (e->kind == NodeKind::kAdd) return AffineInVar{x->coeff + y->coeff, add(x->rest, y->rest)};
      return AffineInVar{x->coeff - y->coeff, sub(x->rest, y->rest)};
    }
    case NodeKind::kMul: {
      auto* b = e.as<BinaryNode>();
      const int64_t* c = as_const_int(b->b);
      const Expr* other = &b->a;
      if (!c) {
        c = as_const_int(b->a);
        other = &b->b;
      }
      if (!c) return std::nullopt;
      auto x = affine_in(*other, v);
      if (!x) return std::nullopt;
      return AffineInVar{x->coeff * *c, mul(x->rest, int_imm(*c, e->dtype))};
    }
    default:
      return std::nullopt;
  }
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case NodeKind::kIntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case NodeKind::kFloatImm: {
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      return x == y || (x != x && y != y);
    }
    case NodeKind::kStringImm: return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
    case NodeKind::kVar: return false;  // identity only
    case NodeKind::kNot: return same_expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case NodeKind::kSelect: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return same_expr(x->cond, y->cond) && same_expr(x->true_value, y->true_value) &&
             same_expr(x->false_value, y->false_value);
    }
    case NodeKind::kCast: return same_expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case NodeKind::kRamp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return x->lanes == y->lanes && same_expr(x->base, y->base) && same_expr(x->stride, y->stride);
    }
    case NodeKind::kBroadcast:
      return a.as<BroadcastNode>()->lanes == b.as<BroadcastNode>()->lanes &&
             same_expr(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case NodeKind::kBufferLoad: {
      auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
      if (!x->buffer.same_as(y->buffer) || x->indices.size() != y->indices.size()) return false;
      for (size_t i = 0; i < x->indices.size(); ++i)
        if (!same_expr(x->indices[i], y->indices[i])) return false;
      return true;
    }
    case NodeKind::kCall: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (x->op != y->op || x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!same_expr(x->args[i], y->args[i])) return false;
      return true;
    }
    default:
      if (is_binary_kind(a->kind)) {
        auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
        return same_expr(x->a, y->a) && same_expr(x->b, y->b);
      }
      return false;
  }
}

Expr add(const Expr& a, const Expr& b) {
  auto *x = as_const_int(a), *y = as_const_int(b);
  if (x && y) return int_imm(*x + *y, a->dtype.is_integer() ? a->dtype : b->dtype);
  if (x && *x == 0) return b;
  if (y && *y == 0) return a;
  if (y && a->kind == NodeKind::kAdd) {  // (e + c1) + c2 -> e + (c1 + c2)
    if (auto* c1 = as_const_int(a.as<BinaryNode>()->b)) return add(a.as<BinaryNode>()->a, int_imm(*c1 + *y, a->dtype));
  }
  if (y && *y < 0) return binary(NodeKind::kSub, a, int_imm(-*y, a->dtype));
  return binary(NodeKind::kAdd, a, b);
}

Expr sub(const Expr& a, const Expr& b) {
  auto *x = as_const_int(a), *y = as_const_int(b);
  if (x && y) return int_imm(*x - *y, a->dtype.is_integer() ? a->dtype : b->dtype);
  if (y && *y == 0) return a;
  if (same_expr(a, b)) return int_imm(0, a->dtype);
  return binary(NodeKind::kSub, a, b);
}

Expr mul(const Expr& a, const Expr& b) {
  auto *x = as_const_int(a), *y = as_const_int(b);
  if (x && y) return int_imm(*x * *y, a->dtype.is_integer() ? a->dtype : b->dtype);
  if ((x && *x == 0) || (y && *y == 0)) return int_imm(0, x ? b->dtype : a->dtype);
  if (x && *x == 1) return b;
  if (y && *y == 1) return a;
  // (e * c1) * c2 -> e * (c1 * c2)
  if (y && a->kind == NodeKind::kMul) {
    if (auto* c1 = as_const_int(a.as<BinaryNode>()->b))
      return mul(a.as<BinaryNode>()->a, int_imm(*c1 * *y, a->dtype));
  }
  return binary(NodeKind::kMul, a, b);
}

Expr fold_constants(const Expr& e) {
  class Folder : public IRMutator {
   protected:
    Expr mutate_binary(const Expr& e, const BinaryNode* op) override {
      Expr x = IRMutator::mutate_binary(e, op);
      auto* b = x.as<BinaryNode>();
      if (!b || !x->dtype.is_integer() || x->dtype.is_vector()) return x;
      switch (x->kind) {
        case NodeKind::kAdd: return add(b->a, b->b);
        case NodeKind::kSub: return sub(b->a, b->b);
        case NodeKind::kMul: return mul(b->a, b->b);
        default: return x;
      }
    }
  };
  return Folder().mutate(e);
}

Expr conj(const Expr& a, const Expr& b) {
  if (!a) return b;
  if (!b) return a;
  return binary(NodeKind::kAnd, a, b);
}

std::vector<Expr> split_conjuncts(const Expr& cond) {
  std::vector<Expr> out;
  std::function<void(const Expr&)> walk = [&](const Expr& c) {
    if (c->kind == NodeKind::kAnd) {
      walk(c.as<BinaryNode>()->a);
      walk(c.as<BinaryNode>()->b);
    } else {
      out.push_back(c);
    }
  };
  if (cond) walk(cond);
  return out;
}

bool provably_divisible(arith::Analyzer& az, const Expr& e, int64_t factor) {
  if (factor == 1) return true;
  return !non_divisible_part(e, factor) || az.can_prove_divisible(e, factor);
}

Expr non_divisible_part(const Expr& e, int64_t factor) {
  std::vector<std::pair<int64_t, Expr>> terms;
  collect_terms(e, 1, &terms);
  Expr out;
  for (auto& [k, t] : terms) {
    if (k % factor == 0) continue;
    Expr term = t ? mul(t, int_imm(k, e->dtype)) : int_imm(k, e->dtype);
    out = out ? add(out, term) : term;
  }
  return out;
}

bool provably_nonneg(arith::Analyzer* az, const Expr& e, const std::unordered_set<const VarNode*>& nonneg_vars) {
  if (e->dtype.is_uint() || e->dtype.is_bool()) return true;
  if (auto* c = as_const_int(e)) return *c >= 0;
  if (auto* v = e.as<VarNode>()) {
    if (nonneg_vars.count(v)) return true;
  }
  switch (e->kind) {
    case NodeKind::kAdd:
    case NodeKind::kMul:
    case NodeKind::kMin:
    case NodeKind::kMax: {
      auto* b = e.as<BinaryNode>();
      bool ok = provably_nonneg(az, b->a, nonneg_vars) && provably_nonneg(az, b->b, nonneg_vars);
      if (ok) return true;
      if (e->kind == NodeKind::kMax)
        return provably_nonneg(az, b->a, nonneg_vars) || provably_nonneg(az, b->b, nonneg_vars);
      break;
    }
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod: {
      auto* b = e.as<BinaryNode>();
      auto* c = as_const_int(b->b);
      if (c && *c > 0 && (e->kind == NodeKind::kFloorMod || provably_nonneg(az, b->a, nonneg_vars))) return true;
      break;
    }
    default:
      break;
  }
  if (az && e->dtype.is_integer()) return az->const_int_bound(e).min_value >= 0;
  return false;
}

const std::string& intrinsic_effect(const std::string& op) {
  static const std::unordered_map<std::string, std::string> table = [] {
    std::unordered_map<std::string, std::string> t;
#define TILEC_INTRIN_EFFECT(name, spec) t[name] = spec;
#include "tilec/ir/intrinsics.def"
    return t;
  }();
  static const std::string none;
  auto it = table.find(op);
  return it == table.end() ? none : it->second;
}

namespace {
// "a16r16." -> {('a', 16), ('r', 16), ('.', 0)}
std::vector<std::pair<char, int64_t>> parse_effect(const std::string& spec) {
  std::vector<std::pair<char, int64_t>> out;
  for (size_t p = 0; p < spec.size();) {
    char letter = spec[p++];
    int64_t bytes = 0;
    while (p < spec.size() && std::isdigit(static_cast<unsigned char>(spec[p]))) bytes = bytes * 10 + (spec[p++] - '0');
    out.push_back({letter, bytes});
  }
  return out;
}
}  // namespace

char effect_of_arg(const std::string& spec, size_t i) {
  if (spec.empty() || spec == "barrier" || spec == "async_wait") return '?';
  if (spec == "none") return '.';
  auto parts = parse_effect(spec);
  return i < parts.size() ? parts[i].first : parts.back().first;
}

int64_t effect_bytes_of_arg(const std::string& spec, size_t i) {
  if (spec.empty() || spec == "barrier" || spec == "async_wait" || spec == "none") return 0;
  auto parts = parse_effect(spec);
  return i < parts.size() ? parts[i].second : parts.back().second;
}

Stmt renew_bound_vars(const Stmt& s) {
  class Renew : public IRMutator {
   protected:
    Expr mutate_Var(const Expr& e, const VarNode* op) override {
      auto it = map_.find(op);
      return it == map_.end() ? e : it->second;
    }
    Stmt mutate_For(const Stmt& s, const ForNode* op) override {
      Var fresh = make_var(op->loop_var->name, op->loop_var->dtype, op->loop_var->loc);
      map_[op->loop_var.get()] = fresh;
      Stmt out = IRMutator::mutate_For(s, op);
      auto n = std::make_shared<ForNode>(*out.as<ForNode>());
      n->loop_var = fresh;
      return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
    }
    Stmt mutate_Let(const Stmt& s, const LetNode* op) override {
      Var fresh = make_var(op->var->name, op->var->dtype, op->var->loc);
      map_[op->var.get()] = fresh;
      Stmt out = IRMutator::mutate_Let(s, op);
      auto* l = out.as<LetNode>();
      return let(fresh, l->value, l->body, s->loc);
    }

   private:
    VarMap map_;
  };
  return Renew().mutate(s);
}

std::vector<Expr> strides_of(const Buffer& b) {
  if (!b->strides.empty()) return b->strides;
  std::vector<Expr> out(b->shape.size());
  Expr acc = int_imm(1, b->shape.empty() ? DataType::Int(32) : b->shape.back()->dtype);
  for (int d = b->ndim() - 1; d >= 0; --d) {
    out[d] = acc;
    if (d > 0) {
      Expr ext = b->shape[d];
      if (ext->dtype != acc->dtype) {
        DataType t = ext->dtype.bits() > acc->dtype.bits() ? ext->dtype : acc->dtype;
        ext = ext->dtype == t ? ext : cast(t, ext);
        acc = acc->dtype == t ? acc : (as_const_int(acc) ? int_imm(*as_const_int(acc), t) : cast(t, acc));
      }
      acc = mul(acc, ext);
    }
  }
  return out;
}

Expr zero_of(DataType t) {
  if (t.is_bool()) return bool_imm(false);
  if (t.is_float()) return float_imm(0.0, t);
  if (t.is_integer()) return int_imm(0, t);
  TILEC_UNREACHABLE() << "no zero of type " << t.str();
}

int64_t element_bytes(DataType t) { return std::max<int64_t>(1, (t.bits() + 7) / 8); }

bool config_flag(const PassContext& ctx, const std::string& key, bool fallback) {
  for (const auto& k : config_keys()) {
    if (k.name == key) return ctx.get_bool(key);
  }
  return fallback;
}

std::string config_string(const PassContext& ctx, const std::string& key) {
  for (const auto& k : config_keys()) {
    if (k.name == key) return ctx.get_string(key);
  }
  return "";
}

std::optional<std::pair<std::string, std::string>> staged_over_stages(const ir::PrimFunc& f) {
  const ir::AttrValue* v = ir::find_attr(f->attrs, kStagedOverStagesAttr);
  const std::string* text = v ? std::get_if<std::string>(v) : nullptr;
  const size_t colon = text ? text->find(": ") : std::string::npos;
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(text->substr(0, colon), text->substr(colon + 2));
}

const KernelLaunchNode* find_kernel(const Stmt& body) {
  Stmt s = body;
  while (s) {
    if (auto* k = s.as<KernelLaunchNode>()) return k;
    if (auto* l = s.as<LetNode>()) s = l->body;
    else if (auto* a = s.as<AnnotateNode>()) s = a->body;
    else if (auto* q = s.as<SeqNode>(); q && q->stmts.size() == 1) s = q->stmts[0];
    else return nullptr;
  }
  return nullptr;
}

Stmt replace_kernel(const Stmt& body, const Stmt& kernel) {
  if (body.as<KernelLaunchNode>()) return kernel;
  if (auto* l = body.as<LetNode>()) {
    Stmt b = replace_kernel(l->body, kernel);
    return b.same_as(l->body) ? body : let(l->var, l->value, b, body->loc);
  }
  if (auto* a = body.as<AnnotateNode>()) {
    Stmt b = replace_kernel(a->body, kernel);
    return b.same_as(a->body) ? body : annotate(a->key, a->value, b, body->loc);
  }
  if (auto* q = body.as<SeqNode>(); q && q->stmts.size() == 1) return replace_kernel(q->stmts[0], kernel);
  TILEC_UNREACHABLE() << "no kernel launch to replace";
}

void bind_kernel_vars(arith::Analyzer& az, const KernelLaunchNode* k) {
  for (size_t i = 0; i < k->block_vars.size(); ++i)
    az.bind_range(k->block_vars[i], int_imm(0, k->block_vars[i]->dtype), k->grid[i]);
  for (size_t i = 0; i < k->thread_vars.size(); ++i)
    az.bind_range(k->thread_vars[i], int_imm(0, k->thread_vars[i]->dtype),
                  int_imm(k->threads[i], k->thread_vars[i]->dtype));
}

const CallNode* evaluated_call(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  return e ? e->value.as<CallNode>() : nullptr;
}

bool is_barrier_stmt(const Stmt& s) {
  const CallNode* c = evaluated_call(s);
  return c && intrinsic_effect(c->op) == "barrier";
}

bool contains_barrier(const Stmt& s) {
  bool found = false;
  for_each_node(s, [&](const Node* node) {
    if (node->kind != NodeKind::kEvaluate) return;
    auto* c = static_cast<const EvaluateNode*>(node)->value.as<CallNode>();
    found |= c && intrinsic_effect(c->op) == "barrier";
  });
  return found;
}

Stmt call_stmt(const std::string& op, std::vector<Expr> args, const SourceLoc& loc) {
  return evaluate(call(DataType::Void(), op, std::move(args), loc), loc);
}

}  // namespace tilec::passes::back
