// T.Parallel nests: analysis, layout derivations, ownership checks, lowering
// (see parallel_loop.h).
#include "ops/parallel_loop.h"


#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "layout/digit_form.h"
#include "layout/int_eval.h"
#include "tilec/layout/index_space.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/layout/layout.h"

namespace tilec::ops {

using namespace ir;
using layout::for_each_index;
using layout::Atom;
using layout::Digit;
using layout::DigitForm;
using layout::kRepDim;
using layout::MixedRadix;

namespace {

int64_t const_extent(const Expr& e, const SourceLoc& loc) {
  auto* c = as_const_int(e);
  TILEC_USER_CHECK(c && *c > 0, loc, "T.Parallel needs constant tile extents; loop over the tail with bounds checks")
      << "T.Parallel loop extent must be a positive constant";
  return *c;
}

bool uses_any(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  bool found = false;
  for_each_node(evaluate(e), [&](const Node* n) {
    if (n->kind == NodeKind::kVar && vars.count(static_cast<const VarNode*>(n))) found = true;
  });
  return found;
}

class AccessCollector : public IRVisitor {
 public:
  AccessCollector(const ParallelNest& nest) : nest_(nest) {
    for (const auto& v : nest.vars) vars_.insert(v.get());
  }
  std::vector<NestAccess> out;

 protected:
  void visit_BufferLoad(const BufferLoadNode* op) override {
    add(op->buffer, op->indices, false, op->loc);
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    add(op->buffer, op->indices, true, op->loc);
    IRVisitor::visit_BufferStore(op);
  }
  void visit_For(const ForNode* op) override {
    TILEC_USER_CHECK(op->for_kind != ForKind::kParallel, op->loc,
                     "write the nest as one `for i, j in T.Parallel(M, N)` or move the inner loop out")
        << "a T.Parallel loop nested inside another T.Parallel loop's body is not supported";
    IRVisitor::visit_For(op);
  }
  void visit_TileOp(const TileOpNode* op) override {
    throw_user_error("T." + op->op + " inside a T.Parallel loop is not supported", op->loc,
                     "tile operations act on whole tiles; call it outside the parallel loop");
  }

