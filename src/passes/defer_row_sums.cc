// Pass defer_row_sums: a running sum of row sums (attention's softmax denominator) keeps each
// thread's partial sum inside the loop and combines the threads once, after it.
//
// Input:  verified tile IR.
// Output: in a serial or pipelined loop whose body (a Seq) holds
//           T.reduce_sum(src, part, dim)                         (clear, a whole fragment)
//           for i in T.Parallel(n): acc[i] = acc[i] * f + part[i] (or acc[i] + part[i]; either
//                                                                   operand order)
//         where `part` is read nowhere else in the kernel, `acc` is touched nowhere else in the
//         loop, f reads neither, and the statement before the loop that last writes `acc` is
//         T.fill(acc, 0) of the whole fragment, the reduction becomes stage="own_registers" (each thread sums only
//         the elements it holds: no shuffles, no shared scratch, no barrier) and
//           T.reduce_sum(src, acc, dim, stage="across_threads")
//         is inserted right after the loop: it adds up the threads' partials of acc (src only
//         gives the layout). Each thread holding a row runs the same recurrence on its own
//         partial with the same factor f, and all start at 0, so the partials add up to the
//         exact sum (reassociated, as float additions across threads always are). Only loops
//         whose trip count is the same for every thread (no thread index in their bounds).
// When:   config tilec.defer_row_sums; CUDA targets (the CPU target runs tile ops whole).
// Why:    per step the sum's butterfly shuffles — and when the rows span warpgroups (MLA
//         decoding's S split by columns), a shared-memory round trip and a barrier — leave the
//         loop; FlashAttention-3 keeps the row sum thread-local until its epilogue the same way.
// Before: pipeline_planning, warp_specialize and layout_inference (both reductions see
//         src's layout; acc takes part's, the projection of src's).
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/ir/tile_op.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

const TileOpNode* tile_op_of(const Stmt& s) { return back::sole_statement(s).as<TileOpNode>(); }

// How often a statement names buffer `b`: loads, stores and tile-op regions.
size_t uses_of(const Stmt& s, const BufferNode* b) {
  size_t n = 0;
  for_each_node(s, [&](const Node* x) {
    if (auto* l = dynamic_cast<const BufferLoadNode*>(x)) n += l->buffer.get() == b;
    if (auto* st = dynamic_cast<const BufferStoreNode*>(x)) n += st->buffer.get() == b;
    if (auto* t = dynamic_cast<const TileOpNode*>(x))
      for (const auto& a : t->args)
        if (auto* r = std::get_if<BufferRegion>(&a)) n += r->buffer.get() == b;
  });
  return n;
}

bool touches(const Stmt& s, const BufferNode* b) { return uses_of(s, b) > 0; }
bool expr_reads(const Expr& e, const BufferNode* b) { return uses_of(evaluate(e, e->loc), b) > 0; }

// `buf[v]` with v the loop variable.
bool is_row_load(const Expr& e, const BufferNode* buf, const VarNode* v) {
  auto* l = e.as<BufferLoadNode>();
  if (!l || l->buffer.get() != buf || l->indices.size() != 1) return false;
  auto* iv = l->indices[0].as<VarNode>();
  return iv == v;
}

// A running sum: `for v in T.Parallel(n): acc[v] = acc[v] * f + part[v]` (or without f),
// either operand order. Returns acc (null when `s` is not one).
Buffer running_sum(const Stmt& s, const BufferNode* part) {
  auto* loop = back::sole_statement(s).as<ForNode>();
  if (!loop || loop->for_kind != ForKind::kParallel) return Buffer();
  auto* st = back::sole_statement(loop->body).as<BufferStoreNode>();
  const VarNode* v = loop->loop_var.get();
  if (!st || st->indices.size() != 1 || st->indices[0].as<VarNode>() != v) return Buffer();
  const BufferNode* acc = st->buffer.get();
  if (acc == part || acc->scope != Scope::kFragment || acc->shape.size() != 1 || acc->dtype != part->dtype)
    return Buffer();
  auto na = as_const_int(acc->shape[0]), np = as_const_int(part->shape[0]);
  if (!na || !np || *na != *np) return Buffer();
  auto* add = st->value.as<BinaryNode>();
  if (!add || add->kind != NodeKind::kAdd) return Buffer();
  for (int side = 0; side < 2; ++side) {
    const Expr& p = side ? add->a : add->b;
    const Expr& rest = side ? add->b : add->a;
    if (!is_row_load(p, part, v)) continue;
    if (is_row_load(rest, acc, v)) return st->buffer;
    auto* mul = rest.as<BinaryNode>();
    if (!mul || mul->kind != NodeKind::kMul) continue;
    for (int m = 0; m < 2; ++m) {
      const Expr& a = m ? mul->b : mul->a;
      const Expr& f = m ? mul->a : mul->b;
      if (is_row_load(a, acc, v) && !expr_reads(f, acc) && !expr_reads(f, part)) return st->buffer;
    }
  }
  return Buffer();
}

