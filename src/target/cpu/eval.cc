// CPU target: expression evaluation. Integers compute in 64 bits and wrap to their dtype
// (uint64 compares and divides unsigned); floats compute in double and round to the
// expression's dtype after every operation, which gives float32 / float16 / bfloat16
// arithmetic exactly (one rounding of the exact result). `and` / `or` / T.if_then_else
// evaluate only what C would (a guarded load is not performed when its guard is false).
#include <cmath>

#include "target/cpu/machine.h"

namespace tilec::cpu {

namespace {

[[noreturn]] void division_by_zero(Machine& m, const Node* n) {
  throw_user_error("target=cpu: kernel '" + m.kernel_name() + "': integer division by zero", n->loc,
                   "the divisor is 0 here; on the GPU the result is undefined");
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_binary(NodeKind k, double a, double b) {
  switch (k) {
    case NodeKind::kAdd: return a + b;
    case NodeKind::kSub: return a - b;
    case NodeKind::kMul: return a * b;
    case NodeKind::kDiv: return a / b;
    case NodeKind::kMod: return std::fmod(a, b);
    case NodeKind::kFloorDiv: return std::floor(a / b);
    case NodeKind::kFloorMod: return a - std::floor(a / b) * b;
    case NodeKind::kMin: return std::fmin(a, b);
    case NodeKind::kMax: return std::fmax(a, b);
    default: TILEC_UNREACHABLE() << "float op " << binary_symbol(k);
  }
}

bool float_compare(NodeKind k, double a, double b) {
  switch (k) {
    case NodeKind::kEQ: return a == b;
    case NodeKind::kNE: return a != b;
    case NodeKind::kLT: return a < b;
    case NodeKind::kLE: return a <= b;
    case NodeKind::kGT: return a > b;
    case NodeKind::kGE: return a >= b;
    default: TILEC_UNREACHABLE() << "compare " << binary_symbol(k);
  }
}

template <typename I>
bool int_compare(NodeKind k, I a, I b) {
  switch (k) {
    case NodeKind::kEQ: return a == b;
    case NodeKind::kNE: return a != b;
    case NodeKind::kLT: return a < b;
    case NodeKind::kLE: return a <= b;
    case NodeKind::kGT: return a > b;
    case NodeKind::kGE: return a >= b;
    default: TILEC_UNREACHABLE() << "compare " << binary_symbol(k);
  }
}

int64_t int_binary(Machine& m, const BinaryNode* n, DataType t, int64_t a, int64_t b) {
  bool u64 = t.is_uint() && t.bits() == 64;
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (n->kind) {
    case NodeKind::kAdd: return static_cast<int64_t>(ua + ub);
    case NodeKind::kSub: return static_cast<int64_t>(ua - ub);
    case NodeKind::kMul: return static_cast<int64_t>(ua * ub);
    case NodeKind::kDiv:
    case NodeKind::kMod:
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod: {
      if (b == 0) division_by_zero(m, n);
      if (u64) return static_cast<int64_t>(n->kind == NodeKind::kDiv || n->kind == NodeKind::kFloorDiv ? ua / ub : ua % ub);
      if (n->kind == NodeKind::kDiv) return a / b;
      if (n->kind == NodeKind::kMod) return a % b;
      if (n->kind == NodeKind::kFloorDiv) return floordiv_i(a, b);
      return floormod_i(a, b);
    }
    case NodeKind::kMin: return u64 ? static_cast<int64_t>(std::min(ua, ub)) : std::min(a, b);
    case NodeKind::kMax: return u64 ? static_cast<int64_t>(std::max(ua, ub)) : std::max(a, b);
    default: TILEC_UNREACHABLE() << "int op " << binary_symbol(n->kind);
  }
}

Value eval_binary(Machine& m, const BinaryNode* n) {
  if (is_logic_kind(n->kind)) {  // short-circuit, as C's && and ||
    bool a = m.eval_bool(n->a);
    if (n->kind == NodeKind::kAnd) return Value{0.0, a && m.eval_bool(n->b)};
    return Value{0.0, a || m.eval_bool(n->b)};
  }
  DataType t = n->a->dtype;
  Value a = m.eval(n->a), b = m.eval(n->b);
  if (n->b->dtype != t) b = convert(b, n->b->dtype, t);  // constructors promote; be safe
  if (is_compare_kind(n->kind)) {
    if (t.is_float()) return Value{0.0, float_compare(n->kind, a.f, b.f)};
    if (t.is_uint() && t.bits() == 64)
      return Value{0.0, int_compare<uint64_t>(n->kind, static_cast<uint64_t>(a.i), static_cast<uint64_t>(b.i))};
    return Value{0.0, int_compare<int64_t>(n->kind, a.i, b.i)};
  }
  DataType rt = n->dtype;
  if (t.is_float()) return Value{round_float(rt, float_binary(n->kind, a.f, b.f)), 0};
  return Value{0.0, wrap_int(rt, int_binary(m, n, t, a.i, b.i))};
}

}  // namespace

Value eval_var(Machine& m, const VarNode* v) {
  auto it = m.vars_.find(v);
  if (it != m.vars_.end()) return it->second;
  if (m.thread_vars_.count(v))
    m.not_supported("the thread index '" + v->name + "' (T.get_thread_binding / the threads of T.Kernel)", v->loc,
                    "the CPU target runs the whole block as one: write the tile-level program (T.Parallel, "
                    "T.copy, ...) instead of per-thread code");
  throw_internal_error("target=cpu: variable '" + v->name + "' is not bound at " + v->loc.str(), __FILE__, __LINE__);
}

Value Machine::eval(const Expr& e) {
  if (e->dtype.lanes() != 1)
    not_supported("the vector expression of type " + e->dtype.str(), e->loc,
                  "vector types (Ramp / Broadcast) come from lowering; write scalar element expressions");
  switch (e->kind) {
    case NodeKind::kIntImm: return from_int(e->dtype, e.as<IntImmNode>()->value);
    case NodeKind::kFloatImm: {
      double v = e.as<FloatImmNode>()->value;
      return e->dtype.is_float() ? Value{round_float(e->dtype, v), 0} : from_double(e->dtype, v);
    }
    case NodeKind::kVar: return eval_var(*this, e.as<VarNode>());
    case NodeKind::kNot: return Value{0.0, !eval_bool(e.as<NotNode>()->a)};
    case NodeKind::kSelect: {
      auto* s = e.as<SelectNode>();
      const Expr& chosen = eval_bool(s->cond) ? s->true_value : s->false_value;
      Value v = eval(chosen);
      return chosen->dtype == e->dtype ? v : convert(v, chosen->dtype, e->dtype);
    }
    case NodeKind::kCast: {
      auto* c = e.as<CastNode>();
      if (!cpu_supports_dtype(e->dtype)) not_supported("a cast to " + e->dtype.str(), e->loc);
      return convert(eval(c->value), c->value->dtype, e->dtype);
    }
    case NodeKind::kBufferLoad: {
      auto* l = e.as<BufferLoadNode>();
      std::vector<int64_t> idx;
      idx.reserve(l->indices.size());
      for (const Expr& i : l->indices) idx.push_back(eval_int(i));
      Value v = load(l->buffer, idx, e->loc);
      return l->buffer->dtype == e->dtype ? v : convert(v, l->buffer->dtype, e->dtype);
    }
    case NodeKind::kCall: return call(e.as<CallNode>());
    case NodeKind::kStringImm:
      not_supported("a string value", e->loc);
    case NodeKind::kRamp:
    case NodeKind::kBroadcast:
      not_supported("a vector expression", e->loc);
    default:
      if (is_binary_kind(e->kind)) return eval_binary(*this, static_cast<const BinaryNode*>(e.get()));
      TILEC_UNREACHABLE() << "expression kind " << node_kind_name(e->kind);
  }
}

int64_t Machine::eval_int(const Expr& e) {
  Value v = eval(e);
  if (e->dtype.is_float()) return static_cast<int64_t>(v.f);
  return v.i;
}

}  // namespace tilec::cpu