 private:
  void add(const Buffer& b, const std::vector<Expr>& idx, bool write, const SourceLoc& loc) {
    NestAccess a;
    a.buffer = b;
    a.indices = idx;
    a.is_write = write;
    a.loc = loc;
    std::vector<bool> used(nest_.vars.size(), false);
    for (const auto& e : idx) {
      int dim = kInvariantDim;
      if (auto* v = e.as<VarNode>()) {
        for (size_t q = 0; q < nest_.vars.size(); ++q)
          if (nest_.vars[q].get() == v) dim = used[q] ? kComplexDim : static_cast<int>(q);
        if (dim >= 0) used[dim] = true;
      } else if (uses_any(e, vars_)) {
        dim = kComplexDim;
      }
      a.loop_dim.push_back(dim);
    }
    out.push_back(std::move(a));
  }
  const ParallelNest& nest_;
  std::unordered_set<const VarNode*> vars_;
};


std::vector<int64_t> buffer_shape(const Buffer& b) {
  std::vector<int64_t> s;
  for (const auto& e : b->shape) {
    auto* c = as_const_int(e);
    s.push_back(c ? *c : -1);
  }
  return s;
}

std::string index_str(const std::vector<int64_t>& idx) {
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

}  // namespace

// ---------------------------------------------------------------------------------------
// analysis
// ---------------------------------------------------------------------------------------

bool NestAccess::full_rank(int nest_ndim) const {
  std::vector<int> seen(nest_ndim, 0);
  for (int d : loop_dim) {
    if (d == kComplexDim) return false;
    if (d >= 0) seen[d]++;
  }
  return std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
}

bool NestAccess::partial_rank(int nest_ndim) const { return !has_complex() && !full_rank(nest_ndim); }

bool NestAccess::has_complex() const {
  return std::any_of(loop_dim.begin(), loop_dim.end(), [](int d) { return d == kComplexDim; });
}

ParallelNest collect_nest(const ForNode* outer) {
  ParallelNest nest;
  nest.outer = outer;
  nest.loc = outer->loc;
  const ForNode* f = outer;
  while (true) {
    TILEC_USER_CHECK(is_zero(f->min), f->loc, "write T.Parallel(extent); add the offset in the index")
        << "T.Parallel loops must start at 0";
    nest.vars.push_back(f->loop_var);
    nest.extents.push_back(const_extent(f->extent, f->loc));
    const ForNode* inner = f->body.as<ForNode>();
    if (inner && inner->for_kind == ForKind::kParallel) {
      f = inner;
      continue;
    }
    nest.body = f->body;
    break;
  }
  return nest;
}

std::vector<NestAccess> collect_accesses(const ParallelNest& nest) {
  AccessCollector c(nest);
  c.visit(nest.body);
  return std::move(c.out);
}

// ---------------------------------------------------------------------------------------
// derivations
// ---------------------------------------------------------------------------------------

namespace {

int nest_position(const ParallelNest& nest, const Expr& e) {
  if (auto* v = e.as<VarNode>())
    for (size_t q = 0; q < nest.vars.size(); ++q)
      if (nest.vars[q].get() == v) return static_cast<int>(q);
  return -1;
}

// Whether `e` is a multiple of m whatever its variables are (constants, products with a
// multiple, sums of multiples).
bool multiple_of(const Expr& e, int64_t m) {
  if (m == 1) return true;
  if (auto* c = as_const_int(e)) return *c % m == 0;
  auto* b = e.as<BinaryNode>();
  if (!b) return false;
  switch (b->kind) {
    case NodeKind::kMul:
      return multiple_of(b->a, m) || multiple_of(b->b, m);
    case NodeKind::kAdd:
    case NodeKind::kSub:
      return multiple_of(b->a, m) && multiple_of(b->b, m);
    default:
      return false;
  }
}

}  // namespace

std::optional<IndexReading> read_index(const ParallelNest& nest, const Expr& index) {
  auto* b = index.as<BinaryNode>();
  if (!b) return std::nullopt;
  if (b->kind == NodeKind::kFloorDiv) {
    auto* c = as_const_int(b->b);
    int q = nest_position(nest, b->a);
    if (!c || *c <= 1 || q < 0) return std::nullopt;
    return IndexReading{q, *c, false};
  }
  if (b->kind == NodeKind::kAdd) {
    std::unordered_set<const VarNode*> vars;
    for (const auto& v : nest.vars) vars.insert(v.get());
    for (int side = 0; side < 2; ++side) {
      const Expr& v = side ? b->b : b->a;
      const Expr& off = side ? b->a : b->b;
      int q = nest_position(nest, v);
      if (q >= 0 && !uses_any(off, vars) && multiple_of(off, nest.extents[q])) return IndexReading{q, 1, true};
    }
  }
  return std::nullopt;
}

std::vector<int64_t> thread_caps(const ParallelNest& nest, const NestAccess& a) {
  std::vector<int64_t> caps = buffer_shape(a.buffer);
  for (size_t d = 0; d < caps.size(); ++d) {
    if (a.loop_dim[d] == kInvariantDim) caps[d] = 1;
    if (a.loop_dim[d] != kComplexDim) continue;
    auto r = read_index(nest, a.indices[d]);
    if (r && r->offset) caps[d] = std::min(caps[d], nest.extents[r->q]);
  }
  return caps;
}


Layout loop_layout_from_fragment(const ParallelNest& nest, const NestAccess& a, const Layout& frag) {
  auto f = layout::fit_digit_form(frag);
  if (!f) return nullptr;
  // Each nest variable read once, whole or as `v + off`; an offset dimension is cut at
  // E = v's extent: v follows the low part (a new dimension), the high part is invariant.
  std::vector<int> kept(nest.ndim(), -1);
  std::vector<int> invariant;
  for (size_t d = 0; d < a.loop_dim.size(); ++d) {
    int q = a.loop_dim[d];
    if (q == kComplexDim) {
      auto r = read_index(nest, a.indices[d]);
      if (!r || !r->offset || kept[r->q] >= 0) return nullptr;
      f = layout::split_dim_form(*f, static_cast<int>(d), nest.extents[r->q]);
      if (!f) return nullptr;
      kept[r->q] = f->ndim() - 1;
      invariant.push_back(static_cast<int>(d));
    } else if (q >= 0) {
      if (kept[q] >= 0) return nullptr;
      if (f->shape[d] == nest.extents[q]) {
        kept[q] = static_cast<int>(d);
        continue;
      }
      // `v` over the first E elements of a longer dimension: as `v + 0` (the first column
      // block of a fragment, T.copy(acc[:, 0:64], S)).
      f = layout::split_dim_form(*f, static_cast<int>(d), nest.extents[q]);
      if (!f) return nullptr;
      kept[q] = f->ndim() - 1;
      invariant.push_back(static_cast<int>(d));
    } else {
      invariant.push_back(static_cast<int>(d));
    }
  }
  if (std::find(kept.begin(), kept.end(), -1) != kept.end()) return nullptr;
  // An invariant index: the thread holding the element must not depend on it.
  for (int d : invariant)
    for (const auto& g : f->digits)
      if (g.dim == d && g.on_thread) return nullptr;
  return layout::to_layout(layout::project_form(*f, kept));
}

Layout fragment_from_loop_layout(const ParallelNest& nest, const NestAccess& a, const Layout& loop) {
  auto l = layout::fit_digit_form(loop);
  if (!l) return nullptr;
  auto shape = buffer_shape(a.buffer);
  std::vector<int> kept;      // loop dims the access uses, in buffer-dim order
  std::vector<int> buf_dims;  // the buffer dim of each kept loop dim
  std::vector<int64_t> blocks(shape.size(), 0);  // offset dims: E, their blocks in registers
  std::vector<bool> taken(nest.ndim(), false);
  for (size_t d = 0; d < a.loop_dim.size(); ++d) {
    int q = a.loop_dim[d];
    if (q == kComplexDim) {
      auto r = read_index(nest, a.indices[d]);
      if (!r || taken[r->q]) return nullptr;
      q = r->q;
      if (r->offset) {
        // `v + off`: v's digits within each block of E; the blocks go to registers.
        if (shape[d] % nest.extents[q] != 0) return nullptr;
        blocks[d] = nest.extents[q];
      } else {
        // `v // c`: the dimension follows v's digits above c; the thread digits below c
        // become replicas (the threads running v = c*x .. c*x + c-1 all read x).
        if (shape[d] * r->div != nest.extents[q]) return nullptr;
        l = layout::split_dim_form(*l, q, r->div);
        if (!l) return nullptr;
      }
    } else if (q < 0) {
      continue;
    } else if (shape[d] != nest.extents[q] || taken[q]) {
      return nullptr;
    }
    taken[q] = true;
    kept.push_back(q);
    buf_dims.push_back(static_cast<int>(d));
  }
  DigitForm p = layout::project_form(*l, kept);
  DigitForm out;
  out.shape = shape;
  out.replicate = p.replicate;
  int64_t local = p.local_size();
  for (auto g : p.digits) {
    if (g.dim != kRepDim) g.dim = buf_dims[g.dim];
    out.digits.push_back(g);
  }
  // Invariant dimensions: every holder keeps all their values, in further registers; so
  // do the blocks of offset dimensions.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (blocks[d] > 0) {
      if (shape[d] > blocks[d]) {
        out.digits.push_back({static_cast<int>(d), blocks[d], shape[d] / blocks[d], false, local});
        local *= shape[d] / blocks[d];
      }
      continue;
    }
    if (a.loop_dim[d] != kInvariantDim || shape[d] == 1) continue;
    out.digits.push_back({static_cast<int>(d), 1, shape[d], false, local});
    local *= shape[d];
  }
  if (!out.well_formed()) return nullptr;
  return layout::to_layout(out);
}

