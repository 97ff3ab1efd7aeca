// Pass plan_shared_memory: all shared.dyn buffers -> offsets in one dynamic arena.
//
// Input:  flattened lowered IR: shared.dyn buffers are 1-D with constant shapes, declared by
//         Allocate anywhere inside the kernel. Optional Annotate(kSwizzle128BKey, Buffer)
//         marks buffers holding 128-byte swizzle atoms.
// Output: every shared.dyn Allocate is removed from where it was and re-created at the top
//         of the kernel body, wrapped in Annotate(kSmemOffsetKey, int32 byte offset); codegen
//         declares the buffer as a pointer into
//           extern __shared__ __align__(1024) unsigned char tilec_smem[];
//         PrimFunc attr kDynamicSharedBytesAttr = arena bytes (a multiple of 16).
//         Offsets are 128-byte aligned (1024 for swizzled buffers, so swizzle atoms stay
//         aligned to the pattern's period; the arena then gets 1024 bytes of slack and
//         attr kSmemBaseAlignAttr = 1024, and codegen aligns its base at run time).
//         A shared view (T.view / T.reshape of shared memory: BufferNode::viewed) is not
//         placed by itself: it gets its storage's offset, and its storage lives (and is sized)
//         for both, so insert_syncs sees their accesses alias. The same for a result tile
//         that stage_output_tiles staged over a pipelined buffer (PrimFunc attr
//         kStagedOverStagesAttr "tile: buffer", buffers found by name): it is placed at the
//         buffer's offset.
// Errors: UserError naming every buffer and its size when the arena plus static shared
//         memory exceeds target::Target::max_shared_memory_per_block().
// Runs after: flatten_buffers. Runs before: insert_syncs (which reads the offsets to know
//         which buffers share bytes).
//
// Algorithm. Statements get positions in program order (a pre-order walk). A buffer's live
// range is [first access, last access]; an access inside a loop that does not also enclose
// the buffer's Allocate extends the range over that whole loop (the next iteration may use
// what this one left). The roles of a split the program wrote (an If whose branch is an
// Annotate(kThreadRangeKey) marked kUserRole, lower_warp_roles) run at the same time: a
// buffer touched in any of them lives over the whole split. (warp_specialize's own roles
// hand tiles over through its mbarriers, and the consumers' epilogue may reuse the stages.) Buffers are placed largest first, each at the lowest
// aligned offset that does not overlap a placed buffer whose live range intersects its own.
#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int64_t kDefaultAlign = 128;
constexpr int64_t kSwizzleAlign = 1024;

struct BufferPlan {
  Buffer buffer;
  int64_t bytes = 0;
  int64_t align = kDefaultAlign;
  int64_t first = -1, last = -1;  // live range (positions), -1: never used
  int64_t offset = 0;
  size_t alloc_order = 0;
  bool overlaps_in_time(const BufferPlan& o) const {
    if (first < 0 || o.first < 0) return false;
    return first <= o.last && o.first <= last;
  }
};

int64_t buffer_bytes(const Buffer& b) {
  int64_t numel = 1;
  for (const auto& e : b->shape) {
    auto* c = as_const_int(e);
    TILEC_USER_CHECK(c != nullptr, b->loc, "shared buffers need constant shapes")
        << "shared buffer '" << b->name << "' has a non-constant shape";
    numel *= *c;
  }
  return (numel * b->dtype.bits() * b->dtype.lanes() + 7) / 8;
}

// Positions, loop extents, allocation sites and accesses of shared.dyn buffers.
class LiveRanges : public IRVisitor {
 public:
  struct Loop {
    int64_t start = 0, end = 0;
  };
  std::vector<Loop> loops;
  std::unordered_map<const BufferNode*, size_t> alloc_depth;  // loops enclosing the Allocate
  std::vector<const BufferNode*> alloc_order;
  std::unordered_map<const BufferNode*, const AllocateNode*> allocs;
  std::unordered_set<const BufferNode*> swizzled;
  std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> range;

