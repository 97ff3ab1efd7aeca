// overlap_gemm_mainloop: carries a pipelined GEMM's operand fragments across main-loop
// iterations, so the loop's barrier and the first ldmatrix of a tile overlap the last
// mma.sync of the tile before.
//
// Input:  the function after insert_syncs. A loop matches when its body is exactly
//           tl.cp_async_wait(w); tl.syncthreads(); C_1; ...; C_k;
//           Annotate(kGemmFragmentWordsKey, F) { tl.gemm_ss(targs, A(v), ar, ac, B(v), br, bc, acc, t) }
//         with C_i made only of cp.async copies / commits (under loops, ifs, lets and
//         annotations) and ar, ac, br, bc free of the loop variable v: the steady loop
//         inject_pipeline builds for `T.Pipelined` around copies and one T.gemm (mma.sync).
// Output: such a loop `for v in [m, m + n)` becomes
//           Allocate(gemm_frag: uint32[F], local) {
//             tl.cp_async_wait(w); tl.syncthreads();
//             tl.gemm_ss_prefetch("targs, F", A(m), ar, ac, B(m), br, bc, &gemm_frag[0], t)
//             for v in [m, m + n): { C_1; ...; C_k;
//               tl.gemm_ss_overlap("targs, w, F", A(v), ar, ac, B(v), br, bc, acc, t, &gemm_frag[0],
//                                  A(v + 1), B(v + 1), v + 1 < m + n) } }
//         gemm_ss_overlap runs the wait and the barrier itself, before its last k-step, then
//         loads k-step 0 of iteration v + 1 (src/device/cuda/gemm_sm80.cuh). Every other
//         loop is unchanged; the annotation is dropped everywhere.
// Why it is correct: the loop is rotated by one barrier. Iteration v + 1's copies still
//         run after the barrier that follows every read of the stage they overwrite
//         (iteration v's last ldmatrix is issued before that barrier, its mma after it
//         only touches registers), and the fragments of iteration v + 1 are read after the
//         wait + barrier that publish them. Reading them before C_1..C_k of iteration
//         v + 1 is safe because those copies are asynchronous: in the input the gemm reads
//         its stage right after them with no wait in between, so they never target it.
// Not when the accumulator and the carried fragments cannot both stay in registers (more
//         32-bit words per thread than min(255, 65536 / threads)): the overlapped kernel would
//         spill for certain, and runtime::compile would build the kernel a second time without
//         it (issue 13: no second NVRTC build that can be avoided).
// Runs:   after insert_syncs (it moves a barrier into a call, which that pass must not see),
//         before split_host_device. Config tl.disable_gemm_overlap keeps the loops as they are;
//         runtime::compile sets it itself and rebuilds when the overlapped kernel spills.
#include <algorithm>
#include <optional>

#include "passes/cuda_back_util.h"
#include "tilec/arith/analyzer.h"
#include "tilec/ir/mutator.h"
#include "tilec/passes/cuda_back_passes.h"
#include "tilec/passes/passes.h"

