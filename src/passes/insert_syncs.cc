// Pass insert_syncs: __syncthreads where shared memory accesses of different threads conflict.
//
// (Over 800 lines on purpose: the planner is one class whose visit_* methods share the
// pending-access state and call each other recursively; the stateless helpers already live in
// insert_syncs_support.cc, and splitting the visitor would put one recursion in two files.)
//
// Input:  lowered IR after plan_shared_memory (shared.dyn buffers carry their arena offsets,
//         so buffers that share bytes are known to alias). Barriers may already be present.
// Output: Evaluate(tl.syncthreads()) inserted so that every pair of accesses to the same
//         shared bytes, at least one a write, possibly by different threads, is separated by a
//         barrier on every path between them, loop back edges included — and no barrier that
//         separates nothing is added. Existing barriers are kept (they may order global
//         memory); two barriers with nothing between them become one.
// Loops: a For's back edge is planned to a fixed point; a While is planned as the loop
//   `body; cond` entered after one evaluation of `cond` (visit_while), so a barrier the next
//   evaluation needs lands at the end of the body; a condition that differs between threads
//   may not hold a barrier (CompileError), as for a For with divergent bounds.
// Config: tl.disable_thread_storage_sync returns the function unchanged (unsafe).
// Warp-specialized roles (Annotate kThreadRangeKey, and an If whose branches are roles) are
//   planned each on their own — the roles synchronize through mbarriers — and the block
//   barriers of a role smaller than the block become named barriers over its threads.
//
// Model of an access (buffer granularity; arena byte ranges decide aliasing):
//   - BufferLoad / BufferStore of a shared buffer: a read / a write at that index;
//   - a call taking tl.address_of(S[i]): what the intrinsic's TILEC_INTRIN_EFFECT row says
//     for that argument (r read, w write, m atomic, a asynchronous write), read+write when
//     the intrinsic has no row;
//   - an asynchronous write (cp.async) may start at its call and is complete only after the
//     next tl.cp_async_wait (docs/LOWERED_IR.md point 7): at the call it must come after
//     earlier accesses (checked, like a write), and every wait counts as a write of every
//     buffer the kernel writes asynchronously (so reads after the wait come after a barrier).
//   Two accesses of one thread to one address need no barrier: a store and a load with the
//   same index expression that is affine in the (only) thread index with a non-zero
//   coefficient, and whose variables have not changed between the two (a loop back edge
//   changes the variables bound inside the loop); or, for an index that is not affine (a
//   swizzled tile), one that evaluation over the thread indices and constant loop ranges
//   shows to be injective in the threads (thread_private). Two atomics never conflict.
//
// Uniform values (the same for every thread of the block): an expression is uniform when it
//   uses no thread index, no variable bound to a non-uniform value (a loop with non-uniform
//   bounds binds a non-uniform loop variable), no impure call, and reads memory only from
//   read-only global tensors at uniform indices. A global tensor is read-only when the kernel
//   never writes it: no store, no call taking its address for anything but a read (the
//   TILEC_INTRIN_EFFECT letter 'r'; atomics, writes, unknown intrinsics and addresses not
//   passed straight to a call all count as writes), no TMA tensor map of it used by anything
//   but a TMA load or prefetch, no tile op naming it. Within one launch such a tensor holds
//   the same values for every thread (tensor parameters are __restrict__: no other parameter
//   writes the same memory), so e.g. `for k in range(ceildiv(lens[bz], 64))` is a uniform
//   loop. Shared and fragment buffers are never uniform here; a local buffer (T.alloc_var,
//   T.alloc_local) is when every write of it stores a uniform value at a uniform index outside
//   divergent control flow (syncs::uniform_locals), e.g. `n = T.alloc_var(); n = lens[bz]`.
//
// Algorithm: a forward walk carrying the accesses made since the last barrier ("pending").
//   - A statement whose accesses conflict with pending gets a barrier right before it (as
//     late as possible: the placement that needs the fewest barriers on a straight line);
//     pending is then cleared.
//   - A uniform If (its condition is uniform, see above) walks both
//     branches from the same pending; afterwards pending is the union. Barriers may go
//     inside the branches: every thread takes the same branch.
//   - A uniform loop (uniform bounds): the pending at the end of the body flows to the next iteration. The
//     body is walked repeatedly with the accumulated back-edge pending until it no longer
//     grows, then once more to place its barriers. Conflicts between what was pending before
//     the loop and what the body does before its first barrier get one barrier before the
//     loop (not one per iteration).
//   - Divergent code (an If whose condition is not uniform): __syncthreads inside it
//     would hang or be undefined, because not every thread reaches it. Its branches are
//     planned as if every thread ran them, then every barrier that landed inside is moved
//     to the enclosing uniform point by splitting the branch around it
//     (if c {A; sync; B} -> if c {A}; sync; if c {B}; loops with uniform bounds that read
//     no memory move outside the condition; see hoist_barriers). A condition that reads
//     memory is first evaluated once into a variable; a memory read in a let or an inner
//     condition is guarded by the outer condition (its value becomes non-uniform). A condition
//     the analyzer proves true (e.g. tx // 128 < 1 with 128 threads) is not divergent.
//   - A loop whose bounds are not uniform is planned as if it were uniform (a probe); when
//     that would put a barrier inside its body, the loop cannot be split and it is a
//     UserError. Otherwise the loop is one unit: a barrier before it if it conflicts with
//     pending, and all its accesses pending after it. A barrier the loop already contains
//     does not count as ordering anything after it.
//   Never silently: every place where a barrier is needed but cannot be placed (a barrier
//   inside a non-uniform loop; a loop with non-uniform bounds, or bounds that read memory,
//   inside a divergent branch that needs a barrier) is a UserError with a hint.
// Files: which global tensors the kernel writes (for the uniformity rule), the shared arena
// ranges and the named-barrier rewrite of roles are in insert_syncs_support.{h,cc}.
#include <algorithm>
#include <functional>

