// Expression nodes of the tile IR.
//
// Integer division semantics are explicit in the node kind:
//   Div / Mod           — C semantics (truncate toward zero; remainder has the dividend's sign)
//   FloorDiv / FloorMod — Python semantics (round toward -inf; remainder has the divisor's sign)
// Index arithmetic produced by the front end uses FloorDiv / FloorMod.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilec/ir/node.h"
#include "tilec/ir/type.h"

namespace tilec::ir {

struct ExprNode : Node {
  ExprNode(NodeKind k, DataType t) : Node(k), dtype(t) {}
  DataType dtype;
};
using Expr = Ref<ExprNode>;

struct BufferNode;
using Buffer = Ref<BufferNode>;

struct IntImmNode : ExprNode {
  IntImmNode(DataType t, int64_t v) : ExprNode(NodeKind::kIntImm, t), value(v) {}
  int64_t value;
};
struct FloatImmNode : ExprNode {
  FloatImmNode(DataType t, double v) : ExprNode(NodeKind::kFloatImm, t), value(v) {}
  double value;
};
struct StringImmNode : ExprNode {
  explicit StringImmNode(std::string v)
      : ExprNode(NodeKind::kStringImm, DataType::Handle()), value(std::move(v)) {}
  std::string value;
};
struct VarNode : ExprNode {
  VarNode(std::string n, DataType t) : ExprNode(NodeKind::kVar, t), name(std::move(n)) {}
  std::string name;
};
using Var = Ref<VarNode>;

struct BinaryNode : ExprNode {
  BinaryNode(NodeKind k, DataType t, Expr x, Expr y)
      : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {}
  Expr a, b;
};
bool is_binary_kind(NodeKind k);
bool is_compare_kind(NodeKind k);
bool is_logic_kind(NodeKind k);
const char* binary_symbol(NodeKind k);  // "+", "//", "min", "<=", "and", ...

struct NotNode : ExprNode {
  explicit NotNode(Expr x) : ExprNode(NodeKind::kNot, x->dtype), a(std::move(x)) {}
  Expr a;
};
struct SelectNode : ExprNode {
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(NodeKind::kSelect, t->dtype),
        cond(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
  Expr cond, true_value, false_value;
};
struct CastNode : ExprNode {
  CastNode(DataType t, Expr v) : ExprNode(NodeKind::kCast, t), value(std::move(v)) {}
  Expr value;
};
// base, base + stride, ..., base + (lanes-1)*stride
struct RampNode : ExprNode {
  RampNode(Expr b, Expr s, int l)
      : ExprNode(NodeKind::kRamp, b->dtype.with_lanes(l)), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  Expr base, stride;
  int lanes;
};
struct BroadcastNode : ExprNode {
  BroadcastNode(Expr v, int l)
      : ExprNode(NodeKind::kBroadcast, v->dtype.with_lanes(l)), value(std::move(v)), lanes(l) {}
  Expr value;
  int lanes;
};
struct BufferLoadNode : ExprNode {
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> idx)
      : ExprNode(NodeKind::kBufferLoad, t), buffer(std::move(b)), indices(std::move(idx)) {}
  Buffer buffer;
  std::vector<Expr> indices;
};
// A call of an intrinsic by name. The intrinsic table (ir/intrinsics.h) says what each
// name means, its arity and how each target spells it.
struct CallNode : ExprNode {
  CallNode(DataType t, std::string o, std::vector<Expr> a)
      : ExprNode(NodeKind::kCall, t), op(std::move(o)), args(std::move(a)) {}
  std::string op;
  std::vector<Expr> args;
};

// ---- constructors. They check operand types and raise UserError on a mismatch. ----
Expr int_imm(int64_t v, DataType t = DataType::Int(32), SourceLoc loc = {});
Expr float_imm(double v, DataType t = DataType::Float(32), SourceLoc loc = {});
Expr bool_imm(bool v, SourceLoc loc = {});
Expr string_imm(std::string v, SourceLoc loc = {});
Var make_var(std::string name, DataType t = DataType::Int(32), SourceLoc loc = {});

// The type two operands of different types meet in (TileLang/TVM promotion rules): floats
// widen to the wider float (float16 with bfloat16 -> float32), an integer meets a float in
// the float, two integers in the wider one. nullopt for bool/handle or different lanes.
std::optional<DataType> promoted_type(DataType a, DataType b);

// Binary operation of the given kind. Integer and float immediates on one side take the
// other side's type; other mismatched operands are cast to promoted_type (or raise a
// UserError when there is none).
Expr binary(NodeKind kind, Expr a, Expr b, SourceLoc loc = {});
Expr logical_not(Expr a, SourceLoc loc = {});
Expr select(Expr cond, Expr t, Expr f, SourceLoc loc = {});
Expr cast(DataType t, Expr v, SourceLoc loc = {});
Expr ramp(Expr base, Expr stride, int lanes, SourceLoc loc = {});
Expr broadcast(Expr v, int lanes, SourceLoc loc = {});
Expr buffer_load(Buffer b, std::vector<Expr> indices, SourceLoc loc = {});
Expr call(DataType t, std::string op, std::vector<Expr> args, SourceLoc loc = {});

// Convenience operators for C++ builders (no simplification is done here).
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator+(Expr a, int64_t b);
Expr operator-(Expr a, int64_t b);
Expr operator*(Expr a, int64_t b);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr floordiv(Expr a, int64_t b);
Expr floormod(Expr a, int64_t b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr ceildiv(Expr a, Expr b);  // floordiv(a + b - 1, b)

// Helpers to read constants.
const int64_t* as_const_int(const Expr& e);  // nullptr unless an IntImm
bool is_const_int(const Expr& e, int64_t v);
bool is_one(const Expr& e);
bool is_zero(const Expr& e);

}  // namespace tilec::ir
