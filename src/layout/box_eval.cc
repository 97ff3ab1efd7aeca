// Whole-tile answers about integer index expressions (see int_eval.h): separability,
// evaluation over a box, agreement of two expressions over a box.
#include <algorithm>
#include <bit>
#include <unordered_map>

#include "layout/int_eval.h"

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

}  // namespace

// ---------------------------------------------------------------------------------------
// separability
// ---------------------------------------------------------------------------------------

namespace {

struct SlotUse {
  uint64_t mask = 0;       // slots read
  bool separable = true;   // a sum of one-slot terms
};

class SeparabilityChecker {
 public:
  explicit SeparabilityChecker(const std::vector<Var>& slots) : slots_(slots) {}

  SlotUse visit(const Expr& e) {
    switch (e->kind) {
      case NodeKind::kIntImm: return {};
      case NodeKind::kVar: return {slot_bit(e.as<VarNode>()), true};
      case NodeKind::kCast: return visit(e.as<CastNode>()->value);
      case NodeKind::kNot: return single(visit(e.as<NotNode>()->a).mask);
      case NodeKind::kSelect: {
        auto* s = e.as<SelectNode>();
        return single(visit(s->cond).mask | visit(s->true_value).mask | visit(s->false_value).mask);
      }
      case NodeKind::kCall: {
        auto* c = e.as<CallNode>();
        return single(visit(c->args[0]).mask | visit(c->args[1]).mask);
      }
      default: break;
    }
    auto* b = static_cast<const BinaryNode*>(e.get());
    SlotUse x = visit(b->a), y = visit(b->b);
    SlotUse r = single(x.mask | y.mask);
    if (e->kind == NodeKind::kAdd || e->kind == NodeKind::kSub) r.separable |= x.separable && y.separable;
    if (e->kind == NodeKind::kMul)
      r.separable |= (x.mask == 0 && y.separable) || (y.mask == 0 && x.separable);
    return r;
  }

 private:
  static SlotUse single(uint64_t mask) { return {mask, std::popcount(mask) <= 1}; }
  uint64_t slot_bit(const VarNode* v) const {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].get() == v) return uint64_t{1} << i;
    TILEC_UNREACHABLE() << "unbound variable " << v->name;
  }
  const std::vector<Var>& slots_;
};

}  // namespace

bool is_separable(const Expr& e, const std::vector<Var>& slots) {
  if (slots.size() > 64 || !IntProgram::compiles(e, slots)) return false;
  return SeparabilityChecker(slots).visit(e).separable;
}

// ---------------------------------------------------------------------------------------
// whole-box evaluation
// ---------------------------------------------------------------------------------------

namespace {

// The values of one expression node over the box: one constant, or one value per point.
struct Column {
  bool scalar = true;
  int64_t c = 0;
  std::vector<int64_t> v;
  int64_t at(size_t i) const { return scalar ? c : v[i]; }
};

class BoxEvaluator {
 public:
  BoxEvaluator(const std::vector<Var>& slots, const std::vector<int64_t>& box, const std::vector<int64_t>& lo)
      : slots_(slots), box_(box), lo_(lo) {
    for (auto e : box) total_ *= static_cast<size_t>(e);
  }
  size_t size() const { return total_; }
  // The points [begin, begin + len) of the box (row-major) are evaluated next.
  void set_block(size_t begin, size_t len) {
    begin_ = begin;
    n_ = len;
    for (auto& [node, column] : shared_) recycle(std::move(column));
    shared_.clear();
  }
  // Gives a column's storage back for reuse (no allocation per node and block).
  void recycle(Column&& c) {
    if (!c.scalar) pool_.push_back(std::move(c.v));
  }

  // Nodes that the expression reads more than once (builders share subexpressions, e.g.
  // a swizzle's linear offset) are evaluated once.
  void count_uses(const Expr& e) {
    if (++uses_[e.get()] > 1) return;
    for_each_child(e, [&](const Expr& c) { count_uses(c); });
  }

