// Expression constructors with type checking.
#include "tilec/ir/expr.h"

#include <algorithm>
#include <optional>

#include "tilec/ir/buffer.h"

namespace tilec::ir {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define TILEC_EXPR(Kind, NodeClass) \
  case NodeKind::k##Kind:           \
    return #Kind;
#define TILEC_STMT(Kind, NodeClass) \
  case NodeKind::k##Kind:           \
    return #Kind;
#include "tilec/ir/nodes.def"
  }
  return "?";
}

bool is_expr_kind(NodeKind kind) {
  switch (kind) {
#define TILEC_EXPR(Kind, NodeClass) \
  case NodeKind::k##Kind:           \
    return true;
#include "tilec/ir/nodes.def"
    default:
      return false;
  }
}

bool is_binary_kind(NodeKind k) {
  switch (k) {
#define TILEC_BINARY(Kind, Symbol, Category) \
  case NodeKind::k##Kind:                    \
    return true;
#include "tilec/ir/nodes.def"
    default:
      return false;
  }
}

namespace {
enum class Category { Arith, Compare, Logic, None };
Category category_of(NodeKind k) {
  switch (k) {
#define TILEC_BINARY(Kind, Symbol, Cat) \
  case NodeKind::k##Kind:               \
    return Category::Cat;
#include "tilec/ir/nodes.def"
    default:
      return Category::None;
  }
}

template <typename N, typename... Args>
Expr mk(SourceLoc loc, Args&&... args) {
  auto n = std::make_shared<N>(std::forward<Args>(args)...);
  n->loc = std::move(loc);
  return Expr(std::shared_ptr<const N>(std::move(n)));
}

// An integer immediate adopts the other operand's integer type; bool/float promote too.
Expr coerce_imm(const Expr& e, DataType want) {
  if (auto* i = e.as<IntImmNode>()) {
    if (want.is_float()) return float_imm(static_cast<double>(i->value), want, e->loc);
    return int_imm(i->value, want, e->loc);
  }
  if (auto* f = e.as<FloatImmNode>(); f && want.is_float()) return float_imm(f->value, want, e->loc);
  return e;
}
}  // namespace

std::optional<DataType> promoted_type(DataType a, DataType b) {
  if (a == b) return a;
  if (a.lanes() != b.lanes() || a.is_handle() || b.is_handle() || a.is_void() || b.is_void()) return std::nullopt;
  if (a.is_bool() || b.is_bool()) return std::nullopt;
  if (a.is_float() && b.is_float()) {
    // Mixed 16-bit formats (float16 with bfloat16) and 8-bit floats meet in float32.
    if (a.code() == b.code()) return a.bits() > b.bits() ? a : b;
    if (a.code() == TypeCode::kFloat && a.bits() > b.bits()) return a;
    if (b.code() == TypeCode::kFloat && b.bits() > a.bits()) return b;
    return DataType::Float(std::max(32, std::max(a.bits(), b.bits())), a.lanes());
  }
  if (a.is_float()) return a;
  if (b.is_float()) return b;
  // Two integer types: the wider; at equal width, signed wins (as C does not, but index
  // arithmetic mixing uint32 and int32 is nearly always meant signed).
  if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
  return a.is_int() ? a : b;
}

bool is_compare_kind(NodeKind k) { return category_of(k) == Category::Compare; }
bool is_logic_kind(NodeKind k) { return category_of(k) == Category::Logic; }

const char* binary_symbol(NodeKind k) {
  switch (k) {
#define TILEC_BINARY(Kind, Symbol, Category) \
  case NodeKind::k##Kind:                    \
    return Symbol;
#include "tilec/ir/nodes.def"
    default:
      return "?";
  }
}

Expr int_imm(int64_t v, DataType t, SourceLoc loc) {
  TILEC_ICHECK(t.is_integer() || t.is_bool()) << "int_imm of type " << t.str();
  return mk<IntImmNode>(std::move(loc), t, v);
}
Expr float_imm(double v, DataType t, SourceLoc loc) {
  TILEC_ICHECK(t.is_float()) << "float_imm of type " << t.str();
  return mk<FloatImmNode>(std::move(loc), t, v);
}
Expr bool_imm(bool v, SourceLoc loc) { return mk<IntImmNode>(std::move(loc), DataType::Bool(), v ? 1 : 0); }
Expr string_imm(std::string v, SourceLoc loc) { return mk<StringImmNode>(std::move(loc), std::move(v)); }
Var make_var(std::string name, DataType t, SourceLoc loc) {
  auto n = std::make_shared<VarNode>(std::move(name), t);
  n->loc = std::move(loc);
  return Var(std::shared_ptr<const VarNode>(std::move(n)));
}

