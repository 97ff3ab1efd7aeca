// Digit form of fragments: fitting by enumeration, expressions, inverse (digit_form.h).
#include "layout/digit_form.h"

#include <algorithm>
#include <numeric>

#include "layout/int_eval.h"
#include "tilec/layout/index_space.h"
#include "tilec/layout/layout.h"

namespace tilec::layout {

using namespace ir;

// ---------------------------------------------------------------------------------------
// folding constructors
// ---------------------------------------------------------------------------------------

Expr idx_add(const Expr& a, const Expr& b) {
  if (!a) return b;
  if (!b) return a;
  auto* ca = as_const_int(a);
  auto* cb = as_const_int(b);
  if (ca && cb) return int_imm(*ca + *cb, a->dtype);
  if (ca && *ca == 0) return b;
  if (cb && *cb == 0) return a;
  return a + b;
}
Expr idx_mul(const Expr& a, int64_t c) {
  if (auto* ca = as_const_int(a)) return int_imm(*ca * c, a->dtype);
  if (c == 0) return int_imm(0, a->dtype);
  if (c == 1) return a;
  return a * c;
}
Expr idx_div(const Expr& a, int64_t c) {
  TILEC_ICHECK(c > 0) << "division by " << c;
  if (auto* ca = as_const_int(a)) {
    int64_t q = *ca / c;
    if (*ca % c != 0 && *ca < 0) --q;
    return int_imm(q, a->dtype);
  }
  if (c == 1) return a;
  return floordiv(a, c);
}
Expr idx_mod(const Expr& a, int64_t c) {
  TILEC_ICHECK(c > 0) << "modulo by " << c;
  if (auto* ca = as_const_int(a)) return int_imm(((*ca % c) + c) % c, a->dtype);
  if (c == 1) return int_imm(0, a->dtype);
  return floormod(a, c);
}
Expr idx_and(const Expr& a, const Expr& b) {
  if (!a) return b;
  if (!b) return a;
  return a && b;
}

// ---------------------------------------------------------------------------------------
// DigitForm
// ---------------------------------------------------------------------------------------

int64_t DigitForm::local_size() const {
  int64_t m = 0;
  for (const auto& d : digits)
    if (!d.on_thread) m += (d.extent - 1) * d.out_stride;
  return m + 1;
}

int64_t DigitForm::thread_extent() const {
  int64_t m = 0;
  for (const auto& d : digits)
    if (d.on_thread) m += (d.extent - 1) * d.out_stride;
  return m + 1;
}

std::vector<Digit> DigitForm::digits_of(int dim) const {
  std::vector<Digit> out;
  for (const auto& d : digits)
    if (d.dim == dim) out.push_back(d);
  std::sort(out.begin(), out.end(), [](const Digit& a, const Digit& b) { return a.in_stride < b.in_stride; });
  return out;
}

bool DigitForm::is_top(const Digit& d) const {
  for (const auto& o : digits)
    if (o.dim == d.dim && o.in_stride > d.in_stride) return false;
  return true;
}

int64_t DigitForm::thread_of(const int64_t* idx, int64_t rep) const {
  int64_t t = 0;
  for (const auto& d : digits) {
    if (!d.on_thread) continue;
    int64_t x = d.dim == kRepDim ? rep : idx[d.dim];
    t += ((x / d.in_stride) % d.extent) * d.out_stride;
  }
  return t;
}

int64_t DigitForm::local_of(const int64_t* idx) const {
  int64_t l = 0;
  for (const auto& d : digits) {
    if (d.on_thread || d.dim == kRepDim) continue;
    l += ((idx[d.dim] / d.in_stride) % d.extent) * d.out_stride;
  }
  return l;
}

bool DigitForm::well_formed() const {
  for (int dim = kRepDim; dim < ndim(); ++dim) {
    int64_t n = dim_extent(dim);
    int64_t s = 1;
    for (const auto& d : digits_of(dim)) {
      if (d.in_stride != s || d.extent < 2 || d.out_stride < 1) return false;
      if (d.dim == kRepDim && !d.on_thread) return false;
      s *= d.extent;
    }
    if (s < n) return false;
    if (dim == kRepDim && s != n) return false;
    // The top digit must be needed: the next-lower boundary is below n.
    auto ds = digits_of(dim);
    if (!ds.empty() && ds.back().in_stride >= n) return false;
  }
  return true;
}

namespace {

struct Prober {
  std::vector<int64_t> shape;
  int64_t replicate;
  std::optional<IntProgram> thread, local;
  std::vector<int64_t> buf;  // idx..., rep