#include "passes/cuda_back_util.h"
#include "passes/insert_syncs_support.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

using namespace ir;

namespace {

using back::contains_barrier;
using syncs::GlobalWrites;
using syncs::find_global_writes;
using syncs::uniform_locals;

using VarSet = std::unordered_set<const VarNode*>;

struct Access {
  const BufferNode* buffer = nullptr;
  bool write = false;
  bool atomic = false;
  Expr index;      // plain loads/stores only; null when unknown
  VarSet tainted;  // variables rebound since the access (crossed loop back edges)
};
using Pending = std::vector<Access>;

// What one statement (summarised as a whole) does to shared memory.
struct Effects {
  std::vector<Access> accesses;  // checked against pending, then pending
  std::vector<Access> issues;    // asynchronous writes starting here: checked only
  bool async_wait = false;       // completes asynchronous writes
  bool barrier = false;          // contains a block barrier
};

Stmt make_barrier() { return evaluate(call(DataType::Void(), "tl.syncthreads", {})); }

std::string barrier_op(const Stmt& s) { return s.as<EvaluateNode>()->value.as<CallNode>()->op; }

class SyncPlanner {
 public:
  SyncPlanner(const KernelLaunchNode* kernel, std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> ranges)
      : ranges_(std::move(ranges)), global_writes_(find_global_writes(kernel->body)) {
    back::bind_kernel_vars(az_, kernel);
    for (size_t i = 0; i < kernel->thread_vars.size(); ++i) {
      divergent_.insert(kernel->thread_vars[i].get());
      if (kernel->threads[i] > 1) {
        active_threads_.push_back({kernel->thread_vars[i], kernel->threads[i]});
      }
    }
    find_async_buffers(kernel->body);
    std::unordered_set<const VarNode*> thread_vars;
    for (const auto& v : kernel->thread_vars) thread_vars.insert(v.get());
    uniform_locals_ = uniform_locals(kernel->body, thread_vars, global_writes_);
  }

  Stmt run(const Stmt& body) {
    Pending pending;
    return visit(body, pending);
  }

 private:
  // ---- classification ----
  bool is_shared_buffer(const BufferNode* b) const { return is_shared(b->scope); }

  // Not uniform: may differ between the threads of the block (see the file comment).
  bool divergent_expr(const Expr& e) const {
    return back::any_node(e, [&](const ExprNode* n) {
      switch (n->kind) {
        case NodeKind::kVar: return divergent_.count(static_cast<const VarNode*>(n)) > 0;
        case NodeKind::kBufferLoad: {
          const BufferNode* b = static_cast<const BufferLoadNode*>(n)->buffer.get();
          return !read_only_global(b) && !uniform_locals_.count(b);
        }
        case NodeKind::kCall: return !back::is_pure_call(static_cast<const CallNode*>(n));
        default: return false;  // the indices of a load are visited too
      }
    });
  }
  bool read_only_global(const BufferNode* b) const { return b->scope == Scope::kGlobal && !global_writes_.may_write(b); }
  bool divergent_bounds(const ForNode* op) const { return divergent_expr(op->min) || divergent_expr(op->extent); }
  // A branch condition some threads may see false and others true.
  bool divergent_cond(const Expr& c) { return divergent_expr(c) && !az_.can_prove(c); }

  bool same_memory(const BufferNode* a, const BufferNode* b) const {
    if (a == b) return true;
    auto ia = ranges_.find(a), ib = ranges_.find(b);
    if (ia == ranges_.end() || ib == ranges_.end()) return false;
    return ia->second.first < ib->second.second && ib->second.first < ia->second.second;
  }

  // Same thread, same address: see the file comment.
  // Same index expression at both accesses, and that expression is injective in everything
  // that can differ between them (the thread indices, the variables of loops whose back
  // edge lies between, the lanes of a vector access): then the same address means the same
  // thread in the same iteration, and program order suffices. Injectivity: the index is
  // affine in those variables with constant coefficients forming a mixed radix (sorted by
  // size, each coefficient exceeds the largest offset the smaller terms reach).
  bool thread_private(const Access& earlier, const Access& later) const {
    if (earlier.buffer != later.buffer || !earlier.index || !later.index) return false;
    if (!back::same_expr(earlier.index, later.index)) return false;
    Expr idx = az_.simplify(earlier.index);  // e.g. tx % 128 * 8 + x -> tx * 8 + x
    return injective_mixed_radix(idx, earlier) || injective_by_enumeration(idx, earlier);
  }

  bool injective_mixed_radix(Expr idx, const Access& earlier) const {
    std::vector<std::pair<int64_t, int64_t>> terms;  // (|coefficient|, extent)
    if (auto* r = idx.as<RampNode>()) {
      auto* s = as_const_int(r->stride);
      if (!s) return false;
      terms.push_back({std::abs(*s), r->lanes});
      idx = r->base;
    }
    if (back::reads_memory(idx)) return false;
    Expr rest = idx;
    for (const auto& [v, extent] : active_threads_) {
      auto aff = back::affine_in(rest, v.get());
      if (!aff || aff->coeff == 0) return false;  // all threads of that axis hit one address
      terms.push_back({std::abs(aff->coeff), extent});
      rest = aff->rest;
    }
    for (const VarNode* v : earlier.tainted) {
      if (!back::uses_var(rest, v)) continue;
      auto aff = back::affine_in(rest, v);
      auto range = loop_extent_.find(v);
      if (!aff || range == loop_extent_.end()) return false;
      terms.push_back({std::abs(aff->coeff), range->second});
      rest = aff->rest;
    }
    std::sort(terms.begin(), terms.end());
    int64_t reach = 0;  // largest offset the smaller terms reach
    for (const auto& [coeff, extent] : terms) {
      if (extent <= 1) continue;
      if (coeff <= reach) return false;
      reach += coeff * (extent - 1);
    }
    return true;
  }

