// Pass lower_register_budgets: T.set_max_nreg / T.inc_max_nreg / T.dec_max_nreg as written.
//
// Input:  tile IR whose statements may include tl.user_setmaxnreg(n, inc) calls (the front
//         end's T.set_max_nreg(n, inc); n in 24..256, a multiple of 8: checked there).
// Output: on a target with setmaxnreg (sm_90a) and with tilec.honor_set_max_nreg, each call
//         becomes tl.setmaxnreg_inc(n) (inc = 1) or tl.setmaxnreg_dec(n) at the same place, so
//         the warpgroup that runs it changes its register budget as in upstream TileLang (the
//         program splits its warpgroups itself and must run the call in every warp of one);
//         codegen then gives the kernel __launch_bounds__(threads, 1). Otherwise every call is
//         removed: register budgets stay the compiler's choice and nothing else changes.
// Runs before: warp_specialize (which leaves a kernel that sets its own budgets alone).
#include "passes/cuda_back_util.h"
#include "tilec/ir/mutator.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

using namespace ir;

namespace {

class RegisterBudgets : public IRMutator {
 public:
  explicit RegisterBudgets(bool honor) : honor_(honor) {}

 protected:
  Stmt mutate_Evaluate(const Stmt& s, const EvaluateNode* op) override {
    auto* call = op->value.as<CallNode>();
    if (!call || call->op != "tl.user_setmaxnreg") return s;
    if (!honor_) return seq({}, s->loc);
    const int64_t* inc = as_const_int(call->args[1]);
    return back::call_stmt(inc && *inc ? "tl.setmaxnreg_inc" : "tl.setmaxnreg_dec", {call->args[0]}, s->loc);
  }

 private:
  bool honor_;
};

}  // namespace

Pass lower_register_budgets_pass() {
  return {"lower_register_budgets", [](const PrimFunc& f, PassContext& ctx) {
            const bool honor = ctx.target().has_wgmma() && ctx.get_bool("tilec.honor_set_max_nreg");
            Stmt body = RegisterBudgets(honor).mutate(f->body);
            return body.same_as(f->body) ? f : with_body(f, body);
          }};
}

}  // namespace tilec::passes
