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
// Errors: groups that are not consecutive or lie outside the block; T.ws in a block that
//         is not 1-D or whose threads are not whole warp groups; nested T.ws.
// Before: pipeline_planning (which would hoist the annotations out of loop bodies),
//         warp_specialize (which leaves kernels with roles alone), layout_inference.
#include "tilec/ir/mutator.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

class RoleLowering : public IRMutator {
 protected:
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
    Stmt role = annotate(kThreadRangeKey, std::vector<int64_t>{begin, count, 1 + first}, body, op->loc);
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