  // The same injectivity decided by evaluating the index everywhere, for indices that are
  // not affine (a swizzled shared tile: the XOR of a row into its 16-byte chunks): every
  // variable is a thread index or a loop variable of constant extent; for each value of the
  // loop variables that stay fixed between the two accesses, the thread indices, the loop
  // variables whose back edge lies between and the lanes of a vector access give distinct
  // addresses. Up to 2^18 evaluations; anything else is "not proven".
  bool injective_by_enumeration(Expr idx, const Access& earlier) const {
    int64_t lanes = 1, stride = 0;
    if (auto* r = idx.as<RampNode>()) {
      auto* st = as_const_int(r->stride);
      if (!st) return false;
      lanes = r->lanes, stride = *st;
      idx = r->base;
    }
    if (back::reads_memory(idx)) return false;
    // Every thread index varies, used by the index or not (an index without one is the same
    // address in all those threads: not private).
    std::vector<Var> varying, fixed;
    std::vector<int64_t> varying_ext, fixed_ext;
    for (const auto& [t, extent] : active_threads_) varying.push_back(t), varying_ext.push_back(extent);
    for (const Var& v : back::free_vars(idx)) {
      auto is_thread = [&](const auto& t) { return t.first.same_as(v); };
      if (std::any_of(active_threads_.begin(), active_threads_.end(), is_thread)) continue;  // already varying
      auto range = loop_extent_.find(v.get());
      if (range != loop_extent_.end() && range->second > 0 && from_zero_.count(v.get())) {
        const bool tainted = earlier.tainted.count(v.get()) > 0;
        (tainted ? varying : fixed).push_back(v);
        (tainted ? varying_ext : fixed_ext).push_back(range->second);
      } else {
        return false;
      }
    }
    return syncs::injective_in(idx, varying, varying_ext, fixed, fixed_ext, lanes, stride);
  }

  bool conflict(const Access& p, const Access& a) const {
    if (!same_memory(p.buffer, a.buffer)) return false;
    if (!p.write && !a.write) return false;
    if (p.atomic && a.atomic) return false;
    return !thread_private(p, a);
  }

  bool conflicts(const Pending& pending, const std::vector<Access>& checked) const {
    for (const auto& a : checked)
      for (const auto& p : pending)
        if (conflict(p, a)) return true;
    return false;
  }

  // ---- effects ----
  void find_async_buffers(const Stmt& s) {
    for_each_node(s, [&](const Node* n) {
      if (n->kind != NodeKind::kCall) return;
      auto* c = static_cast<const CallNode*>(n);
      const std::string& spec = back::intrinsic_effect(c->op);
      for (size_t i = 0; i < c->args.size(); ++i) {
        if (back::effect_of_arg(spec, i) != 'a') continue;
        if (auto* addr = c->args[i].as<CallNode>(); addr && addr->op == "tl.address_of") {
          if (auto* l = addr->args[0].as<BufferLoadNode>())
            if (is_shared_buffer(l->buffer.get())) async_buffers_.push_back(l->buffer.get());
        }
      }
    });
  }

  // Accesses made by the expressions of one statement (not its child statements).
  void expr_effects(const Expr& e, Effects* fx) const {
    if (!e) return;
    class Walk : public IRVisitor {
     public:
      const SyncPlanner* self;
      Effects* fx;
      void visit_BufferLoad(const BufferLoadNode* op) override {
        if (self->is_shared_buffer(op->buffer.get())) fx->accesses.push_back({op->buffer.get(), false, false, op->indices[0], {}});
        IRVisitor::visit_BufferLoad(op);
      }
      void visit_Call(const CallNode* op) override {
        const std::string& spec = back::intrinsic_effect(op->op);
        if (spec == "barrier") fx->barrier = true;
        if (spec == "async_wait") fx->async_wait = true;
        for (size_t i = 0; i < op->args.size(); ++i) {
          auto* addr = op->args[i].as<CallNode>();
          auto* load = addr && addr->op == "tl.address_of" && !addr->args.empty() ? addr->args[0].as<BufferLoadNode>() : nullptr;
          if (!load) {
            visit(op->args[i]);
            continue;
          }
          for (const auto& idx : load->indices) visit(idx);  // index expressions may read
          if (!self->is_shared_buffer(load->buffer.get())) continue;
          const BufferNode* b = load->buffer.get();
          switch (back::effect_of_arg(spec, i)) {
            case 'r': fx->accesses.push_back({b, false, false, nullptr, {}}); break;
            case 'w': fx->accesses.push_back({b, true, false, nullptr, {}}); break;
            case 'm': fx->accesses.push_back({b, true, true, nullptr, {}}); break;
            case 'a': fx->issues.push_back({b, true, false, nullptr, {}}); break;
            case '.': break;
            default:
              fx->accesses.push_back({b, true, false, nullptr, {}});
              break;
          }
        }
      }
    } w;
    w.self = this;
    w.fx = fx;
    w.visit(e);
  }

