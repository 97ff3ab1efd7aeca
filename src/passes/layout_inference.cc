// Pass "layout_inference": decides the layout of every fragment and shared buffer and
// the loop layout of every T.Parallel nest (MODEL.md "Layout inference").
//
// Input:  a verified kernel with tile ops and T.Parallel nests (tile-level IR), possibly
//         with user layouts (Annotate "layout_map", from T.annotate_layout).
// Output: the same statements, with
//         * the kernel body wrapped in Annotate{"layout_map", LayoutMap} holding a layout
//           for every fragment (a Fragment over its shape) and every shared buffer (a
//           plain layout), in allocation order; user "layout_map" annotations are folded
//           into it and removed;
//         * the outermost For of every T.Parallel nest annotated with "loop_layout" (a
//           Fragment over the nest's extents).
// Before: verify, simplify, pipeline planning.  After: lower_tile_ops.
// Algorithm: the program is a list of units (tile ops and parallel nests), each able to
//   propose layouts at three strengths. User annotations and strict proposals first;
//   then to a fixed point: common proposals (layouts that follow from known ones); when
//   nothing follows, one free proposal (a default) — for the largest fragment still
//   unknown, so that small derived fragments (row statistics) follow from big ones — and
//   back to common; then coalesced layouts for nests that still have none. A fragment
//   that some nest reads with an index the nest holds fixed (an enclosing serial loop's
//   `frag[k, j]`, or a block `frag[i, jj * E + j]`) has thread caps (ops::thread_caps):
//   a free default that crosses them is replaced by the default within them, and such a
//   fragment gets its default before the others. A proposal
//   for a buffer that already has a different layout is a UserError naming both ops and
//   the buffer. Finally every parallel nest is checked: each thread that runs an
//   iteration must hold the fragment elements it touches (replicated where many read).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "layout/digit_form.h"
#include "ops/parallel_loop.h"
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/layout/bank_layout.h"
#include "tilec/layout/layout.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;
using ops::InferLevel;
using ops::NestAccess;
using ops::ParallelNest;

struct Origin {
  std::string what;  // "T.gemm at k.py:12:5", "T.annotate_layout at ...", ...
};

struct Unit {
  const TileOpNode* op = nullptr;  // a tile op, or
  ParallelNest nest;               // a parallel nest (nest.outer != null)
  std::vector<NestAccess> accesses;
  std::vector<const ForNode*> loops;  // enclosing loops, outermost first
  int64_t threads = 0;  // threads that run it: the enclosing thread range's, else the block's
  Layout loop_layout;
  std::string loop_origin;
  bool is_nest() const { return nest.outer != nullptr; }
  std::string name() const {
    if (op) return ops::describe_op(*op);
    std::string s = "the T.Parallel loop";
    if (nest.loc.known()) s += " at " + nest.loc.str();
    return s;
  }
};

std::string scope_word(const Buffer& b) { return b->scope == Scope::kFragment ? "fragment" : "shared buffer"; }

std::vector<int64_t> const_buffer_shape(const Buffer& b) {
  std::vector<int64_t> s;
  for (const auto& e : b->shape) {
    auto* c = as_const_int(e);
    TILEC_USER_CHECK(c, b->loc, "on-chip buffers need constant extents")
        << scope_word(b) << " '" << b->name << "' has a symbolic shape";
    s.push_back(*c);
  }
  return s;
}

// Collects units, on-chip buffers and user layouts of one kernel body.
class UnitCollector : public IRVisitor {
 public:
  std::vector<Unit> units;
  std::vector<Buffer> buffers;  // fragments and shared buffers, allocation order
  std::vector<std::pair<std::pair<Buffer, Layout>, SourceLoc>> user_layouts;
  // Buffers some tile op or some access outside the T.Parallel nests touches.
  std::unordered_set<const BufferNode*> touched_outside_nests;