Layout extend_to_loop(const ParallelNest& nest, const NestAccess& a, const Layout& frag, int64_t vec) {
  if (!a.partial_rank(nest.ndim())) return nullptr;
  auto f = layout::fit_digit_form(frag);
  if (!f) return nullptr;
  // Only whole-buffer correspondences: a used dimension must match the loop extent and
  // invariant dimensions must not be spread over threads.
  std::vector<int> q_of_dim(a.loop_dim.size(), -1);
  std::vector<bool> used(nest.ndim(), false);
  for (size_t d = 0; d < a.loop_dim.size(); ++d) {
    int q = a.loop_dim[d];
    if (q >= 0) {
      if (f->shape[d] != nest.extents[q]) return nullptr;
      q_of_dim[d] = q;
      used[q] = true;
    } else {
      for (const auto& g : f->digits)
        if (g.dim == static_cast<int>(d) && g.on_thread) return nullptr;
    }
  }
  DigitForm out;
  out.shape = nest.extents;
  std::vector<Digit> vec_local, frag_local, new_local, reps;
  for (const auto& g : f->digits) {
    if (g.dim == kRepDim) {
      reps.push_back(g);
      continue;
    }
    int q = q_of_dim[g.dim];
    if (q < 0) continue;  // invariant dimension: registers only, dropped
    Digit n = g;
    n.dim = q;
    if (n.on_thread) out.digits.push_back(n);
    else frag_local.push_back(n);
  }
  std::sort(reps.begin(), reps.end(), [](const Digit& x, const Digit& y) { return x.out_stride < y.out_stride; });
  std::sort(frag_local.begin(), frag_local.end(),
            [](const Digit& x, const Digit& y) { return x.out_stride < y.out_stride; });
  size_t next_rep = 0;
  int64_t rep_split = 1;  // part of reps[next_rep] already used
  for (int q = nest.ndim() - 1; q >= 0; --q) {
    if (used[q]) continue;
    int64_t rem = nest.extents[q], s = 1;
    if (q == nest.ndim() - 1 && vec > 1 && rem % vec == 0) {
      vec_local.push_back({q, 1, vec, false, 0});
      s = vec;
      rem /= vec;
    }
    while (rem > 1 && next_rep < reps.size()) {
      const Digit& r = reps[next_rep];
      int64_t left = r.extent / rep_split;
      int64_t take = std::gcd(left, rem);
      if (take == 1) break;
      out.digits.push_back({q, s, take, true, r.out_stride * rep_split});
      s *= take;
      rem /= take;
      rep_split *= take;
      if (rep_split == r.extent) {
        ++next_rep;
        rep_split = 1;
      }
    }
    if (rem > 1) new_local.push_back({q, s, rem, false, 0});
  }
  // Replicas the nest variables did not absorb stay replicas of the loop layout.
  int64_t rs = 1;
  for (size_t i = next_rep; i < reps.size(); ++i) {
    Digit r = reps[i];
    int64_t ext = r.extent / (i == next_rep ? rep_split : 1);
    if (ext == 1) continue;
    r.out_stride *= (i == next_rep ? rep_split : 1);
    r.extent = ext;
    r.in_stride = rs;
    rs *= ext;
    out.digits.push_back(r);
  }
  out.replicate = rs;
  int64_t ls = 1;
  for (auto* group : {&vec_local, &frag_local, &new_local})
    for (auto g : *group) {
      g.out_stride = ls;
      ls *= g.extent;
      out.digits.push_back(g);
    }
  if (!out.well_formed()) return nullptr;
  return layout::to_layout(out);
}

