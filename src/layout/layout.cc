// Layout algebra: construction, queries, inverse, comparison, composition, defaults.
#include "tilec/layout/index_space.h"
#include "tilec/layout/layout.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_set>
#include <sstream>

#include "layout/digit_form.h"
#include "layout/int_eval.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/printer.h"
#include "tilec/ir/structural.h"

namespace tilec::layout {

using namespace ir;

namespace {

std::vector<Var> fresh_vars(size_t n) {
  static const char* kNames[] = {"i", "j", "k", "l", "m", "n"};
  std::vector<Var> v;
  for (size_t d = 0; d < n; ++d) v.push_back(make_var(d < 6 ? kNames[d] : "i" + std::to_string(d)));
  return v;
}

std::vector<Expr> shape_exprs(const std::vector<int64_t>& shape) {
  std::vector<Expr> s;
  for (auto e : shape) s.push_back(int_imm(e));
  return s;
}

std::vector<Var> slots_of(const Layout& l) {
  std::vector<Var> s = l->vars;
  if (l->is_fragment()) s.push_back(l->rep_var);
  return s;
}


// Compiled forward maps of a layout, evaluated over (idx..., rep).
struct Compiled {
  std::vector<IntProgram> index;
  std::optional<IntProgram> thread;
  std::vector<int64_t> buf;
  explicit Compiled(const Layout& l) {
    auto slots = slots_of(l);
    for (const auto& e : l->forward_index) index.emplace_back(e, slots);
    if (l->is_fragment()) thread.emplace(l->forward_thread, slots);
    buf.assign(slots.size(), 0);
  }
  void set(const std::vector<int64_t>& idx, int64_t rep) {
    std::copy(idx.begin(), idx.end(), buf.begin());
    if (buf.size() > idx.size()) buf.back() = rep;
  }
  int64_t idx(size_t i) const { return index[i].eval(buf.data()); }
  int64_t thr() const { return thread->eval(buf.data()); }
};

// The box the forward maps of `l` range over (slots_of order): its shape, then the replica
// index with `replicas` values (1: replica 0 only) when a fragment.
std::vector<int64_t> slot_box(const Layout& l, int64_t replicas) {
  std::vector<int64_t> box = const_shape(l);
  if (l->is_fragment()) box.push_back(replicas);
  return box;
}

// max(0, max of e over the box). A separable e is maximal where each of its one-slot
// terms is, so the axes suffice (sum of extents evaluations instead of their product).
int64_t max_over(const Expr& e, const std::vector<Var>& slots, const std::vector<int64_t>& box) {
  for (auto x : box)
    if (x <= 0) return 0;
  if (is_separable(e, slots)) {
    IntProgram p(e, slots);
    std::vector<int64_t> x(box.size(), 0);
    const int64_t base = p.eval(x.data());
    int64_t m = base;
    for (size_t d = 0; d < box.size(); ++d) {
      int64_t best = 0;
      for (x[d] = 1; x[d] < box[d]; ++x[d]) best = std::max(best, p.eval(x.data()) - base);
      x[d] = 0;
      m += best;
    }
    return std::max<int64_t>(0, m);
  }
  auto v = eval_box(e, slots, box);
  return std::max<int64_t>(0, *std::max_element(v.begin(), v.end()));
}

// Whether the maps of `a` and `b` are the same expressions up to the names of the layout
// variables (the common case: one builder asked twice).
bool same_expressions(const Layout& a, const Layout& b) {
  if (a->is_fragment() && !ir::structural_equal(a->replicate, b->replicate)) return false;
  auto sa = slots_of(a), sb = slots_of(b);
  VarMap m;
  for (size_t i = 0; i < sb.size(); ++i) m[sb[i].get()] = sa[i];
  for (size_t i = 0; i < a->forward_index.size(); ++i)
    if (!ir::structural_equal(a->forward_index[i], substitute(b->forward_index[i], m))) return false;
  return !a->is_fragment() || ir::structural_equal(a->forward_thread, substitute(b->forward_thread, m));
}

// Whether sum_g v_g * stride_g, v_g in [0, extent_g), takes distinct values for distinct
// digit tuples: sorted by stride, each stride exceeds the largest sum of the smaller ones.
bool digits_disjoint(std::vector<std::pair<int64_t, int64_t>> stride_extent) {
  std::sort(stride_extent.begin(), stride_extent.end());
  int64_t reach = 0;  // max of the sum over the digits so far
  for (const auto& [stride, extent] : stride_extent) {
    if (stride <= reach) return false;
    reach += (extent - 1) * stride;
  }
  return true;
}

// A sufficient condition for is_injective of a fragment: its digit form sends distinct
// (element, replica) to distinct digit tuples, and both the thread digits and the register
// digits are disjoint.
bool injective_by_digits(const Layout& frag) {
  auto f = fit_digit_form(frag);
  if (!f) return false;
  std::vector<std::pair<int64_t, int64_t>> thread, local;
  for (const auto& g : f->digits) (g.on_thread ? thread : local).push_back({g.out_stride, g.extent});
  return digits_disjoint(thread) && digits_disjoint(local);
}

// Whether the keys are pairwise distinct: a bitmap over their range when that is small
// (slots of a tile, the usual case), else sorting (reorders the keys).
bool all_distinct(std::vector<int64_t>& keys) {
  if (keys.empty()) return true;
  auto [lo, hi] = std::minmax_element(keys.begin(), keys.end());
  const uint64_t range = static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo);
  if (range < 8 * keys.size() + 64) {
    std::vector<bool> seen(range + 1, false);
    const int64_t base = *lo;
    for (int64_t k : keys) {
      auto slot = seen[static_cast<uint64_t>(k - base)];
      if (slot) return false;
      slot = true;
    }
    return true;
  }
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// construction
// ---------------------------------------------------------------------------------------

Layout make_plain(const std::vector<int64_t>& shape, const IndexFn& index) {
  auto vars = fresh_vars(shape.size());
  return make_layout(shape_exprs(shape), vars, index(vars));
}

Layout make_fragment(const std::vector<int64_t>& shape, const ThreadFn& thread, const LocalFn& local,
                     int64_t replicate) {
  auto vars = fresh_vars(shape.size());
  Var rep = make_var("rep");
  return ir::make_fragment(shape_exprs(shape), vars, {local(vars)}, thread(vars, rep), int_imm(replicate), rep);
}

Layout row_major(const std::vector<int64_t>& shape) {
  return make_plain(shape, [&](const std::vector<Var>& v) {
    Expr off = nullptr;
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      off = idx_add(idx_mul(v[d], stride), off);
      stride *= shape[d];
    }
    return std::vector<Expr>{off ? off : int_imm(0)};
  });
}

// ---------------------------------------------------------------------------------------
// queries
// ---------------------------------------------------------------------------------------

bool has_const_shape(const Layout& l) {
  return std::all_of(l->input_shape.begin(), l->input_shape.end(), [](const Expr& e) { return as_const_int(e); });
}

std::vector<int64_t> const_shape(const Layout& l) {
  std::vector<int64_t> s;
  for (const auto& e : l->input_shape) {
    auto* c = as_const_int(e);
    TILEC_ICHECK(c) << "layout with a symbolic shape";
    s.push_back(*c);
  }
  return s;
}

int64_t num_elements(const Layout& l) {
  int64_t n = 1;
  for (auto e : const_shape(l)) n *= e;
  return n;
}

int64_t replicate_factor(const Layout& frag) {
  if (!frag->is_fragment()) return 1;
  auto* c = as_const_int(frag->replicate);
  TILEC_ICHECK(c) << "fragment with a symbolic replicate factor";
  return *c;
}

int64_t fragment_local_size(const Layout& frag) {
  TILEC_ICHECK(frag->is_fragment() && frag->forward_index.size() == 1) << "not a fragment";
  return max_over(frag->forward_index[0], slots_of(frag), slot_box(frag, 1)) + 1;
}

int64_t thread_extent(const Layout& frag) {
  TILEC_ICHECK(frag->is_fragment()) << "not a fragment";
  return max_over(frag->forward_thread, slots_of(frag), slot_box(frag, replicate_factor(frag))) + 1;
}

int64_t physical_size(const Layout& plain) {
  TILEC_ICHECK(plain->forward_index.size() == 1) << "physical_size of a multi-output layout";
  return max_over(plain->forward_index[0], slots_of(plain), slot_box(plain, 1)) + 1;
}

// ---------------------------------------------------------------------------------------
// apply
// ---------------------------------------------------------------------------------------

std::vector<Expr> apply_index(const Layout& l, const std::vector<Expr>& logical) {
  TILEC_ICHECK(logical.size() == l->vars.size()) << "layout applied to " << logical.size() << " indices, expects "
                                                 << l->vars.size();
  VarMap m;
  for (size_t i = 0; i < logical.size(); ++i) m[l->vars[i].get()] = logical[i];
  std::vector<Expr> out;
  for (const auto& e : l->forward_index) out.push_back(substitute(e, m));
  return out;
}

Expr apply_thread(const Layout& frag, const std::vector<Expr>& logical, const Expr& rep) {
  TILEC_ICHECK(frag->is_fragment()) << "apply_thread on a plain layout";
  VarMap m;
  for (size_t i = 0; i < logical.size(); ++i) m[frag->vars[i].get()] = logical[i];
  m[frag->rep_var.get()] = rep ? rep : int_imm(0);
  return substitute(frag->forward_thread, m);
}

std::vector<int64_t> eval_index(const Layout& l, const std::vector<int64_t>& logical) {
  Compiled c(l);
  c.set(logical, 0);
  std::vector<int64_t> out;
  for (size_t i = 0; i < c.index.size(); ++i) out.push_back(c.idx(i));
  return out;
}

int64_t eval_thread(const Layout& frag, const std::vector<int64_t>& logical, int64_t rep) {
  Compiled c(frag);
  c.set(logical, rep);
  return c.thr();
}

// ---------------------------------------------------------------------------------------
// inverse
// ---------------------------------------------------------------------------------------

std::optional<InverseMap> inverse(const Layout& frag, const Expr& thread, const Expr& local, int64_t num_threads,
                                  bool first_replica_only) {
  auto f = fit_digit_form(frag);
  if (!f) return std::nullopt;
  DigitInverse di = invert(*f, thread, local, num_threads, first_replica_only);
  InverseMap out;
  for (const auto& x : di.dims) out.indices.push_back(radix_value(x));
  out.valid = di.valid;
  return out;
}

// ---------------------------------------------------------------------------------------
// comparison
// ---------------------------------------------------------------------------------------

bool layout_equal(const Layout& a, const Layout& b) {
  if (a.same_as(b)) return true;
  if (a->is_fragment() != b->is_fragment()) return false;
  if (!has_const_shape(a) || !has_const_shape(b)) return false;
  if (const_shape(a) != const_shape(b)) return false;
  if (a->forward_index.size() != b->forward_index.size()) return false;
  if (same_expressions(a, b)) return true;
  auto sa = slots_of(a), sb = slots_of(b);
  for (size_t i = 0; i < a->forward_index.size(); ++i)
    if (!agree_on_box(a->forward_index[i], sa, b->forward_index[i], sb, slot_box(a, 1))) return false;
  if (!a->is_fragment()) return true;
  // Fragments: each element must be held by the same set of threads.
  int64_t ra = replicate_factor(a), rb = replicate_factor(b);
  if (ra == rb && agree_on_box(a->forward_thread, sa, b->forward_thread, sb, slot_box(a, ra))) return true;
  auto ta = eval_box(a->forward_thread, sa, slot_box(a, ra));
  auto tb = eval_box(b->forward_thread, sb, slot_box(b, rb));
  const int64_t n = num_elements(a);
  std::vector<int64_t> xa, xb;
  for (int64_t e = 0; e < n; ++e) {
    xa.assign(ta.begin() + e * ra, ta.begin() + (e + 1) * ra);
    xb.assign(tb.begin() + e * rb, tb.begin() + (e + 1) * rb);
    std::sort(xa.begin(), xa.end());
    std::sort(xb.begin(), xb.end());
    xa.erase(std::unique(xa.begin(), xa.end()), xa.end());
    xb.erase(std::unique(xb.begin(), xb.end()), xb.end());
    if (xa != xb) return false;
  }
  return true;
}

bool threads_hold(const Layout& readers, const Layout& holders) {
  TILEC_ICHECK(readers->is_fragment() && holders->is_fragment()) << "threads_hold of a non-fragment layout";
  if (!has_const_shape(readers) || !has_const_shape(holders) || const_shape(readers) != const_shape(holders))
    return false;
  if (layout_equal(readers, holders)) return true;
  const int64_t rr = replicate_factor(readers), rh = replicate_factor(holders);
  auto tr = eval_box(readers->forward_thread, slots_of(readers), slot_box(readers, rr));
  auto th = eval_box(holders->forward_thread, slots_of(holders), slot_box(holders, rh));
  const int64_t n = num_elements(readers);
  for (int64_t e = 0; e < n; ++e) {
    auto first = th.begin() + e * rh, last = first + rh;
    for (int64_t r = 0; r < rr; ++r)
      if (std::find(first, last, tr[e * rr + r]) == last) return false;
  }
  return true;
}

bool is_injective(const Layout& l) {
  if (l->is_fragment() && injective_by_digits(l)) return true;
  const int64_t r = replicate_factor(l);
  auto slots = slots_of(l);
  auto box = slot_box(l, r);
  // One output (plus the thread for fragments): pack the slot into one integer.
  if (l->forward_index.size() == 1) {
    std::vector<int64_t> keys = eval_box(l->forward_index[0], slots, box);
    if (l->is_fragment()) {
      auto thr = eval_box(l->forward_thread, slots, box);
      for (size_t i = 0; i < keys.size(); ++i) keys[i] = keys[i] * (int64_t{1} << 32) + thr[i];
    }
    return all_distinct(keys);
  }
  Compiled c(l);
  bool ok = true;
  std::set<std::vector<int64_t>> seen;
  for_each_index(const_shape(l), [&](const std::vector<int64_t>& idx) {
    if (!ok) return;
    for (int64_t k = 0; k < r; ++k) {
      c.set(idx, k);
      std::vector<int64_t> key;
      for (size_t i = 0; i < c.index.size(); ++i) key.push_back(c.idx(i));
      if (l->is_fragment()) key.push_back(c.thr());
      if (!seen.insert(key).second) ok = false;
    }
  });
  return ok;
}

std::string describe(const Layout& l) {
  std::ostringstream os;
  auto shape_str = [&] {
    std::ostringstream s;
    s << "(";
    for (size_t i = 0; i < l->input_shape.size(); ++i) s << (i ? ", " : "") << script(l->input_shape[i]);
    s << (l->input_shape.size() == 1 ? ",)" : ")");
    return s.str();
  };
  if (!l->is_fragment()) {
    os << "Layout" << shape_str() << " -> [";
    for (size_t i = 0; i < l->forward_index.size(); ++i) os << (i ? ", " : "") << script(l->forward_index[i]);
    os << "]";
    return os.str();
  }
  os << "Fragment" << shape_str();
  if (has_const_shape(l)) {
    os << " over " << thread_extent(l) << " threads, " << fragment_local_size(l) << " registers each";
    if (replicate_factor(l) > 1) os << ", replicated x" << replicate_factor(l);
  }
  os << ": thread = " << script(l->forward_thread) << ", register = " << script(l->forward_index[0]);
  return os.str();
}

// ---------------------------------------------------------------------------------------
// composition
// ---------------------------------------------------------------------------------------

Layout repeat(const Layout& base, const std::vector<int64_t>& counts, RepeatOn on, bool copies_row_major) {
  auto bshape = const_shape(base);
  TILEC_ICHECK(counts.size() == bshape.size()) << "repeat: counts per dimension";
  TILEC_ICHECK(base->is_fragment() || on == RepeatOn::kRegisters) << "repeat on threads needs a fragment";
  std::vector<int64_t> shape(bshape.size());
  for (size_t d = 0; d < bshape.size(); ++d) shape[d] = bshape[d] * counts[d];
  auto vars = fresh_vars(shape.size());
  Var rep = make_var("rep");
  VarMap m;
  Expr copy = nullptr;  // linear copy index
  int64_t stride = 1;
  auto add_copy_dim = [&](size_t d) {
    if (counts[d] == 1) return;
    copy = idx_add(copy, idx_mul(idx_div(vars[d], bshape[d]), stride));
    stride *= counts[d];
  };
  if (copies_row_major)
    for (size_t d = shape.size(); d-- > 0;) add_copy_dim(d);
  else
    for (size_t d = 0; d < shape.size(); ++d) add_copy_dim(d);
  for (size_t d = 0; d < shape.size(); ++d)
    m[base->vars[d].get()] = counts[d] == 1 ? Expr(vars[d]) : idx_mod(vars[d], bshape[d]);
  if (base->is_fragment()) m[base->rep_var.get()] = rep;
  std::vector<Expr> index;
  for (const auto& e : base->forward_index) index.push_back(substitute(e, m));
  if (!base->is_fragment()) {
    // A plain layout repeated in memory: copies are laid out one after another.
    TILEC_ICHECK(index.size() == 1) << "repeat of a multi-output plain layout";
    index[0] = idx_add(index[0], copy ? idx_mul(copy, physical_size(base)) : nullptr);
    return make_layout(shape_exprs(shape), vars, index);
  }
  Expr thread = substitute(base->forward_thread, m);
  if (copy) {
    if (on == RepeatOn::kThreads) thread = idx_add(thread, idx_mul(copy, thread_extent(base)));
    else index[0] = idx_add(index[0], idx_mul(copy, fragment_local_size(base)));
  }
  return ir::make_fragment(shape_exprs(shape), vars, index, thread, base->replicate, rep);
}

Layout project(const Layout& frag, const std::vector<int>& kept) {
  auto f = fit_digit_form(frag);
  if (!f) return nullptr;
  return to_layout(project_form(*f, kept));
}

Layout replicate(const Layout& frag, int64_t factor) {
  TILEC_ICHECK(frag->is_fragment() && factor >= 1) << "replicate";
  if (factor == 1) return frag;
  int64_t r = replicate_factor(frag), t = thread_extent(frag);
  Var rep = make_var("rep");
  VarMap m;
  m[frag->rep_var.get()] = r == 1 ? int_imm(0) : idx_mod(rep, r);
  Expr thread = idx_add(substitute(frag->forward_thread, m), idx_mul(r == 1 ? Expr(rep) : idx_div(rep, r), t));
  return ir::make_fragment(frag->input_shape, frag->vars, frag->forward_index, thread, int_imm(r * factor), rep);
}

Layout permute_dims(const Layout& l, const std::vector<int>& perm) {
  TILEC_ICHECK(perm.size() == l->vars.size()) << "permute_dims arity";
  auto vars = fresh_vars(perm.size());
  std::vector<Expr> shape(perm.size());
  VarMap m;
  for (size_t i = 0; i < perm.size(); ++i) {
    shape[i] = l->input_shape[perm[i]];
    m[l->vars[perm[i]].get()] = vars[i];
  }
  std::vector<Expr> index;
  for (const auto& e : l->forward_index) index.push_back(substitute(e, m));
  if (!l->is_fragment()) return make_layout(shape, vars, index);
  return ir::make_fragment(shape, vars, index, substitute(l->forward_thread, m), l->replicate, l->rep_var);
}

Layout reshape(const Layout& l, const std::vector<int64_t>& to) {
  TILEC_ICHECK(has_const_shape(l)) << "reshape: the layout needs a constant shape";
  const std::vector<int64_t> from = const_shape(l);
  if (from == to) return l;
  auto vars = fresh_vars(to.size());
  Expr flat = nullptr;
  for (size_t d = 0; d < to.size(); ++d) flat = idx_add(idx_mul(flat ? flat : int_imm(0), to[d]), vars[d]);
  if (!flat) flat = int_imm(0);
  VarMap m;
  for (size_t d = from.size(); d-- > 0;) {
    m[l->vars[d].get()] = d == 0 ? flat : idx_mod(flat, from[d]);
    flat = idx_div(flat, from[d]);
  }
  std::vector<Expr> index;
  for (const auto& e : l->forward_index) index.push_back(substitute(e, m));
  if (!l->is_fragment()) return make_layout(shape_exprs(to), vars, index);
  Layout out = ir::make_fragment(shape_exprs(to), vars, index, substitute(l->forward_thread, m), l->replicate,
                                 l->rep_var);
  if (auto f = fit_digit_form(out)) return to_layout(*f);
  return out;
}

// ---------------------------------------------------------------------------------------
// defaults
// ---------------------------------------------------------------------------------------

int64_t vector_elems(DataType dtype, int64_t innermost_extent, int64_t bytes) {
  int64_t bits = std::max(dtype.bits() * dtype.lanes(), 8);
  int64_t v = std::max<int64_t>(1, bytes * 8 / bits);
  while (v > 1 && innermost_extent % v != 0) v /= 2;
  return v;
}

namespace {
// The register digits after the thread digits, in register order: the vector digit fastest,
// then outer dimensions' repeats.
void append_register_digits(DigitForm& f, std::vector<Digit>& locals) {
  int64_t ls = 1;
  for (auto& d : locals) {
    d.out_stride = ls;
    ls *= d.extent;
    f.digits.push_back(d);
  }
}
}  // namespace

Layout coalesced_layout(const std::vector<int64_t>& shape, int64_t num_threads, int64_t vec) {
  TILEC_ICHECK(num_threads >= 1 && vec >= 1) << "coalesced_layout";
  DigitForm f;
  f.shape = shape;
  int n = static_cast<int>(shape.size());
  if (n > 0) {
    TILEC_ICHECK(shape[n - 1] % vec == 0) << "vector width must divide the innermost extent";
  }
  int64_t threads_left = num_threads, thread_stride = 1;
  std::vector<Digit> locals;  // register digits, innermost dimension first
  for (int d = n - 1; d >= 0; --d) {
    int64_t s = 1, rem = shape[d];
    if (d == n - 1 && vec > 1) {
      locals.push_back({d, 1, vec, false, 0});
      s = vec;
      rem /= vec;
    }
    if (rem <= 1) continue;
    int64_t t = 1;
    if (threads_left >= rem) {
      t = rem;
    } else if (threads_left > 1) {
      int64_t g = std::gcd(rem, threads_left);
      // Prefer an exact split; otherwise use every remaining thread and leave the top
      // register digit partly empty (only the outer dimensions can afford that).
      t = (g == threads_left || d != 0) ? g : threads_left;
    }
    if (t > 1) {
      f.digits.push_back({d, s, t, true, thread_stride});
      thread_stride *= t;
      threads_left /= t;
      s *= t;
    }
    int64_t outer = (shape[d] + s - 1) / s;
    if (outer > 1) locals.push_back({d, s, outer, false, 0});
  }
  append_register_digits(f, locals);
  TILEC_ICHECK(f.well_formed()) << "coalesced_layout produced a malformed layout";
  return to_layout(f);
}

Layout default_fragment(const std::vector<int64_t>& shape, int64_t num_threads, DataType dtype) {
  int64_t vec = shape.empty() ? 1 : vector_elems(dtype, shape.back());
  return coalesced_layout(shape, num_threads, vec);
}

namespace {

// coalesced_layout's digits with thread digits of dimension d below caps[d], exact splits
// only.
DigitForm coalesced_within(const std::vector<int64_t>& shape, int64_t num_threads, int64_t vec,
                           const std::vector<int64_t>& caps) {
  DigitForm f;
  f.shape = shape;
  const int n = static_cast<int>(shape.size());
  int64_t threads_left = num_threads, thread_stride = 1;
  std::vector<Digit> locals;
  for (int d = n - 1; d >= 0; --d) {
    int64_t s = 1, rem = shape[d];
    if (d == n - 1 && vec > 1) {
      locals.push_back({d, 1, vec, false, 0});
      s = vec;
      rem /= vec;
    }
    const int64_t room = caps[d] % s == 0 ? caps[d] / s : 1;
    const int64_t t = std::gcd(std::gcd(rem, room), threads_left);
    if (t > 1) {
      f.digits.push_back({d, s, t, true, thread_stride});
      thread_stride *= t;
      threads_left /= t;
      s *= t;
    }
    const int64_t outer = (shape[d] + s - 1) / s;
    if (outer > 1) locals.push_back({d, s, outer, false, 0});
  }
  append_register_digits(f, locals);
  return f;
}

}  // namespace

Layout default_fragment_within(const std::vector<int64_t>& shape, int64_t num_threads, DataType dtype,
                               const std::vector<int64_t>& caps) {
  TILEC_ICHECK(caps.size() == shape.size()) << "default_fragment_within: one cap per dimension";
  int64_t vec = shape.empty() ? 1 : vector_elems(dtype, shape.back());
  DigitForm f = coalesced_within(shape, num_threads, vec, caps);
  while (vec > 1 && f.thread_extent() < num_threads) {
    DigitForm narrower = coalesced_within(shape, num_threads, vec / 2, caps);
    if (narrower.thread_extent() <= f.thread_extent()) break;
    vec /= 2;
    f = narrower;
  }
  TILEC_ICHECK(f.well_formed()) << "default_fragment_within produced a malformed layout";
  return to_layout(f);
}

bool threads_within(const Layout& frag, const std::vector<int64_t>& caps) {
  auto f = fit_digit_form(frag);
  if (!f || caps.size() != f->shape.size()) return false;
  for (const auto& g : f->digits)
    if (g.on_thread && g.dim != kRepDim && caps[g.dim] < f->shape[g.dim] && g.in_stride * g.extent > caps[g.dim])
      return false;
  return true;
}

}  // namespace tilec::layout