 protected:
  void visit_BufferLoad(const BufferLoadNode* op) override {
    touched_outside_nests.insert(op->buffer.get());
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    touched_outside_nests.insert(op->buffer.get());
    IRVisitor::visit_BufferStore(op);
  }
  void visit_Allocate(const AllocateNode* op) override {
    if (op->buffer->scope == Scope::kFragment || is_shared(op->buffer->scope)) buffers.push_back(op->buffer);
    IRVisitor::visit_Allocate(op);
  }
  void visit_Annotate(const AnnotateNode* op) override {
    if (op->key == "layout_map")
      if (auto* m = std::get_if<LayoutMap>(&op->value))
        for (const auto& kv : *m) user_layouts.push_back({kv, op->loc});
    if (op->key == kThreadRangeKey) {
      auto* r = std::get_if<std::vector<int64_t>>(&op->value);
      TILEC_ICHECK(r && r->size() >= 2) << kThreadRangeKey << " needs {first thread, count}";
      const int64_t saved = threads_;
      threads_ = (*r)[1];
      IRVisitor::visit_Annotate(op);
      threads_ = saved;
      return;
    }
    IRVisitor::visit_Annotate(op);
  }
  void visit_TileOp(const TileOpNode* op) override {
    for (const auto& arg : op->args)
      if (auto* r = std::get_if<BufferRegion>(&arg)) touched_outside_nests.insert(r->buffer.get());
    Unit u;
    u.op = op;
    u.loops = loops_;
    u.threads = threads_;
    units.push_back(std::move(u));
  }
  void visit_For(const ForNode* op) override {
    if (op->for_kind == ForKind::kParallel) {
      Unit u;
      u.nest = ops::collect_nest(op);
      u.accesses = ops::collect_accesses(u.nest);
      u.loops = loops_;
      u.threads = threads_;
      units.push_back(std::move(u));
      return;
    }
    loops_.push_back(op);
    IRVisitor::visit_For(op);
    loops_.pop_back();
  }

 private:
  std::vector<const ForNode*> loops_;
  int64_t threads_ = 0;
};

class Inference : public ops::LayoutInferenceState {
 public:
  Inference(const target::Target& t, int64_t threads, UnitCollector& c, const PassContext& ctx)
      : target_(t), num_threads_(threads), current_threads_(threads), units_(c.units), buffers_(c.buffers), ctx_(ctx),
        touched_outside_nests_(c.touched_outside_nests) {
    for (auto& u : units_)
      if (u.threads == 0) u.threads = threads;
    // A fragment takes the thread count of the (first) unit that uses it, for defaults.
    for (const auto& u : units_) {
      auto note = [&](const Buffer& b) { buffer_threads_.emplace(b.get(), u.threads); };
      if (u.is_nest()) {
        for (const auto& a : u.accesses) note(a.buffer);
      } else {
        for (const auto& arg : u.op->args)
          if (auto* r = std::get_if<BufferRegion>(&arg)) note(r->buffer);
      }
    }
    // How far each fragment's thread digits may reach, from every nest access of it.
    for (const auto& u : units_) {
      if (!u.is_nest()) continue;
      for (const auto& a : u.accesses) {
        if (a.buffer->scope != Scope::kFragment) continue;
        std::vector<int64_t> caps = ops::thread_caps(u.nest, a);
        auto [it, fresh] = thread_caps_.emplace(a.buffer.get(), caps);
        if (!fresh)
          for (size_t d = 0; d < caps.size(); ++d) it->second[d] = std::min(it->second[d], caps[d]);
      }
    }
    for (auto it = thread_caps_.begin(); it != thread_caps_.end();) {
      bool unconstrained = true;
      for (size_t d = 0; d < it->second.size(); ++d) {
        auto* e = as_const_int(it->first->shape[d]);
        unconstrained &= e && it->second[d] >= *e;
      }
      it = unconstrained ? thread_caps_.erase(it) : std::next(it);
    }
    for (const auto& [kv, loc] : c.user_layouts) {
      std::string origin = "T.annotate_layout";
      if (loc.known()) origin += " at " + loc.str();
      propose(kv.first, kv.second, origin);
    }
  }

  // ---- LayoutInferenceState ----
  const target::Target& target() const override { return target_; }
  int64_t num_threads() const override { return current_threads_; }
  bool config_flag(const std::string& key) const override { return back::config_flag(ctx_, key); }
  std::string config_string(const std::string& key) const override { return back::config_string(ctx_, key); }
  Layout layout_of(const Buffer& b) const override {
    auto it = layouts_.find(b.get());
    return it == layouts_.end() ? nullptr : it->second.first;
  }
  const std::vector<const ForNode*>& enclosing_loops() const override { return *current_loops_; }