int64_t nest_vector_elems(const ParallelNest& nest, const std::vector<NestAccess>& accesses) {
  if (nest.ndim() == 0) return 1;
  int inner = nest.ndim() - 1;
  int64_t vec = 0;
  for (const auto& a : accesses) {
    if (a.loop_dim.empty() || a.loop_dim.back() != inner) continue;
    int64_t v = layout::vector_elems(a.buffer->dtype, nest.extents[inner]);
    vec = vec == 0 ? v : std::min(vec, v);
  }
  vec = vec == 0 ? 1 : vec;
  // float4_e2m1 is stored two a byte and written in whole bytes only (codegen): a nest that
  // writes it gives each thread at least a pair of consecutive innermost elements.
  const bool writes_fp4 = std::any_of(accesses.begin(), accesses.end(), [](const NestAccess& a) {
    return a.is_write && a.buffer->dtype.is_float4();
  });
  if (writes_fp4 && vec < 2 && nest.extents[inner] % 2 == 0) vec = 2;
  return vec;
}

Layout coalesced_nest_layout(const ParallelNest& nest, const std::vector<NestAccess>& accesses, int64_t num_threads) {
  return layout::coalesced_layout(nest.extents, num_threads, nest_vector_elems(nest, accesses));
}

// ---------------------------------------------------------------------------------------
// ownership
// ---------------------------------------------------------------------------------------

