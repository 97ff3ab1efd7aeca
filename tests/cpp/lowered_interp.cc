// CPU interpreter for lowered IR (see lowered_interp.h).
#include "lowered_interp.h"

#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "device/cuda/gemm_sm80_layout.cuh"
#include "tilec/ir/buffer.h"
#include "tilec/ir/expr.h"

namespace tilec::testing {

using namespace ir;

double& HostTensor::at(std::initializer_list<int64_t> idx) {
  int64_t off = 0;
  size_t d = 0;
  for (auto i : idx) off = off * shape[d++] + i;
  return data.at(static_cast<size_t>(off));
}

std::vector<double> random_values(size_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v(n);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = static_cast<double>((s >> 11) & ((1ULL << 53) - 1)) / static_cast<double>(1ULL << 53);
    x = lo + (hi - lo) * u;
  }
  return v;
}

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("lowered interpreter: " + msg); }

using Vals = std::vector<double>;
using Mask = std::vector<char>;

double round_to(DataType t, double v) {
  if (t.is_float()) {
    if (t.bits() == 64) return v;
    return static_cast<double>(static_cast<float>(v));
  }
  if (t.is_bool()) return v != 0 ? 1 : 0;
  if (t.is_integer()) {
    double r = std::trunc(v);
    if (t.bits() < 64) {
      int64_t i = static_cast<int64_t>(r);
      int bits = t.bits();
      uint64_t mask = (uint64_t{1} << bits) - 1;
      uint64_t u = static_cast<uint64_t>(i) & mask;
      if (t.is_int() && (u >> (bits - 1))) return static_cast<double>(static_cast<int64_t>(u | ~mask));
      return static_cast<double>(u);
    }
    return r;
  }
  return v;
}

