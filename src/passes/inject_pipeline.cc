// inject_pipeline: turns each planned T.Pipelined loop into a software pipeline.
//
// Input:  tile IR after pipeline_planning: every For of kind Pipelined has a canonical
//         body (pipeline_body.h) and `stage` / `order` lists; S = num_stages - 1 >= 1, or
//         num_stages = 1 (one buffer, left by warp_specialize): that loop becomes a serial
//         loop with its statements in issue order.
// Output: no For of kind Pipelined. For a loop `for v in [m, m + n)` with statements
//         st_j at stages s_j (issue positions order[j]):
//           prologue: steps p = 0 .. S-1, each running every st_j with s_j <= p for
//                     iteration p - s_j (guarded by p - s_j < n unless provable);
//           loop:     for i in [0, n): st_j runs iteration i + S - s_j, guarded by
//                     i + S - s_j < n when s_j < S (an If; for async copies their
//                     `guard`: out of range they fill a version nobody reads with zeros);
//         so statement j runs each iteration exactly once, S - s_j steps ahead of the
//         last stage. A buffer written at one stage and read at a later one becomes a
//         buffer with a leading dimension of num_stages versions; an access for
//         iteration `it` uses version it % num_stages (its Allocate and layout_map
//         annotations follow: version v of the layout sits at v * physical size).
//         Copies global -> shared whose readers are all at later stages become
//         T.async_copy(no_implicit_commit_wait=True) on targets with cp.async; then every
//         step commits one group (tl.cp_async_commit after the last such copy in issue
//         order) and starts with tl.cp_async_wait(w), w = min over (reader j, async
//         producer q) of s_j - s_q - 1: the groups of the iterations this step's readers
//         need have landed. tl.cp_async_wait(0) follows the loop.
//         The steady loop carries the annotation tilec.unroll = num_stages (when <= 4 and
//         one step copies at most 192 bytes per thread).
//         Each of those waits is followed by one tl.syncthreads: it publishes the data
//         that just landed to every thread and orders the previous step's reads before
//         this step's copies overwrite their version. This pass places it because only
//         it knows that a step's copies and reads use different versions; insert_syncs
//         (buffer granular) keeps it and then needs no other barrier in the loop, whereas
//         on its own it would also put one inside the guard of the copies.
// Before: pipeline_planning; layout inference and tile-op lowering come after (the
//         copies are still tile ops).
// Errors: a versioned buffer used outside its loop, a non-shared buffer crossing stages.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "passes/cuda_back_util.h"
#include "passes/pipeline_body.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;
namespace pl = pipeline;

constexpr const char* kUnrollAnnotation = "tilec.unroll";
constexpr int64_t kMaxUnrollStages = 4;  // beyond that the code growth outweighs the gain
constexpr int64_t kMaxUnrollBytesPerThread = 192;  // shared bytes one step copies, per thread

// ---- integer evaluation of layout expressions (physical size of a layout) ----

std::optional<int64_t> eval(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& env) {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* v = e.as<VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  if (auto* c = e.as<CastNode>()) return eval(c->value, env);
  if (auto* b = e.as<BinaryNode>()) {
    auto x = eval(b->a, env), y = eval(b->b, env);
    if (!x || !y) return std::nullopt;
    switch (e->kind) {
      case NodeKind::kAdd: return *x + *y;
      case NodeKind::kSub: return *x - *y;
      case NodeKind::kMul: return *x * *y;
      case NodeKind::kDiv: return *y ? std::optional<int64_t>(*x / *y) : std::nullopt;
      case NodeKind::kMod: return *y ? std::optional<int64_t>(*x % *y) : std::nullopt;
      case NodeKind::kFloorDiv:
        if (!*y) return std::nullopt;
        return (*x / *y) - ((*x % *y != 0) && ((*x < 0) != (*y < 0)) ? 1 : 0);
      case NodeKind::kFloorMod: {
        if (!*y) return std::nullopt;
        int64_t r = *x % *y;
        return (r != 0 && ((r < 0) != (*y < 0))) ? r + *y : r;
      }
      case NodeKind::kMin: return std::min(*x, *y);
      case NodeKind::kMax: return std::max(*x, *y);
      default: return std::nullopt;
    }
  }
  if (auto* c = e.as<CallNode>()) {
    std::string op = c->op.rfind("tl.", 0) == 0 ? c->op.substr(3) : c->op;
    if (c->args.size() == 2) {
      auto x = eval(c->args[0], env), y = eval(c->args[1], env);
      if (!x || !y) return std::nullopt;
      if (op == "bitwise_xor") return *x ^ *y;
      if (op == "bitwise_and") return *x & *y;
      if (op == "bitwise_or") return *x | *y;
      if (op == "shift_left") return *x << *y;
      if (op == "shift_right") return *x >> *y;
    }
  }
  return std::nullopt;
}