namespace {

// Ownership without walking the iterations, in the common case: every fragment index is a
// nest variable within the fragment's extent, and the loop's thread map equals the
// fragment's at the element each iteration touches, replica for replica. Then the threads
// that run an iteration are exactly those that hold its element. False: undecided.
bool same_thread_maps(const ParallelNest& nest, const NestAccess& a, const Layout& loop, const Layout& frag,
                      const std::vector<int64_t>& fshape) {
  const int64_t lr = layout::replicate_factor(loop);
  if (lr != layout::replicate_factor(frag)) return false;
  VarMap to_loop;
  for (size_t d = 0; d < a.loop_dim.size(); ++d) {
    const int q = a.loop_dim[d];
    if (q < 0 || nest.extents[q] > fshape[d]) return false;
    to_loop[frag->vars[d].get()] = loop->vars[q];
  }
  to_loop[frag->rep_var.get()] = loop->rep_var;
  std::vector<Var> slots = loop->vars;
  slots.push_back(loop->rep_var);
  std::vector<int64_t> box = nest.extents;
  box.push_back(lr);
  return layout::agree_on_box(loop->forward_thread, slots, substitute(frag->forward_thread, to_loop), slots, box);
}

}  // namespace

std::string check_ownership(const ParallelNest& nest, const NestAccess& a, const Layout& loop, const Layout& frag,
                            const std::vector<const ForNode*>& outer) {
  auto fshape = buffer_shape(a.buffer);
  if (layout::const_shape(frag) != fshape) return "its layout has a different shape than the buffer";
  if (same_thread_maps(nest, a, loop, frag, fshape)) return "";
  // Every map below is evaluated over its whole box at once (layout::eval_box), row-major:
  // the walk over the iterations then only reads arrays.
  // Complex indices must be functions of the nest variables and of enclosing loops with
  // constant bounds; those loops' values are the fastest slots, `combos` of them.
  std::vector<Var> slots = nest.vars;
  std::vector<int64_t> box = nest.extents, lo(nest.extents.size(), 0);
  int64_t combos = 1;
  std::vector<std::vector<int64_t>> complex(a.indices.size());
  for (size_t d = 0; d < a.indices.size(); ++d) {
    if (a.loop_dim[d] != kComplexDim || layout::IntProgram::compiles(a.indices[d], slots)) continue;
    for (const ForNode* f : outer) {
      auto* mn = as_const_int(f->min);
      auto* ex = as_const_int(f->extent);
      if (!mn || !ex || *ex < 1 || std::any_of(slots.begin(), slots.end(), [&](const Var& v) { return v.get() == f->loop_var.get(); })) continue;
      if (!uses_any(a.indices[d], {f->loop_var.get()})) continue;
      slots.push_back(f->loop_var);
      box.push_back(*ex);
      lo.push_back(*mn);
      combos *= *ex;
    }
    if (!layout::IntProgram::compiles(a.indices[d], slots))
      return "index " + std::to_string(d) +
             " mixes the loop variables with other values; fragments need indices that are loop variables, "
             "constants, or functions of the loop variables (and of enclosing loops with constant bounds) only";
  }
  for (size_t d = 0; d < a.indices.size(); ++d)
    if (a.loop_dim[d] == kComplexDim) complex[d] = layout::eval_box(a.indices[d], slots, box, lo);
  // Owners of every fragment element: owners[flat * fr + r], sorted per element.
  const int64_t fr = layout::replicate_factor(frag);
  std::vector<int64_t> fstrides(fshape.size(), 1);
  for (size_t d = fshape.size(); d-- > 1;) fstrides[d - 1] = fstrides[d] * fshape[d];
  std::vector<Var> fslots = frag->vars;
  fslots.push_back(frag->rep_var);
  std::vector<int64_t> fbox = fshape;
  fbox.push_back(fr);
  std::vector<int64_t> owners = layout::eval_box(frag->forward_thread, fslots, fbox);
  if (fr > 1)
    for (size_t e = 0; e < owners.size(); e += static_cast<size_t>(fr))
      std::sort(owners.begin() + static_cast<std::ptrdiff_t>(e), owners.begin() + static_cast<std::ptrdiff_t>(e + fr));
  // Threads that run every iteration: runners[iter * lr + r].
  const int64_t lr = layout::replicate_factor(loop);
  std::vector<Var> lslots = loop->vars;
  lslots.push_back(loop->rep_var);
  std::vector<int64_t> lbox = nest.extents;
  lbox.push_back(lr);
  const std::vector<int64_t> runners = layout::eval_box(loop->forward_thread, lslots, lbox);
  // Invariant dimensions are checked for every value.
  std::vector<int64_t> inv_shape;
  for (size_t d = 0; d < a.loop_dim.size(); ++d)
    if (a.loop_dim[d] == kInvariantDim) inv_shape.push_back(fshape[d]);
  std::vector<std::vector<int64_t>> inv_points;
  for_each_index(inv_shape, [&](const std::vector<int64_t>& inv) { inv_points.push_back(inv); });
  std::string err;
  std::vector<int64_t> exec, idx(fshape.size());
  size_t iter = 0;
  for_each_index(nest.extents, [&](const std::vector<int64_t>& x) {
    exec.assign(runners.begin() + static_cast<std::ptrdiff_t>(iter * lr),
                runners.begin() + static_cast<std::ptrdiff_t>((iter + 1) * lr));
    if (lr > 1) {
      std::sort(exec.begin(), exec.end());
      exec.erase(std::unique(exec.begin(), exec.end()), exec.end());
    }
    for (int64_t combo = 0; combo < combos; ++combo) {
      for (const auto& inv : inv_points) {
        size_t k = 0;
        for (size_t d = 0; d < idx.size(); ++d) {
          int q = a.loop_dim[d];
          if (q >= 0) idx[d] = x[q];
          else if (q == kInvariantDim) idx[d] = inv[k++];
          else idx[d] = complex[d][iter * combos + combo];
          if (idx[d] < 0 || idx[d] >= fshape[d]) {
            err = "iteration " + index_str(x) + " accesses element " + index_str(idx) + ", outside the fragment";
            return false;
          }
        }
        int64_t flat = 0;
        for (size_t d = 0; d < idx.size(); ++d) flat += idx[d] * fstrides[d];
        const auto own_begin = owners.begin() + static_cast<std::ptrdiff_t>(flat * fr);
        const auto own_end = own_begin + static_cast<std::ptrdiff_t>(fr);
        for (int64_t t : exec) {
          if (!std::binary_search(own_begin, own_end, t)) {
            err = "thread " + std::to_string(t) + " runs iteration " + index_str(x) + " but does not hold element " +
                  index_str(idx);
            return false;
          }
        }
        if (a.is_write) {
          for (auto it = own_begin; it != own_end; ++it)
            if (!std::binary_search(exec.begin(), exec.end(), *it)) {
              err = "thread " + std::to_string(*it) + " holds a copy of element " + index_str(idx) +
                    " but does not run the iteration " + index_str(x) + " that writes it (the copy would go stale)";
              return false;
            }
        }
      }
    }
    ++iter;
    return true;
  });
  return err;
}

