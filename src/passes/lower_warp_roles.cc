// Pass lower_warp_roles: the manual warp specialization of TileLang, `with T.ws(g...)`.
//
// Input:  tile IR; Annotate("ws", [g0, g1, ...]) around code that only warp groups g (128
//         threads each: threads [128 g, 128 g + 128)) run.
// Output: each such annotation becomes
//           if (128 g0 <= tx < 128 (g_last + 1)):
//             Annotate(kThreadRangeKey, {128 g0, 128 n, 1 + g0}, body)
//         so layout inference and lowering give the body's tile ops the role's threads
//         (their thread index counts from the role's first thread) and insert_syncs turns
//         block barriers inside into named barrier 1 + g0 over the role's threads.
//         TileLang's other spelling of roles, an if / elif chain on the thread index
//         (`if tx < 128: ... elif tx >= 256: ...`, tx = T.get_thread_binding()), gets the same
//         annotation around each branch whose thread range is whole warps, when some branch
//         holds a tile op (whose lowering needs the threads that run it) and every condition
//         is a range test of tx against constants (<, <=, >, >=, `and`). A chain of whole warp
//         groups numbers its named barriers 1 + first / 128 as T.ws does; a chain with a
//         smaller role (`if tx < 32:` in a block of 96) numbers them 1, 2, ... in branch order.
//         Chains that do not fit stay plain Ifs. Every role made here carries kUserRole as
//         the annotation's fourth value: its hand-offs to other roles are the program's own
//         (plan_shared_memory then keeps its buffers apart from the other roles').
// Errors: groups that are not consecutive or lie outside the block; T.ws in a block that
//         is not 1-D or whose threads are not whole warp groups; nested T.ws.
// Before: pipeline_planning (which would hoist the annotations out of loop bodies),
//         warp_specialize (which leaves kernels with roles alone), layout_inference.
#include <algorithm>
#include <optional>

#include "tilec/ir/mutator.h"
#include "tilec/ir/visitor.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

struct ThreadRange {
  int64_t begin = 0, end = 0;  // [begin, end)
};

// The threads [begin, end) for which `cond` holds, `cond` a range test of `tx` against
// constants; nullopt for anything else.
std::optional<ThreadRange> range_of(const Expr& cond, const VarNode* tx, ThreadRange all) {
  auto* bin = dynamic_cast<const BinaryNode*>(cond.get());
  if (!bin) return std::nullopt;
  if (cond->kind == NodeKind::kAnd) {
    auto a = range_of(bin->a, tx, all), b = range_of(bin->b, tx, all);
    if (!a || !b) return std::nullopt;
    return ThreadRange{std::max(a->begin, b->begin), std::min(a->end, b->end)};
  }
  NodeKind k = cond->kind;
  const int64_t* c = as_const_int(bin->b);
  bool tx_left = bin->a.get() == tx && c;
  if (!tx_left) {
    c = as_const_int(bin->a);
    if (!(bin->b.get() == tx && c)) return std::nullopt;
    // c OP tx  ==  tx OP' c
    switch (k) {
      case NodeKind::kLT: k = NodeKind::kGT; break;
      case NodeKind::kLE: k = NodeKind::kGE; break;
      case NodeKind::kGT: k = NodeKind::kLT; break;
      case NodeKind::kGE: k = NodeKind::kLE; break;
      default: return std::nullopt;
    }
  }
  ThreadRange r = all;
  switch (k) {
    case NodeKind::kLT: r.end = std::min(r.end, *c); break;
    case NodeKind::kLE: r.end = std::min(r.end, *c + 1); break;
    case NodeKind::kGT: r.begin = std::max(r.begin, *c + 1); break;
    case NodeKind::kGE: r.begin = std::max(r.begin, *c); break;
    default: return std::nullopt;
  }
  return r;
}

bool whole_warp_groups(ThreadRange r) { return r.begin < r.end && r.begin % 128 == 0 && r.end % 128 == 0; }
bool whole_warps(ThreadRange r) { return r.begin < r.end && r.begin % 32 == 0 && r.end % 32 == 0; }

bool holds_tile_op(const Stmt& s) {
  bool found = false;
  for_each_node(s, [&](const Node* n) {
    if (dynamic_cast<const TileOpNode*>(n)) found = true;
  });
  return found;
}

bool holds_role(const Stmt& s) {
  bool found = false;
  for_each_node(s, [&](const Node* n) {
    if (auto* a = dynamic_cast<const AnnotateNode*>(n); a && (a->key == "ws" || a->key == kThreadRangeKey))
      found = true;
  });
  return found;
}

// A role's named barrier: 1 + first / 128 in a chain of warp groups (as T.ws), else its
// branch's place in the chain (1, 2, ...). Ids 14 and 15 are the ping-pong turns.
struct BarrierIds {
  bool by_group = true;
  int64_t next = 1;
  int64_t id(ThreadRange r) { return by_group ? 1 + r.begin / 128 : next++; }
};

Stmt role_of(const Stmt& body, ThreadRange r, BarrierIds& ids, const SourceLoc& loc) {
  const int64_t id = ids.id(r);
  TILEC_USER_CHECK(id <= 13, loc, "use fewer thread-index branches with tile ops")
      << "the branch for threads [" << r.begin << ", " << r.end << ") needs named barrier " << id
      << ", past the 13 a block has besides barrier 0 and the ping-pong pair";
  return annotate(kThreadRangeKey, std::vector<int64_t>{r.begin, r.end - r.begin, id, kUserRole}, body, loc);
}