  void run() {
    for (auto& u : units_)
      if (!u.is_nest()) apply_op(u, InferLevel::kStrict);
    while (true) {
      common_fixpoint();
      if (free_step()) continue;
      if (default_loop_step()) continue;
      break;
    }
    // Buffers no unit constrains: defaults.
    for (const auto& b : buffers_) {
      if (layout_of(b)) continue;
      auto shape = const_buffer_shape(b);
      auto caps = thread_caps_.find(b.get());
      if (b->scope == Scope::kFragment && caps != thread_caps_.end())
        propose(b, layout::default_fragment_within(shape, threads_of(b), b->dtype, caps->second), "default");
      else if (b->scope == Scope::kFragment)
        propose(b, layout::default_fragment(shape, threads_of(b), b->dtype), "default");
      else shared_default(b, shape);
    }
    // Every demand once more, now that everything is known: conflicts surface here.
    for (auto& u : units_) {
      if (u.is_nest()) continue;
      for (auto level : {InferLevel::kStrict, InferLevel::kCommon}) apply_op(u, level);
    }
    for (auto& u : units_)
      if (u.is_nest()) check_nest(u);
  }

  LayoutMap layout_map() const {
    LayoutMap m;
    for (const auto& b : buffers_)
      if (auto l = layout_of(b)) m.emplace_back(b, l);
    return m;
  }
  std::unordered_map<const ForNode*, Layout> loop_layouts() const {
    std::unordered_map<const ForNode*, Layout> m;
    for (const auto& u : units_)
      if (u.is_nest()) m[u.nest.outer] = u.loop_layout;
    return m;
  }

 private:
  // Records `l` for `b`; returns true when it is new. A different existing layout is a
  // conflict.
  bool propose(const Buffer& b, const Layout& l, const std::string& origin) {
    if (!l) return false;
    auto it = layouts_.find(b.get());
    if (it != layouts_.end()) {
      if (it->second.first.same_as(l) || layout::layout_equal(it->second.first, l)) return false;
      throw_user_error("layout conflict on " + scope_word(b) + " '" + b->name + "': " + it->second.second +
                           " requires " + layout::describe(it->second.first) + ", but " + origin + " requires " +
                           layout::describe(l),
                       b->loc,
                       "the two operations need different layouts for the same buffer; give each its own buffer "
                       "(copy between them), or fix the layout with T.annotate_layout");
    }
    validate(b, l, origin);
    layouts_.emplace(b.get(), std::make_pair(l, origin));
    // A register view (T.reshape) and the buffer it views hold the same registers: each
    // one's layout is the other's, reshaped. A shared view has a layout of its own.
    for (const auto& other : buffers_) {
      if (is_shared(other->scope)) continue;
      const bool linked = (other->viewed && other->viewed.get() == b.get()) || (b->viewed && b->viewed.get() == other.get());
      if (linked)
        propose(other, layout::reshape(l, const_buffer_shape(other)), "T.reshape of '" + b->name + "' (" + origin + ")");
    }
    return true;
  }

  void validate(const Buffer& b, const Layout& l, const std::string& origin) {
    auto shape = const_buffer_shape(b);
    TILEC_USER_CHECK(layout::has_const_shape(l) && layout::const_shape(l) == shape, b->loc, "")
        << origin << " gives " << scope_word(b) << " '" << b->name << "' a layout of a different shape";
    TILEC_USER_CHECK(l->forward_index.size() == 1, b->loc, "return one index from the layout function")
        << origin << " gives '" << b->name << "' a layout with " << l->forward_index.size() << " outputs";
    if (b->scope == Scope::kFragment) {
      TILEC_USER_CHECK(l->is_fragment(), b->loc, "use T.Fragment(...) for fragments")
          << origin << " gives fragment '" << b->name << "' a plain layout";
      int64_t te = layout::thread_extent(l);
      TILEC_USER_CHECK(te <= num_threads_, b->loc, "launch more threads or use a smaller tile")
          << "the layout of fragment '" << b->name << "' from " << origin << " uses " << te
          << " threads, but the kernel has " << num_threads_;
    } else {
      TILEC_USER_CHECK(!l->is_fragment(), b->loc, "use T.Layout(...) for shared buffers")
          << origin << " gives shared buffer '" << b->name << "' a fragment layout";
    }
    TILEC_USER_CHECK(layout::is_injective(l), b->loc, "each element needs its own slot")
        << "the layout of " << scope_word(b) << " '" << b->name << "' from " << origin
        << " maps two elements to the same place";
  }