  // Everything a statement subtree does, for divergent regions treated as one unit.
  Effects deep_effects(const Stmt& s) const {
    Effects fx;
    class Walk : public IRVisitor {
     public:
      const SyncPlanner* self;
      Effects* fx;
      void visit_BufferStore(const BufferStoreNode* op) override {
        for (const auto& i : op->indices) self->expr_effects(i, fx);
        self->expr_effects(op->value, fx);
        if (self->is_shared_buffer(op->buffer.get())) fx->accesses.push_back({op->buffer.get(), true, false, op->indices[0], {}});
      }
      void visit_Evaluate(const EvaluateNode* op) override { self->expr_effects(op->value, fx); }
      void visit_If(const IfNode* op) override {
        self->expr_effects(op->cond, fx);
        visit(op->then_case);
        visit(op->else_case);
      }
      void visit_For(const ForNode* op) override {
        self->expr_effects(op->min, fx);
        self->expr_effects(op->extent, fx);
        visit(op->body);
      }
      void visit_While(const WhileNode* op) override {
        self->expr_effects(op->cond, fx);
        visit(op->body);
      }
      void visit_Let(const LetNode* op) override {
        self->expr_effects(op->value, fx);
        visit(op->body);
      }
    } w;
    w.self = this;
    w.fx = &fx;
    w.visit(s);
    return fx;
  }

  // Applies a leaf-like effect to pending; returns true when a barrier is needed before it.
  bool apply(const Effects& fx, Pending& pending) {
    bool need = conflicts(pending, fx.accesses) || conflicts(pending, fx.issues);
    if (need) pending.clear();
    for (const auto& a : fx.accesses) add(pending, a);
    if (fx.async_wait)
      for (const BufferNode* b : async_buffers_) add(pending, {b, true, false, nullptr, {}});
    if (fx.barrier) pending.clear();
    return need;
  }

  static bool same_access(const Access& a, const Access& b) {
    if (a.buffer != b.buffer || a.write != b.write || a.atomic != b.atomic) return false;
    if (!a.index || !b.index) return !a.index && !b.index;
    return back::same_expr(a.index, b.index);
  }
  static bool taint_covers(const VarSet& big, const VarSet& small) {
    for (auto* v : small)
      if (!big.count(v)) return false;
    return true;
  }
  static void add(Pending& pending, const Access& a) {
    for (auto& p : pending) {
      if (!same_access(p, a)) continue;
      p.tainted.insert(a.tainted.begin(), a.tainted.end());
      return;
    }
    pending.push_back(a);
  }
  static bool contains(const Pending& big, const Pending& small) {
    for (const auto& s : small) {
      bool found = false;
      for (const auto& b : big) found |= same_access(b, s) && taint_covers(b.tainted, s.tainted);
      if (!found) return false;
    }
    return true;
  }

  // Every barrier the planner decides on goes through here (counted: see visit_divergent_for).
  Stmt with_barrier_before(const Stmt& s) {
    ++barriers_placed_;
    return seq({make_barrier(), s}, s->loc);
  }

  // ---- the walk ----
  Stmt visit(const Stmt& s, Pending& pending) {
    if (!s) return s;
    switch (s->kind) {
      case NodeKind::kSeq: {
        std::vector<Stmt> out;
        bool changed = false;
        for (const auto& x : s.as<SeqNode>()->stmts) {
          Stmt y = visit(x, pending);
          changed |= !y.same_as(x);
          // Two barriers with nothing in between: keep one.
          std::vector<Stmt> parts;
          if (auto* q = y.as<SeqNode>()) parts = q->stmts;
          else parts = {y};
          for (auto& part : parts) {
            // Two barriers in a row: one suffices — the stronger (a cluster or grid barrier
            // also orders the block; a named barrier is not interchangeable with a block one).
            if (back::is_barrier_stmt(part) && !out.empty() && back::is_barrier_stmt(out.back())) {
              const std::string a = barrier_op(out.back()), b = barrier_op(part);
              auto orders_block = [](const std::string& op) { return op == "tl.cluster_sync" || op == "tl.sync_grid"; };
              if (a == b || (orders_block(a) && b == "tl.syncthreads")) {
                changed = true;
                continue;
              }
              if (a == "tl.syncthreads" && orders_block(b)) {
                out.back() = part;
                changed = true;
                continue;
              }
            }
            out.push_back(part);
          }
        }
        return changed ? seq(out, s->loc) : s;
      }
      case NodeKind::kBufferStore: {
        auto* op = s.as<BufferStoreNode>();
        Effects fx;
        for (const auto& i : op->indices) expr_effects(i, &fx);
        expr_effects(op->value, &fx);
        if (is_shared_buffer(op->buffer.get())) fx.accesses.push_back({op->buffer.get(), true, false, op->indices[0], {}});
        return apply(fx, pending) ? with_barrier_before(s) : s;
      }
      case NodeKind::kEvaluate: {
        if (back::is_barrier_stmt(s)) {
          pending.clear();
          return s;
        }
        Effects fx;
        expr_effects(s.as<EvaluateNode>()->value, &fx);
        return apply(fx, pending) ? with_barrier_before(s) : s;
      }
      case NodeKind::kLet: {
        auto* op = s.as<LetNode>();
        Effects fx;
        expr_effects(op->value, &fx);
        bool need = apply(fx, pending);
        if (divergent_expr(op->value)) divergent_.insert(op->var.get());
        Stmt body = visit(op->body, pending);
        Stmt out = body.same_as(op->body) ? s : let(op->var, op->value, body, s->loc);
        return need ? with_barrier_before(out) : out;
      }
      case NodeKind::kAllocate: {
        auto* op = s.as<AllocateNode>();
        Stmt body = visit(op->body, pending);
        return body.same_as(op->body) ? s : allocate(op->buffer, body, s->loc);
      }
      case NodeKind::kAnnotate: {
        auto* op = s.as<AnnotateNode>();
        if (op->key == kThreadRangeKey) {
          // A warp-specialized role: its threads order their own accesses; the roles hand
          // data to each other through mbarriers, which this pass does not model.
          Pending inner;
          Stmt body = visit(op->body, inner);
          for (const auto& a : inner) add(pending, a);
          return body.same_as(op->body) ? s : annotate(op->key, op->value, body, s->loc);
        }
        Stmt body = visit(op->body, pending);
        return body.same_as(op->body) ? s : annotate(op->key, op->value, body, s->loc);
      }
      case NodeKind::kIf:
        return visit_if(s, s.as<IfNode>(), pending);
      case NodeKind::kFor:
        return visit_for(s, s.as<ForNode>(), pending);
      case NodeKind::kWhile:
        return visit_while(s, s.as<WhileNode>(), pending);
      default:
        TILEC_UNREACHABLE() << "insert_syncs: unexpected " << node_kind_name(s->kind) << " in lowered IR";
    }
  }