  Column eval(const Expr& e) {
    auto u = uses_.find(e.get());
    if (u == uses_.end() || u->second < 2) return eval_node(e);
    auto it = shared_.find(e.get());
    if (it == shared_.end()) it = shared_.emplace(e.get(), eval_node(e)).first;
    if (it->second.scalar) return it->second;
    Column copy{false, 0, fresh()};
    std::copy(it->second.v.begin(), it->second.v.end(), copy.v.begin());
    return copy;
  }

 private:
  template <typename F>
  static void for_each_child(const Expr& e, F f) {
    switch (e->kind) {
      case NodeKind::kIntImm:
      case NodeKind::kVar: return;
      case NodeKind::kCast: f(e.as<CastNode>()->value); return;
      case NodeKind::kNot: f(e.as<NotNode>()->a); return;
      case NodeKind::kSelect: {
        auto* s = e.as<SelectNode>();
        f(s->cond);
        f(s->true_value);
        f(s->false_value);
        return;
      }
      case NodeKind::kCall:
        for (const auto& a : e.as<CallNode>()->args) f(a);
        return;
      default: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        f(b->a);
        f(b->b);
      }
    }
  }

  Column eval_node(const Expr& e) {
    switch (e->kind) {
      case NodeKind::kIntImm: return constant(e.as<IntImmNode>()->value);
      case NodeKind::kVar: return slot(e.as<VarNode>());
      case NodeKind::kCast: return eval(e.as<CastNode>()->value);
      case NodeKind::kNot: return map(eval(e.as<NotNode>()->a), [](int64_t a) -> int64_t { return !a; });
      case NodeKind::kSelect: return select(e.as<SelectNode>());
      case NodeKind::kCall: {
        auto* c = e.as<CallNode>();
        Column a = eval(c->args[0]), b = eval(c->args[1]);
        Column r = bitwise(c->op, std::move(a), b);
        recycle(std::move(b));
        return r;
      }
      default: break;
    }
    auto* bn = static_cast<const BinaryNode*>(e.get());
    Column a = eval(bn->a), b = eval(bn->b);
    Column r = binary(e->kind, std::move(a), b);
    recycle(std::move(b));
    return r;
  }

  Column bitwise(const std::string& op, Column a, const Column& b) {
    if (op == "tl.bitwise_xor") return zip(std::move(a), b, [](int64_t x, int64_t y) { return x ^ y; });
    if (op == "tl.bitwise_and") return zip(std::move(a), b, [](int64_t x, int64_t y) { return x & y; });
    if (op == "tl.bitwise_or") return zip(std::move(a), b, [](int64_t x, int64_t y) { return x | y; });
    if (op == "tl.shift_left") return zip(std::move(a), b, [](int64_t x, int64_t y) { return x << y; });
    return zip(std::move(a), b, [](int64_t x, int64_t y) { return x >> y; });
  }