// ---------------------------------------------------------------------------------------
// lowering
// ---------------------------------------------------------------------------------------

namespace {

// Rewrites the body of a nest for one (thread, register) pair: nest variables become
// their inverse values, fragment accesses become register indices, other accesses go
// through the context (shared layouts, local flattening).
class NestRewriter : public IRMutator {
 public:
  NestRewriter(LowerContext& ctx, const std::vector<Var>& vars, const std::vector<MixedRadix>& atoms, Var lane,
               int64_t lanes)
      : ctx_(ctx), vars_(vars), atoms_(atoms), lane_(std::move(lane)), lanes_(lanes) {
    for (size_t q = 0; q < vars.size(); ++q) values_[vars[q].get()] = layout::radix_value(atoms[q]);
    for (const auto& v : vars) var_set_.insert(v.get());
  }

 protected:
  Expr mutate_Var(const Expr& e, const VarNode* op) override {
    auto it = values_.find(op);
    return it == values_.end() ? e : it->second;
  }
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) override {
    Expr r = buffer_load(ctx_.lowered_buffer(op->buffer), index_of(op->buffer, op->indices), op->loc);
    return r;
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) override {
    Expr v = mutate(op->value);
    return buffer_store(ctx_.lowered_buffer(op->buffer), index_of(op->buffer, op->indices), v, op->loc);
  }
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode* op) override {
    if (op->buffer->viewed && !is_shared(op->buffer->scope)) return mutate(op->body);  // registers of its buffer
    return allocate(ctx_.lowered_buffer(op->buffer), mutate(op->body), op->loc);
  }

 private:
  std::vector<Expr> index_of(const Buffer& b, const std::vector<Expr>& logical) {
    if (b->scope == Scope::kFragment) return {register_index(b, logical)};
    std::vector<Expr> idx;
    for (const auto& e : logical) idx.push_back(mutate(e));
    if (is_shared(b->scope) && lanes_ > 1 && !logical.empty() && logical.back().same_as(vars_.back()) &&
        lane_contiguous(b)) {
      // The layout keeps each aligned group of `lanes_` elements of a row contiguous (a
      // swizzle moves whole 16-byte chunks): offset of the group's first element + lane,
      // so the vectorizer sees a plain `base + v`.
      VarMap at_zero{{lane_.get(), int_imm(0)}};
      std::vector<Expr> base_idx;
      for (const auto& e : idx) base_idx.push_back(substitute(e, at_zero));
      std::vector<Expr> phys = ctx_.physical_index(b, base_idx);
      phys[0] = layout::idx_add(phys[0], lane_);
      return phys;
    }
    return ctx_.physical_index(b, idx);
  }

  bool lane_contiguous(const Buffer& b) {
    auto it = contiguous_.find(b.get());
    if (it != contiguous_.end()) return it->second;
    bool ok = false;
    Layout l = ctx_.layout_of(b);
    if (l && !l->is_fragment() && l->forward_index.size() == 1 && layout::has_const_shape(l)) {
      auto shape = layout::const_shape(l);
      ok = !shape.empty() && shape.back() % lanes_ == 0;
      // Every group start (last index a multiple of lanes_, so a flat offset that is one)
      // must be aligned, and the group's elements consecutive.
      const std::vector<int64_t> offsets = ok ? layout::eval_box(l->forward_index[0], l->vars, shape)
                                              : std::vector<int64_t>{};
      for (size_t k = 0; ok && k < offsets.size(); k += static_cast<size_t>(lanes_)) {
        ok = offsets[k] % lanes_ == 0;
        for (int64_t u = 1; u < lanes_ && ok; ++u) ok = offsets[k + u] == offsets[k] + u;
      }
    }
    contiguous_.emplace(b.get(), ok);
    return ok;
  }

  // The register of fragment element b[logical] in the executing thread. Fast path: the
  // digits of the fragment are read off the loop's (thread, register) atoms, so the
  // result depends on the register counter only and folds to a constant once unrolled.
  Expr register_index(const Buffer& b, const std::vector<Expr>& logical) {
    Layout l = ctx_.layout_of(b);
    TILEC_ICHECK(l) << "fragment " << b->name << " has no layout";
    auto it = forms_.find(b.get());
    if (it == forms_.end()) it = forms_.emplace(b.get(), layout::fit_digit_form(l)).first;
    if (it->second) {
      const DigitForm& f = *it->second;
      std::vector<MixedRadix> x(logical.size());
      bool ok = true;
      for (size_t d = 0; d < logical.size() && ok; ++d) {
        const Expr& e = logical[d];
        int q = -1;
        if (auto* v = e.as<VarNode>())
          for (size_t i = 0; i < vars_.size(); ++i)
            if (vars_[i].get() == v) q = static_cast<int>(i);
        if (q >= 0) {
          x[d] = atoms_[q];
        } else if (!uses_any(e, var_set_)) {
          x[d] = {Atom{mutate(e), 1, 0, f.shape[d], 1}};
        } else {
          ok = false;
        }
      }
      Expr reg = nullptr;
      for (const auto& g : f.digits) {
        if (!ok) break;
        if (g.on_thread || g.dim == kRepDim) continue;
        auto v = layout::extract_digit(x[g.dim], g.in_stride, f.is_top(g) ? 0 : g.extent);
        if (!v) {
          ok = false;
          break;
        }
        reg = layout::idx_add(reg, layout::idx_mul(*v, g.out_stride));
      }
      if (ok) return reg ? reg : int_imm(0);
    }
    std::vector<Expr> idx;
    for (const auto& e : logical) idx.push_back(mutate(e));
    return layout::apply_index(l, idx)[0];
  }

  LowerContext& ctx_;
  const std::vector<Var>& vars_;
  const std::vector<MixedRadix>& atoms_;
  std::unordered_map<const VarNode*, Expr> values_;
  std::unordered_set<const VarNode*> var_set_;
  std::unordered_map<const BufferNode*, std::optional<DigitForm>> forms_;
  Var lane_;
  int64_t lanes_;
  std::unordered_map<const BufferNode*, bool> contiguous_;
};