  static bool is_role(const Stmt& s) {
    auto* a = s.as<AnnotateNode>();
    return a && a->key == kThreadRangeKey;
  }

  // A role, or an if / elif chain whose branches are all roles (lower_warp_roles).
  static bool is_role_split(const Stmt& s) {
    if (is_role(s)) return true;
    auto* i = s.as<IfNode>();
    return i && is_role(i->then_case) && (!i->else_case || is_role_split(i->else_case));
  }

  Stmt visit_if(const Stmt& s, const IfNode* op, Pending& pending) {
    if (is_role(op->then_case) && (!op->else_case || is_role_split(op->else_case))) {
      // The split into warp-specialized roles: each branch is planned on its own. What the
      // block wrote before the split and a role touches first needs one barrier before the
      // split, which every thread still reaches (a role's own barriers are its named one).
      // (Checked once, at the chain's first If: the elifs are inside the split already.)
      bool need = false;
      if (!in_role_chain_) {
        std::vector<Access> first;
        bool always = false;
        exposed(op->then_case, &first, &always);
        exposed(op->else_case, &first, &always);
        need = conflicts(pending, first);
        if (need) pending.clear();
      }
      Stmt then_case = visit(op->then_case, pending);
      const bool saved = in_role_chain_;
      in_role_chain_ = true;
      Stmt else_case = visit(op->else_case, pending);
      in_role_chain_ = saved;
      Stmt out = then_case.same_as(op->then_case) && else_case.same_as(op->else_case)
                     ? s
                     : if_then_else(op->cond, then_case, else_case, s->loc);
      return need ? with_barrier_before(out) : out;
    }
    if (divergent_cond(op->cond)) return visit_divergent_if(s, op, pending);
    Effects fx;
    expr_effects(op->cond, &fx);
    bool need = apply(fx, pending);
    Pending else_pending = pending;
    Stmt then_case = visit(op->then_case, pending);
    Stmt else_case = visit(op->else_case, else_pending);
    for (const auto& a : else_pending) add(pending, a);
    Stmt out = then_case.same_as(op->then_case) && else_case.same_as(op->else_case)
                   ? s
                   : if_then_else(op->cond, then_case, else_case, s->loc);
    return need ? with_barrier_before(out) : out;
  }


  // A branch on the thread index (or on memory): its statements are placed as if every
  // thread ran them; barriers that lands inside are then moved out by hoist_barriers.
  Stmt visit_divergent_if(const Stmt& s, const IfNode* op, Pending& pending) {
    Effects fx;
    expr_effects(op->cond, &fx);
    bool need = apply(fx, pending);
    // A conflict with what is pending before the branch gets one barrier before the whole If
    // (inside, it would be hoisted out of each arm separately).
    std::vector<Access> first;
    bool always = false;
    exposed(op->then_case, &first, &always);
    exposed(op->else_case, &first, &always);
    if (conflicts(pending, first)) {
      need = true;
      pending.clear();
    }
    Pending else_pending = pending;
    Stmt then_case = visit(op->then_case, pending);
    Stmt else_case = visit(op->else_case, else_pending);
    for (const auto& a : else_pending) add(pending, a);
    Stmt out;
    if (!contains_barrier(then_case) && !contains_barrier(else_case)) {
      out = then_case.same_as(op->then_case) && else_case.same_as(op->else_case)
                ? s
                : if_then_else(op->cond, then_case, else_case, s->loc);
    } else {
      // The condition is evaluated once into a variable when it reads memory (the split
      // branches must all see the same value).
      Var cv;
      Expr cond = op->cond;
      if (back::reads_memory(cond)) {
        cv = make_var("cond", DataType::Bool(), s->loc);
        cond = cv;
      }
      std::vector<Stmt> parts = {hoist_barriers(cond, then_case, s->loc)};
      if (else_case) parts.push_back(hoist_barriers(logical_not(cond), else_case, s->loc));
      out = seq(parts, s->loc);
      if (cv) out = let(cv, op->cond, out, s->loc);
    }
    return need ? with_barrier_before(out) : out;
  }

