// Pass "lower_tile_ops": turns tile ops and T.Parallel nests into lowered IR
// (docs/LOWERED_IR.md), using the layouts layout_inference chose.
//
// Input:  the output of layout_inference: Annotate{"layout_map"} on each kernel body,
//         "loop_layout" on each T.Parallel nest.
// Output: no TileOp nodes and no Parallel loops; every fragment is a Scope::kLocal
//         register array of shape (registers per thread,) indexed by register; every
//         shared buffer is 1-D in physical (possibly swizzled) order; local buffers are
//         1-D; global buffers keep logical indices. T.Pipelined loops stay (pipeline
//         injection runs next). The layout_map annotation is consumed.
// Before: layout_inference.  After: inject pipeline, then the codegen half.
// Algorithm: one IRMutator walk per kernel. Allocations switch to their lowered
//   buffers; a parallel nest becomes `for k in registers: if valid: body[i := inverse]`
//   (parallel_loop.cc); a tile op is handed to its behaviour's lower() through this
//   pass's LowerContext (registry.cc), and scratch buffers it asks for are allocated
//   around its result; remaining loads/stores of on-chip buffers are rewritten in place.
//   The result goes through the simplify pass (index arithmetic under the known ranges).
// Errors: a fragment used inside a role (Annotate kThreadRangeKey: a branch that only some
//   threads run) and elsewhere too, unless the role starts at thread 0 and holds every
//   thread the fragment's layout spreads over: a fragment lives in the registers of the
//   threads that run its code, so the role would read registers another thread (or another
//   thread numbering) wrote.
#include <unordered_map>

#include "ops/op_util.h"
#include "ops/parallel_loop.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/structural.h"
#include "tilec/ir/visitor.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

// Where each fragment is used: the thread ranges of the roles ({-1, -1}: outside any) whose
// code touches it (T.ws blocks of one warp group are one range).
class FragmentRoles : public IRVisitor {
 public:
  using Range = std::pair<int64_t, int64_t>;  // (first thread, count)
  struct Use {
    Range role;
    SourceLoc loc;
  };
  std::unordered_map<const BufferNode*, std::vector<Use>> uses;

 protected:
  void note(const Buffer& b, const SourceLoc& loc) {
    if (b->scope != Scope::kFragment) return;
    auto& u = uses[b.get()];
    const Range role = roles_.empty() ? Range{-1, -1} : roles_.back();
    for (const auto& x : u)
      if (x.role == role) return;
    u.push_back({role, loc});
  }
  void visit_Annotate(const AnnotateNode* op) override {
    const bool role = op->key == kThreadRangeKey;
    if (role) {
      const auto& r = std::get<std::vector<int64_t>>(op->value);
      roles_.push_back({r[0], r[1]});
    }
    IRVisitor::visit_Annotate(op);
    if (role) roles_.pop_back();
  }
  void visit_BufferLoad(const BufferLoadNode* op) override {
    note(op->buffer, op->loc);
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    note(op->buffer, op->loc);
    IRVisitor::visit_BufferStore(op);
  }
  void visit_TileOp(const TileOpNode* op) override {
    for (const auto& arg : op->args)
      if (auto* r = std::get_if<BufferRegion>(&arg)) note(r->buffer, op->loc);
    IRVisitor::visit_TileOp(op);
  }

 private:
  std::vector<Range> roles_;
};

class TileOpLowerer : public IRMutator, public ops::LowerContext {
 public:
  explicit TileOpLowerer(const PassContext& ctx) : target_(ctx.target()), ctx_(ctx) {}

