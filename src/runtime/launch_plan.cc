// tensor_span: how many elements a tensor's offsets reach (the runtime's 32-bit index check).
// eval_int: a small evaluator for the integer expressions of a LaunchPlan (grid extents
// over symbolic dimensions). Runs at every kernel call, so it walks the tree with a
// switch on the node kind and allocates nothing.
//
// Semantics follow the IR: Div/Mod truncate, FloorDiv/FloorMod round toward -inf,
// compares and logic give 0/1, Cast to an integer type wraps to its width. Arithmetic is
// exact, not wrapped to the operands' (often int32) type: a grid is evaluated only here, on
// the host, and a wrapped extent would launch a wrong number of blocks without a word
// (T.ceildiv(n, 128) with n near 2^31, n * 4 with n = 2^30). Division by zero and results
// beyond int64 are UserErrors (they can only come from values the caller passed).
#include <cstdint>
#include <limits>

#include "tilec/ir/expr.h"
#include "tilec/runtime/launch_plan.h"
#include "tilec/support/diag.h"

namespace tilec::runtime {
namespace {

using ir::NodeKind;

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

int64_t wrap_to(ir::DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (!t.is_integer() || t.bits() >= 64) return v;
  int bits = t.bits();
  uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t.is_int() && (u >> (bits - 1)) != 0) u |= ~mask;  // sign-extend
  return int64_t(u);
}

int64_t eval(const ir::ExprNode* e, const std::vector<ir::Var>& vars, const int64_t* values) {
  TILEC_ICHECK(e != nullptr) << "null expression in a launch plan";
  switch (e->kind) {
    case NodeKind::kIntImm:
      return static_cast<const ir::IntImmNode*>(e)->value;
    case NodeKind::kVar: {
      const auto* v = static_cast<const ir::VarNode*>(e);
      for (size_t i = 0; i < vars.size(); ++i) {
        if (vars[i].get() == v) return values[i];
      }
      for (size_t i = 0; i < vars.size(); ++i) {  // plans read back from text: same name
        if (vars[i]->name == v->name) return values[i];
      }
      TILEC_UNREACHABLE() << "launch expression uses '" << v->name << "', which is not a symbol of the plan";
    }
    case NodeKind::kCast: {
      const auto* c = static_cast<const ir::CastNode*>(e);
      return wrap_to(c->dtype, eval(c->value.get(), vars, values));
    }
    case NodeKind::kNot:
      return eval(static_cast<const ir::NotNode*>(e)->a.get(), vars, values) == 0;
    case NodeKind::kSelect: {
      const auto* s = static_cast<const ir::SelectNode*>(e);
      return eval(s->cond.get(), vars, values) != 0 ? eval(s->true_value.get(), vars, values)
                                                    : eval(s->false_value.get(), vars, values);
    }
    default:
      break;
  }
  if (!ir::is_binary_kind(e->kind)) {
    TILEC_UNREACHABLE() << "a launch expression cannot contain a " << ir::node_kind_name(e->kind);
  }
  const auto* b = static_cast<const ir::BinaryNode*>(e);
  int64_t x = eval(b->a.get(), vars, values);
  // And/Or short-circuit like the generated code would.
  if (e->kind == NodeKind::kAnd && x == 0) return 0;
  if (e->kind == NodeKind::kOr && x != 0) return 1;
  int64_t y = eval(b->b.get(), vars, values);
  auto overflow = [&] {
    throw_user_error("a launch-grid expression overflows 64-bit arithmetic with the given arguments", {},
                     "check the values of the kernel's symbolic dimensions and scalar arguments");
  };
  auto check_divisor = [&] {
    if (y == 0) {
      throw_user_error("a launch-grid expression divides by zero with the given arguments", {},
                       "check the values of the kernel's symbolic dimensions and scalar arguments");
    }
    if (y == -1 && x == std::numeric_limits<int64_t>::min()) overflow();
  };
  int64_t r = 0;
  switch (e->kind) {
    case NodeKind::kAdd: if (__builtin_add_overflow(x, y, &r)) overflow(); break;
    case NodeKind::kSub: if (__builtin_sub_overflow(x, y, &r)) overflow(); break;
    case NodeKind::kMul: if (__builtin_mul_overflow(x, y, &r)) overflow(); break;
    case NodeKind::kDiv: check_divisor(); r = x / y; break;
    case NodeKind::kMod: check_divisor(); r = x % y; break;
    case NodeKind::kFloorDiv: check_divisor(); r = floor_div(x, y); break;
    case NodeKind::kFloorMod: check_divisor(); r = floor_mod(x, y); break;
    case NodeKind::kMin: r = x < y ? x : y; break;
    case NodeKind::kMax: r = x > y ? x : y; break;
    case NodeKind::kEQ: return x == y;
    case NodeKind::kNE: return x != y;
    case NodeKind::kLT: return x < y;
    case NodeKind::kLE: return x <= y;
    case NodeKind::kGT: return x > y;
    case NodeKind::kGE: return x >= y;
    case NodeKind::kAnd: return y != 0;
    case NodeKind::kOr: return y != 0;
    default: TILEC_UNREACHABLE() << "binary kind " << ir::node_kind_name(e->kind);
  }
  return r;
}

}  // namespace

int64_t eval_int(const ir::Expr& e, const std::vector<ir::Var>& vars,
                 const std::vector<int64_t>& values) {
  TILEC_ICHECK(vars.size() == values.size()) << vars.size() << " vars, " << values.size() << " values";
  return eval(e.get(), vars, values.data());
}

int64_t eval_int_unchecked(const ir::Expr& e, const std::vector<ir::Var>& vars, const int64_t* values) {
  return eval(e.get(), vars, values);
}

int64_t tensor_span(int ndim, const int64_t* shape, const int64_t* strides) {
  constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] <= 0) return 0;
  }
  int64_t span = 1;
  if (!strides) {
    for (int d = 0; d < ndim; ++d) {
      if (__builtin_mul_overflow(span, shape[d], &span)) return kSaturated;
    }
    return span;
  }
  for (int d = 0; d < ndim; ++d) {
    if (strides[d] == std::numeric_limits<int64_t>::min()) return kSaturated;
    int64_t term;
    if (__builtin_mul_overflow(shape[d] - 1, strides[d] < 0 ? -strides[d] : strides[d], &term) ||
        __builtin_add_overflow(span, term, &span)) {
      return kSaturated;
    }
  }
  return span;
}

}  // namespace tilec::runtime
