// Postfix evaluation of integer index expressions (see int_eval.h).
#include "layout/int_eval.h"

#include <algorithm>

namespace tilec::layout {

using namespace ir;

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  TILEC_ICHECK(b != 0) << "division by zero while evaluating a layout";
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

struct Checker {
  const std::vector<Var>& slots;
  bool ok = true;
  void visit(const Expr& e) {
    if (!ok || !e) {
      ok = false;
      return;
    }
    if (e->dtype.is_float() || e->dtype.is_handle()) {
      ok = false;
      return;
    }
    switch (e->kind) {
      case NodeKind::kIntImm: return;
      case NodeKind::kVar: {
        auto* v = e.as<VarNode>();
        ok = std::any_of(slots.begin(), slots.end(), [&](const Var& s) { return s.get() == v; });
        return;
      }
      case NodeKind::kNot: visit(e.as<NotNode>()->a); return;
      case NodeKind::kSelect: {
        auto* s = e.as<SelectNode>();
        visit(s->cond);
        visit(s->true_value);
        visit(s->false_value);
        return;
      }
      case NodeKind::kCast: {
        auto* c = e.as<CastNode>();
        if (c->value->dtype.is_float()) ok = false;
        else visit(c->value);
        return;
      }
      case NodeKind::kCall: {
        auto* c = e.as<CallNode>();
        static const char* kOk[] = {"tl.bitwise_xor", "tl.bitwise_and", "tl.bitwise_or", "tl.shift_left",
                                    "tl.shift_right"};
        if (std::none_of(std::begin(kOk), std::end(kOk), [&](const char* n) { return c->op == n; }) ||
            c->args.size() != 2) {
          ok = false;
          return;
        }
        visit(c->args[0]);
        visit(c->args[1]);
        return;
      }
      default:
        if (is_binary_kind(e->kind)) {
          auto* b = static_cast<const BinaryNode*>(e.get());
          visit(b->a);
          visit(b->b);
          return;
        }
        ok = false;
    }
  }
};

}  // namespace

bool IntProgram::compiles(const Expr& e, const std::vector<Var>& slots) {
  Checker c{slots};
  c.visit(e);
  return c.ok;
}

IntProgram::IntProgram(const Expr& e, const std::vector<Var>& slots) {
  TILEC_ICHECK(compiles(e, slots)) << "expression is not an integer function of the layout variables";
  emit(e, slots);
  int depth = 0;
  for (const auto& op : ops_) {
    switch (op.code) {
      case Code::kConst:
      case Code::kSlot: ++depth; break;
      case Code::kNot: break;
      case Code::kSelect: depth -= 2; break;
      default: depth -= 1; break;
    }
    max_depth_ = std::max(max_depth_, depth);
  }
}