// Max offset + 1 of a plain one-output layout with a constant shape; the element count
// when it cannot be evaluated.
int64_t physical_size(const Layout& l) {
  int64_t count = 1;
  std::vector<int64_t> shape;
  for (const auto& e : l->input_shape) {
    const int64_t* c = as_const_int(e);
    TILEC_ICHECK(c) << "versioned buffer with a symbolic layout shape";
    shape.push_back(*c);
    count *= *c;
  }
  if (l->forward_index.size() != 1 || count > (int64_t{1} << 22)) return count;
  int64_t max_off = -1;
  std::vector<int64_t> idx(shape.size(), 0);
  std::unordered_map<const VarNode*, int64_t> env;
  for (int64_t k = 0; k < count; ++k) {
    int64_t rem = k;
    for (int d = int(shape.size()) - 1; d >= 0; --d) env[l->vars[d].get()] = rem % shape[d], rem /= shape[d];
    auto off = eval(l->forward_index[0], env);
    if (!off) return count;
    max_off = std::max(max_off, *off);
  }
  return std::max(max_off + 1, count);
}

// Folds operations on integer constants (what substituting an iteration number leaves,
// e.g. 0 * 32), so the prologue reads like the loop it came from.
class ConstFolder : public IRMutator {
 protected:
  Expr mutate_binary(const Expr& e, const BinaryNode* op) override {
    Expr n = IRMutator::mutate_binary(e, op);
    auto* b = n.as<BinaryNode>();
    if (!b || !n->dtype.is_integer() || !b->a.as<IntImmNode>() || !b->b.as<IntImmNode>()) return n;
    if (auto v = eval(n, {})) return int_imm(*v, n->dtype, n->loc);
    return n;
  }
};

// Layout of the versioned buffer: version v of `l` at v * (physical_size(l) rounded up to
// 128 bytes, so every version starts as aligned as the first).
Layout versioned_layout(const Layout& l, int versions, DataType dtype) {
  std::vector<Expr> shape = {int_imm(versions)};
  shape.insert(shape.end(), l->input_shape.begin(), l->input_shape.end());
  Var v = make_var("v");
  std::vector<Var> vars = {v};
  vars.insert(vars.end(), l->vars.begin(), l->vars.end());
  std::vector<Expr> index;
  if (l->forward_index.size() == 1) {
    const int64_t align = std::max<int64_t>(1, 128 / std::max(1, dtype.bytes()));
    const int64_t stride = (physical_size(l) + align - 1) / align * align;
    index.push_back(v * stride + l->forward_index[0]);
  } else {
    index.push_back(v);
    index.insert(index.end(), l->forward_index.begin(), l->forward_index.end());
  }
  if (l->is_fragment()) return make_fragment(shape, vars, index, l->forward_thread, l->replicate, l->rep_var);
  return make_layout(shape, vars, index);
}

// ---- the loops and their versioned buffers ----

struct LoopPlan {
  pl::Body body;
  std::vector<pl::Access> acc;
  std::vector<bool> async;                      // statement becomes T.async_copy
  std::vector<const BufferNode*> versioned;     // buffers crossing stages
  int wait_main = -1;                           // wait count of a loop step (-1: no async)
};

