// Pass legalize_bounds: no out-of-bounds global memory access for partial tiles.
//
// Input:  lowered IR (docs/LOWERED_IR.md): global parameters indexed with logical
//         multi-dimensional indices that may fall outside the tensor for partial tiles.
// Output: every global access is either proved in bounds or guarded:
//           store  A[i, j] = v      ->  if (conds) { A[i, j] = v }
//           load   A[i, j]          ->  T.if_then_else(conds, A[i, j], 0)  (C's ?: evaluates
//                                       only the taken branch, so the load never happens)
//           call   f(&A[i, j], ...) ->  if (conds) { f(...) }   (except calls with an
//                                       asynchronous write, e.g. cp.async: their lowering
//                                       emits its own zero-fill predicate, LOWERED_IR.md 8)
//         where conds are the per-dimension `0 <= index` / `index < extent` that
//         arith::Analyzer cannot prove (loop, block and thread ranges bound; symbolic extents
//         unknown) and that no enclosing If already states.
//         Hoisting: an unrolled/vectorized loop nest containing a vectorized loop, whose
//         conditions are affine in the nest's loop variables and use no variable bound
//         inside the nest, becomes
//           if (conds at the extreme iterations) { the nest, unguarded }
//           else { the nest with per-access guards, vectorized loops made unrolled }
//         so the common full-tile case keeps plain (vectorizable) accesses and one check.
// Config: tl.disable_safe_memory_legalize returns the function unchanged.
// Runs after: tile-op lowering (lowered IR). Runs before: vectorize (which vectorizes the
//         unguarded fast path), flatten_buffers (conditions use the logical shape).
#include <functional>

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

using namespace ir;

namespace {

// One bound to check: lower (0 <= index) or upper (index < extent).
struct Bound {
  bool upper = false;
  Expr index;
  Expr extent;  // upper only
  Expr cond() const {
    if (!upper) return binary(NodeKind::kLE, int_imm(0, index->dtype), index);
    DataType t = index->dtype.bits() >= extent->dtype.bits() ? index->dtype : extent->dtype;
    return binary(NodeKind::kLT, index->dtype == t ? index : cast(t, index), extent->dtype == t ? extent : cast(t, extent));
  }
};

bool is_global(const Buffer& b) { return b->scope == Scope::kGlobal; }

// The global buffer accessed through `tl.address_of(A[...])`, if `e` is one.
const BufferLoadNode* address_of_global(const Expr& e) {
  auto* c = e.as<CallNode>();
  if (!c || c->op != "tl.address_of" || c->args.empty()) return nullptr;
  auto* load = c->args[0].as<BufferLoadNode>();
  return load && is_global(load->buffer) ? load : nullptr;
}

bool has_async_write(const CallNode* c) {
  const std::string& spec = back::intrinsic_effect(c->op);
  for (size_t i = 0; i < c->args.size(); ++i)
    if (back::effect_of_arg(spec, i) == 'a') return true;
  return false;
}

class Legalizer : public IRMutator {
 public:
  // ---- bounds needed by one access ----
  std::vector<Bound> needed_bounds(const Buffer& b, const std::vector<Expr>& indices) {
    std::vector<Bound> out;
    for (size_t d = 0; d < indices.size() && d < b->shape.size(); ++d) {
      const Expr& ext = b->shape[d];
      Expr lo = indices[d], hi = indices[d];
      if (auto* r = lo.as<RampNode>()) {
        // A vector index (already vectorized by the lowering): check its first and last lane.
        Expr last = back::fold_constants(r->base + r->stride * int_imm(r->lanes - 1, r->base->dtype));
        auto* s = as_const_int(r->stride);
        lo = (s && *s < 0) ? last : r->base;
        hi = (s && *s < 0) ? r->base : last;
        if (!s) {  // unknown direction: both ends checked both ways
          for (Expr x : {r->base, last}) {
            if (!proves_nonneg(x)) add_unless_known({false, x, nullptr}, &out);
            if (!proves_less(x, ext)) add_unless_known({true, x, ext}, &out);
          }
          continue;
        }
      }
      if (!proves_nonneg(lo)) add_unless_known({false, lo, nullptr}, &out);
      if (!proves_less(hi, ext)) add_unless_known({true, hi, ext}, &out);
    }
    return out;
  }