class Deferrer : public IRMutator {
 public:
  explicit Deferrer(const Stmt& root) : root_(root) {}

 protected:
  Stmt mutate_Seq(const Stmt& s, const SeqNode* op) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < op->stmts.size(); ++i) {
      // A Seq nested in Lets sees this one's statements before it (the zero fill of a running
      // sum may precede a Let of the loop's trip count); other nesting (loops, ifs) does not.
      outer_.push_back(back::sole_statement(op->stmts[i]).as<LetNode>() ? &out : nullptr);
      Stmt x = mutate(op->stmts[i]);
      outer_.pop_back();
      changed |= !x.same_as(op->stmts[i]);
      // The loop, possibly inside Lets of its trip count (`loop_range = ...`): the reductions
      // after it go inside them, right after the loop.
      std::vector<const LetNode*> lets;
      Stmt inner = back::sole_statement(x);
      while (auto* let = inner.as<LetNode>()) {
        lets.push_back(let);
        inner = back::sole_statement(let->body);
      }
      std::vector<Stmt> after;
      auto* loop = inner.as<ForNode>();
      // Only loops every thread runs as often (a per-thread trip count would make the
      // per-step reduction an error — insert_syncs says so — not a per-thread partial).
      if (loop && (loop->for_kind == ForKind::kSerial || loop->for_kind == ForKind::kPipelined) &&
          !per_thread(loop->min) && !per_thread(loop->extent)) {
        Stmt rewritten = defer_in(inner, loop, out, &after);
        if (!rewritten.same_as(inner)) {
          std::vector<Stmt> tail = {rewritten};
          tail.insert(tail.end(), after.begin(), after.end());
          Stmt y = tail.size() == 1 ? rewritten : seq(tail, s->loc);
          for (size_t l = lets.size(); l-- > 0;)
            y = Stmt(std::make_shared<const LetNode>(lets[l]->var, lets[l]->value, y));
          x = y;
          changed = true;
        }
      }
      out.push_back(x);
    }
    return changed ? seq(out, s->loc) : s;
  }

  // Loops and branches stop the search for the zero fill (a fill before a loop around the
  // running sum's loop would start its second pass at the first pass's total).
  Stmt mutate_For(const Stmt& s, const ForNode* op) override { return opaque([&] { return IRMutator::mutate_For(s, op); }); }
  Stmt mutate_While(const Stmt& s, const WhileNode* op) override {
    return opaque([&] { return IRMutator::mutate_While(s, op); });
  }
  Stmt mutate_If(const Stmt& s, const IfNode* op) override { return opaque([&] { return IRMutator::mutate_If(s, op); }); }
  // Values that differ between threads: the thread indices and what Lets compute from them.
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    for (const auto& v : op->thread_vars) per_thread_.push_back(v.get());
    return IRMutator::mutate_KernelLaunch(s, op);
  }
  Stmt mutate_Let(const Stmt& s, const LetNode* op) override {
    if (per_thread(op->value)) per_thread_.push_back(op->var.get());
    return IRMutator::mutate_Let(s, op);
  }

 private:
  template <typename F>
  Stmt opaque(F f) {
    outer_.push_back(nullptr);
    Stmt r = f();
    outer_.pop_back();
    return r;
  }

  // The loop with its running sums deferred; `after` receives the reductions to run after it.
  // `before` is what precedes the loop in its Seq (for acc's zero fill).
  Stmt defer_in(const Stmt& s, const ForNode* loop, const std::vector<Stmt>& before, std::vector<Stmt>* after) {
    Stmt rewritten = defer_in_body(loop->body, before, after);
    if (rewritten.same_as(loop->body)) return s;
    auto n = std::make_shared<ForNode>(*loop);
    n->body = rewritten;
    return Stmt(std::shared_ptr<const ForNode>(std::move(n)));
  }

  // The loop body: a Seq, possibly inside Lets (MLA's page index).
  Stmt defer_in_body(const Stmt& b, const std::vector<Stmt>& before, std::vector<Stmt>* after) {
    if (auto* let = b.as<LetNode>()) {
      Stmt inner = defer_in_body(let->body, before, after);
      if (inner.same_as(let->body)) return b;
      return Stmt(std::make_shared<const LetNode>(let->var, let->value, inner));
    }
    auto* body = b.as<SeqNode>();
    if (!body) return b;
    std::vector<Stmt> stmts = body->stmts;
    bool changed = false;
    for (size_t r = 0; r < stmts.size(); ++r) {
      const TileOpNode* red = tile_op_of(stmts[r]);
      if (!red || red->op != "reduce_sum" || !attr_bool(*red, "clear", true) ||
          attr_string(*red, "stage", "all") != "all")
        continue;
      const BufferRegion& src = region_arg(*red, 0);
      const BufferRegion& dst = region_arg(*red, 1);
      const BufferNode* part = dst.buffer.get();
      if (src.buffer->scope != Scope::kFragment || part->scope != Scope::kFragment || part->shape.size() != 1)
        continue;
      // part: read by exactly one running sum in this body, touched nowhere else in the kernel.
      Buffer acc;
      size_t use = 0, uses = 0;
      for (size_t q = 0; q < stmts.size(); ++q) {
        if (q == r || !touches(stmts[q], part)) continue;
        ++uses;
        use = q;
        acc = running_sum(stmts[q], part);
      }
      // (2: the reduction's region and the running sum's load)
      if (uses != 1 || !acc || use < r || uses_of(root_, part) != 2) continue;
      // acc: touched by nothing else in the loop; zeroed right before it.
      bool alone = true;
      for (size_t q = 0; q < stmts.size(); ++q) alone &= q == use || !touches(stmts[q], acc.get());
      if (!alone || !zeroed_before(before, acc.get())) continue;
      stmts[r] = with_attr(*red, "stage", std::string("own_registers"));
      AttrMap across = {{"dim", attr_int(*red, "dim", -1)}, {"stage", std::string("across_threads")}};
      BufferRegion whole = dst;  // acc has part's shape: the same whole-fragment region
      whole.buffer = acc;
      after->push_back(make_tile_op("reduce_sum", {src, whole}, across, red->loc));
      changed = true;
    }
    return changed ? seq(stmts, body->loc) : b;
  }

  // Whether the last statement before the loop that touches acc is T.fill(acc, 0): in the
  // loop's Seq, else in the Seqs around it through Lets.
  bool zeroed_before(const std::vector<Stmt>& before, const BufferNode* acc) const {
    std::vector<const std::vector<Stmt>*> prefixes = {&before};
    for (size_t o = outer_.size(); o-- > 0 && outer_[o];) prefixes.push_back(outer_[o]);
    for (const auto* prefix : prefixes)
      for (size_t i = prefix->size(); i-- > 0;)
        if (touches((*prefix)[i], acc)) return back::cleared_fragment(back::sole_statement((*prefix)[i])) == acc;
    return false;
  }

  bool per_thread(const Expr& e) const {
    for (const VarNode* v : per_thread_)
      if (back::uses_var(e, v)) return true;
    return false;
  }

  Stmt root_;
  std::vector<const VarNode*> per_thread_;
  std::vector<const std::vector<Stmt>*> outer_;  // enclosing Seqs' prefixes (null: not through Lets only)
};

}  // namespace

Pass defer_row_sums_pass() {
  return {"defer_row_sums", [](const PrimFunc& f, PassContext& ctx) {
            if (!ctx.get_bool("tilec.defer_row_sums")) return f;
            Stmt body = Deferrer(f->body).mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
