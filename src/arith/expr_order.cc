// A deterministic total order on expressions (ExprOrder).
//
// Contract: compare(a, b) is < 0, 0 or > 0; it is 0 exactly when a and b are the same
// tree (same kinds, types, constants, and the same Var/Buffer objects at the leaves).
// It never depends on addresses: variables compare by name, and distinct variables of
// the same name by the order in which this ExprOrder first met them. The simplifier
// uses it to sort the terms of sums and the operands of commutative operators, so its
// output is reproducible from run to run (it feeds the compile cache key).
//
// Algorithm: compare kinds (NodeKind order: constants, variables, then composites),
// then data types, then node contents field by field, recursing into children.
#include <cstring>

#include "arith/analyzer_impl.h"
#include "tilec/ir/buffer.h"

namespace tilec::arith::detail {

namespace {
template <typename T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}
int compare_type(const ir::DataType& a, const ir::DataType& b) {
  if (int c = cmp3(static_cast<int>(a.code()), static_cast<int>(b.code()))) return c;
  if (int c = cmp3(a.bits(), b.bits())) return c;
  return cmp3(a.lanes(), b.lanes());
}
}  // namespace

int ExprOrder::compare_ptr_serial(const void* a, const void* b) {
  if (a == b) return 0;
  auto serial = [&](const void* p) {
    auto it = serial_.find(p);
    if (it != serial_.end()) return it->second;
    int64_t s = static_cast<int64_t>(serial_.size());
    serial_.emplace(p, s);
    return s;
  };
  int64_t sa = serial(a);
  int64_t sb = serial(b);
  return cmp3(sa, sb);
}

int ExprOrder::compare(const Expr& a, const Expr& b) {
  using ir::NodeKind;
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return a.defined() ? 1 : -1;
  if (int c = cmp3(static_cast<int>(a->kind), static_cast<int>(b->kind))) return c;
  if (int c = compare_type(a->dtype, b->dtype)) return c;
  switch (a->kind) {
    case NodeKind::kIntImm:
      return cmp3(a.as<ir::IntImmNode>()->value, b.as<ir::IntImmNode>()->value);
    case NodeKind::kFloatImm: {
      // Bit patterns, so NaNs and signed zeros have a place in the order too.
      double x = a.as<ir::FloatImmNode>()->value, y = b.as<ir::FloatImmNode>()->value;
      uint64_t bx, by;
      std::memcpy(&bx, &x, sizeof bx);
      std::memcpy(&by, &y, sizeof by);
      return cmp3(bx, by);
    }
    case NodeKind::kStringImm:
      return cmp3(a.as<ir::StringImmNode>()->value, b.as<ir::StringImmNode>()->value);
    case NodeKind::kVar: {
      auto* x = a.as<ir::VarNode>();
      auto* y = b.as<ir::VarNode>();
      if (int c = x->name.compare(y->name)) return c < 0 ? -1 : 1;
      return compare_ptr_serial(x, y);
    }
    case NodeKind::kNot:
      return compare(a.as<ir::NotNode>()->a, b.as<ir::NotNode>()->a);
    case NodeKind::kSelect: {
      auto* x = a.as<ir::SelectNode>();
      auto* y = b.as<ir::SelectNode>();
      if (int c = compare(x->cond, y->cond)) return c;
      if (int c = compare(x->true_value, y->true_value)) return c;
      return compare(x->false_value, y->false_value);
    }
    case NodeKind::kCast:
      return compare(a.as<ir::CastNode>()->value, b.as<ir::CastNode>()->value);
    case NodeKind::kRamp: {
      auto* x = a.as<ir::RampNode>();
      auto* y = b.as<ir::RampNode>();
      if (int c = cmp3(x->lanes, y->lanes)) return c;
      if (int c = compare(x->base, y->base)) return c;
      return compare(x->stride, y->stride);
    }
    case NodeKind::kBroadcast: {
      auto* x = a.as<ir::BroadcastNode>();
      auto* y = b.as<ir::BroadcastNode>();
      if (int c = cmp3(x->lanes, y->lanes)) return c;
      return compare(x->value, y->value);
    }
    case NodeKind::kBufferLoad: {
      auto* x = a.as<ir::BufferLoadNode>();
      auto* y = b.as<ir::BufferLoadNode>();
      if (x->buffer.get() != y->buffer.get()) {
        if (int c = x->buffer->name.compare(y->buffer->name)) return c < 0 ? -1 : 1;
        if (int c = compare_ptr_serial(x->buffer.get(), y->buffer.get())) return c;
      }
      if (int c = cmp3(x->indices.size(), y->indices.size())) return c;
      for (size_t i = 0; i < x->indices.size(); ++i) {
        if (int c = compare(x->indices[i], y->indices[i])) return c;
      }
      return 0;
    }
    case NodeKind::kCall: {
      auto* x = a.as<ir::CallNode>();
      auto* y = b.as<ir::CallNode>();
      if (int c = x->op.compare(y->op)) return c < 0 ? -1 : 1;
      if (int c = cmp3(x->args.size(), y->args.size())) return c;
      for (size_t i = 0; i < x->args.size(); ++i) {
        if (int c = compare(x->args[i], y->args[i])) return c;
      }
      return 0;
    }
    default:
      break;
  }
  if (ir::is_binary_kind(a->kind)) {
    auto* x = a.as<ir::BinaryNode>();
    auto* y = b.as<ir::BinaryNode>();
    if (int c = compare(x->a, y->a)) return c;
    return compare(x->b, y->b);
  }
  TILEC_UNREACHABLE() << "ExprOrder: unhandled expression kind " << ir::node_kind_name(a->kind);
}

}  // namespace tilec::arith::detail