 protected:
  void enter(const Node* n) { ++pos_; }
  void touch(const BufferNode* b) {
    if (!allocs.count(b)) return;
    for (auto& split : splits_) split.touched.insert(b);
    int64_t lo = pos_, hi = pos_;
    size_t depth = alloc_depth[b];
    if (loop_stack_.size() > depth) {
      const Loop& outer = loops[loop_stack_[depth]];
      lo = outer.start;
      hi = std::max(hi, outer.end);
      pending_.push_back({b, loop_stack_[depth]});  // the loop's end is not known yet
    }
    auto it = range.find(b);
    if (it == range.end()) range[b] = {lo, hi};
    else it->second = {std::min(it->second.first, lo), std::max(it->second.second, hi)};
  }

  void visit_BufferLoad(const BufferLoadNode* op) override {
    touch(op->buffer.get());
    IRVisitor::visit_BufferLoad(op);
  }
  void visit_BufferStore(const BufferStoreNode* op) override {
    enter(op);
    touch(op->buffer.get());
    IRVisitor::visit_BufferStore(op);
  }
  void visit_Evaluate(const EvaluateNode* op) override {
    enter(op);
    IRVisitor::visit_Evaluate(op);
  }
  void visit_Let(const LetNode* op) override {
    enter(op);
    IRVisitor::visit_Let(op);
  }
  void visit_If(const IfNode* op) override {
    enter(op);
    auto* role = op->then_case.as<AnnotateNode>();
    auto* value = role && role->key == kThreadRangeKey ? std::get_if<std::vector<int64_t>>(&role->value) : nullptr;
    if (!value || value->size() < 4 || (*value)[3] != kUserRole) {
      IRVisitor::visit_If(op);
      return;
    }
    splits_.push_back({pos_, {}});
    IRVisitor::visit_If(op);
    RoleSplit split = std::move(splits_.back());
    splits_.pop_back();
    for (const BufferNode* b : split.touched) {
      auto& r = range[b];
      r = {std::min(r.first, split.start), std::max(r.second, pos_)};
    }
  }
  void visit_For(const ForNode* op) override {
    enter(op);
    visit_loop([&] { IRVisitor::visit_For(op); });
  }
  void visit_While(const WhileNode* op) override {
    enter(op);
    visit_loop([&] { IRVisitor::visit_While(op); });
  }
  // A loop's accesses are live over the whole loop (the next iteration comes back to them).
  template <class VisitBody> void visit_loop(VisitBody visit_body) {
    size_t id = loops.size();
    loops.push_back({pos_, pos_});
    loop_stack_.push_back(id);
    visit_body();
    loop_stack_.pop_back();
    loops[id].end = pos_;
    // Accesses that were extended over this loop before its end was known.
    for (auto& [b, loop] : pending_) {
      if (loop != id) continue;
      auto& r = range[b];
      r.second = std::max(r.second, loops[id].end);
    }
  }
  void visit_Allocate(const AllocateNode* op) override {
    if (op->buffer->scope == Scope::kSharedDyn) {
      allocs[op->buffer.get()] = op;
      alloc_depth[op->buffer.get()] = loop_stack_.size();
      alloc_order.push_back(op->buffer.get());
    }
    IRVisitor::visit_Allocate(op);
  }
  void visit_Annotate(const AnnotateNode* op) override {
    if (op->key == kSwizzle128BKey) {
      if (auto* b = std::get_if<Buffer>(&op->value)) swizzled.insert(b->get());
    }
    IRVisitor::visit_Annotate(op);
  }

 private:
  struct RoleSplit {
    int64_t start = 0;
    std::unordered_set<const BufferNode*> touched;
  };
  int64_t pos_ = 0;
  std::vector<size_t> loop_stack_;
  std::vector<std::pair<const BufferNode*, size_t>> pending_;
  std::vector<RoleSplit> splits_;  // enclosing role splits, innermost last
};

class StaticShared : public IRVisitor {
 public:
  int64_t bytes = 0;

 protected:
  void visit_Allocate(const AllocateNode* op) override {
    if (op->buffer->scope == Scope::kShared) bytes += buffer_bytes(op->buffer);
    IRVisitor::visit_Allocate(op);
  }
};