  std::pair<int64_t, int64_t> at(const std::vector<int64_t>& idx, int64_t rep) {
    std::copy(idx.begin(), idx.end(), buf.begin());
    buf.back() = rep;
    return {thread->eval(buf.data()), local->eval(buf.data())};
  }
};


// Whether the fragment's maps equal those of `f` at every element and replica. Digit forms
// are sums of one-dimension terms; when the fragment's expressions are too (the usual case),
// agreeing at the origin and along each axis is enough: the sum of the extents in
// evaluations instead of their product.
bool verify_form(const DigitForm& f, const Layout& frag, const std::vector<Var>& slots, Prober& p) {
  std::vector<int64_t> zero(f.shape.size(), 0);
  auto agrees = [&](const std::vector<int64_t>& idx, int64_t r) {
    auto got = p.at(idx, r);
    return got.first == f.thread_of(idx.data(), r) && got.second == f.local_of(idx.data());
  };
  if (is_separable(frag->forward_thread, slots) && is_separable(frag->forward_index[0], slots)) {
    if (!agrees(zero, 0)) return false;
    for (int dim = kRepDim; dim < f.ndim(); ++dim) {
      std::vector<int64_t> idx = zero;
      for (int64_t v = 1; v < f.dim_extent(dim); ++v) {
        if (dim != kRepDim) idx[dim] = v;
        if (!agrees(idx, dim == kRepDim ? v : 0)) return false;
      }
    }
    return true;
  }
  return for_each_index(f.shape, [&](const std::vector<int64_t>& idx) {
    for (int64_t r = 0; r < f.replicate; ++r)
      if (!agrees(idx, r)) return false;
    return true;
  });
}

}  // namespace

std::optional<DigitForm> fit_digit_form(const Layout& frag) {
  if (!frag || !frag->is_fragment() || !has_const_shape(frag) || frag->forward_index.size() != 1) return std::nullopt;
  auto* rc = as_const_int(frag->replicate);
  if (!rc || *rc < 1) return std::nullopt;
  std::vector<Var> slots = frag->vars;
  slots.push_back(frag->rep_var);
  if (!IntProgram::compiles(frag->forward_thread, slots) || !IntProgram::compiles(frag->forward_index[0], slots))
    return std::nullopt;

  DigitForm f;
  f.shape = const_shape(frag);
  f.replicate = *rc;
  Prober p{f.shape, f.replicate, IntProgram(frag->forward_thread, slots), IntProgram(frag->forward_index[0], slots),
           std::vector<int64_t>(slots.size(), 0)};
  std::vector<int64_t> zero(f.shape.size(), 0);
  auto base = p.at(zero, 0);
  if (base.first != 0 || base.second != 0) return std::nullopt;

  for (int dim = kRepDim; dim < f.ndim(); ++dim) {
    int64_t n = f.dim_extent(dim);
    auto probe = [&](int64_t v) {
      std::vector<int64_t> idx = zero;
      int64_t rep = 0;
      if (dim == kRepDim) rep = v;
      else idx[dim] = v;
      return p.at(idx, rep);
    };
    int64_t s = 1;
    while (s < n) {
      auto step = probe(s);
      bool on_thread = step.first != 0;
      if (step.first != 0 && step.second != 0) return std::nullopt;
      if (step.first < 0 || step.second < 0 || (step.first == 0 && step.second == 0)) return std::nullopt;
      if (dim == kRepDim && !on_thread) return std::nullopt;
      int64_t m = 1;
      while ((m + 1) * s < n) {
        auto q = probe((m + 1) * s);
        if (q.first != (m + 1) * step.first || q.second != (m + 1) * step.second) break;
        ++m;
      }
      f.digits.push_back({dim, s, m + 1, on_thread, on_thread ? step.first : step.second});
      s *= m + 1;
    }
  }
  if (!f.well_formed()) return std::nullopt;
  if (!verify_form(f, frag, slots, p)) return std::nullopt;
  return f;
}

DigitForm project_form(const DigitForm& f, const std::vector<int>& kept) {
  DigitForm out;
  std::vector<int> new_pos(f.shape.size(), -1);
  for (size_t i = 0; i < kept.size(); ++i) {
    TILEC_ICHECK(kept[i] >= 0 && kept[i] < f.ndim()) << "project: bad dimension";
    new_pos[kept[i]] = static_cast<int>(i);
    out.shape.push_back(f.shape[kept[i]]);
  }
  std::vector<Digit> reps, locals;
  for (const auto& d : f.digits) {
    bool kept_dim = d.dim != kRepDim && new_pos[d.dim] >= 0;
    if (kept_dim) {
      Digit n = d;
      n.dim = new_pos[d.dim];
      if (n.on_thread) out.digits.push_back(n);
      else locals.push_back(n);
    } else if (d.on_thread) {
      reps.push_back(d);
    }
  }
  auto by_out = [](const Digit& a, const Digit& b) { return a.out_stride < b.out_stride; };
  std::sort(reps.begin(), reps.end(), by_out);
  std::sort(locals.begin(), locals.end(), by_out);
  int64_t s = 1;
  for (auto& d : reps) {
    d.dim = kRepDim;
    d.in_stride = s;
    s *= d.extent;
    out.digits.push_back(d);
  }
  out.replicate = s;
  s = 1;
  for (auto& d : locals) {
    d.out_stride = s;
    s *= d.extent;
    out.digits.push_back(d);
  }
  TILEC_ICHECK(out.well_formed()) << "project produced a malformed layout";
  return out;
}

std::optional<DigitForm> split_dim_form(const DigitForm& f, int dim, int64_t c) {
  TILEC_ICHECK(dim >= 0 && dim < f.ndim() && c >= 1) << "split_dim_form: bad dimension or divisor";
  if (f.shape[dim] % c != 0) return std::nullopt;
  DigitForm out = f;
  const int lo = f.ndim();
  out.shape[dim] = f.shape[dim] / c;
  out.shape.push_back(c);
  out.digits.clear();
  for (const auto& g : f.digits) {
    if (g.dim != dim) {
      out.digits.push_back(g);
      continue;
    }
    const int64_t end = g.in_stride * g.extent;
    if (end <= c) {  // entirely below c: a digit of x % c
      out.digits.push_back({lo, g.in_stride, g.extent, g.on_thread, g.out_stride});
    } else if (g.in_stride >= c) {  // entirely above: a digit of x // c
      if (g.in_stride % c != 0) return std::nullopt;
      out.digits.push_back({dim, g.in_stride / c, g.extent, g.on_thread, g.out_stride});
    } else {  // straddles c: cut at c when c is one of its multiples
      if (c % g.in_stride != 0) return std::nullopt;
      const int64_t low = c / g.in_stride;
      if (g.extent % low != 0) return std::nullopt;
      out.digits.push_back({lo, g.in_stride, low, g.on_thread, g.out_stride});
      out.digits.push_back({dim, 1, g.extent / low, g.on_thread, g.out_stride * low});
    }
  }
  if (!out.well_formed()) return std::nullopt;
  return out;
}

namespace {
Expr digit_expr(const Digit& d, const Expr& x, bool top) {
  Expr v = idx_div(x, d.in_stride);
  return top ? v : idx_mod(v, d.extent);
}
}  // namespace

Layout to_layout(const DigitForm& f) {
  std::vector<Var> vars;
  static const char* kNames[] = {"i", "j", "k", "l", "m", "n"};
  for (int d = 0; d < f.ndim(); ++d)
    vars.push_back(make_var(d < 6 ? kNames[d] : "i" + std::to_string(d)));
  Var rep = make_var("rep");
  Expr thread = nullptr, local = nullptr;
  // Stable order: by output stride, so printed expressions read naturally.
  std::vector<Digit> ds = f.digits;
  std::stable_sort(ds.begin(), ds.end(), [](const Digit& a, const Digit& b) {
    if (a.on_thread != b.on_thread) return a.on_thread;
    return a.out_stride > b.out_stride;
  });
  for (const auto& d : ds) {
    Expr x = d.dim == kRepDim ? Expr(rep) : Expr(vars[d.dim]);
    Expr term = idx_mul(digit_expr(d, x, f.is_top(d)), d.out_stride);
    if (d.on_thread) thread = idx_add(thread, term);
    else local = idx_add(local, term);
  }
  if (!thread) thread = int_imm(0);
  if (!local) local = int_imm(0);
  std::vector<Expr> shape;
  for (auto e : f.shape) shape.push_back(int_imm(e));
  return make_fragment(shape, vars, {local}, thread, int_imm(f.replicate), rep);
}

// ---------------------------------------------------------------------------------------
// Mixed-radix values
// ---------------------------------------------------------------------------------------

Expr Atom::value() const {
  Expr v = idx_div(src, src_div);
  return src_mod ? idx_mod(v, src_mod) : v;
}

Expr radix_value(const MixedRadix& x) {
  Expr v = nullptr;
  for (const auto& a : x) v = idx_add(v, idx_mul(a.value(), a.in_stride));
  return v ? v : int_imm(0);
}

namespace {
// Splits the atom straddling boundary b (in_stride < b < in_stride * extent) in place.
bool split_at(MixedRadix& x, int64_t b) {
  for (size_t i = 0; i < x.size(); ++i) {
    Atom a = x[i];
    bool last = i + 1 == x.size();
    if (a.in_stride >= b) return true;  // b is at or below this atom's start: a boundary
    if (!last && a.in_stride * a.extent <= b) continue;
    if (last && a.in_stride * a.extent <= b) return true;
    if (b % a.in_stride != 0) return false;
    int64_t f = b / a.in_stride;
    if (!last && a.extent % f != 0) return false;
    if (a.src_mod != 0 && a.src_mod % f != 0) return false;
    Atom lo = a, hi = a;
    lo.src_mod = f;
    lo.extent = f;
    hi.src_div = a.src_div * f;
    hi.src_mod = a.src_mod ? a.src_mod / f : 0;
    hi.extent = (a.extent + f - 1) / f;
    hi.in_stride = a.in_stride * f;
    x[i] = lo;
    x.insert(x.begin() + static_cast<long>(i) + 1, hi);
    return true;
  }
  return true;
}
}  // namespace

std::optional<Expr> extract_digit(const MixedRadix& in, int64_t s, int64_t e) {
  MixedRadix x = in;
  if (!split_at(x, s)) return std::nullopt;
  if (e != 0 && !split_at(x, s * e)) return std::nullopt;
  Expr v = nullptr;
  for (const auto& a : x) {
    if (a.in_stride < s) continue;
    if (e != 0 && a.in_stride >= s * e) continue;
    if (a.in_stride % s != 0) return std::nullopt;
    v = idx_add(v, idx_mul(a.value(), a.in_stride / s));
  }
  return v ? v : int_imm(0);
}

namespace {
// Values of a group of digits drawn from one source (thread or register index).
// Returns per-digit atoms sources and adds a validity condition when the digits do not
// tile [0, product) contiguously.
std::vector<std::pair<Digit, Atom>> decode(const std::vector<Digit>& group, const Expr& src, int64_t src_extent,
                                           Expr* valid) {
  std::vector<Digit> ds = group;
  std::sort(ds.begin(), ds.end(), [](const Digit& a, const Digit& b) { return a.out_stride < b.out_stride; });
  bool contiguous = true;
  int64_t s = 1;
  for (const auto& d : ds) {
    if (d.out_stride != s) contiguous = false;
    s = d.out_stride * d.extent;
  }
  std::vector<std::pair<Digit, Atom>> out;
  Expr rebuilt = nullptr;
  for (size_t i = 0; i < ds.size(); ++i) {
    const Digit& d = ds[i];
    Atom a;
    a.src = src;
    a.src_div = d.out_stride;
    bool top = contiguous && i + 1 == ds.size();
    a.src_mod = top ? 0 : d.extent;
    a.extent = d.extent;
    a.in_stride = d.in_stride;
    out.emplace_back(d, a);
    rebuilt = idx_add(rebuilt, idx_mul(a.value(), d.out_stride));
  }
  if (!rebuilt) rebuilt = int_imm(0);
  if (contiguous) {
    if (s < src_extent) *valid = idx_and(*valid, src < int_imm(s));
  } else {
    *valid = idx_and(*valid, binary(NodeKind::kEQ, rebuilt, src));
  }
  return out;
}
}  // namespace

DigitInverse invert(const DigitForm& f, const Expr& thread, const Expr& local, int64_t num_threads,
                    bool first_replica_only) {
  DigitInverse inv;
  inv.dims.resize(f.shape.size());
  std::vector<Digit> td, ld;
  for (const auto& d : f.digits) (d.on_thread ? td : ld).push_back(d);
  Expr valid = nullptr;
  auto tatoms = decode(td, thread, num_threads, &valid);
  auto latoms = decode(ld, local, f.local_size(), &valid);
  for (auto* group : {&tatoms, &latoms}) {
    for (auto& [d, a] : *group) {
      if (d.dim == kRepDim) {
        inv.rep.push_back(a);
        if (first_replica_only) valid = idx_and(valid, binary(NodeKind::kEQ, a.value(), int_imm(0)));
      } else {
        inv.dims[d.dim].push_back(a);
      }
    }
  }
  auto by_stride = [](const Atom& a, const Atom& b) { return a.in_stride < b.in_stride; };
  std::sort(inv.rep.begin(), inv.rep.end(), by_stride);
  for (int dim = 0; dim < f.ndim(); ++dim) {
    auto& x = inv.dims[dim];
    std::sort(x.begin(), x.end(), by_stride);
    if (!x.empty()) {
      const Atom& top = x.back();
      if (top.in_stride * top.extent > f.shape[dim])
        valid = idx_and(valid, radix_value(x) < int_imm(f.shape[dim]));
    }
  }
  inv.valid = valid;
  return inv;
}

}  // namespace tilec::layout