  int64_t threads_of(const Buffer& b) const {
    auto it = buffer_threads_.find(b.get());
    return it == buffer_threads_.end() ? num_threads_ : it->second;
  }

  bool apply_op(Unit& u, InferLevel level) {
    current_loops_ = &u.loops;
    current_threads_ = u.threads;
    bool changed = false;
    for (const auto& p : ops::infer_layout(*u.op, *this, level)) changed |= propose(p.buffer, p.layout, u.name());
    return changed;
  }

  std::string origin_of(const Buffer& b) const {
    auto it = layouts_.find(b.get());
    return it == layouts_.end() ? "?" : it->second.second;
  }

  void set_loop_layout(Unit& u, const Layout& l, const std::string& origin) {
    int64_t te = layout::thread_extent(l);
    TILEC_USER_CHECK(te <= num_threads_, u.nest.loc, "")
        << "the loop layout of " << u.name() << " (" << origin << ") uses " << te << " threads, but the kernel has "
        << num_threads_;
    u.loop_layout = l;
    u.loop_origin = origin;
  }

  bool nest_common(Unit& u) {
    bool changed = false;
    const int n = u.nest.ndim();
    if (!u.loop_layout) {
      for (const auto& a : u.accesses) {
        if (a.buffer->scope != Scope::kFragment || !a.full_rank(n)) continue;
        Layout f = layout_of(a.buffer);
        if (!f) continue;
        TILEC_USER_CHECK(layout::fit_digit_form(f).has_value(), a.loc.known() ? a.loc : u.nest.loc,
                         "write the fragment's thread and register maps with // and % of the indices")
            << "the layout of fragment '" << a.buffer->name << "' (from " << origin_of(a.buffer)
            << ") cannot drive " << u.name() << ": tilec inverts only layouts built from mixed-radix digits";
        if (Layout l = ops::loop_layout_from_fragment(u.nest, a, f)) {
          set_loop_layout(u, l, "its thread mapping follows fragment '" + a.buffer->name + "' (layout from " +
                                    origin_of(a.buffer) + ")");
          changed = true;
          break;
        }
      }
    }
    if (!u.loop_layout) {
      // Accesses through `v + off` (an enclosing loop's block of the fragment): the loop
      // follows the fragment's first block.
      for (const auto& a : u.accesses) {
        if (a.buffer->scope != Scope::kFragment || !a.has_complex()) continue;
        Layout f = layout_of(a.buffer);
        if (!f) continue;
        if (Layout l = ops::loop_layout_from_fragment(u.nest, a, f)) {
          set_loop_layout(u, l, "its thread mapping follows a block of fragment '" + a.buffer->name +
                                    "' (layout from " + origin_of(a.buffer) + ")");
          changed = true;
          break;
        }
      }
    }
    if (!u.loop_layout) {
      int64_t vec = ops::nest_vector_elems(u.nest, u.accesses);
      for (const auto& a : u.accesses) {
        if (a.buffer->scope != Scope::kFragment || !a.partial_rank(n)) continue;
        Layout f = layout_of(a.buffer);
        if (!f) continue;
        if (Layout l = ops::extend_to_loop(u.nest, a, f, vec)) {
          set_loop_layout(u, l, "its thread mapping follows the replicas of fragment '" + a.buffer->name +
                                    "' (layout from " + origin_of(a.buffer) + ")");
          changed = true;
          break;
        }
      }
    }
    if (u.loop_layout) {
      for (const auto& a : u.accesses) {
        if (a.buffer->scope != Scope::kFragment || layout_of(a.buffer)) continue;
        if (Layout f = ops::fragment_from_loop_layout(u.nest, a, u.loop_layout)) changed |= propose(a.buffer, f, u.name());
      }
    }
    return changed;
  }