  // ---- LowerContext ----
  const target::Target& target() const override { return target_; }
  int64_t num_threads() const override { return num_threads_; }
  Expr thread_index() const override { return thread_index_; }
  bool config_flag(const std::string& key) const override { return back::config_flag(ctx_, key); }
  std::string config_string(const std::string& key) const override { return back::config_string(ctx_, key); }
  Layout layout_of(const Buffer& b) const override {
    auto it = layouts_.find(b.get());
    return it == layouts_.end() ? nullptr : it->second;
  }
  Buffer lowered_buffer(const Buffer& b) const override {
    auto it = lowered_.find(b.get());
    if (it != lowered_.end()) return it->second;
    // A register view (T.reshape) is its buffer's storage; its own layout gives the positions.
    // A shared view stays a buffer of its own over the same bytes (plan_shared_memory puts it
    // at its storage's offset): its lowered form views the lowered storage.
    Buffer nb;
    if (b->viewed && !is_shared(b->scope)) {
      nb = lowered_buffer(b->viewed);
    } else if (b->viewed) {
      auto node = std::make_shared<BufferNode>(*make_lowered(b));
      node->viewed = lowered_buffer(b->viewed);
      nb = Buffer(std::shared_ptr<const BufferNode>(std::move(node)));
    } else {
      nb = make_lowered(b);
    }
    lowered_.emplace(b.get(), nb);
    return nb;
  }
  std::vector<Expr> physical_index(const Buffer& b, const std::vector<Expr>& logical) override {
    switch (b->scope) {
      case Scope::kGlobal: return logical;
      case Scope::kFragment:
      case Scope::kShared:
      case Scope::kSharedDyn: {
        Layout l = layout_of(b);
        TILEC_ICHECK(l) << "buffer " << b->name << " has no layout; run layout_inference first";
        return {layout::apply_index(l, logical)[0]};
      }
      default: {
        if (logical.size() <= 1) return logical;
        Expr off = nullptr;
        auto strides = buffer_strides(b);
        for (size_t d = 0; d < logical.size(); ++d) {
          Expr term = logical[d];
          if (!is_one(strides[d])) term = term * strides[d];
          off = off ? off + term : term;
        }
        return {off};
      }
    }
  }
  Stmt lower_parallel(const std::vector<Var>& vars, const std::vector<int64_t>& extents, const Stmt& body,
                      const Layout& loop, bool first_replica_only) override {
    return ops::lower_parallel_nest(vars, extents, body, loop, first_replica_only, *this, current_loc_);
  }
  Layout coalesced_loop_layout(const std::vector<int64_t>& extents, const std::vector<Buffer>& buffers) const override {
    int64_t vec = 0;
    int64_t inner = extents.empty() ? 1 : extents.back();
    for (const auto& b : buffers) {
      int64_t v = layout::vector_elems(b->dtype, inner);
      vec = vec == 0 ? v : std::min(vec, v);
    }
    return layout::coalesced_layout(extents, num_threads_, vec == 0 ? 1 : vec);
  }
  Buffer alloc_buffer(const std::string& name, const std::vector<int64_t>& shape, DataType dtype,
                      Scope scope) override {
    std::vector<Expr> s;
    for (auto e : shape) s.push_back(int_imm(e));
    Buffer b = make_buffer(name, s, dtype, scope, {}, current_loc_);
    lowered_.emplace(b.get(), b);
    scratch_.push_back(b);
    return b;
  }
  const std::vector<const ForNode*>& enclosing_loops() const override { return loops_; }
  arith::Analyzer& analyzer() override { return analyzer_; }
  void bind_known_ranges(arith::Analyzer& an) const override {
    for (const auto& [v, extent] : index_ranges_) an.bind_range(v, int_imm(0, v->dtype), extent);
    for (const auto& [v, value] : lets_) an.bind_value(v, value);
  }

 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    num_threads_ = 1;
    Expr tid = nullptr;
    int64_t stride = 1;
    for (size_t i = 0; i < op->threads.size(); ++i) {
      num_threads_ *= op->threads[i];
      Expr term = op->thread_vars[i];
      if (stride != 1) term = term * stride;
      tid = tid ? tid + term : term;
      stride *= op->threads[i];
    }
    thread_index_ = tid;
    block_thread_index_ = tid;
    const size_t saved = index_ranges_.size();
    for (size_t i = 0; i < op->block_vars.size() && i < op->grid.size(); ++i)
      index_ranges_.emplace_back(op->block_vars[i], cast(op->block_vars[i]->dtype, op->grid[i]));
    for (size_t i = 0; i < op->thread_vars.size() && i < op->threads.size(); ++i)
      index_ranges_.emplace_back(op->thread_vars[i], int_imm(op->threads[i], op->thread_vars[i]->dtype));
    Stmt r = IRMutator::mutate_KernelLaunch(s, op);
    index_ranges_.resize(saved);
    return r;
  }
  Stmt mutate_Let(const Stmt& s, const LetNode* op) override {
    lets_.emplace_back(op->var, op->value);
    Stmt r = IRMutator::mutate_Let(s, op);
    lets_.pop_back();
    return r;
  }
  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key == "layout_map") {
      if (auto* m = std::get_if<LayoutMap>(&op->value))
        for (const auto& [b, l] : *m) layouts_[b.get()] = l;
      return mutate(op->body);
    }
    if (op->key == kThreadRangeKey) {
      // A warp-specialized role: its ops run on `count` threads numbered from `first`.
      auto& r = std::get<std::vector<int64_t>>(op->value);
      check_role_fragments(r[0], r[1]);
      const int64_t saved_threads = num_threads_;
      const Expr saved_index = thread_index_;
      num_threads_ = r[1];
      if (r[0] != 0) thread_index_ = block_thread_index_ - int_imm(r[0], block_thread_index_->dtype);
      Stmt body = mutate(op->body);
      num_threads_ = saved_threads;
      thread_index_ = saved_index;
      return body.same_as(op->body) ? s : annotate(op->key, op->value, body, op->loc);
    }
    return IRMutator::mutate_Annotate(s, op);
  }
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode* op) override {
    if (op->buffer->viewed && !is_shared(op->buffer->scope)) return mutate(op->body);  // no storage of its own
    return allocate(lowered_buffer(op->buffer), mutate(op->body), op->loc);
  }
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    if (op->for_kind == ForKind::kParallel) {
      ops::ParallelNest nest = ops::collect_nest(op);
      auto* v = find_attr(op->annotations, "loop_layout");
      TILEC_ICHECK(v && std::holds_alternative<Layout>(*v)) << "T.Parallel loop without a loop layout";
      current_loc_ = op->loc;
      // A replicated loop layout runs each iteration on every replica. That is needed
      // when the body writes per-thread state (fragments, locals); stores to shared or
      // global memory need only one of them.
      bool per_thread_writes = false;
      const std::vector<ops::NestAccess> accesses = ops::collect_accesses(nest);
      for (const auto& a : accesses)
        if (a.is_write && !is_shared(a.buffer->scope) && a.buffer->scope != Scope::kGlobal) per_thread_writes = true;
      Stmt lowered = ops::lower_parallel_nest(nest.vars, nest.extents, nest.body, std::get<Layout>(*v),
                                              !per_thread_writes, *this, op->loc);
      // T.Parallel iterations are independent: when every shared buffer the nest writes is
      // read and written at one index per iteration (element-wise), no two of its per-thread
      // iterations touch one element, and no barrier goes between them.
      return elementwise_shared_writes(accesses) ? ops::mark_disjoint_nest(lowered) : lowered;
    }
    loops_.push_back(op);
    Stmt r = IRMutator::mutate_For(s, op);
    loops_.pop_back();
    return r;
  }
  Stmt mutate_TileOp(const Stmt& s, const TileOpNode* op) override {
    current_loc_ = op->loc;
    std::vector<Buffer> outer_scratch = std::move(scratch_);
    scratch_.clear();
    Stmt r = ops::lower(*op, *this);
    r = allocate_all(scratch_, r, op->loc);
    scratch_ = std::move(outer_scratch);
    return r;
  }
  Expr mutate_BufferLoad(const Expr& e, const BufferLoadNode* op) override {
    std::vector<Expr> idx;
    for (const auto& i : op->indices) idx.push_back(mutate(i));
    if (op->buffer->scope == Scope::kFragment) {
      // Outside a T.Parallel nest (nests lower their own fragment accesses): a one-element
      // fragment read by every thread (the verifier lets only those through), which needs
      // every thread to hold it, as the all-reduce of T.reduce_* leaves it.
      Layout l = layout_of(op->buffer);
      TILEC_USER_CHECK(l && layout::replicate_factor(l) >= num_threads_, op->loc,
                       "read it inside `for i in T.Parallel(1)`, or copy it to a T.alloc_var first")
          << "fragment '" << op->buffer->name << "' is indexed outside a T.Parallel loop, and not every thread "
          << "holds its element";
    }
    if (op->buffer->scope == Scope::kGlobal) {
      bool same = true;
      for (size_t i = 0; i < idx.size(); ++i) same &= idx[i].same_as(op->indices[i]);
      if (same) return e;
    }
    return buffer_load(lowered_buffer(op->buffer), physical_index(op->buffer, idx), op->loc);
  }
  Stmt mutate_BufferStore(const Stmt& s, const BufferStoreNode* op) override {
    std::vector<Expr> idx;
    for (const auto& i : op->indices) idx.push_back(mutate(i));
    Expr v = mutate(op->value);
    return buffer_store(lowered_buffer(op->buffer), physical_index(op->buffer, idx), v, op->loc);
  }

 private:
  static bool elementwise_shared_writes(const std::vector<ops::NestAccess>& accesses) {
    for (const auto& w : accesses) {
      if (!w.is_write || !is_shared(w.buffer->scope)) continue;
      for (const auto& a : accesses) {
        if (a.buffer.get() != w.buffer.get() || a.indices.size() != w.indices.size()) continue;
        for (size_t d = 0; d < a.indices.size(); ++d)
          if (!structural_equal(a.indices[d], w.indices[d])) return false;
      }
    }
    return true;
  }

  Buffer make_lowered(const Buffer& b) const {
    switch (b->scope) {
      case Scope::kGlobal: return b;
      case Scope::kFragment: {
        Layout l = layout_of(b);
        TILEC_ICHECK(l) << "fragment " << b->name << " has no layout; run layout_inference first";
        return make_buffer(b->name, {int_imm(layout::fragment_local_size(l))}, b->dtype, Scope::kLocal, {}, b->loc);
      }
      case Scope::kShared:
      case Scope::kSharedDyn: {
        Layout l = layout_of(b);
        TILEC_ICHECK(l) << "shared buffer " << b->name << " has no layout; run layout_inference first";
        return make_buffer(b->name, {int_imm(layout::physical_size(l))}, b->dtype, b->scope, {}, b->loc);
      }
      default: {
        if (b->shape.size() <= 1) return b;
        Expr n = int_imm(1);
        for (const auto& e : b->shape) {
          const int64_t *cn = as_const_int(n), *ce = as_const_int(e);
          n = is_one(n) ? e : (cn && ce ? int_imm(*cn * *ce, e->dtype) : n * e);  // codegen needs constants
        }
        return make_buffer(b->name, {n}, b->dtype, b->scope, {}, b->loc);
      }
    }
  }

  target::Target target_;
  const PassContext& ctx_;
  int64_t num_threads_ = 1;
  Expr thread_index_;
  Expr block_thread_index_;
  std::unordered_map<const BufferNode*, Layout> layouts_;
  mutable std::unordered_map<const BufferNode*, Buffer> lowered_;
  std::vector<Buffer> scratch_;
  std::vector<const ForNode*> loops_;
  std::vector<std::pair<Var, Expr>> index_ranges_;  // block / thread index -> extent
  std::vector<std::pair<Var, Expr>> lets_;          // enclosing Lets, outermost first
  SourceLoc current_loc_;
  arith::Analyzer analyzer_;

 public:
  FragmentRoles fragment_roles;

 private:
  void check_role_fragments(int64_t first, int64_t count) {
    for (const auto& [b, uses] : fragment_roles.uses) {
      if (uses.size() < 2) continue;
      const FragmentRoles::Use* here = nullptr;
      const FragmentRoles::Use* other = nullptr;
      for (const auto& u : uses) (u.role == FragmentRoles::Range{first, count} ? here : other) = &u;
      if (!here || !other) continue;
      auto it = layouts_.find(b);
      const int64_t spread = it == layouts_.end() || !it->second
                                 ? count + 1
                                 : layout::thread_extent(it->second) / layout::replicate_factor(it->second);
      const bool same_threads = first == 0 && spread <= count && other->role.first < 0;
      TILEC_USER_CHECK(same_threads, here->loc,
                       "give each role fragments of its own, and pass values between roles through shared memory")
          << "fragment '" << b->name << "' is used in the branch run by threads [" << first << ", " << first + count
          << ") and also " << (other->role.first >= 0 ? "in another such branch" : "outside it") << " (line " << other->loc.line
          << "); its elements live in the registers of the threads that ran that code, which this branch's "
          << count << " threads do not all share";
    }
  }
};

}  // namespace

Pass lower_tile_ops_pass() {
  return {"lower_tile_ops", [](const PrimFunc& f, PassContext& ctx) {
            TileOpLowerer lowerer(ctx);
            lowerer.fragment_roles.visit(f->body);
            Stmt body = lowerer.mutate(f->body);
            if (body.same_as(f->body)) return f;
            // Layout arithmetic leaves index expressions that the loop and thread ranges
            // simplify (x % 4 with x < 4, tx // 128 with tx < 128): clean them once here.
            return simplify_pass().run(with_body(f, std::move(body)), ctx);
          }};
}

}  // namespace tilec::passes