using back::call_stmt;

class Injector : public IRMutator {
 public:
  Injector(const target::Target& t) : target_(t) {}

  // First walk: plan every pipelined loop (versioned buffers, async copies, waits).
  void plan(const Stmt& s) {
    for_each_node(s, [&](const Node* n) {
      auto* f = dynamic_cast<const ForNode*>(n);
      if (f && f->for_kind == ForKind::kPipelined && f->pipeline.num_stages >= 2) plan_loop(f);
    });
  }

  Stmt run(const Stmt& body) {
    make_buffers();
    Stmt out = mutate(body);
    check_no_stray_uses(out);
    return out;
  }

 protected:
  Stmt mutate_Allocate(const Stmt& s, const AllocateNode* op) override {
    TILEC_USER_CHECK(!op->buffer->viewed || !new_buffer_.count(storage_root(op->buffer.get())), op->loc,
                     "view a buffer that is not carried from one stage to the next, or use num_stages=0/1")
        << "'" << op->buffer->name << "' views shared buffer '" << storage_root(op->buffer.get())->name
        << "', which T.Pipelined keeps one copy of per stage; views of such buffers are not supported";
    Stmt body = mutate(op->body);
    auto it = new_buffer_.find(op->buffer.get());
    if (it == new_buffer_.end()) return body.same_as(op->body) ? s : allocate(op->buffer, body, op->loc);
    return allocate(it->second, body, op->loc);
  }

  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    Stmt n = IRMutator::mutate_Annotate(s, op);
    auto* lm = std::get_if<LayoutMap>(&op->value);
    if (!lm) return n;
    bool touched = false;
    LayoutMap out;
    for (const auto& [b, l] : *lm) {
      auto it = new_buffer_.find(b.get());
      if (it == new_buffer_.end()) {
        out.emplace_back(b, l);
      } else {
        touched = true;
        out.emplace_back(it->second, versioned_layout(l, int(*as_const_int(it->second->shape[0])), b->dtype));
      }
    }
    if (!touched) return n;
    return annotate(op->key, out, n.as<AnnotateNode>()->body, op->loc);
  }

  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    const int64_t saved = threads_;
    threads_ = op->block_threads();
    Stmt r = IRMutator::mutate_KernelLaunch(s, op);
    threads_ = saved;
    return r;
  }
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    if (op->for_kind != ForKind::kPipelined) return IRMutator::mutate_For(s, op);
    if (op->pipeline.num_stages == 1) {  // one buffer, not warp-specialized: a serial loop
      Stmt body = mutate(op->body);
      return pl::serial_loop(op, pl::split_body(body), op->pipeline.order);
    }
    auto it = plans_.find(op);
    TILEC_ICHECK(it != plans_.end()) << "pipelined loop was not planned";
    return expand(op, it->second);
  }

 private:
  void plan_loop(const ForNode* f) {
    TILEC_ICHECK(!f->pipeline.stage.empty() && f->pipeline.num_stages >= 2)
        << "inject_pipeline needs pipeline_planning to run first";
    LoopPlan p;
    p.body = pl::split_body(f->body);
    const auto& stage = f->pipeline.stage;
    const size_t n = p.body.stmts.size();
    TILEC_ICHECK(stage.size() == n && f->pipeline.order.size() == n) << "planned lists do not fit the body";
    for (const auto& st : p.body.stmts) p.acc.push_back(pl::accesses(st));
    // Buffers written at one stage and read at a later one.
    std::vector<const BufferNode*> crossing;  // first-seen order (deterministic output)
    for (size_t w = 0; w < n; ++w)
      for (const BufferNode* b : p.acc[w].writes)
        for (size_t r = 0; r < n; ++r)
          if (stage[r] > stage[w] && p.acc[r].reads.count(b)) {
            TILEC_USER_CHECK(is_shared(b->scope), f->loc,
                             "only shared buffers get one version per stage; move the statement that writes it "
                             "to the stage that reads it")
                << "T.Pipelined: " << scope_name(b->scope) << " buffer '" << b->name << "' is written at stage "
                << stage[w] << " and read at stage " << stage[r];
            if (std::find(crossing.begin(), crossing.end(), b) == crossing.end()) crossing.push_back(b);
          }
    for (const BufferNode* b : crossing) {
      p.versioned.push_back(b);
      versions_[b] = std::max(versions_[b], f->pipeline.num_stages);
    }
    // Async copies: global -> shared, every reader at a later stage.
    p.async.assign(n, false);
    for (size_t j = 0; j < n && target_.has_cp_async(); ++j) {
      if (!pl::is_global_to_shared_copy(p.body.stmts[j])) continue;
      auto* op = p.body.stmts[j].as<TileOpNode>();
      const std::string prefer = attr_string(*op, "prefer_instruction");
      if (!prefer.empty() && prefer != "cp_async" && prefer != "cp.async") continue;
      const BufferNode* dst = std::get<BufferRegion>(op->args[1]).buffer.get();
      bool later_readers_only = true, any_reader = false;
      for (size_t r = 0; r < n; ++r) {
        if (r == j || !p.acc[r].reads.count(dst)) continue;
        any_reader = true;
        later_readers_only &= stage[r] > stage[j];
      }
      p.async[j] = any_reader && later_readers_only;
    }
    for (size_t q = 0; q < n; ++q) {
      if (!p.async[q]) continue;
      const BufferNode* dst = std::get<BufferRegion>(p.body.stmts[q].as<TileOpNode>()->args[1]).buffer.get();
      for (size_t r = 0; r < n; ++r)
        if (r != q && p.acc[r].reads.count(dst)) {
          const int w = stage[r] - stage[q] - 1;
          p.wait_main = p.wait_main < 0 ? w : std::min(p.wait_main, w);
        }
    }
    plans_.emplace(f, std::move(p));
  }

  void make_buffers() {
    for (auto& [b, versions] : versions_) {
      if (new_buffer_.count(b)) continue;
      std::vector<Expr> shape = {int_imm(versions)};
      shape.insert(shape.end(), b->shape.begin(), b->shape.end());
      new_buffer_[b] = make_buffer(b->name, shape, b->dtype, b->scope, {}, b->loc);
    }
  }

  Stmt expand(const ForNode* op, const LoopPlan& p) {
    make_buffers();
    const auto& stage = op->pipeline.stage;
    const auto& order = op->pipeline.order;
    const int S = op->pipeline.num_stages - 1, D = op->pipeline.num_stages;
    const size_t n = p.body.stmts.size();
    const DataType it_type = op->extent->dtype;
    const std::optional<int64_t> const_n = eval(op->extent, {});
    std::unordered_map<const BufferNode*, Buffer> map;
    for (const BufferNode* b : p.versioned) map[b] = new_buffer_.at(b);

    std::vector<size_t> by_order(n);
    for (size_t j = 0; j < n; ++j) by_order[order[j]] = j;
    size_t last_async_pos = n;  // issue position after which the commit goes
    for (size_t pos = 0; pos < n; ++pos)
      if (p.async[by_order[pos]]) last_async_pos = pos;
    const bool has_async = last_async_pos < n;

    // Statement j for iteration `it` (an expression), accessing version `slot`; `guard`
    // (may be null) is given to async copies, which then need no enclosing If.
    auto instance = [&](size_t j, const Expr& it, const Expr& slot, const Expr& guard) {
      VarMap vm;
      vm[op->loop_var.get()] = is_zero(op->min) ? it : op->min + it;
      Stmt s = substitute(p.body.stmts[j], vm);
      s = pl::VersionAccesses(map, slot).mutate(s);
      s = ConstFolder().mutate(s);
      if (p.async[j]) {
        auto* c = s.as<TileOpNode>();
        AttrMap attrs;  // (built by emplace_back: GCC 12 -Wstringop-overflow misfires on the brace list)
        attrs.emplace_back("no_implicit_commit_wait", true);
        if (guard) attrs.emplace_back("guard", guard);
        s = make_tile_op("async_copy", c->args, attrs, c->loc);
      }
      return s;
    };
    // Statement j for iteration `it`, run only while it < n (unless that is known). An async
    // copy carries the condition as its guard: out of range it writes zeros into a version
    // no later step reads, and a copy without an If around it lets its lowering prove the
    // source rows in bounds under the guard (one predicate instead of one per chunk) and
    // keeps the step straight-line for insert_syncs.
    auto guarded = [&](size_t j, const Expr& it, const Expr& slot) -> std::optional<Stmt> {
      if (const int64_t* c = as_const_int(it); c && const_n.has_value()) {
        if (*c >= *const_n) return std::nullopt;
        return instance(j, it, slot, nullptr);
      }
      Expr in_range = it < op->extent;
      if (p.async[j]) return instance(j, it, slot, in_range);
      return if_then_else(in_range, instance(j, it, slot, nullptr), nullptr, op->loc);
    };

    std::vector<Stmt> out;
    // Prologue.
    for (int step = 0; step < S; ++step) {
      std::vector<Stmt> stmts;
      int wait = -1;
      for (size_t r = 0; r < n; ++r) {
        if (stage[r] > step) continue;
        for (size_t q = 0; q < n; ++q)
          if (p.async[q] && q != r &&
              p.acc[r].reads.count(std::get<BufferRegion>(p.body.stmts[q].as<TileOpNode>()->args[1]).buffer.get()))
            wait = wait < 0 ? stage[r] - stage[q] - 1 : std::min(wait, stage[r] - stage[q] - 1);
      }
      if (wait >= 0) {
        stmts.push_back(call_stmt("tl.cp_async_wait", {int_imm(wait)}, op->loc));
        stmts.push_back(call_stmt("tl.syncthreads", {}, op->loc));
      }
      for (size_t pos = 0; pos < n; ++pos) {
        const size_t j = by_order[pos];
        if (stage[j] <= step) {
          const int64_t it = step - stage[j];
          if (auto s = guarded(j, int_imm(it, it_type), int_imm(it % D, it_type))) stmts.push_back(*s);
        }
        if (has_async && pos == last_async_pos) stmts.push_back(call_stmt("tl.cp_async_commit", {}, op->loc));
      }
      out.insert(out.end(), stmts.begin(), stmts.end());
    }
    // Steady loop.
    Var i = make_var(op->loop_var->name, op->loop_var->dtype, op->loop_var->loc);
    std::vector<Stmt> step;
    if (has_async && p.wait_main >= 0) {
      step.push_back(call_stmt("tl.cp_async_wait", {int_imm(p.wait_main)}, op->loc));
      step.push_back(call_stmt("tl.syncthreads", {}, op->loc));
    }
    for (size_t pos = 0; pos < n; ++pos) {
      const size_t j = by_order[pos];
      const int ahead = S - stage[j];
      Expr it = ahead == 0 ? Expr(i) : i + int64_t(ahead);
      if (ahead == 0) {
        step.push_back(instance(j, it, floormod(it, int64_t(D)), nullptr));
      } else if (auto g = guarded(j, it, floormod(it, int64_t(D)))) {
        step.push_back(*g);
      }
      if (has_async && pos == last_async_pos) step.push_back(call_stmt("tl.cp_async_commit", {}, op->loc));
    }
    Stmt loop_body = step.size() == 1 ? step.front() : seq(step, op->loc);
    // Unrolled num_stages times, every step's versions (it % num_stages) are constants:
    // no modulo and constant shared-memory offsets per stage (CUDA codegen prints the
    // annotation as `#pragma unroll D`; the step count need not be a multiple of D).
    // Only while the copies of one step are small per thread: the unrolled body keeps more
    // addresses live, and a 128x128x64 tile at 128 threads then spills registers.
    int64_t step_bytes = 0;
    for (const BufferNode* b : p.versioned) {
      int64_t elems = b->dtype.bytes();
      for (const auto& e : b->shape) elems = as_const_int(e) ? elems * *as_const_int(e) : -1;
      step_bytes = elems < 0 || step_bytes < 0 ? -1 : step_bytes + elems;
    }
    const bool small_steps = step_bytes >= 0 && threads_ > 0 && step_bytes <= kMaxUnrollBytesPerThread * threads_;
    AttrMap loop_annotations = op->annotations;
    if (small_steps && D <= kMaxUnrollStages && !find_attr(loop_annotations, kUnrollAnnotation))
      loop_annotations.emplace_back(kUnrollAnnotation, int64_t(D));
    out.push_back(make_for(i, int_imm(0, it_type), op->extent, ForKind::kSerial, loop_body, op->loc, {}, "",
                           loop_annotations));
    if (has_async) out.push_back(call_stmt("tl.cp_async_wait", {int_imm(0)}, op->loc));

    // Allocations / annotations of the loop body now enclose the whole pipeline.
    std::vector<Stmt> wrappers;
    for (const auto& w : p.body.wrappers) wrappers.push_back(w);
    Stmt result = pl::join_body(wrappers, std::move(out));
    return mutate_wrappers(result, wrappers.size());
  }

  // The hoisted wrappers may allocate versioned buffers or annotate their layouts.
  Stmt mutate_wrappers(const Stmt& s, size_t depth) {
    if (depth == 0) return s;
    if (auto* a = s.as<AllocateNode>()) {
      Stmt body = mutate_wrappers(a->body, depth - 1);
      auto it = new_buffer_.find(a->buffer.get());
      return allocate(it == new_buffer_.end() ? a->buffer : it->second, body, a->loc);
    }
    auto* n = s.as<AnnotateNode>();
    Stmt inner = annotate(n->key, n->value, mutate_wrappers(n->body, depth - 1), n->loc);
    if (!std::holds_alternative<LayoutMap>(n->value)) return inner;
    // Only the annotation's value needs rewriting; its body is already done.
    auto* ia = inner.as<AnnotateNode>();
    LayoutMap out;
    for (const auto& [b, l] : std::get<LayoutMap>(n->value)) {
      auto it = new_buffer_.find(b.get());
      if (it == new_buffer_.end()) out.emplace_back(b, l);
      else out.emplace_back(it->second, versioned_layout(l, int(*as_const_int(it->second->shape[0])), b->dtype));
    }
    return annotate(ia->key, out, ia->body, ia->loc);
  }

  void check_no_stray_uses(const Stmt& s) {
    for_each_node(s, [&](const Node* n) {
      const BufferNode* b = nullptr;
      SourceLoc loc = n->loc;
      if (auto* l = dynamic_cast<const BufferLoadNode*>(n)) b = l->buffer.get();
      if (auto* st = dynamic_cast<const BufferStoreNode*>(n)) b = st->buffer.get();
      if (auto* t = dynamic_cast<const TileOpNode*>(n)) {
        for (const auto& a : t->args)
          if (auto* r = std::get_if<BufferRegion>(&a); r && new_buffer_.count(r->buffer.get())) b = r->buffer.get();
      }
      if (b && new_buffer_.count(b)) {
        throw_user_error("shared buffer '" + b->name +
                             "' is filled in a T.Pipelined loop (one version per stage) and also used outside it",
                         loc, "use the buffer only inside the loop, or pipeline with num_stages=0");
      }
    });
  }

  const target::Target& target_;
  std::unordered_map<const ForNode*, LoopPlan> plans_;
  int64_t threads_ = 0;  // threads of the enclosing kernel (0: none)
  std::map<const BufferNode*, int> versions_;
  std::unordered_map<const BufferNode*, Buffer> new_buffer_;
};

}  // namespace

Pass inject_pipeline_pass() {
  return {"inject_pipeline", [](const PrimFunc& f, PassContext& ctx) {
            Injector inj(ctx.target());
            inj.plan(f->body);
            Stmt body = inj.run(f->body);
            return body.same_as(f->body) ? f : with_body(f, body);
          }};
}

}  // namespace tilec::passes