  void common_fixpoint() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto& u : units_) changed |= u.is_nest() ? nest_common(u) : apply_op(u, InferLevel::kCommon);
    }
  }

  // One default, for the largest fragment any unit wants one for.
  bool free_step() {
    struct Candidate {
      Unit* unit;
      ops::LayoutProposal p;
      int64_t size;
    };
    std::optional<Candidate> best;
    bool best_capped = false;
    auto consider = [&](Unit& u, ops::LayoutProposal p) {
      if (!p.layout || layout_of(p.buffer)) return;
      int64_t size = 1;
      for (auto e : const_buffer_shape(p.buffer)) size *= e;
      if (p.buffer->scope != Scope::kFragment) size = -1;  // shared defaults last
      // A default some nest could not run under (its thread digits reach across an index
      // the nest holds fixed): the default within the caps instead, chosen first, so that
      // copies of the fragment follow it rather than the other way round.
      bool capped = false;
      auto caps = thread_caps_.find(p.buffer.get());
      if (p.buffer->scope == Scope::kFragment && caps != thread_caps_.end() &&
          !layout::threads_within(p.layout, caps->second)) {
        p.layout = layout::default_fragment_within(const_buffer_shape(p.buffer), u.threads, p.buffer->dtype,
                                                   caps->second);
        capped = true;
      }
      if (!best || (capped && !best_capped) || (capped == best_capped && size > best->size)) {
        best = Candidate{&u, p, size};
        best_capped = capped;
      }
    };
    for (auto& u : units_) {
      if (u.is_nest()) {
        if (u.loop_layout) continue;
        for (const auto& a : u.accesses)
          if (a.buffer->scope == Scope::kFragment && a.full_rank(u.nest.ndim()) && !layout_of(a.buffer))
            consider(u, {a.buffer, layout::default_fragment(const_buffer_shape(a.buffer), u.threads, a.buffer->dtype)});
      } else {
        current_loops_ = &u.loops;
        current_threads_ = u.threads;
        for (const auto& p : ops::infer_layout(*u.op, *this, InferLevel::kFree)) consider(u, p);
      }
    }
    if (!best) return false;
    return propose(best->p.buffer, best->p.layout, best->unit->name());
  }

  // A nest whose layout nothing determines gets a coalesced one.
  bool default_loop_step() {
    for (auto& u : units_) {
      if (!u.is_nest() || u.loop_layout) continue;
      set_loop_layout(u, ops::coalesced_nest_layout(u.nest, u.accesses, u.threads), "a coalesced default");
      return true;
    }
    return false;
  }

  // A shared buffer nothing constrains: row-major, or the layout with the fewest bank
  // conflicts for the T.Parallel nests that alone touch it (tilec.bank_aware_layouts).
  void shared_default(const Buffer& b, const std::vector<int64_t>& shape) {
    std::vector<layout::SharedAccess> accesses;
    if (ctx_.get_bool("tilec.bank_aware_layouts") && !touched_outside_nests_.count(b.get())) {
      for (const auto& u : units_) {
        if (!u.is_nest()) continue;
        for (const auto& a : u.accesses)
          if (a.buffer.get() == b.get() && u.loop_layout)
            accesses.push_back({u.nest.vars, u.nest.extents, u.loop_layout, a.indices});
      }
    }
    layout::SharedLayoutChoice c = layout::choose_shared_layout(shape, b->dtype, accesses);
    std::string origin = "default";
    if (c.name != "row-major")
      origin = "the default for its T.Parallel accesses: " + c.name + " (" + std::to_string(c.wavefronts) +
               " shared-memory wavefronts per warp, " + std::to_string(c.row_major_wavefronts) + " row-major)";
    propose(b, c.layout, origin);
    if (c.name != "row-major")
      chosen_shared_ += (chosen_shared_.empty() ? "" : "; ") + b->name + ": " + c.name + ", " +
                        std::to_string(c.wavefronts) + " shared-memory wavefronts per warp for its T.Parallel " +
                        "accesses (" + std::to_string(c.row_major_wavefronts) + " row-major)";
  }

 public:
  // The bank-aware choices made (kSharedLayoutChoicesAttr), "" when none.
  std::string chosen_shared_;

 private:

  void check_nest(const Unit& u) {
    for (const auto& a : u.accesses) {
      if (a.buffer->scope != Scope::kFragment) continue;
      Layout f = layout_of(a.buffer);
      TILEC_ICHECK(f) << "fragment without a layout after inference";
      std::string why = ops::check_ownership(u.nest, a, u.loop_layout, f, u.loops);
      if (why.empty()) continue;
      throw_user_error(
          "layout conflict on fragment '" + a.buffer->name + "' in " + u.name() + ": its layout (from " +
              origin_of(a.buffer) + ") does not match the loop's thread mapping (" + u.loop_origin + "): " + why,
          a.loc.known() ? a.loc : u.nest.loc,
          "index fragments with the loop variables directly, use one thread mapping per loop (split the loop), or "
          "copy the fragment through shared memory");
    }
  }

  target::Target target_;
  int64_t num_threads_;      // the block's
  int64_t current_threads_;  // the unit's being inferred
  std::vector<Unit>& units_;
  std::vector<Buffer>& buffers_;
  const PassContext& ctx_;
  std::unordered_map<const BufferNode*, int64_t> buffer_threads_;
  std::unordered_map<const BufferNode*, std::vector<int64_t>> thread_caps_;  // see ops::thread_caps
  std::unordered_map<const BufferNode*, std::pair<Layout, std::string>> layouts_;
  const std::vector<const ForNode*>* current_loops_ = nullptr;
  std::vector<const ForNode*> no_loops_;
  const std::unordered_set<const BufferNode*>& touched_outside_nests_;
};