 protected:
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) override {
    Expr load = IRMutator::mutate_BufferLoad(e, op);
    if (!is_global(op->buffer)) return load;
    auto* l = load.as<BufferLoadNode>();
    Expr cond = conj_of(needed_bounds(l->buffer, l->indices));
    if (!cond) return load;
    Expr zero = back::zero_of(load->dtype.element_of());
    if (load->dtype.is_vector()) zero = broadcast(zero, load->dtype.lanes());
    return select(cond, load, zero, e->loc);
  }

  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) override {
    if (!is_global(op->buffer)) return IRMutator::mutate_BufferStore(s, op);
    bool changed = false;
    auto indices = mutate_all(op->indices, &changed);
    std::vector<Bound> bounds = needed_bounds(op->buffer, indices);
    size_t mark = push_known(bounds);
    Expr value = mutate(op->value);
    pop_known(mark);
    Expr cond = conj_of(bounds);
    if (!changed && value.same_as(op->value) && !cond) return s;
    Stmt store = buffer_store(op->buffer, indices, value, s->loc);
    return cond ? if_then_else(cond, store, nullptr, s->loc) : store;
  }

  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode* op) override {
    Stmt out = IRMutator::mutate_Evaluate(s, op);
    auto* c = out.as<EvaluateNode>()->value.as<CallNode>();
    if (!c || has_async_write(c)) return out;
    std::vector<Bound> bounds;
    for (const auto& a : c->args) {
      if (auto* load = address_of_global(a)) {
        for (auto& b : needed_bounds(load->buffer, load->indices)) bounds.push_back(b);
      }
    }
    Expr cond = conj_of(bounds);
    return cond ? if_then_else(cond, out, nullptr, s->loc) : out;
  }

  Expr mutate_Call(const Expr& e, const CallNode* op) override {
    // tl.address_of(A[i]) names an address; the call using it is guarded as a whole.
    if (op->op == "tl.address_of" && !op->args.empty()) {
      if (auto* load = op->args[0].as<BufferLoadNode>()) {
        bool changed = false;
        auto idx = mutate_all(load->indices, &changed);
        if (!changed) return e;
        return call(e->dtype, op->op, {buffer_load(load->buffer, idx, load->loc)}, e->loc);
      }
    }
    return IRMutator::mutate_Call(e, op);
  }

  Expr mutate_Select(const Expr& e, const SelectNode* op) override {
    Expr cond = mutate(op->cond);
    size_t mark = known_.size();
    for (auto& c : back::split_conjuncts(cond)) known_.push_back(c);
    Expr t = mutate(op->true_value);
    pop_known(mark);
    Expr f = mutate(op->false_value);
    if (cond.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
    return select(cond, t, f, e->loc);
  }

  Stmt mutate_If(const Stmt& s, const IfNode* op) override {
    Expr cond = mutate(op->cond);
    size_t mark = known_.size();
    for (auto& c : back::split_conjuncts(cond)) known_.push_back(c);
    Stmt then_case = mutate(op->then_case);
    pop_known(mark);
    Stmt else_case = mutate(op->else_case);
    if (cond.same_as(op->cond) && then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return s;
    return if_then_else(cond, then_case, else_case, s->loc);
  }

  Stmt mutate_Let(const Stmt& s, const LetNode* op) override {
    if (back::provably_nonneg(&az_, op->value, nonneg_)) nonneg_.insert(op->var.get());
    az_.bind_value(op->var, op->value);
    return IRMutator::mutate_Let(s, op);
  }

  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    back::bind_kernel_vars(az_, op);
    for (const auto& v : op->block_vars) nonneg_.insert(v.get());
    for (const auto& v : op->thread_vars) nonneg_.insert(v.get());
    return IRMutator::mutate_KernelLaunch(s, op);
  }

  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    bind_loop(op);
    bool nest_kind = op->for_kind == ForKind::kUnrolled || op->for_kind == ForKind::kVectorized;
    if (nest_kind && hoisting_ && as_const_int(op->extent) && as_const_int(op->min)) {
      if (Stmt hoisted = try_hoist(s, op); hoisted.defined()) return hoisted;
    }
    if (!hoisting_ && op->for_kind == ForKind::kVectorized) {
      if (Stmt pairs = fp4_pairs(op); pairs.defined()) return pairs;
      // Inside a guarded slow path: per-element guards make vector accesses impossible.
      Stmt out = IRMutator::mutate_For(s, op);
      auto n = std::make_shared<ForNode>(*out.as<ForNode>());
      n->for_kind = ForKind::kUnrolled;
      return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
    }
    return IRMutator::mutate_For(s, op);
  }

 private:
  void bind_loop(const ForNode* op) {
    az_.bind_range(op->loop_var, op->min, op->extent);
    if (back::provably_nonneg(&az_, op->min, nonneg_)) nonneg_.insert(op->loop_var.get());
  }

  bool proves_nonneg(const Expr& e) {
    if (back::provably_nonneg(&az_, e, nonneg_)) return true;
    return az_.can_prove(binary(NodeKind::kGE, e, int_imm(0, e->dtype)));
  }
  bool proves_less(const Expr& e, const Expr& ext) {
    if (auto* c = as_const_int(ext)) {
      auto bound = az_.const_int_bound(e);
      if (bound.max_value != arith::ConstIntBound::kPosInf && bound.max_value < *c) return true;
    }
    return az_.can_prove(Bound{true, e, ext}.cond());
  }

  void add_unless_known(Bound b, std::vector<Bound>* out) {
    Expr c = b.cond();
    for (const auto& k : known_)
      if (back::same_expr(k, c)) return;
    for (const auto& o : *out)
      if (back::same_expr(o.cond(), c)) return;
    out->push_back(std::move(b));
  }
  static Expr conj_of(const std::vector<Bound>& bounds) {
    Expr c;
    for (const auto& b : bounds) c = back::conj(c, b.cond());
    return c;
  }
  size_t push_known(const std::vector<Bound>& bounds) {
    size_t mark = known_.size();
    for (const auto& b : bounds) known_.push_back(b.cond());
    return mark;
  }
  void pop_known(size_t mark) { known_.resize(mark); }

  // ---- hoisting over an unrolled/vectorized nest ----
  struct NestVar {
    Var var;
    int64_t min, extent;
  };

  // The nest's loop variables and every bound its global accesses need; false when the nest
  // cannot be hoisted (no vectorized loop, or a condition uses a variable bound inside it).
  bool collect_nest(const ForNode* outer, std::vector<NestVar>* vars, std::vector<Bound>* bounds) {
    bool has_vectorized = false, ok = true;
    std::unordered_set<const VarNode*> inner_bound;  // bound inside the nest, not nest loops
    std::function<void(const Stmt&)> walk_stmt;
    std::function<void(const Expr&)> walk_expr = [&](const Expr& e) {
      if (!e || !ok) return;
      class Finder : public IRVisitor {
       public:
        std::function<void(const BufferLoadNode*)> on_load;
        void visit_BufferLoad(const BufferLoadNode* op) override {
          on_load(op);
          IRVisitor::visit_BufferLoad(op);
        }
      } finder;
      finder.on_load = [&](const BufferLoadNode* op) {
        if (is_global(op->buffer))
          for (auto& b : needed_bounds(op->buffer, op->indices)) bounds->push_back(b);
      };
      finder.visit(e);
    };
    walk_stmt = [&](const Stmt& s) {
      if (!s || !ok) return;
      if (auto* f = s.as<ForNode>()) {
        bool nest = (f->for_kind == ForKind::kUnrolled || f->for_kind == ForKind::kVectorized) &&
                    as_const_int(f->min) && as_const_int(f->extent);
        if (nest) {
          has_vectorized |= f->for_kind == ForKind::kVectorized;
          vars->push_back({f->loop_var, *as_const_int(f->min), *as_const_int(f->extent)});
          bind_loop(f);
        } else {
          inner_bound.insert(f->loop_var.get());
        }
        walk_expr(f->min);
        walk_expr(f->extent);
        return walk_stmt(f->body);
      }
      if (auto* q = s.as<SeqNode>()) {
        for (const auto& x : q->stmts) walk_stmt(x);
        return;
      }
      if (auto* i = s.as<IfNode>()) {
        walk_expr(i->cond);
        walk_stmt(i->then_case);
        return walk_stmt(i->else_case);
      }
      if (auto* l = s.as<LetNode>()) {
        inner_bound.insert(l->var.get());
        walk_expr(l->value);
        return walk_stmt(l->body);
      }
      if (auto* st = s.as<BufferStoreNode>()) {
        if (is_global(st->buffer))
          for (auto& b : needed_bounds(st->buffer, st->indices)) bounds->push_back(b);
        for (const auto& i : st->indices) walk_expr(i);
        return walk_expr(st->value);
      }
      if (auto* ev = s.as<EvaluateNode>()) {
        auto* c = ev->value.as<CallNode>();
        if (c && has_async_write(c)) {
          ok = false;  // leave async copies (own predicates) and their loops alone
          return;
        }
        return walk_expr(ev->value);
      }
      if (auto* a = s.as<AllocateNode>()) return walk_stmt(a->body);
      if (auto* a = s.as<AnnotateNode>()) return walk_stmt(a->body);
      ok = false;  // anything else: do not hoist
    };
    vars->push_back({outer->loop_var, *as_const_int(outer->min), *as_const_int(outer->extent)});
    has_vectorized |= outer->for_kind == ForKind::kVectorized;
    walk_stmt(outer->body);
    if (!ok || !has_vectorized) return false;
    for (const auto& b : *bounds) {
      if (back::uses_any_var(b.index, inner_bound) || (b.extent && back::uses_any_var(b.extent, inner_bound)))
        return false;
      if (back::reads_memory(b.index)) return false;
    }
    return true;
  }

  // The condition that `b` holds at every point of the nest, or null when not affine.
  Expr extreme_cond(const Bound& b, const std::vector<NestVar>& vars) {
    VarMap at_extreme;
    Expr rest = b.index;
    for (const auto& nv : vars) {
      auto aff = back::affine_in(rest, nv.var.get());
      if (!aff) return nullptr;
      rest = aff->rest;
      if (aff->coeff == 0) continue;
      // upper bound: the largest index; lower bound: the smallest.
      bool take_max = (aff->coeff > 0) == b.upper;
      at_extreme[nv.var.get()] = int_imm(take_max ? nv.min + nv.extent - 1 : nv.min, nv.var->dtype);
    }
    Bound e = b;
    e.index = back::fold_constants(substitute(b.index, at_extreme));
    return e.cond();
  }

  Stmt try_hoist(const Stmt& s, const ForNode* op) {
    std::vector<NestVar> vars;
    std::vector<Bound> bounds;
    if (!collect_nest(op, &vars, &bounds)) return Stmt();
    if (bounds.empty()) return s;  // every access proved in bounds
    Expr cond;
    std::vector<Expr> seen;
    for (const auto& b : bounds) {
      Expr c = extreme_cond(b, vars);
      if (!c) return Stmt();
      bool dup = false;
      for (const auto& x : seen) dup |= back::same_expr(x, c);
      if (dup) continue;
      seen.push_back(c);
      cond = back::conj(cond, c);
    }
    hoisting_ = false;
    Stmt slow = back::renew_bound_vars(mutate_For_plain(s, op));
    hoisting_ = true;
    return if_then_else(cond, s, slow, s->loc);
  }

  // A slow-path vectorized loop that writes float4_e2m1 elements (two a byte, written in
  // pairs by one thread: codegen has no single-element store) goes pair by pair instead of
  // element by element:
  //   for p: if (stores' conds at both elements) {
  //     if (loads' conds at both elements) { vectorized pair } else { pair, global loads 0 } }
  // A pair is all in or all out of its fp4 tensor (even innermost extent, even start); only
  // a pair that a load from a tensor of odd extent puts half out of bounds reads zeros for
  // both elements. Null when the loop writes no float4 buffer or is not a plain run of
  // stores (codegen then reports the single-element store).
  Stmt fp4_pairs(const ForNode* op) {
    bool plain = true, writes_fp4 = false;
    std::function<void(const Stmt&)> walk = [&](const Stmt& st) {
      if (auto* q = st.as<SeqNode>()) {
        for (const auto& x : q->stmts) walk(x);
      } else if (auto* bs = st.as<BufferStoreNode>()) {
        writes_fp4 |= bs->buffer->dtype.is_float4();
      } else {
        plain = false;
      }
    };
    walk(op->body);
    std::optional<back::PairSplit> split = plain && writes_fp4 ? back::split_into_pairs(op) : std::nullopt;
    if (!split) return Stmt();
    const DataType t = op->loop_var->dtype;
    const Var p = split->pair, u = split->lane;
    az_.bind_range(p, int_imm(0, t), int_imm(split->pairs, t));
    az_.bind_range(u, int_imm(0, t), int_imm(2, t));
    nonneg_.insert(p.get());
    nonneg_.insert(u.get());
    const Stmt body = split->body;
    const std::vector<NestVar> vars{{u, 0, 2}};
    // Conditions at both elements of the pair; false when one is not affine in u.
    bool affine = true;
    auto pair_cond = [&](const std::vector<Bound>& bounds) {
      Expr c;
      for (const auto& b : bounds) {
        Expr e = extreme_cond(b, vars);
        if (!e) affine = false;
        else c = back::conj(c, e);
      }
      return c;
    };
    struct GlobalLoads : IRVisitor {
      std::vector<const BufferLoadNode*> loads;
      void visit_BufferLoad(const BufferLoadNode* l) override {
        if (is_global(l->buffer)) loads.push_back(l);
        IRVisitor::visit_BufferLoad(l);
      }
    } found;
    std::vector<Bound> store_bounds, load_bounds;
    found.visit(body);
    std::function<void(const Stmt&)> store_walk = [&](const Stmt& st) {
      if (auto* q = st.as<SeqNode>()) {
        for (const auto& x : q->stmts) store_walk(x);
      } else if (auto* bs = st.as<BufferStoreNode>(); bs && is_global(bs->buffer)) {
        for (auto& b : needed_bounds(bs->buffer, bs->indices)) store_bounds.push_back(b);
      }
    };
    store_walk(body);
    for (const BufferLoadNode* l : found.loads)
      for (auto& b : needed_bounds(l->buffer, l->indices)) {
        if (back::reads_memory(b.index)) return Stmt();
        load_bounds.push_back(b);
      }
    const Expr store_cond = pair_cond(store_bounds), load_cond = pair_cond(load_bounds);
    if (!affine) return Stmt();
    auto pair_of = [&](const Stmt& b) { return make_for(u, int_imm(0, t), int_imm(2, t), ForKind::kVectorized, b, op->loc); };
    Stmt inner = pair_of(body);
    if (load_cond) {
      struct ZeroLoads : IRMutator {
        Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode* l) override {
          return is_global(l->buffer) ? back::zero_of(l->dtype) : IRMutator::mutate_BufferLoad(e, l);
        }
      } zero;
      inner = if_then_else(load_cond, inner, back::renew_bound_vars(pair_of(zero.mutate(body))), op->loc);
    }
    if (store_cond) inner = if_then_else(store_cond, inner, Stmt(), op->loc);
    return make_for(p, int_imm(0, t), int_imm(split->pairs, t), ForKind::kUnrolled, inner, op->loc);
  }

  Stmt mutate_For_plain(const Stmt& s, const ForNode* op) {
    if (op->for_kind == ForKind::kVectorized)
      if (Stmt pairs = fp4_pairs(op); pairs.defined()) return pairs;
    Stmt out = IRMutator::mutate_For(s, op);
    if (op->for_kind != ForKind::kVectorized) return out;
    auto n = std::make_shared<ForNode>(*out.as<ForNode>());
    n->for_kind = ForKind::kUnrolled;
    return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
  }

  arith::Analyzer az_;
  std::unordered_set<const VarNode*> nonneg_;
  std::vector<Expr> known_;
  bool hoisting_ = true;
};

PrimFunc legalize(const PrimFunc& f, PassContext& ctx) {
  if (back::config_flag(ctx, "tl.disable_safe_memory_legalize")) return f;
  return with_body(f, Legalizer().mutate(f->body));
}

}  // namespace

Pass legalize_bounds_pass() { return {"legalize_bounds", legalize}; }

}  // namespace tilec::passes