  // `if (cond) { s }` rewritten so that no barrier is inside a branch on `cond`: statement
  // runs between barriers keep the condition, barriers are executed by every thread.
  //   if c {A; sync; B}          -> if c {A}; sync; if c {B}
  //   if c {for i {A; sync; B}}  -> for i {if c {A}; sync; if c {B}}   (uniform loop bounds)
  //   if c {if d {T} else {E}}   -> the same on c && d and c && !d (d uniform: kept outside)
  //   if c {let x = v; S}        -> let x = (c ? v : 0); ...   (v not evaluated outside c)
  // Exact: every thread runs the same statements in the same order as before, and the
  // barriers now also order the threads that skip them. `cond` must read no memory.
  Stmt hoist_barriers(const Expr& cond, const Stmt& s, const SourceLoc& loc) {
    if (!s) return s;
    if (!contains_barrier(s)) return if_then_else(cond, s, nullptr, loc);
    if (back::is_barrier_stmt(s)) return s;
    switch (s->kind) {
      case NodeKind::kSeq: {
        std::vector<Stmt> out, run;
        auto flush = [&]() {
          if (run.empty()) return;
          out.push_back(if_then_else(cond, seq(run, loc), nullptr, loc));
          run.clear();
        };
        for (const auto& x : s.as<SeqNode>()->stmts) {
          if (!contains_barrier(x)) {
            run.push_back(x);
            continue;
          }
          flush();
          out.push_back(hoist_barriers(cond, x, loc));
        }
        flush();
        return seq(out, loc);
      }
      case NodeKind::kFor: {
        auto* op = s.as<ForNode>();
        check_no_barrier_needed_in_divergent_loop(op, /*needs_barrier=*/true);
        // Moved out of the condition, the bounds are evaluated by threads that did not
        // evaluate them before: a memory read there could be out of bounds.
        TILEC_USER_CHECK(!back::reads_memory(op->min) && !back::reads_memory(op->extent), op->loc,
                         "read the trip count into a variable before the branch (e.g. n = T.ceildiv(lens[bz], 64) "
                         "outside the `if`), or move the shared-memory accesses that conflict out of the loop")
            << "shared memory accesses in a loop whose trip count reads memory, inside a branch that not every "
               "thread takes, need __syncthreads inside the loop, which would have to be moved out of the branch";
        auto n = std::make_shared<ForNode>(*op);
        n->body = hoist_barriers(cond, op->body, loc);
        return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
      }
      case NodeKind::kWhile:
        throw_user_error("a while loop whose body needs __syncthreads, inside a branch that not every thread "
                             "takes: the barrier would have to be moved out of the branch, and the loop's condition "
                             "with it",
                         s->loc, "move the while loop out of the branch (put the branch's condition into the loop's)");
      case NodeKind::kIf: {
        auto* op = s.as<IfNode>();
        if (!divergent_expr(op->cond) && !back::reads_memory(op->cond)) {  // evaluated by every thread now
          return if_then_else(op->cond, hoist_barriers(cond, op->then_case, loc),
                              op->else_case ? hoist_barriers(cond, op->else_case, loc) : Stmt(), op->loc);
        }
        Expr inner = op->cond;
        Var cv;
        if (back::reads_memory(inner)) {
          cv = make_var("cond", DataType::Bool(), op->loc);
          inner = cv;
        }
        std::vector<Stmt> parts = {hoist_barriers(binary(NodeKind::kAnd, cond, inner), op->then_case, loc)};
        if (op->else_case)
          parts.push_back(hoist_barriers(binary(NodeKind::kAnd, cond, logical_not(inner)), op->else_case, loc));
        Stmt out = seq(parts, loc);
        // C's ?: evaluates the memory read only where the outer condition holds.
        if (cv) out = let(cv, select(cond, op->cond, bool_imm(false)), out, op->loc);
        return out;
      }
      case NodeKind::kLet: {
        auto* op = s.as<LetNode>();
        const bool guarded = back::reads_memory(op->value);
        Expr value = guarded ? select(cond, op->value, back::zero_of(op->value->dtype)) : op->value;
        // A guarded value is 0 for the threads that skip the branch: no longer uniform.
        if (guarded || divergent_expr(op->value)) divergent_.insert(op->var.get());
        return let(op->var, value, hoist_barriers(cond, op->body, loc), op->loc);
      }
      case NodeKind::kAllocate: {
        auto* op = s.as<AllocateNode>();
        return allocate(op->buffer, hoist_barriers(cond, op->body, loc), op->loc);
      }
      case NodeKind::kAnnotate: {
        auto* op = s.as<AnnotateNode>();
        return annotate(op->key, op->value, hoist_barriers(cond, op->body, loc), op->loc);
      }
      default:
        TILEC_UNREACHABLE() << "a barrier inside a " << node_kind_name(s->kind);
    }
  }

  static VarSet vars_bound_in(const ForNode* op) {
    VarSet out = vars_bound_in(op->body);
    out.insert(op->loop_var.get());
    return out;
  }
  static VarSet vars_bound_in(const Stmt& body) {
    VarSet out;
    for_each_node(body, [&](const Node* n) {
      if (n->kind == NodeKind::kFor) out.insert(static_cast<const ForNode*>(n)->loop_var.get());
      if (n->kind == NodeKind::kLet) out.insert(static_cast<const LetNode*>(n)->var.get());
    });
    return out;
  }

  static Pending tainted(Pending p, const VarSet& vars) {
    for (auto& a : p) a.tainted.insert(vars.begin(), vars.end());
    return p;
  }