  Column binary(NodeKind kind, Column a, const Column& b) {
    switch (kind) {
      case NodeKind::kAdd: return zip(std::move(a), b, [](int64_t x, int64_t y) { return x + y; });
      case NodeKind::kSub: return zip(std::move(a), b, [](int64_t x, int64_t y) { return x - y; });
      case NodeKind::kMul: return zip(std::move(a), b, [](int64_t x, int64_t y) { return x * y; });
      case NodeKind::kDiv: return divide(std::move(a), b, false, false);
      case NodeKind::kMod: return divide(std::move(a), b, false, true);
      case NodeKind::kFloorDiv: return divide(std::move(a), b, true, false);
      case NodeKind::kFloorMod: return divide(std::move(a), b, true, true);
      case NodeKind::kMin: return zip(std::move(a), b, [](int64_t x, int64_t y) { return std::min(x, y); });
      case NodeKind::kMax: return zip(std::move(a), b, [](int64_t x, int64_t y) { return std::max(x, y); });
      case NodeKind::kEQ: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x == y; });
      case NodeKind::kNE: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x != y; });
      case NodeKind::kLT: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x < y; });
      case NodeKind::kLE: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x <= y; });
      case NodeKind::kGT: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x > y; });
      case NodeKind::kGE: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x >= y; });
      case NodeKind::kAnd: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x && y; });
      case NodeKind::kOr: return zip(std::move(a), b, [](int64_t x, int64_t y) -> int64_t { return x || y; });
      default: TILEC_UNREACHABLE() << "node kind " << node_kind_name(kind);
    }
  }

  std::vector<int64_t> fresh() {
    if (pool_.empty()) return std::vector<int64_t>(n_);
    std::vector<int64_t> v = std::move(pool_.back());
    pool_.pop_back();
    v.resize(n_);
    return v;
  }

  static Column constant(int64_t c) { return Column{true, c, {}}; }

  // Slot i over the block: (point // stride_i) % box_i, counted up from the block's start.
  Column slot(const VarNode* var) {
    size_t i = 0;
    while (i < slots_.size() && slots_[i].get() != var) ++i;
    TILEC_ICHECK(i < slots_.size()) << "unbound variable " << var->name;
    const int64_t extent = box_[i];
    if (extent == 1) return constant(lo_[i]);
    size_t stride = 1;
    for (size_t j = i + 1; j < box_.size(); ++j) stride *= static_cast<size_t>(box_[j]);
    Column r{false, 0, fresh()};
    int64_t x = static_cast<int64_t>((begin_ / stride) % static_cast<size_t>(extent));
    size_t run = begin_ % stride;
    for (size_t k = 0; k < n_; ++k) {
      r.v[k] = lo_[i] + x;
      if (++run == stride) {
        run = 0;
        if (++x == extent) x = 0;
      }
    }
    return r;
  }

  template <typename F>
  Column map(Column a, F f) {
    if (a.scalar) return constant(f(a.c));
    for (auto& x : a.v) x = f(x);
    return a;
  }

  // Elementwise f(a, b); reuses a's storage.
  template <typename F>
  Column zip(Column a, const Column& b, F f) {
    if (a.scalar && b.scalar) return constant(f(a.c, b.c));
    if (a.scalar) {
      Column r{false, 0, fresh()};
      for (size_t i = 0; i < n_; ++i) r.v[i] = f(a.c, b.v[i]);
      return r;
    }
    int64_t* x = a.v.data();
    if (b.scalar) {
      const int64_t y = b.c;
      for (size_t i = 0; i < n_; ++i) x[i] = f(x[i], y);
    } else {
      const int64_t* y = b.v.data();
      for (size_t i = 0; i < n_; ++i) x[i] = f(x[i], y[i]);
    }
    return a;
  }

  // Division and modulo; a constant power-of-two divisor becomes a shift or a mask (floor
  // semantics in two's complement), the common case in layouts.
  Column divide(Column a, const Column& b, bool floor, bool mod) {
    if (b.scalar) {
      TILEC_ICHECK(b.c != 0) << "division by zero while evaluating a layout";
      if (floor && b.c > 0 && std::has_single_bit(static_cast<uint64_t>(b.c))) {
        const int shift = std::countr_zero(static_cast<uint64_t>(b.c));
        const int64_t mask = b.c - 1;
        if (mod) return map(std::move(a), [mask](int64_t x) { return x & mask; });
        return map(std::move(a), [shift](int64_t x) { return x >> shift; });
      }
    } else {
      for (auto y : b.v) TILEC_ICHECK(y != 0) << "division by zero while evaluating a layout";
    }
    if (floor && mod) return zip(std::move(a), b, [](int64_t x, int64_t y) { return floor_mod(x, y); });
    if (floor) return zip(std::move(a), b, [](int64_t x, int64_t y) { return floor_div(x, y); });
    if (mod) return zip(std::move(a), b, [](int64_t x, int64_t y) { return x % y; });
    return zip(std::move(a), b, [](int64_t x, int64_t y) { return x / y; });
  }

  Column select(const SelectNode* s) {
    Column c = eval(s->cond), t = eval(s->true_value), f = eval(s->false_value);
    if (c.scalar) {
      recycle(std::move(c.c ? f : t));
      return c.c ? std::move(t) : std::move(f);
    }
    for (size_t i = 0; i < n_; ++i) c.v[i] = c.v[i] ? t.at(i) : f.at(i);
    recycle(std::move(t));
    recycle(std::move(f));
    return c;
  }

  const std::vector<Var>& slots_;
  const std::vector<int64_t>& box_;
  const std::vector<int64_t>& lo_;
  size_t total_ = 1;  // points in the box
  size_t begin_ = 0;  // the block being evaluated
  size_t n_ = 0;
  std::unordered_map<const ExprNode*, int> uses_;
  std::unordered_map<const ExprNode*, Column> shared_;
  std::vector<std::vector<int64_t>> pool_;
};

}  // namespace