int64_t floordiv_i(int64_t a, int64_t b) {
  if (b == 0) fail("integer division by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

struct Storage {
  std::vector<double>* data = nullptr;  // global / shared
  std::vector<double> owned;
  bool per_thread = false;
  int64_t size = 0;  // elements (per thread when per_thread)
  std::vector<int64_t> strides;  // for multi-dim access
};

class Interp {
 public:
  Interp(int64_t threads) : T_(threads) {}

  void bind_var(const VarNode* v, double x) { vars_[v] = Vals(T_, x); }
  void bind_thread_values(const VarNode* v, const std::vector<double>& x) { vars_[v] = x; }
  void bind_tensor(const Buffer& b, HostTensor* t) {
    auto s = std::make_unique<Storage>();
    s->data = &t->data;
    s->size = t->size();
    storages_[b.get()] = std::move(s);
  }
  void set_threads(int64_t t) { T_ = t; }

  Vals eval(const Expr& e, const Mask& m) {
    switch (e->kind) {
      case NodeKind::kIntImm: return Vals(T_, static_cast<double>(e.as<IntImmNode>()->value));
      case NodeKind::kFloatImm: return Vals(T_, e.as<FloatImmNode>()->value);
      case NodeKind::kVar: {
        auto it = vars_.find(e.as<VarNode>());
        if (it == vars_.end()) fail("unbound variable " + e.as<VarNode>()->name);
        return it->second;
      }
      case NodeKind::kNot: {
        Vals a = eval(e.as<NotNode>()->a, m);
        for (auto& x : a) x = x == 0;
        return a;
      }
      case NodeKind::kSelect: {
        auto* s = e.as<SelectNode>();
        Vals c = eval(s->cond, m);
        Mask mt = m, mf = m;
        for (int64_t t = 0; t < T_; ++t) {
          mt[t] = m[t] && c[t] != 0;
          mf[t] = m[t] && c[t] == 0;
        }
        Vals a = eval(s->true_value, mt), b = eval(s->false_value, mf);
        for (int64_t t = 0; t < T_; ++t) a[t] = c[t] != 0 ? a[t] : b[t];
        return a;
      }
      case NodeKind::kCast: {
        auto* c = e.as<CastNode>();
        Vals a = eval(c->value, m);
        for (auto& x : a) x = round_to(c->dtype, x);
        return a;
      }
      case NodeKind::kBufferLoad: {
        auto* l = e.as<BufferLoadNode>();
        if (l->dtype.lanes() != 1) fail("vector loads are not supported");
        Vals out(T_, 0.0);
        auto flat = flat_index(l->buffer, l->indices, m);
        Storage& s = storage(l->buffer);
        for (int64_t t = 0; t < T_; ++t) {
          if (!m[t]) continue;
          out[t] = (*cell(s, l->buffer, flat[t], t));
        }
        return out;
      }
      case NodeKind::kCall: return eval_call(e.as<CallNode>(), m);
      default: break;
    }
    if (!is_binary_kind(e->kind)) fail(std::string("unsupported expression ") + node_kind_name(e->kind));
    auto* b = static_cast<const BinaryNode*>(e.get());
    Vals x = eval(b->a, m), y = eval(b->b, m);
    bool is_int = b->a->dtype.is_integer() || b->a->dtype.is_bool();
    for (int64_t t = 0; t < T_; ++t) {
      if (!m[t]) {
        x[t] = 0;
        continue;
      }
      double a = x[t], c = y[t];
      double r = 0;
      switch (e->kind) {
        case NodeKind::kAdd: r = a + c; break;
        case NodeKind::kSub: r = a - c; break;
        case NodeKind::kMul: r = a * c; break;
        case NodeKind::kDiv:
          if (is_int) {
            if (c == 0) fail("division by zero");
            r = static_cast<double>(static_cast<int64_t>(a) / static_cast<int64_t>(c));
          } else {
            r = a / c;
          }
          break;
        case NodeKind::kMod:
          if (c == 0) fail("modulo by zero");
          r = static_cast<double>(static_cast<int64_t>(a) % static_cast<int64_t>(c));
          break;
        case NodeKind::kFloorDiv:
          r = is_int ? static_cast<double>(floordiv_i(static_cast<int64_t>(a), static_cast<int64_t>(c)))
                     : std::floor(a / c);
          break;
        case NodeKind::kFloorMod: {
          int64_t ai = static_cast<int64_t>(a), ci = static_cast<int64_t>(c);
          r = static_cast<double>(ai - floordiv_i(ai, ci) * ci);
          break;
        }
        case NodeKind::kMin: r = std::min(a, c); break;
        case NodeKind::kMax: r = std::max(a, c); break;
        case NodeKind::kEQ: r = a == c; break;
        case NodeKind::kNE: r = a != c; break;
        case NodeKind::kLT: r = a < c; break;
        case NodeKind::kLE: r = a <= c; break;
        case NodeKind::kGT: r = a > c; break;
        case NodeKind::kGE: r = a >= c; break;
        case NodeKind::kAnd: r = (a != 0) && (c != 0); break;
        case NodeKind::kOr: r = (a != 0) || (c != 0); break;
        default: fail("binary kind");
      }
      x[t] = round_to(e->dtype, r);
    }
    return x;
  }

  void exec(const Stmt& s, const Mask& m) {
    if (!any(m)) return;
    switch (s->kind) {
      case NodeKind::kSeq:
        for (const auto& x : s.as<SeqNode>()->stmts) exec(x, m);
        return;
      case NodeKind::kFor: {
        auto* f = s.as<ForNode>();
        if (f->for_kind == ForKind::kParallel) fail("a T.Parallel loop survived lowering");
        int64_t lo = uniform(eval(f->min, m), m, "loop start");
        int64_t n = uniform(eval(f->extent, m), m, "loop extent");
        for (int64_t i = lo; i < lo + n; ++i) {
          vars_[f->loop_var.get()] = Vals(T_, static_cast<double>(i));
          exec(f->body, m);
        }
        vars_.erase(f->loop_var.get());
        return;
      }
      case NodeKind::kIf: {
        auto* i = s.as<IfNode>();
        Vals c = eval(i->cond, m);
        Mask mt = m, mf = m;
        for (int64_t t = 0; t < T_; ++t) {
          mt[t] = m[t] && c[t] != 0;
          mf[t] = m[t] && c[t] == 0;
        }
        exec(i->then_case, mt);
        if (i->else_case) exec(i->else_case, mf);
        return;
      }
      case NodeKind::kLet: {
        auto* l = s.as<LetNode>();
        vars_[l->var.get()] = eval(l->value, m);
        exec(l->body, m);
        vars_.erase(l->var.get());
        return;
      }
      case NodeKind::kBufferStore: {
        auto* st = s.as<BufferStoreNode>();
        Vals v = eval(st->value, m);
        auto flat = flat_index(st->buffer, st->indices, m);
        Storage& sto = storage(st->buffer);
        for (int64_t t = 0; t < T_; ++t)
          if (m[t]) *cell(sto, st->buffer, flat[t], t) = round_to(st->buffer->dtype, v[t]);
        return;
      }
      case NodeKind::kEvaluate: eval(s.as<EvaluateNode>()->value, m); return;
      case NodeKind::kAllocate: {
        auto* a = s.as<AllocateNode>();
        auto st = std::make_unique<Storage>();
        int64_t n = 1;
        for (const auto& e : a->buffer->shape) {
          auto* c = as_const_int(e);
          if (!c) fail("allocation with a symbolic shape: " + a->buffer->name);
          n *= *c;
        }
        st->size = n;
        st->per_thread = !(is_shared(a->buffer->scope));
        // Poison fresh memory so reads of unwritten data show up.
        st->owned.assign(static_cast<size_t>(st->per_thread ? n * T_ : n), std::nan(""));
        st->data = &st->owned;
        storages_[a->buffer.get()] = std::move(st);
        exec(a->body, m);
        storages_.erase(a->buffer.get());
        return;
      }
      case NodeKind::kAnnotate: exec(s.as<AnnotateNode>()->body, m); return;
      case NodeKind::kKernelLaunch: fail("nested kernel launch");
      case NodeKind::kTileOp: fail("a tile op survived lowering: T." + s.as<TileOpNode>()->op);
      default: fail("statement kind");
    }
  }

 private:
  static bool any(const Mask& m) {
    for (char c : m)
      if (c) return true;
    return false;
  }
  int64_t uniform(const Vals& v, const Mask& m, const char* what) {
    int64_t first = 0;
    bool set = false;
    for (int64_t t = 0; t < T_; ++t) {
      if (!m[t]) continue;
      int64_t x = static_cast<int64_t>(v[t]);
      if (set && x != first) fail(std::string(what) + " differs between threads");
      first = x;
      set = true;
    }
    return first;
  }
  Storage& storage(const Buffer& b) {
    auto it = storages_.find(b.get());
    if (it == storages_.end()) fail("buffer '" + b->name + "' has no storage (not allocated or not a parameter)");
    return *it->second;
  }
  std::vector<int64_t> flat_index(const Buffer& b, const std::vector<Expr>& idx, const Mask& m) {
    std::vector<Vals> iv;
    for (const auto& e : idx) iv.push_back(eval(e, m));
    std::vector<Expr> strides = buffer_strides(b);
    std::vector<Vals> sv;
    for (const auto& e : strides) sv.push_back(eval(e, m));
    std::vector<int64_t> flat(T_, 0);
    for (int64_t t = 0; t < T_; ++t) {
      if (!m[t]) continue;
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += static_cast<int64_t>(iv[d][t]) * static_cast<int64_t>(sv[d][t]);
      flat[t] = off;
    }
    return flat;
  }
  double* cell(Storage& s, const Buffer& b, int64_t flat, int64_t t) {
    if (flat < 0 || flat >= s.size)
      fail("out-of-bounds access " + b->name + "[" + std::to_string(flat) + "] (size " + std::to_string(s.size) +
           ") by thread " + std::to_string(t));
    return &(*s.data)[static_cast<size_t>(s.per_thread ? t * s.size + flat : flat)];
  }

  Vals eval_call(const CallNode* c, const Mask& m) {
    const std::string& op = c->op;
    auto unary = [&](const std::function<double(double)>& fn) {
      Vals a = eval(c->args[0], m);
      for (int64_t t = 0; t < T_; ++t) a[t] = m[t] ? round_to(c->dtype, fn(a[t])) : 0;
      return a;
    };
    if (op == "exp") return unary([](double x) { return std::exp(x); });
    if (op == "exp2") return unary([](double x) { return std::exp2(x); });
    if (op == "log") return unary([](double x) { return std::log(x); });
    if (op == "log2") return unary([](double x) { return std::log2(x); });
    if (op == "sqrt") return unary([](double x) { return std::sqrt(x); });
    if (op == "rsqrt") return unary([](double x) { return 1.0 / std::sqrt(x); });
    if (op == "tanh") return unary([](double x) { return std::tanh(x); });
    if (op == "sigmoid") return unary([](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    if (op == "abs") return unary([](double x) { return std::fabs(x); });
    if (op == "infinity") return Vals(T_, INFINITY);
    if (op == "tl.bitwise_xor" || op == "tl.bitwise_and" || op == "tl.bitwise_or" || op == "tl.shift_left" ||
        op == "tl.shift_right") {
      Vals a = eval(c->args[0], m), b = eval(c->args[1], m);
      for (int64_t t = 0; t < T_; ++t) {
        int64_t x = static_cast<int64_t>(a[t]), y = static_cast<int64_t>(b[t]);
        int64_t r = op == "tl.bitwise_xor" ? (x ^ y)
                    : op == "tl.bitwise_and" ? (x & y)
                    : op == "tl.bitwise_or"  ? (x | y)
                    : op == "tl.shift_left"  ? (x << y)
                                             : (x >> y);
        a[t] = static_cast<double>(r);
      }
      return a;
    }
    if (op == "tl.shfl_xor" || op == "tl.shfl_idx") {
      // Warp-wide: every lane of each warp must take part (full mask).
      Vals v = eval(c->args[0], m), k = eval(c->args[1], m);
      Vals out(T_, 0);
      for (int64_t t = 0; t < T_; ++t) {
        if (!m[t]) continue;
        int64_t warp = t / 32, lane = t % 32;
        for (int64_t l = 0; l < 32; ++l)
          if (warp * 32 + l >= T_ || !m[warp * 32 + l]) fail(op + " executed by a partial warp");
        int64_t src = op == "tl.shfl_xor" ? (lane ^ static_cast<int64_t>(k[t])) : static_cast<int64_t>(k[t]);
        if (src < 0 || src >= 32) fail(op + " source lane out of range");
        out[t] = v[warp * 32 + src];
      }
      return out;
    }
    if (op == "tl.atomic_add" || op == "tl.atomic_max" || op == "tl.atomic_min") {
      auto* addr = c->args[0].as<CallNode>();
      if (!addr || addr->op != "tl.address_of") fail(op + " needs tl.address_of(A[i])");
      auto* load = addr->args[0].as<BufferLoadNode>();
      Vals v = eval(c->args[1], m);
      auto flat = flat_index(load->buffer, load->indices, m);
      Storage& s = storage(load->buffer);
      Vals old(T_, 0);
      for (int64_t t = 0; t < T_; ++t) {
        if (!m[t]) continue;
        double* p = cell(s, load->buffer, flat[t], t);
        old[t] = *p;
        double r = op == "tl.atomic_add" ? *p + v[t] : op == "tl.atomic_max" ? std::max(*p, v[t]) : std::min(*p, v[t]);
        *p = round_to(load->buffer->dtype, r);
      }
      return old;
    }
    if (op == "tl.syncthreads" || op == "tl.cp_async_commit" || op == "tl.cp_async_wait") return Vals(T_, 0);
    if (op.rfind("tl.cp_async_c", 0) == 0) return cp_async(c, m);
    if (op == "tl.gemm_ss" || op == "tl.gemm_rs") return gemm(c, m);
    fail("unsupported call " + op);
  }

  // The buffer and per-thread flat element index behind tl.address_of(B[i]).
  std::pair<const BufferLoadNode*, std::vector<int64_t>> address(const Expr& e, const Mask& m) {
    auto* addr = e.as<CallNode>();
    if (!addr || addr->op != "tl.address_of") fail("expected tl.address_of(A[i])");
    auto* load = addr->args[0].as<BufferLoadNode>();
    return {load, flat_index(load->buffer, load->indices, m)};
  }

  // cp.async (copies at once: the interpreter has no asynchrony to model).
  Vals cp_async(const CallNode* c, const Mask& m) {
    const std::string& op = c->op;
    const int64_t bytes = op.find("16") != std::string::npos ? 16 : op.find("8") != std::string::npos ? 8 : 4;
    auto [dst, dflat] = address(c->args[0], m);
    auto [src, sflat] = address(c->args[1], m);
    Vals pred = c->args.size() > 2 ? eval(c->args[2], m) : Vals(T_, 1);
    const int64_t n = bytes / dst->buffer->dtype.bytes();
    Storage& ds = storage(dst->buffer);
    for (int64_t t = 0; t < T_; ++t) {
      if (!m[t]) continue;
      for (int64_t e = 0; e < n; ++e) {
        double v = 0;
        if (pred[t] != 0) v = *cell(storage(src->buffer), src->buffer, sflat[t] + e, t);
        *cell(ds, dst->buffer, dflat[t] + e, t) = v;
      }
    }
    return Vals(T_, 0);
  }

  // The template argument list of a tl.gemm_* call, split at top-level commas.
  static std::vector<std::string> template_args(const Expr& e) {
    const std::string& s = e.as<StringImmNode>()->value;
    std::vector<std::string> out(1);
    int depth = 0;
    for (char ch : s) {
      if (ch == '<') ++depth;
      if (ch == '>') --depth;
      if (ch == ',' && depth == 0) {
        out.emplace_back();
        continue;
      }
      if (ch != ' ' || !out.back().empty()) out.back() += ch;
    }
    return out;
  }
  // "tl::SmemTile<R, C, bits>" -> {R, C, bits}
  static std::vector<int> smem_tile(const std::string& s) {
    std::vector<int> v;
    size_t p = s.find('<');
    while (p != std::string::npos && v.size() < 3) {
      v.push_back(std::stoi(s.substr(p + 1)));
      p = s.find(',', p + 1);
    }
    if (v.size() != 3) fail("bad SmemTile " + s);
    return v;
  }

  // tl.gemm_ss / tl.gemm_rs, block-wide: C (+)= op(A) * op(B) on the fragments of every
  // thread, A and B read through the shared layouts (tl::layout::tile_offset) or, for
  // gemm_rs, A from the threads' registers in the accumulator layout over M x K.
  Vals gemm(const CallNode* c, const Mask& m) {
    for (int64_t t = 0; t < T_; ++t)
      if (!m[t]) fail(c->op + " executed by part of the block");
    const bool rs = c->op == "tl.gemm_rs";
    auto ta = template_args(c->args[0]);
    const int M = std::stoi(ta[0]), N = std::stoi(ta[1]), K = std::stoi(ta[2]), WM = std::stoi(ta[3]),
              WN = std::stoi(ta[4]);
    const bool trans_a = !rs && ta[5] == "true", trans_b = ta[rs ? 5 : 6] == "true",
               clear = ta[rs ? 6 : 7] == "true";
    auto [a, aflat] = address(c->args[1], m);
    const int b_arg = rs ? 2 : 4;
    auto [b, bflat] = address(c->args[b_arg], m);
    const int64_t a_row0 = rs ? 0 : int64_t(eval(c->args[2], m)[0]), a_col0 = rs ? 0 : int64_t(eval(c->args[3], m)[0]);
    const int64_t b_row0 = int64_t(eval(c->args[b_arg + 1], m)[0]), b_col0 = int64_t(eval(c->args[b_arg + 2], m)[0]);
    auto [cl, cflat] = address(c->args[b_arg + 3], m);
    const std::vector<int> tile_b = smem_tile(ta[rs ? 7 : 9]);
    const std::vector<int> tile_a = rs ? std::vector<int>{} : smem_tile(ta[8]);
    Storage &as = storage(a->buffer), &bs = storage(b->buffer), &cs = storage(cl->buffer);
    const int ea = a->buffer->dtype.bytes(), eb = b->buffer->dtype.bytes();
    auto A = [&](int i, int k) -> double {
      if (rs)
        return *cell(as, a->buffer, aflat[0] + tl::layout::c_frag_index(i, k, M, K, WM, 1),
                     tl::layout::c_frag_thread(i, k, M, K, WM, 1));
      const int r = trans_a ? k : i, col = trans_a ? i : k;
      return *cell(as, a->buffer,
                   aflat[0] + tl::layout::tile_offset(int(a_row0) + r, int(a_col0) + col, tile_a[0], tile_a[1], ea,
                                                      tile_a[2]),
                   0);
    };
    auto B = [&](int k, int j) -> double {
      const int r = trans_b ? j : k, col = trans_b ? k : j;
      return *cell(bs, b->buffer,
                   bflat[0] + tl::layout::tile_offset(int(b_row0) + r, int(b_col0) + col, tile_b[0], tile_b[1], eb,
                                                      tile_b[2]),
                   0);
    };
    std::vector<std::pair<int64_t, double>> results;  // (thread * size + register, value)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double acc = 0;
        for (int k = 0; k < K; ++k) acc += A(i, k) * B(k, j);
        const int64_t t = tl::layout::c_frag_thread(i, j, M, N, WM, WN);
        double* p = cell(cs, cl->buffer, cflat[t] + tl::layout::c_frag_index(i, j, M, N, WM, WN), t);
        *p = round_to(cl->buffer->dtype, (clear ? 0.0 : *p) + acc);
      }
    return Vals(T_, 0);
  }

  int64_t T_;
  std::unordered_map<const VarNode*, Vals> vars_;
  std::unordered_map<const BufferNode*, std::unique_ptr<Storage>> storages_;
};

}  // namespace

void run_lowered(const PrimFunc& f, const std::map<std::string, HostTensor*>& tensors,
                 const std::map<std::string, int64_t>& scalars) {
  Interp in(1);
  std::unordered_map<const VarNode*, int64_t> symbols;
  for (const auto& p : f->params) {
    if (p.is_buffer()) {
      auto it = tensors.find(p.buffer->name);
      if (it == tensors.end()) fail("no tensor for parameter " + p.buffer->name);
      HostTensor* t = it->second;
      if (t->shape.size() != p.buffer->shape.size()) fail("rank mismatch for " + p.buffer->name);
      for (size_t d = 0; d < t->shape.size(); ++d) {
        const Expr& e = p.buffer->shape[d];
        if (auto* v = e.as<VarNode>()) symbols[v] = t->shape[d];
        else if (auto* c = as_const_int(e); c && *c != t->shape[d]) fail("shape mismatch for " + p.buffer->name);
      }
      in.bind_tensor(p.buffer, t);
    } else {
      auto it = scalars.find(p.var->name);
      if (it == scalars.end()) fail("no value for scalar parameter " + p.var->name);
      in.bind_var(p.var.get(), static_cast<double>(it->second));
    }
  }
  for (auto [v, x] : symbols) in.bind_var(v, static_cast<double>(x));
  // Find the kernel launch (possibly under Lets / Annotates at function level).
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (auto* k = s.as<KernelLaunchNode>()) {
      int64_t T = 1;
      for (auto t : k->threads) T *= t;
      in.set_threads(T);
      for (const auto& [v, x] : symbols) in.bind_var(v, static_cast<double>(x));
      for (const auto& p : f->params)
        if (!p.is_buffer()) in.bind_var(p.var.get(), static_cast<double>(scalars.at(p.var->name)));
      std::vector<int64_t> grid;
      for (const auto& g : k->grid) {
        Mask all(static_cast<size_t>(T), 1);
        grid.push_back(static_cast<int64_t>(in.eval(g, all)[0]));
      }
      int64_t blocks = 1;
      for (auto g : grid) blocks *= g;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        int64_t r = blk;
        for (size_t i = 0; i < grid.size(); ++i) {
          in.bind_var(k->block_vars[i].get(), static_cast<double>(r % grid[i]));
          r /= grid[i];
        }
        // Thread indices: per-thread values.
        int64_t stride = 1;
        for (size_t i = 0; i < k->threads.size(); ++i) {
          std::vector<double> v(static_cast<size_t>(T));
          for (int64_t t = 0; t < T; ++t) v[t] = static_cast<double>((t / stride) % k->threads[i]);
          in.bind_var(k->thread_vars[i].get(), 0);
          in.bind_thread_values(k->thread_vars[i].get(), v);
          stride *= k->threads[i];
        }
        in.exec(k->body, Mask(static_cast<size_t>(T), 1));
      }
      return;
    }
    if (s.as<LetNode>()) fail("function-level Let is not supported by the test interpreter");
    if (auto* a = s.as<AnnotateNode>()) return walk(a->body);
    if (auto* q = s.as<SeqNode>()) {
      for (const auto& x : q->stmts) walk(x);
      return;
    }
    fail("expected a kernel launch at function level");
  };
  walk(f->body);
}

}  // namespace tilec::testing