class RemoveDynAllocs : public IRMutator {
 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode* op) override {
    if (op->buffer->scope == Scope::kSharedDyn) return mutate(op->body);
    return IRMutator::mutate_Allocate(s, op);
  }
};

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

void place(std::vector<BufferPlan>& plans) {
  std::vector<size_t> order(plans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (plans[a].bytes != plans[b].bytes) return plans[a].bytes > plans[b].bytes;
    return plans[a].alloc_order < plans[b].alloc_order;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    BufferPlan& p = plans[i];
    // Candidate offsets: 0 and the end of every time-overlapping placed buffer.
    std::vector<int64_t> candidates = {0};
    for (size_t j : placed)
      if (p.overlaps_in_time(plans[j])) candidates.push_back(plans[j].offset + plans[j].bytes);
    std::sort(candidates.begin(), candidates.end());
    for (int64_t c : candidates) {
      int64_t o = align_up(c, p.align);
      bool fits = true;
      for (size_t j : placed) {
        const BufferPlan& q = plans[j];
        bool space = o < q.offset + q.bytes && q.offset < o + p.bytes;
        if (space && p.overlaps_in_time(q)) {
          fits = false;
          break;
        }
      }
      if (fits) {
        p.offset = o;
        break;
      }
    }
    placed.push_back(i);
  }
}

// kStagedOverStagesAttr: (the staged tile's plan index, the pipelined buffer's), each name one
// allocation of the kernel.
std::optional<std::pair<size_t, size_t>> staged_over_plans(const PrimFunc& f, const std::vector<BufferPlan>& plans) {
  auto names = back::staged_over_stages(f);
  if (!names) return std::nullopt;
  auto only = [&](const std::string& name) {
    std::optional<size_t> found;
    for (size_t i = 0; i < plans.size(); ++i)
      if (plans[i].buffer->name == name) {
        TILEC_ICHECK(!found) << "two shared buffers are named '" << name << "' (" << kStagedOverStagesAttr << ")";
        found = i;
      }
    TILEC_ICHECK(found) << "no shared buffer is named '" << name << "' (" << kStagedOverStagesAttr << ")";
    return *found;
  };
  return std::make_pair(only(names->first), only(names->second));
}