std::vector<int64_t> eval_box(const Expr& e, const std::vector<Var>& slots, const std::vector<int64_t>& box) {
  return eval_box(e, slots, box, std::vector<int64_t>(box.size(), 0));
}

namespace {

// Every point of the box, one expression node at a time over blocks of points.
std::vector<int64_t> eval_box_direct(const Expr& e, const std::vector<Var>& slots, const std::vector<int64_t>& box,
                                     const std::vector<int64_t>& lo) {
  BoxEvaluator ev(slots, box, lo);
  ev.count_uses(e);
  // Blocks of points small enough that every column of the expression stays in cache.
  constexpr size_t kBlock = 1024;
  std::vector<int64_t> out(ev.size());
  for (size_t begin = 0; begin < out.size(); begin += kBlock) {
    const size_t len = std::min(kBlock, out.size() - begin);
    ev.set_block(begin, len);
    Column c = ev.eval(e);
    if (c.scalar) std::fill(out.begin() + begin, out.begin() + begin + len, c.c);
    else std::copy(c.v.begin(), c.v.end(), out.begin() + begin);
    ev.recycle(std::move(c));
  }
  return out;
}

// e = sum of sign * term over its top-level additions and subtractions (casts are transparent).
void additive_terms(const Expr& e, int64_t sign, std::vector<std::pair<int64_t, Expr>>& out) {
  if (e->kind == NodeKind::kCast) return additive_terms(e.as<CastNode>()->value, sign, out);
  if (e->kind == NodeKind::kAdd || e->kind == NodeKind::kSub) {
    auto* b = static_cast<const BinaryNode*>(e.get());
    additive_terms(b->a, sign, out);
    additive_terms(b->b, e->kind == NodeKind::kAdd ? sign : -sign, out);
    return;
  }
  out.push_back({sign, e});
}

// Terms that read disjoint sets of slots, merged into groups (an expression like
// `stage * 8192 + swizzle(row, col)` has two).
struct TermGroup {
  uint64_t mask = 0;
  std::vector<std::pair<int64_t, Expr>> terms;
};

std::vector<TermGroup> independent_groups(const Expr& e, const std::vector<Var>& slots) {
  std::vector<std::pair<int64_t, Expr>> terms;
  additive_terms(e, 1, terms);
  std::vector<TermGroup> groups;
  SeparabilityChecker checker(slots);
  for (auto& t : terms) {
    TermGroup g{checker.visit(t.second).mask, {t}};
    // Merge every group this term shares a slot with (constants join the first group).
    for (size_t i = groups.size(); i-- > 0;) {
      if (g.mask != 0 && (groups[i].mask & g.mask) == 0) continue;
      g.mask |= groups[i].mask;
      g.terms.insert(g.terms.begin(), groups[i].terms.begin(), groups[i].terms.end());
      groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(i));
      if (g.mask == 0) break;
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

// The sum of independent groups: each group over its own slots' box only, then added up
// over the whole box (an odometer keeps each group's index): for `stage * 8192 +
// swizzle(row, col)` the swizzle is evaluated once per (row, col), not once per stage.
std::vector<int64_t> eval_box_by_groups(const std::vector<TermGroup>& groups, const std::vector<Var>& slots,
                                        const std::vector<int64_t>& box, const std::vector<int64_t>& lo) {
  const size_t nd = box.size();
  size_t total = 1;
  for (auto x : box) total *= static_cast<size_t>(x);
  std::vector<std::vector<int64_t>> values(groups.size());
  std::vector<std::vector<int64_t>> steps(groups.size(), std::vector<int64_t>(nd, 0));  // index step per slot
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<int64_t> sub(nd, 1);
    int64_t stride = 1;
    for (size_t d = nd; d-- > 0;) {
      if (!(groups[g].mask >> d & 1)) continue;
      sub[d] = box[d];
      steps[g][d] = stride;
      stride *= box[d];
    }
    values[g].assign(static_cast<size_t>(stride), 0);
    for (const auto& [sign, term] : groups[g].terms) {
      std::vector<int64_t> v = eval_box_direct(term, slots, sub, lo);
      for (size_t i = 0; i < v.size(); ++i) values[g][i] += sign * v[i];
    }
  }
  // Row by row (the last slot fastest): a group that reads the last slot adds a contiguous
  // run of its values, another group one value to the whole row.
  const size_t row = static_cast<size_t>(box[nd - 1]);
  std::vector<int64_t> out(total, 0);
  std::vector<int64_t> coord(nd, 0), index(groups.size(), 0);
  for (size_t begin = 0; begin < total; begin += row) {
    int64_t* o = out.data() + begin;
    for (size_t g = 0; g < groups.size(); ++g) {
      const int64_t* v = values[g].data() + index[g];
      if (steps[g][nd - 1] != 0) {
        for (size_t i = 0; i < row; ++i) o[i] += v[i];
      } else {
        for (size_t i = 0; i < row; ++i) o[i] += v[0];
      }
    }
    for (size_t d = nd - 1; d-- > 0;) {
      if (++coord[d] < box[d]) {
        for (size_t g = 0; g < groups.size(); ++g) index[g] += steps[g][d];
        break;
      }
      coord[d] = 0;
      for (size_t g = 0; g < groups.size(); ++g) index[g] -= steps[g][d] * (box[d] - 1);
    }
  }
  return out;
}

}  // namespace

std::vector<int64_t> eval_box(const Expr& e, const std::vector<Var>& slots, const std::vector<int64_t>& box,
                              const std::vector<int64_t>& lo) {
  TILEC_ICHECK(box.size() == slots.size() && lo.size() == slots.size()) << "eval_box: one extent per slot";
  TILEC_ICHECK(IntProgram::compiles(e, slots)) << "expression is not an integer function of the layout variables";
  for (auto x : box)
    if (x <= 0) return {};
  if (slots.size() <= 64) {
    // Worth it when no group spans (almost) the whole box.
    std::vector<TermGroup> groups = independent_groups(e, slots);
    size_t total = 1, largest = 1;
    for (auto x : box) total *= static_cast<size_t>(x);
    for (const auto& g : groups) {
      size_t size = 1;
      for (size_t d = 0; d < box.size(); ++d)
        if (g.mask >> d & 1) size *= static_cast<size_t>(box[d]);
      largest = std::max(largest, size);
    }
    if (groups.size() > 1 && 2 * largest <= total) return eval_box_by_groups(groups, slots, box, lo);
  }
  return eval_box_direct(e, slots, box, lo);
}

bool agree_on_box(const Expr& ea, const std::vector<Var>& slots_a, const Expr& eb, const std::vector<Var>& slots_b,
                  const std::vector<int64_t>& box) {
  for (auto x : box)
    if (x <= 0) return true;
  if (is_separable(ea, slots_a) && is_separable(eb, slots_b)) {
    IntProgram pa(ea, slots_a), pb(eb, slots_b);
    std::vector<int64_t> x(box.size(), 0);
    if (pa.eval(x.data()) != pb.eval(x.data())) return false;
    for (size_t d = 0; d < box.size(); ++d) {
      for (x[d] = 1; x[d] < box[d]; ++x[d])
        if (pa.eval(x.data()) != pb.eval(x.data())) return false;
      x[d] = 0;
    }
    return true;
  }
  return eval_box(ea, slots_a, box) == eval_box(eb, slots_b, box);
}

}  // namespace tilec::layout
