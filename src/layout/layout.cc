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
  Compiled c(frag);
  int64_t m = 0;
  for_each_index(const_shape(frag), [&](const std::vector<int64_t>& idx) {
    c.set(idx, 0);
    m = std::max(m, c.idx(0));
  });
  return m + 1;
}

int64_t thread_extent(const Layout& frag) {
  TILEC_ICHECK(frag->is_fragment()) << "not a fragment";
  Compiled c(frag);
  int64_t m = 0, r = replicate_factor(frag);
  for_each_index(const_shape(frag), [&](const std::vector<int64_t>& idx) {
    for (int64_t k = 0; k < r; ++k) {
      c.set(idx, k);
      m = std::max(m, c.thr());
    }
  });
  return m + 1;
}

int64_t physical_size(const Layout& plain) {
  TILEC_ICHECK(plain->forward_index.size() == 1) << "physical_size of a multi-output layout";
  Compiled c(plain);
  int64_t m = 0;
  for_each_index(const_shape(plain), [&](const std::vector<int64_t>& idx) {
    c.set(idx, 0);
    m = std::max(m, c.idx(0));
  });
  return m + 1;
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
  Compiled ca(a), cb(b);
  int64_t ra = replicate_factor(a), rb = replicate_factor(b);
  bool equal = true;
  std::vector<int64_t> ta, tb;
  for_each_index(const_shape(a), [&](const std::vector<int64_t>& idx) {
    if (!equal) return;
    ca.set(idx, 0);
    cb.set(idx, 0);
    for (size_t i = 0; i < ca.index.size(); ++i)
      if (ca.idx(i) != cb.idx(i)) {
        equal = false;
        return;
      }
    if (!a->is_fragment()) return;
    ta.clear();
    tb.clear();
    for (int64_t r = 0; r < ra; ++r) {
      ca.set(idx, r);
      ta.push_back(ca.thr());
    }
    for (int64_t r = 0; r < rb; ++r) {
      cb.set(idx, r);
      tb.push_back(cb.thr());
    }
    std::sort(ta.begin(), ta.end());
    std::sort(tb.begin(), tb.end());
    ta.erase(std::unique(ta.begin(), ta.end()), ta.end());
    tb.erase(std::unique(tb.begin(), tb.end()), tb.end());
    if (ta != tb) equal = false;
  });
  return equal;
}

bool is_injective(const Layout& l) {
  Compiled c(l);
  int64_t r = replicate_factor(l);
  bool ok = true;
  // One output (plus the thread for fragments): pack the slot into one integer.
  if (c.index.size() == 1) {
    std::unordered_set<int64_t> seen;
    for_each_index(const_shape(l), [&](const std::vector<int64_t>& idx) {
      if (!ok) return;
      for (int64_t k = 0; k < r; ++k) {
        c.set(idx, k);
        int64_t key = c.idx(0);
        if (l->is_fragment()) key = key * (int64_t{1} << 32) + c.thr();
        if (!seen.insert(key).second) ok = false;
      }
    });
    return ok;
  }
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

// ---------------------------------------------------------------------------------------
// defaults
// ---------------------------------------------------------------------------------------

int64_t vector_elems(DataType dtype, int64_t innermost_extent, int64_t bytes) {
  int64_t bits = std::max(dtype.bits() * dtype.lanes(), 8);
  int64_t v = std::max<int64_t>(1, bytes * 8 / bits);
  while (v > 1 && innermost_extent % v != 0) v /= 2;
  return v;
}

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
  // Register order: the vector digit fastest, then outer dimensions' repeats.
  int64_t ls = 1;
  for (auto& d : locals) {
    d.out_stride = ls;
    ls *= d.extent;
    f.digits.push_back(d);
  }
  TILEC_ICHECK(f.well_formed()) << "coalesced_layout produced a malformed layout";
  return to_layout(f);
}

Layout default_fragment(const std::vector<int64_t>& shape, int64_t num_threads, DataType dtype) {
  int64_t vec = shape.empty() ? 1 : vector_elems(dtype, shape.back());
  return coalesced_layout(shape, num_threads, vec);
}

}  // namespace tilec::layout
