// CPU target: Call nodes. Math intrinsics come from one table (computed in double, rounded
// once to the call's dtype, as the device library computes half / bfloat16 through float);
// bit operations, scalar atomics (a plain read-modify-write: blocks run one at a time) and
// the block and warp barriers (no-ops: a block runs as one), the grid barrier (grid_sync.cc) are handled here; every other call
// (warp shuffles, mbarriers, cp.async, TMA, wgmma, ...) is thread-level code and raises
// "not supported on target=cpu".
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "target/cpu/machine.h"

namespace tilec::cpu {

namespace {

using Unary = double (*)(double);

const std::map<std::string, Unary>& unary_math() {
  static const std::map<std::string, Unary> table = {
      {"exp", [](double x) { return std::exp(x); }},
      {"exp2", [](double x) { return std::exp2(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"log2", [](double x) { return std::log2(x); }},
      {"log10", [](double x) { return std::log10(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"abs", [](double x) { return std::fabs(x); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},  // half to even, as tl::round (rint)
      {"trunc", [](double x) { return std::trunc(x); }},
      {"erf", [](double x) { return std::erf(x); }},
  };
  return table;
}

// Thread-level calls that are no-ops when a block runs as one.
// (T.set_max_nreg's register budget too: it never changes results; T.wait_wgmma too: a T.gemm
// here is done when it returns, so no group is ever pending.)
bool is_block_noop(const std::string& op) {
  return op == "tl.syncthreads" || op == "tl.syncwarp" || op == "tl.syncwarp_mask" || op == "tl.user_setmaxnreg" ||
         op == "tl.pdl_trigger" || op == "tl.pdl_sync" || op == "tl.wgmma_wait";
}

Value reinterpret(Machine& m, const CallNode* c) {
  DataType from = c->args[0]->dtype, to = c->dtype;
  if (from.bits() != to.bits() || !cpu_supports_dtype(from) || !cpu_supports_dtype(to))
    m.not_supported("T.reinterpret from " + from.str() + " to " + to.str(), c->loc);
  unsigned char bytes[8] = {0};
  store_element(from, bytes, m.eval(c->args[0]));
  return load_element(to, bytes);
}

Value bitwise(Machine& m, const CallNode* c) {
  DataType t = c->dtype;
  if (!t.is_integer() && !t.is_bool()) m.not_supported(c->op + " on " + t.str(), c->loc);
  int64_t a = m.eval_int(c->args[0]);
  if (c->op == "tl.bitwise_not") return Value{0.0, wrap_int(t, ~a)};
  int64_t b = m.eval_int(c->args[1]);
  uint64_t ua = static_cast<uint64_t>(a);
  int64_t r = 0;
  if (c->op == "tl.bitwise_and") r = a & b;
  else if (c->op == "tl.bitwise_or") r = a | b;
  else if (c->op == "tl.bitwise_xor") r = a ^ b;
  else if (b < 0 || b >= t.bits()) r = 0;  // a shift by the width or more: 0 here (undefined in C)
  else if (c->op == "tl.shift_left") r = static_cast<int64_t>(ua << b);
  else r = t.is_uint() ? static_cast<int64_t>((ua & (t.bits() == 64 ? ~0ull : ((1ull << t.bits()) - 1))) >> b) : a >> b;
  return Value{0.0, wrap_int(t, r)};
}

// tl.atomic_add / max / min (tl.address_of(B[i...]), value): read-modify-write.
Value scalar_atomic(Machine& m, const CallNode* c) {
  auto* addr = c->args[0].as<CallNode>();
  const BufferLoadNode* target = addr && addr->op == "tl.address_of" ? addr->args[0].as<BufferLoadNode>() : nullptr;
  if (!target) m.not_supported(c->op + " on something else than an element", c->loc);
  std::vector<int64_t> idx;
  for (const Expr& i : target->indices) idx.push_back(m.eval_int(i));
  DataType t = target->buffer->dtype;
  Value v = m.eval(c->args[1]);
  if (c->args[1]->dtype != t) v = convert(v, c->args[1]->dtype, t);
  Storage& s = m.storage(target->buffer, c->loc);
  auto off = m.offset(s, idx, Access::kAtomic, c->loc);
  if (!off) return Value{};
  Value old = s.get(*off);
  double a = as_double(t, old), b = as_double(t, v);
  double r = c->op == "tl.atomic_add" ? a + b : c->op == "tl.atomic_max" ? std::fmax(a, b) : std::fmin(a, b);
  if (t.is_float()) s.set(*off, Value{round_float(t, r), 0});
  else if (c->op == "tl.atomic_add") s.set(*off, Value{0.0, wrap_int(t, old.i + v.i)});
  else s.set(*off, Value{0.0, c->op == "tl.atomic_max" ? std::max(old.i, v.i) : std::min(old.i, v.i)});
  return Value{};
}

// tl.atomic_load(order, tl.address_of(B[i...])) / tl.atomic_store(order, address, value): blocks
// run one at a time, so a plain load / store (the order changes nothing here).
Value ordered_access(Machine& m, const CallNode* c) {
  auto* addr = c->args[1].as<CallNode>();
  const BufferLoadNode* target = addr && addr->op == "tl.address_of" ? addr->args[0].as<BufferLoadNode>() : nullptr;
  if (!target) m.not_supported(c->op + " on something else than an element", c->loc);
  std::vector<int64_t> idx;
  for (const Expr& i : target->indices) idx.push_back(m.eval_int(i));
  if (c->op == "tl.atomic_load") return m.load(target->buffer, idx, c->loc);
  DataType t = target->buffer->dtype;
  Value v = m.eval(c->args[2]);
  if (c->args[2]->dtype != t) v = convert(v, c->args[2]->dtype, t);
  m.store(target->buffer, idx, v, c->loc);
  return Value{};
}

Value print(Machine& m, const CallNode* c) {
  std::string line = "[target=cpu " + m.kernel_name() + "]";
  for (const Expr& a : c->args) {
    if (auto* s = a.as<StringImmNode>()) line += " " + s->value;
    else line += " " + value_str(a->dtype, m.eval(a));
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return Value{};
}

// T.device_assert(cond, "msg", "file:line"): raises, as the GPU traps.
Value device_assert(Machine& m, const CallNode* c) {
  if (as_double(c->args[0]->dtype, m.eval(c->args[0])) != 0) return Value{};
  auto text = [&](size_t i) {
    auto* s = c->args.size() > i ? c->args[i].as<StringImmNode>() : nullptr;
    return s ? s->value : std::string();
  };
  throw_user_error("device assertion failed in kernel " + m.kernel_name() + " at " + text(2) + ": " + text(1), c->loc);
}

}  // namespace

Value Machine::call(const CallNode* c) {
  const std::string& op = c->op;
  auto& math = unary_math();
  if (auto it = math.find(op); it != math.end()) {
    DataType at = c->args[0]->dtype;
    Value a = eval(c->args[0]);
    if (op == "abs" && !at.is_float()) return Value{0.0, wrap_int(c->dtype, a.i < 0 ? -a.i : a.i)};
    return from_double(c->dtype, it->second(as_double(at, a)));
  }
  if (op == "isnan" || op == "isinf" || op == "isfinite") {
    const double x = as_double(c->args[0]->dtype, eval(c->args[0]));
    const bool r = op == "isnan" ? std::isnan(x) : op == "isinf" ? std::isinf(x) : std::isfinite(x);
    return Value{0.0, r ? 1 : 0};
  }
  if (op == "pow") {
    double a = as_double(c->args[0]->dtype, eval(c->args[0]));
    double b = as_double(c->args[1]->dtype, eval(c->args[1]));
    return from_double(c->dtype, std::pow(a, b));
  }
  if (op == "infinity") return from_double(c->dtype, HUGE_VAL);
  if (op == "print") return print(*this, c);
  if (op == "device_assert") return device_assert(*this, c);
  if (op == "tl.reinterpret") return reinterpret(*this, c);
  if (op.rfind("tl.bitwise_", 0) == 0 || op == "tl.shift_left" || op == "tl.shift_right") return bitwise(*this, c);
  if (op == "tl.atomic_add" || op == "tl.atomic_max" || op == "tl.atomic_min") return scalar_atomic(*this, c);
  if (op == "tl.atomic_load" || op == "tl.atomic_store") return ordered_access(*this, c);
  if (is_block_noop(op)) return Value{};
  if (op == "tl.sync_grid") {
    sync_grid(c->loc);
    return Value{};
  }
  not_supported("the call " + op, c->loc,
                "thread-level intrinsics (barriers, shuffles, async copies, wgmma) have no tile-level meaning; "
                "run this kernel on a GPU target");
}

}  // namespace tilec::cpu