PrimFunc plan(const PrimFunc& f, PassContext& ctx) {
  const KernelLaunchNode* kernel = back::find_kernel(f->body);
  if (!kernel || find_attr(f->attrs, kDynamicSharedBytesAttr)) return f;  // nothing to do / planned
  LiveRanges lr;
  lr.visit(kernel->body);
  if (lr.alloc_order.empty()) return f;

  std::vector<BufferPlan> plans;
  for (size_t i = 0; i < lr.alloc_order.size(); ++i) {
    const BufferNode* b = lr.alloc_order[i];
    BufferPlan p;
    p.buffer = lr.allocs[b]->buffer;
    p.bytes = buffer_bytes(p.buffer);
    p.align = lr.swizzled.count(b) ? kSwizzleAlign : kDefaultAlign;
    p.alloc_order = i;
    if (auto it = lr.range.find(b); it != lr.range.end()) std::tie(p.first, p.last) = it->second;
    plans.push_back(std::move(p));
  }
  // Views share their storage's bytes: the storage is placed for both. So does a result tile
  // staged over a pipelined buffer (kStagedOverStagesAttr; warp_specialize ordered the two).
  std::unordered_map<const BufferNode*, size_t> plan_of;
  for (size_t i = 0; i < plans.size(); ++i) plan_of[plans[i].buffer.get()] = i;
  const std::optional<std::pair<size_t, size_t>> over = staged_over_plans(f, plans);
  auto staged_over = [&](size_t i) { return over && over->first == i; };
  auto shares = [&](size_t i) { return plans[i].buffer->viewed || staged_over(i); };
  std::vector<std::pair<size_t, size_t>> view_of_root;  // (view, root)
  std::vector<BufferPlan> roots;
  std::vector<size_t> root_index(plans.size(), 0);
  for (size_t i = 0; i < plans.size(); ++i) {
    if (shares(i)) continue;
    root_index[i] = roots.size();
    roots.push_back(plans[i]);
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!shares(i)) continue;
    auto it = plan_of.find(staged_over(i) ? plans[over->second].buffer.get() : storage_root(plans[i].buffer.get()));
    TILEC_ICHECK(it != plan_of.end() && !shares(it->second))
        << "shared view '" << plans[i].buffer->name << "' without an allocated storage";
    BufferPlan& root = roots[root_index[it->second]];
    const BufferPlan& view = plans[i];
    root.bytes = std::max(root.bytes, view.bytes);
    root.align = std::max(root.align, view.align);
    if (view.first >= 0) {
      root.first = root.first < 0 ? view.first : std::min(root.first, view.first);
      root.last = std::max(root.last, view.last);
    }
    view_of_root.emplace_back(i, it->second);
  }
  place(roots);
  for (size_t i = 0; i < plans.size(); ++i)
    if (!shares(i)) plans[i] = roots[root_index[i]];
  for (const auto& [view, root] : view_of_root) plans[view].offset = plans[root].offset;
  int64_t total = 0;
  for (const auto& p : plans) total = std::max(total, p.offset + p.bytes);
  total = align_up(total, 16);
  // The arena's base is aligned by the kernel itself when a buffer needs 1024 bytes
  // (static shared memory placed before it may leave it at any 16-byte boundary):
  // codegen rounds the pointer up, which takes up to 1024 - 16 more bytes.
  bool align_base = false;
  for (const auto& p : plans) align_base |= p.align == kSwizzleAlign;
  if (align_base) total += kSwizzleAlign;

  StaticShared st;
  st.visit(kernel->body);
  int64_t limit = ctx.target().max_shared_memory_per_block();
  if (total + st.bytes > limit) {
    // Point at the allocations, largest first (each with its line), not at the kernel.
    std::vector<const BufferPlan*> by_size;
    for (const auto& p : plans) by_size.push_back(&p);
    std::stable_sort(by_size.begin(), by_size.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
    std::ostringstream os;
    os << "kernel '" << f->name << "' needs " << total + st.bytes << " bytes of shared memory, more than the "
       << limit << " bytes a block can have on " << ctx.target().str() << ": ";
    for (size_t i = 0; i < by_size.size(); ++i) {
      const Buffer& b = by_size[i]->buffer;
      os << (i ? ", " : "") << b->name << " " << by_size[i]->bytes << " bytes";
      if (b->loc.known()) os << " (line " << b->loc.line << ")";
    }
    if (st.bytes) os << ", static shared " << st.bytes << " bytes";
    os << " (buffers whose lifetimes do not overlap already share memory; pipelined buffers hold one copy per "
          "stage)";
    SourceLoc at = !by_size.empty() && by_size[0]->buffer->loc.known() ? by_size[0]->buffer->loc : f->loc;
    throw_user_error(os.str(), at, "use smaller tiles, fewer pipeline stages (num_stages) or narrower types");
  }

  Stmt body = RemoveDynAllocs().mutate(kernel->body);
  for (size_t i = plans.size(); i-- > 0;) {
    const BufferPlan& p = plans[i];
    body = annotate(kSmemOffsetKey, int_imm(p.offset, Int32()), allocate(p.buffer, body, p.buffer->loc), p.buffer->loc);
  }
  auto k = std::make_shared<KernelLaunchNode>(*kernel);
  k->body = body;
  Stmt new_kernel(std::shared_ptr<const KernelLaunchNode>(std::move(k)));
  PrimFunc out = with_body(f, back::replace_kernel(f->body, new_kernel));
  AttrMap attrs = out->attrs;
  attrs.emplace_back(kDynamicSharedBytesAttr, total);
  if (align_base) attrs.emplace_back(kSmemBaseAlignAttr, kSwizzleAlign);
  return make_prim_func(out->name, out->params, out->body, std::move(attrs), out->loc);
}

}  // namespace

Pass plan_shared_memory_pass() { return {"plan_shared_memory", plan}; }

}  // namespace tilec::passes