// The widest vector (elements) the accesses allow along the innermost nest variable.
int64_t vector_cap(const std::vector<Var>& vars, const std::vector<int64_t>& extents, const Stmt& body) {
  ParallelNest tmp;
  tmp.vars = vars;
  tmp.extents = extents;
  tmp.body = body;
  return nest_vector_elems(tmp, collect_accesses(tmp));
}

}  // namespace

Stmt lower_parallel_nest(const std::vector<Var>& vars, const std::vector<int64_t>& extents, const Stmt& body,
                         const Layout& loop, bool first_replica_only, LowerContext& ctx, const SourceLoc& loc) {
  auto fit = layout::fit_digit_form(loop);
  TILEC_USER_CHECK(fit.has_value(), loc, "use a layout built from T.Fragment with div/mod-style thread maps")
      << "the loop layout of this parallel loop cannot be inverted";
  TILEC_ICHECK(fit->shape == extents) << "loop layout shape does not match the nest";
  DigitForm f = *fit;
  int n = static_cast<int>(extents.size());

  // Split off a vector of V registers: a register digit of the innermost variable with
  // input and output stride 1.
  int64_t V = 1;
  if (n > 0) {
    for (auto& g : f.digits) {
      if (g.on_thread || g.dim != n - 1 || g.in_stride != 1 || g.out_stride != 1) continue;
      int64_t v = std::gcd(g.extent, vector_cap(vars, extents, body));
      bool ok = v > 1 && extents[n - 1] % v == 0;
      for (const auto& o : f.digits)
        if (!o.on_thread && &o != &g && o.out_stride % v != 0) ok = false;
      if (!ok) break;
      V = v;
      break;
    }
  }
  if (V > 1) {
    DigitForm m;
    m.shape = f.shape;
    m.shape[n - 1] /= V;
    m.replicate = f.replicate;
    for (auto g : f.digits) {
      if (g.dim == n - 1) {
        if (!g.on_thread && g.in_stride == 1 && g.out_stride == 1) {
          if (g.extent == V) continue;
          g.extent /= V;
          g.in_stride = V;
          g.out_stride = V;
        }
        g.in_stride /= V;
      }
      if (!g.on_thread) g.out_stride /= V;
      m.digits.push_back(g);
    }
    TILEC_ICHECK(m.well_formed()) << "vector split produced a malformed layout";
    f = m;
  }

  int64_t K = f.local_size();
  Var ko = make_var("k", DataType::Int(32), loc);
  Var kv = make_var("v", DataType::Int(32), loc);
  Expr local = K > 1 ? Expr(ko) : int_imm(0);
  layout::DigitInverse inv = layout::invert(f, ctx.thread_index(), local, ctx.num_threads(), first_replica_only);
  std::vector<MixedRadix> atoms = inv.dims;
  if (V > 1) {
    for (auto& a : atoms[n - 1]) a.in_stride *= V;
    atoms[n - 1].insert(atoms[n - 1].begin(), Atom{kv, 1, 0, V, 1});
  }
  NestRewriter rw(ctx, vars, atoms, kv, V);
  Stmt s = rw.mutate(body);
  if (V > 1) s = make_for(kv, int_imm(0), int_imm(V), ForKind::kVectorized, s, loc);
  if (inv.valid) s = if_then_else(inv.valid, s, nullptr, loc);
  if (K > 1) s = make_for(ko, int_imm(0), int_imm(K), ForKind::kUnrolled, s, loc);
  return s;
}

}  // namespace tilec::ops