  // Accesses reachable from the start of `s` before any barrier; sets *always_barrier when
  // every path through `s` crosses a barrier.
  void exposed(const Stmt& s, std::vector<Access>* out, bool* always_barrier) {
    *always_barrier = false;
    if (!s) return;
    switch (s->kind) {
      case NodeKind::kSeq:
        for (const auto& x : s.as<SeqNode>()->stmts) {
          bool always = false;
          exposed(x, out, &always);
          if (always) {
            *always_barrier = true;
            return;
          }
        }
        return;
      case NodeKind::kEvaluate:
        if (back::is_barrier_stmt(s)) {
          *always_barrier = true;
          return;
        }
        break;
      case NodeKind::kLet: {
        Effects fx;
        expr_effects(s.as<LetNode>()->value, &fx);
        for (auto& a : fx.accesses) out->push_back(a);
        for (auto& a : fx.issues) out->push_back(a);
        return exposed(s.as<LetNode>()->body, out, always_barrier);
      }
      case NodeKind::kAllocate:
        return exposed(s.as<AllocateNode>()->body, out, always_barrier);
      case NodeKind::kAnnotate:
        return exposed(s.as<AnnotateNode>()->body, out, always_barrier);
      case NodeKind::kIf: {
        auto* op = s.as<IfNode>();
        if (divergent_cond(op->cond)) break;
        Effects fx;
        expr_effects(op->cond, &fx);
        for (auto& a : fx.accesses) out->push_back(a);
        bool t = false, e = false;
        exposed(op->then_case, out, &t);
        exposed(op->else_case, out, &e);
        *always_barrier = t && e && op->else_case;
        return;
      }
      case NodeKind::kWhile: {
        auto* op = s.as<WhileNode>();
        if (divergent_cond(op->cond)) break;
        Effects fx;
        expr_effects(op->cond, &fx);  // evaluated first
        for (auto& a : fx.accesses) out->push_back(a);
        bool body_always = false;  // the loop may run no iteration: never a barrier on every path
        exposed(op->body, out, &body_always);
        return;
      }
      case NodeKind::kFor: {
        auto* op = s.as<ForNode>();
        if (divergent_bounds(op)) break;
        bool body_always = false;
        exposed(op->body, out, &body_always);
        *always_barrier = body_always && at_least_one_iteration(op);
        return;
      }
      default:
        break;
    }
    Effects fx = deep_effects(s);
    for (auto& a : fx.accesses) out->push_back(a);
    for (auto& a : fx.issues) out->push_back(a);
  }

  static bool at_least_one_iteration(const ForNode* op) {
    auto* e = as_const_int(op->extent);
    return e && *e >= 1;
  }

  // A barrier inside a loop with non-uniform bounds cannot be placed: not every thread would
  // reach it as often. A UserError when one is needed and the bounds are not uniform.
  void check_no_barrier_needed_in_divergent_loop(const ForNode* op, bool needs_barrier) const {
    TILEC_USER_CHECK(!needs_barrier || !divergent_bounds(op), op->loc,
                     "give the loop bounds that are the same for every thread (block indices, constants, uniform "
                     "loop variables, reads of tensors the kernel does not write at such indices), or move the "
                     "shared-memory accesses that conflict out of the loop")
        << "shared memory accesses in a loop whose trip count depends on the thread index need "
           "__syncthreads inside the loop, which not every thread would reach";
  }

  Stmt visit_for(const Stmt& s, const ForNode* op, Pending& pending) {
    if (divergent_bounds(op)) return visit_divergent_for(s, op, pending);
    return visit_uniform_for(s, op, pending);
  }

  // A loop whose trip count may differ between threads: planned as if uniform to learn whether
  // its body needs a barrier (an error: see check_no_barrier_needed_in_divergent_loop), else
  // kept as it is and treated as one unit.
  Stmt visit_divergent_for(const Stmt& s, const ForNode* op, Pending& pending) {
    VarSet saved = divergent_;
    divergent_.insert(op->loop_var.get());
    const bool needs_barrier = plans_a_barrier([&](Pending& inside) { (void)visit_uniform_for(s, op, inside); });
    divergent_ = saved;
    check_no_barrier_needed_in_divergent_loop(op, needs_barrier);
    return as_one_unit(s, pending);
  }

  // Whether planning a loop (with nothing pending before it: a conflict with what precedes the
  // loop gets a barrier before it, see as_one_unit) places a barrier; the plan is dropped.
  template <class Plan> bool plans_a_barrier(Plan plan) {
    const int64_t placed = barriers_placed_;
    Pending inside;
    plan(inside);
    const bool placed_one = barriers_placed_ > placed;
    barriers_placed_ = placed;
    return placed_one;
  }

  // A loop not every thread runs as often, kept as it is: its accesses as one statement's.
  Stmt as_one_unit(const Stmt& s, Pending& pending) {
    Effects fx = deep_effects(s);
    fx.barrier = false;  // a barrier inside is not reached by every thread: it orders nothing after the loop
    return apply(fx, pending) ? with_barrier_before(s) : s;
  }

  // The accesses pending at the top of a loop body from its earlier iterations: grown until the
  // body's exit adds nothing new. `inside`: the variables the body binds (they differ between
  // iterations).
  Pending back_edge_of(const Stmt& body, const VarSet& inside) {
    Pending back_edge;
    for (int iter = 0; iter < 64; ++iter) {
      Pending p = back_edge;
      VarSet saved = divergent_;
      (void)visit(body, p);
      divergent_ = saved;
      Pending exit = tainted(p, inside);
      if (contains(back_edge, exit)) break;
      for (const auto& a : exit) add(back_edge, a);
      TILEC_ICHECK(iter < 63) << "insert_syncs: loop analysis did not converge";
    }
    return back_edge;
  }