Expr binary(NodeKind kind, Expr a, Expr b, SourceLoc loc) {
  TILEC_ICHECK(is_binary_kind(kind)) << node_kind_name(kind) << " is not a binary kind";
  TILEC_ICHECK(a.defined() && b.defined()) << "null operand of " << node_kind_name(kind);
  if (a->dtype != b->dtype) {
    if (a.as<IntImmNode>() || a.as<FloatImmNode>()) a = coerce_imm(a, b->dtype);
    else if (b.as<IntImmNode>() || b.as<FloatImmNode>()) b = coerce_imm(b, a->dtype);
  }
  if (a->dtype != b->dtype) {
    if (auto common = promoted_type(a->dtype, b->dtype)) {
      a = cast(*common, a, loc);
      b = cast(*common, b, loc);
    } else {
      throw_user_error(std::string("operands of '") + binary_symbol(kind) + "' have different types: " +
                           a->dtype.str() + " and " + b->dtype.str(),
                       loc, "insert an explicit T.cast(...) on one side");
    }
  }
  Category cat = category_of(kind);
  if (cat == Category::Logic && !a->dtype.is_bool()) {
    throw_user_error(std::string("operands of '") + binary_symbol(kind) + "' must be bool, got " + a->dtype.str(),
                     loc, "compare the values first, e.g. (x > 0)");
  }
  if ((kind == NodeKind::kFloorDiv || kind == NodeKind::kFloorMod || kind == NodeKind::kMod) &&
      !a->dtype.is_integer()) {
    throw_user_error(std::string("'") + binary_symbol(kind) + "' needs integer operands, got " + a->dtype.str(),
                     loc, "use '/' for floating-point division");
  }
  DataType t = cat == Category::Compare ? DataType::Bool(a->dtype.lanes()) : a->dtype;
  return mk<BinaryNode>(std::move(loc), kind, t, std::move(a), std::move(b));
}

Expr logical_not(Expr a, SourceLoc loc) {
  TILEC_USER_CHECK(a->dtype.is_bool(), loc, "") << "'not' needs a bool operand, got " << a->dtype.str();
  return mk<NotNode>(std::move(loc), std::move(a));
}

Expr select(Expr cond, Expr t, Expr f, SourceLoc loc) {
  TILEC_USER_CHECK(cond->dtype.is_bool(), loc, "the condition must be a comparison")
      << "condition of a select has type " << cond->dtype.str();
  if (t->dtype != f->dtype) {
    if (t.as<IntImmNode>() || t.as<FloatImmNode>()) t = coerce_imm(t, f->dtype);
    else f = coerce_imm(f, t->dtype);
  }
  TILEC_USER_CHECK(t->dtype == f->dtype, loc, "insert a T.cast(...) on one branch")
      << "the branches of a select have different types: " << t->dtype.str() << " and "
      << f->dtype.str();
  return mk<SelectNode>(std::move(loc), std::move(cond), std::move(t), std::move(f));
}

Expr cast(DataType t, Expr v, SourceLoc loc) {
  if (v->dtype == t) return v;
  return mk<CastNode>(std::move(loc), t, std::move(v));
}

Expr ramp(Expr base, Expr stride, int lanes, SourceLoc loc) {
  TILEC_ICHECK(lanes > 1) << "ramp of " << lanes << " lanes";
  return mk<RampNode>(std::move(loc), std::move(base), std::move(stride), lanes);
}

Expr broadcast(Expr v, int lanes, SourceLoc loc) {
  TILEC_ICHECK(lanes > 1) << "broadcast of " << lanes << " lanes";
  return mk<BroadcastNode>(std::move(loc), std::move(v), lanes);
}

Expr buffer_load(Buffer b, std::vector<Expr> indices, SourceLoc loc) {
  TILEC_ICHECK(b.defined()) << "load from a null buffer";
  if (static_cast<int>(indices.size()) != b->ndim()) {
    throw_user_error("buffer '" + b->name + "' has " + std::to_string(b->ndim()) +
                         " dimensions but is indexed with " + std::to_string(indices.size()),
                     loc, "give one index per dimension");
  }
  int lanes = 1;
  for (const auto& i : indices) lanes = std::max(lanes, i->dtype.lanes());
  return mk<BufferLoadNode>(std::move(loc), b->dtype.with_lanes(lanes), std::move(b), std::move(indices));
}

Expr call(DataType t, std::string op, std::vector<Expr> args, SourceLoc loc) {
  return mk<CallNode>(std::move(loc), t, std::move(op), std::move(args));
}

Expr operator+(Expr a, Expr b) { return binary(NodeKind::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(NodeKind::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(NodeKind::kMul, std::move(a), std::move(b)); }
Expr operator+(Expr a, int64_t b) { auto t = a->dtype; return std::move(a) + int_imm(b, t); }
Expr operator-(Expr a, int64_t b) { auto t = a->dtype; return std::move(a) - int_imm(b, t); }
Expr operator*(Expr a, int64_t b) { auto t = a->dtype; return std::move(a) * int_imm(b, t); }
Expr floordiv(Expr a, Expr b) { return binary(NodeKind::kFloorDiv, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return binary(NodeKind::kFloorMod, std::move(a), std::move(b)); }
Expr floordiv(Expr a, int64_t b) { auto t = a->dtype; return floordiv(std::move(a), int_imm(b, t)); }
Expr floormod(Expr a, int64_t b) { auto t = a->dtype; return floormod(std::move(a), int_imm(b, t)); }
Expr min(Expr a, Expr b) { return binary(NodeKind::kMin, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return binary(NodeKind::kMax, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return binary(NodeKind::kLT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return binary(NodeKind::kLE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return binary(NodeKind::kGT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return binary(NodeKind::kGE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return binary(NodeKind::kAnd, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return binary(NodeKind::kOr, std::move(a), std::move(b)); }
Expr ceildiv(Expr a, Expr b) { return floordiv(a + b - 1, b); }

const int64_t* as_const_int(const Expr& e) {
  auto* n = e.as<IntImmNode>();
  return n ? &n->value : nullptr;
}
bool is_const_int(const Expr& e, int64_t v) {
  auto* p = as_const_int(e);
  return p && *p == v;
}
bool is_one(const Expr& e) { return is_const_int(e, 1); }
bool is_zero(const Expr& e) { return is_const_int(e, 0); }

}  // namespace tilec::ir