// Writes the results into the kernel: loop layouts on nests, the layout map on the body.
class Annotator : public IRMutator {
 public:
  explicit Annotator(std::unordered_map<const ForNode*, Layout> loops) : loops_(std::move(loops)) {}

 protected:
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    auto it = loops_.find(op);
    if (it == loops_.end()) return IRMutator::mutate_For(s, op);
    auto n = std::make_shared<ForNode>(*op);
    n->annotations.erase(std::remove_if(n->annotations.begin(), n->annotations.end(),
                                        [](const auto& kv) { return kv.first == "loop_layout"; }),
                         n->annotations.end());
    n->annotations.emplace_back("loop_layout", it->second);
    return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
  }
  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key == "layout_map") return mutate(op->body);
    return IRMutator::mutate_Annotate(s, op);
  }

 private:
  std::unordered_map<const ForNode*, Layout> loops_;
};

class KernelRewriter : public IRMutator {
 public:
  explicit KernelRewriter(const PassContext& ctx) : target_(ctx.target()), ctx_(ctx) {}

 protected:
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    const int64_t threads = op->block_threads();
    UnitCollector c;
    c.visit(op->body);
    Inference inf(target_, threads, c, ctx_);
    inf.run();
    Stmt body = Annotator(inf.loop_layouts()).mutate(op->body);
    if (!inf.chosen_shared_.empty()) chosen_shared_ += (chosen_shared_.empty() ? "" : "; ") + inf.chosen_shared_;
    auto n = std::make_shared<KernelLaunchNode>(*op);
    n->body = annotate("layout_map", inf.layout_map(), body, op->loc);
    return Stmt(std::shared_ptr<const KernelLaunchNode>(std::move(n)));
  }

 public:
  std::string chosen_shared_;

 private:
  target::Target target_;
  const PassContext& ctx_;
};

}  // namespace

Pass layout_inference_pass() {
  return {"layout_inference", [](const PrimFunc& f, PassContext& ctx) {
            KernelRewriter rw(ctx);
            Stmt body = rw.mutate(f->body);
            if (body.same_as(f->body)) return f;
            if (rw.chosen_shared_.empty()) return with_body(f, std::move(body));
            AttrMap attrs = f->attrs;
            attrs.emplace_back(kSharedLayoutChoicesAttr, rw.chosen_shared_);
            return make_prim_func(f->name, f->params, std::move(body), std::move(attrs), f->loc);
          }};
}

}  // namespace tilec::passes