  Stmt visit_uniform_for(const Stmt& s, const ForNode* op, Pending& pending) {
    az_.bind_range(op->loop_var, op->min, op->extent);
    if (auto* e = as_const_int(op->extent)) loop_extent_[op->loop_var.get()] = *e;
    if (is_zero(op->min)) from_zero_.insert(op->loop_var.get());
    VarSet inside = vars_bound_in(op);
    // Nothing comes back along the back edge of a loop whose iterations touch different elements.
    const bool disjoint = find_attr(op->annotations, kDisjointIterationsKey) != nullptr;
    Pending p = disjoint ? Pending{} : back_edge_of(op->body, inside);
    Stmt body = visit(op->body, p);
    std::vector<Access> first_accesses;
    bool always = false;
    exposed(body, &first_accesses, &always);
    bool need = conflicts(pending, first_accesses);
    if (need) pending.clear();
    bool passthrough = !always || !at_least_one_iteration(op);
    Pending out = tainted(p, inside);
    if (passthrough)
      for (const auto& a : pending) add(out, a);
    pending = std::move(out);
    Stmt loop = s;
    if (!body.same_as(op->body)) {
      auto n = std::make_shared<ForNode>(*op);
      n->body = body;
      loop = Stmt(std::shared_ptr<const ForNode>(std::move(n)));
    }
    return need ? with_barrier_before(loop) : loop;
  }

  // `while cond: body` is planned as the loop `body; cond` entered after one evaluation of `cond`:
  // a barrier the planner puts before that trailing `cond` goes at the end of the body, where
  // it orders the body's writes before the next evaluation. A condition that differs between
  // threads is planned as in visit_divergent_for (a barrier inside would be an error).
  Stmt visit_while(const Stmt& s, const WhileNode* op, Pending& pending) {
    if (divergent_cond(op->cond)) {
      const bool needs_barrier =
          plans_a_barrier([&](Pending& inside) { (void)visit_uniform_while(s, op, inside); });
      TILEC_USER_CHECK(!needs_barrier, s->loc,
                       "give the loop a condition that is the same for every thread of the block (block indices, "
                       "uniform values), or move the shared-memory accesses that conflict out of the loop")
          << "this while loop needs __syncthreads inside, but its condition may differ between the threads of a "
             "block, so not every thread would reach the barrier as often";
      return as_one_unit(s, pending);
    }
    return visit_uniform_while(s, op, pending);
  }

  Stmt visit_uniform_while(const Stmt& s, const WhileNode* op, Pending& pending) {
    const Stmt trailing_cond = evaluate(op->cond, s->loc);
    const Stmt loop_body = seq({op->body, trailing_cond}, s->loc);
    VarSet inside = vars_bound_in(op->body);
    Pending p = back_edge_of(loop_body, inside);
    Stmt planned = visit(loop_body, p);
    Effects cond_fx;
    expr_effects(op->cond, &cond_fx);  // the first evaluation, before any iteration
    std::vector<Access> first_accesses = cond_fx.accesses;
    bool always = false;
    exposed(op->body, &first_accesses, &always);
    const bool need = conflicts(pending, first_accesses);
    if (need) pending.clear();
    Pending out = tainted(p, inside);
    for (const auto& a : pending) add(out, a);  // the loop may run no iteration
    for (const auto& a : cond_fx.accesses) add(out, a);
    pending = std::move(out);
    Stmt loop = s;
    if (!planned.same_as(loop_body)) {
      // `planned` is the Seq of the body's statements then [barrier,] trailing_cond (flattened).
      auto* parts = planned.as<SeqNode>();
      TILEC_ICHECK(parts && !parts->stmts.empty() && parts->stmts.back().same_as(trailing_cond))
          << "insert_syncs: the planned while body lost its trailing condition";
      std::vector<Stmt> body(parts->stmts.begin(), parts->stmts.end() - 1);
      loop = make_while(op->cond, body.size() == 1 ? body[0] : seq(body, op->body->loc), s->loc);
    }
    return need ? with_barrier_before(loop) : loop;
  }

  std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> ranges_;
  mutable arith::Analyzer az_;
  std::vector<std::pair<Var, int64_t>> active_threads_;  // (index, extent > 1)
  std::unordered_map<const VarNode*, int64_t> loop_extent_;           // constant trip counts
  VarSet from_zero_;                                                  // loop variables starting at 0
  VarSet divergent_;
  GlobalWrites global_writes_;
  std::unordered_set<const BufferNode*> uniform_locals_;  // see syncs::uniform_locals
  std::vector<const BufferNode*> async_buffers_;
  int64_t barriers_placed_ = 0;  // barriers decided so far (a probe compares before and after)
  bool in_role_chain_ = false;    // visiting the elifs of a role split (no block barrier there)
};

PrimFunc insert(const PrimFunc& f, PassContext& ctx) {
  if (back::config_flag(ctx, "tl.disable_thread_storage_sync")) return f;
  const KernelLaunchNode* kernel = back::find_kernel(f->body);
  if (!kernel) return f;
  SyncPlanner planner(kernel, syncs::arena_ranges(kernel->body));
  Stmt body = planner.run(kernel->body);
  const int64_t threads = kernel->block_threads();
  body = syncs::named_barriers(body, threads);
  if (body.same_as(kernel->body)) return f;
  auto k = std::make_shared<KernelLaunchNode>(*kernel);
  k->body = body;
  return with_body(f, back::replace_kernel(f->body, Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(k)))));
}

}  // namespace

Pass insert_syncs_pass() { return {"insert_syncs", insert}; }

}  // namespace tilec::passes