void IntProgram::emit(const Expr& e, const std::vector<Var>& slots) {
  switch (e->kind) {
    case NodeKind::kIntImm: ops_.push_back({Code::kConst, e.as<IntImmNode>()->value}); return;
    case NodeKind::kVar: {
      auto* v = e.as<VarNode>();
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].get() == v) {
          ops_.push_back({Code::kSlot, static_cast<int64_t>(i)});
          return;
        }
      TILEC_UNREACHABLE() << "unbound variable " << v->name;
    }
    case NodeKind::kNot:
      emit(e.as<NotNode>()->a, slots);
      ops_.push_back({Code::kNot, 0});
      return;
    case NodeKind::kSelect: {
      auto* s = e.as<SelectNode>();
      emit(s->cond, slots);
      emit(s->true_value, slots);
      emit(s->false_value, slots);
      ops_.push_back({Code::kSelect, 0});
      return;
    }
    case NodeKind::kCast: emit(e.as<CastNode>()->value, slots); return;
    case NodeKind::kCall: {
      auto* c = e.as<CallNode>();
      emit(c->args[0], slots);
      emit(c->args[1], slots);
      Code code = c->op == "tl.bitwise_xor"   ? Code::kXor
                  : c->op == "tl.bitwise_and" ? Code::kBitAnd
                  : c->op == "tl.bitwise_or"  ? Code::kBitOr
                  : c->op == "tl.shift_left"  ? Code::kShl
                                              : Code::kShr;
      ops_.push_back({code, 0});
      return;
    }
    default: break;
  }
  auto* b = static_cast<const BinaryNode*>(e.get());
  emit(b->a, slots);
  emit(b->b, slots);
  Code code{};
  switch (e->kind) {
    case NodeKind::kAdd: code = Code::kAdd; break;
    case NodeKind::kSub: code = Code::kSub; break;
    case NodeKind::kMul: code = Code::kMul; break;
    case NodeKind::kDiv: code = Code::kTruncDiv; break;
    case NodeKind::kMod: code = Code::kTruncMod; break;
    case NodeKind::kFloorDiv: code = Code::kFloorDiv; break;
    case NodeKind::kFloorMod: code = Code::kFloorMod; break;
    case NodeKind::kMin: code = Code::kMin; break;
    case NodeKind::kMax: code = Code::kMax; break;
    case NodeKind::kEQ: code = Code::kEQ; break;
    case NodeKind::kNE: code = Code::kNE; break;
    case NodeKind::kLT: code = Code::kLT; break;
    case NodeKind::kLE: code = Code::kLE; break;
    case NodeKind::kGT: code = Code::kGT; break;
    case NodeKind::kGE: code = Code::kGE; break;
    case NodeKind::kAnd: code = Code::kAnd; break;
    case NodeKind::kOr: code = Code::kOr; break;
    default: TILEC_UNREACHABLE() << "node kind " << node_kind_name(e->kind);
  }
  ops_.push_back({code, 0});
}

int64_t IntProgram::eval(const int64_t* values) const {
  if (ops_.empty()) return 0;  // (never built so; keeps GCC's -Wmaybe-uninitialized quiet about st[0])
  int64_t small[64];
  std::vector<int64_t> big;
  int64_t* st = small;
  if (max_depth_ > 64) {
    big.resize(static_cast<size_t>(max_depth_));
    st = big.data();
  }
  int sp = 0;
  for (const auto& op : ops_) {
    switch (op.code) {
      case Code::kConst: st[sp++] = op.arg; continue;
      case Code::kSlot: st[sp++] = values[op.arg]; continue;
      case Code::kNot: st[sp - 1] = !st[sp - 1]; continue;
      case Code::kSelect: {
        int64_t f = st[--sp], t = st[--sp], c = st[--sp];
        st[sp++] = c ? t : f;
        continue;
      }
      default: break;
    }
    int64_t b = st[--sp];
    int64_t a = st[sp - 1];
    int64_t r = 0;
    switch (op.code) {
      case Code::kAdd: r = a + b; break;
      case Code::kSub: r = a - b; break;
      case Code::kMul: r = a * b; break;
      case Code::kTruncDiv: TILEC_ICHECK(b != 0) << "division by zero"; r = a / b; break;
      case Code::kTruncMod: TILEC_ICHECK(b != 0) << "division by zero"; r = a % b; break;
      case Code::kFloorDiv: r = floor_div(a, b); break;
      case Code::kFloorMod: r = floor_mod(a, b); break;
      case Code::kMin: r = std::min(a, b); break;
      case Code::kMax: r = std::max(a, b); break;
      case Code::kEQ: r = a == b; break;
      case Code::kNE: r = a != b; break;
      case Code::kLT: r = a < b; break;
      case Code::kLE: r = a <= b; break;
      case Code::kGT: r = a > b; break;
      case Code::kGE: r = a >= b; break;
      case Code::kAnd: r = a && b; break;
      case Code::kOr: r = a || b; break;
      case Code::kXor: r = a ^ b; break;
      case Code::kBitAnd: r = a & b; break;
      case Code::kBitOr: r = a | b; break;
      case Code::kShl: r = a << b; break;
      case Code::kShr: r = a >> b; break;
      default: TILEC_UNREACHABLE() << "opcode";
    }
    st[sp - 1] = r;
  }
  return st[0];
}

int64_t eval_int(const Expr& e, const std::vector<Var>& vars, const std::vector<int64_t>& values) {
  IntProgram p(e, vars);
  return p.eval(values.data());
}

}  // namespace tilec::layout