// The thread ranges of an if / elif chain's branches (then, else-if..., else), or nullopt when
// the chain does not fit (see the header).
std::optional<std::vector<ThreadRange>> chain_ranges(const IfNode* op, const VarNode* tx, ThreadRange all) {
  auto cond = range_of(op->cond, tx, all);
  if (!cond) return std::nullopt;
  ThreadRange then_range{std::max(all.begin, cond->begin), std::min(all.end, cond->end)};
  if (!whole_warps(then_range)) return std::nullopt;
  std::vector<ThreadRange> out{then_range};
  if (!op->else_case) return out;
  ThreadRange rest = all;
  if (then_range.begin <= all.begin) {
    rest.begin = then_range.end;
  } else if (then_range.end >= all.end) {
    rest.end = then_range.begin;
  } else {
    return std::nullopt;  // the other threads are not one range
  }
  if (auto* elif = op->else_case.as<IfNode>()) {
    auto more = chain_ranges(elif, tx, rest);
    if (!more) return std::nullopt;
    out.insert(out.end(), more->begin(), more->end());
  } else {
    if (!whole_warps(rest)) return std::nullopt;
    out.push_back(rest);
  }
  return out;
}

// The chain with each branch a role over its range (ranges[k] for the k-th branch).
Stmt chain_with_roles(const IfNode* op, const std::vector<ThreadRange>& ranges, size_t k, BarrierIds& ids,
                      const SourceLoc& loc) {
  Stmt then_case = role_of(op->then_case, ranges[k], ids, op->then_case->loc);
  Stmt else_case;
  if (op->else_case) {
    if (auto* elif = op->else_case.as<IfNode>())
      else_case = chain_with_roles(elif, ranges, k + 1, ids, op->else_case->loc);
    else
      else_case = role_of(op->else_case, ranges[k + 1], ids, op->else_case->loc);
  }
  return if_then_else(op->cond, then_case, else_case, loc);
}

Stmt chain_as_roles(const IfNode* op, const VarNode* tx, ThreadRange all, const SourceLoc& loc) {
  auto ranges = chain_ranges(op, tx, all);
  if (!ranges) return nullptr;
  BarrierIds ids;
  for (const auto& r : *ranges) ids.by_group = ids.by_group && whole_warp_groups(r);
  return chain_with_roles(op, *ranges, 0, ids, loc);
}

class RoleLowering : public IRMutator {
 protected:
  Stmt mutate_If(const Stmt& s, const IfNode* op) override {
    if (kernel_ && !inside_ && kernel_->threads.size() == 1 && kernel_->threads[0] % 32 == 0 && holds_tile_op(s) &&
        !holds_role(s)) {
      ThreadRange all{0, kernel_->threads[0]};
      if (Stmt roles = chain_as_roles(op, kernel_->thread_vars[0].get(), all, s->loc)) return roles;
    }
    return IRMutator::mutate_If(s, op);
  }
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    const KernelLaunchNode* saved = kernel_;
    kernel_ = op;
    Stmt out = IRMutator::mutate_KernelLaunch(s, op);
    kernel_ = saved;
    return out;
  }
  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key != "ws") return IRMutator::mutate_Annotate(s, op);
    auto* groups = std::get_if<std::vector<int64_t>>(&op->value);
    TILEC_USER_CHECK(groups && !groups->empty(), op->loc, "write `with T.ws(0):`") << "T.ws needs warp-group indices";
    TILEC_USER_CHECK(kernel_ != nullptr, op->loc, "use T.ws inside `with T.Kernel(...)`") << "T.ws outside a kernel";
    TILEC_USER_CHECK(!inside_, op->loc, "split the code into separate T.ws blocks") << "T.ws blocks cannot be nested";
    int64_t threads = 1;
    for (size_t i = 1; i < kernel_->threads.size(); ++i)
      TILEC_USER_CHECK(kernel_->threads[i] == 1, op->loc, "use a 1-D thread block: T.Kernel(..., threads=256)")
          << "T.ws needs a one-dimensional thread block";
    threads = kernel_->threads[0];
    TILEC_USER_CHECK(threads % 128 == 0, op->loc, "launch a multiple of 128 threads")
        << "T.ws splits the block into warp groups of 128 threads, but the block has " << threads;
    const int64_t first = (*groups)[0], last = groups->back();
    for (size_t i = 1; i < groups->size(); ++i)
      TILEC_USER_CHECK((*groups)[i] == (*groups)[i - 1] + 1, op->loc, "list consecutive warp groups, e.g. T.ws(1, 2)")
          << "T.ws takes consecutive warp groups";
    TILEC_USER_CHECK(first >= 0 && (last + 1) * 128 <= threads, op->loc, "")
        << "T.ws(" << first << (groups->size() > 1 ? ", ..." : "") << "): the block has " << threads / 128
        << " warp groups (0.." << threads / 128 - 1 << ")";
    inside_ = true;
    Stmt body = mutate(op->body);
    inside_ = false;
    const int64_t begin = 128 * first, count = 128 * (last - first + 1);
    const Var& tx = kernel_->thread_vars[0];
    Expr cond = nullptr;
    if (begin > 0) cond = tx >= int_imm(begin, tx->dtype);
    if (begin + count < threads) {
      Expr upper = binary(NodeKind::kLT, tx, int_imm(begin + count, tx->dtype));
      cond = cond ? cond && upper : upper;
    }
    Stmt role = annotate(kThreadRangeKey, std::vector<int64_t>{begin, count, 1 + first, kUserRole}, body, op->loc);
    return cond ? if_then_else(cond, role, nullptr, op->loc) : role;
  }

 private:
  const KernelLaunchNode* kernel_ = nullptr;
  bool inside_ = false;
};

}  // namespace

Pass lower_warp_roles_pass() {
  return {"lower_warp_roles", [](const PrimFunc& f, PassContext&) {
            Stmt body = RoleLowering().mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, std::move(body));
          }};
}

}  // namespace tilec::passes