namespace tilec::passes {

namespace {

using namespace ir;

const CallNode* call_of(const Stmt& s, const char* op) {
  auto* ev = s.as<EvaluateNode>();
  auto* c = ev ? ev->value.as<CallNode>() : nullptr;
  return c && c->op == op ? c : nullptr;
}

// Only cp.async copies and commits (no waits, barriers, loads or stores of anything else).
bool async_copies_only(const Stmt& s) {
  if (!s) return true;
  switch (s->kind) {
    case NodeKind::kSeq:
      for (const auto& x : s.as<SeqNode>()->stmts)
        if (!async_copies_only(x)) return false;
      return true;
    case NodeKind::kFor: return async_copies_only(s.as<ForNode>()->body);
    case NodeKind::kIf: {
      auto* i = s.as<IfNode>();
      return !back::reads_memory(i->cond) && async_copies_only(i->then_case) && async_copies_only(i->else_case);
    }
    case NodeKind::kLet: {
      auto* l = s.as<LetNode>();
      return !back::reads_memory(l->value) && async_copies_only(l->body);
    }
    case NodeKind::kAnnotate: return async_copies_only(s.as<AnnotateNode>()->body);
    case NodeKind::kEvaluate: {
      auto* c = s.as<EvaluateNode>()->value.as<CallNode>();
      return c && c->op.rfind("tl.cp_async_", 0) == 0 && c->op != "tl.cp_async_wait";
    }
    default: return false;
  }
}

struct MainLoop {
  int64_t wait_groups = 0;
  int64_t fragment_words = 0;
  const CallNode* gemm = nullptr;
  std::vector<Stmt> copies;  // C_1 .. C_k
};

std::optional<MainLoop> match(const ForNode* loop) {
  auto* body = loop->body.as<SeqNode>();
  if (loop->for_kind != ForKind::kSerial || !body || body->stmts.size() < 3) return std::nullopt;
  const auto& st = body->stmts;
  const CallNode* wait = call_of(st[0], "tl.cp_async_wait");
  if (!wait || wait->args.size() != 1 || !as_const_int(wait->args[0]) || !call_of(st[1], "tl.syncthreads"))
    return std::nullopt;
  auto* ann = st.back().as<AnnotateNode>();
  if (!ann || ann->key != kGemmFragmentWordsKey) return std::nullopt;
  auto* words = std::get_if<int64_t>(&ann->value);
  const CallNode* gemm = call_of(ann->body, "tl.gemm_ss");
  if (!words || !gemm || gemm->args.size() != 9 || !gemm->args[0].as<StringImmNode>()) return std::nullopt;
  for (int i : {2, 3, 5, 6, 7, 8})  // row0/col0 of both operands, accumulator, thread: loop invariant
    if (back::uses_var(gemm->args[i], loop->loop_var.get())) return std::nullopt;
  MainLoop m;
  m.wait_groups = *as_const_int(wait->args[0]);
  m.fragment_words = *words;
  m.gemm = gemm;
  for (size_t i = 2; i + 1 < st.size(); ++i) {
    if (!async_copies_only(st[i])) return std::nullopt;
    m.copies.push_back(st[i]);
  }
  return m;
}

using back::call_stmt;

Stmt overlap(const ForNode* loop, const MainLoop& m, SourceLoc loc) {
  const auto& g = m.gemm->args;
  const std::string targs = g[0].as<StringImmNode>()->value;
  const Var& v = loop->loop_var;
  auto at = [&](const Expr& e, Expr iter) { return arith::simplify(substitute(e, VarMap{{v.get(), std::move(iter)}})); };
  Buffer frag = make_buffer("gemm_frag", {int_imm(m.fragment_words)}, DataType::UInt(32), Scope::kLocal, {}, loc);
  Expr frag_addr = call(DataType::Handle(), "tl.address_of", {buffer_load(frag, {int_imm(0)})}, loc);
  Expr next = v + int_imm(1, v->dtype);

  std::vector<Stmt> body = m.copies;
  body.push_back(call_stmt("tl.gemm_ss_overlap",
                           {string_imm(targs + ", " + std::to_string(m.wait_groups) + ", " +
                                       std::to_string(m.fragment_words)),
                            g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], frag_addr, at(g[1], next),
                            at(g[4], next), arith::simplify(next < loop->min + loop->extent)},
                           m.gemm->loc));
  auto steady = std::make_shared<ForNode>(*loop);
  steady->body = seq(std::move(body), loop->body->loc);

  std::vector<Stmt> out = {
      call_stmt("tl.cp_async_wait", {int_imm(m.wait_groups)}, loc),
      call_stmt("tl.syncthreads", {}, loc),
      call_stmt("tl.gemm_ss_prefetch",
                {string_imm(targs + ", " + std::to_string(m.fragment_words)), at(g[1], loop->min), g[2], g[3],
                 at(g[4], loop->min), g[5], g[6], frag_addr, g[8]},
                m.gemm->loc),
      Stmt(std::shared_ptr<const ForNode>(std::move(steady))),
  };
  return allocate(frag, seq(std::move(out), loc), loc);
}

class OverlapGemmMainLoop : public IRMutator {
 public:
  explicit OverlapGemmMainLoop(bool enabled) : enabled_(enabled) {}

 protected:
  // A matched loop holds no other loop that could match (its body is copies and the gemm).
  Stmt mutate_For(const Stmt& s, const ForNode* op) override {
    if (enabled_) {
      if (auto m = match(op); m && fits_in_registers(*m)) return overlap(op, *m, s->loc);
    }
    return IRMutator::mutate_For(s, op);
  }
  Stmt mutate_KernelLaunch(const Stmt& s, const KernelLaunchNode* op) override {
    threads_ = op->block_threads();
    return IRMutator::mutate_KernelLaunch(s, op);
  }
  // The fragment-size annotation of every gemm left as it was is dropped (also when
  // disabled: codegen and the printer need not know it).
  Stmt mutate_Annotate(const Stmt& s, const AnnotateNode* op) override {
    if (op->key == kGemmFragmentWordsKey) return mutate(op->body);
    return IRMutator::mutate_Annotate(s, op);
  }

 private:
  // The accumulator (argument 7, &acc[0]) and the carried fragments, in 32-bit words per thread,
  // within the registers a thread of this block can have.
  bool fits_in_registers(const MainLoop& m) const {
    auto* addr = m.gemm->args[7].as<CallNode>();
    auto* acc = addr && !addr->args.empty() ? addr->args[0].as<BufferLoadNode>() : nullptr;
    if (!acc) return true;
    int64_t elems = 1;
    for (const auto& e : acc->buffer->shape) {
      auto n = as_const_int(e);
      if (!n) return true;
      elems *= *n;
    }
    const int64_t words = (elems * back::element_bytes(acc->buffer->dtype) + 3) / 4;
    const int64_t budget = std::min<int64_t>(255, 65536 / std::max<int64_t>(threads_, 1));
    return words + m.fragment_words <= budget;
  }
  bool enabled_;
  int64_t threads_ = 1;
};

PrimFunc run(const PrimFunc& f, PassContext& ctx) {
  OverlapGemmMainLoop pass(!back::config_flag(ctx, "tl.disable_gemm_overlap"));
  Stmt body = pass.mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace

Pass overlap_gemm_mainloop_pass() { return {"overlap_gemm_mainloop", run}; }

}  // namespace tilec::passes
