// Small index-analysis helpers shared by the second half of the CUDA pipeline (bounds
// legalization, vectorization, flattening, shared-memory planning, sync insertion, codegen).
//
// They are deliberately local and syntactic: they work without the arithmetic analyzer and
// only ever answer "proved" or "don't know", so every caller stays correct when they fail.
// Where the analyzer (arith::Analyzer) can prove more, callers ask it first.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tilec/arith/analyzer.h"
#include "tilec/ir/stmt.h"
#include "tilec/ops/op_behaviour.h"
#include "tilec/passes/pass.h"

namespace tilec::passes::back {

using ir::Expr;
using ir::Var;

// e == coeff * v + rest, with `rest` free of v. nullopt when e is not affine in v
// (v under a division, a product of two v-dependent terms, a load index, ...).
struct AffineInVar {
  int64_t coeff = 0;
  Expr rest;
};
std::optional<AffineInVar> affine_in(const Expr& e, const ir::VarNode* v);

// The statement inside one-element statement lists (Seq { Seq { s } } -> s), else `s`.
const ir::Stmt& sole_statement(const ir::Stmt& s);

// The fragment that `s`, a `T.fill(F, 0)` (or T.clear) of the whole fragment, clears; else null.
const ir::BufferNode* cleared_fragment(const ir::Stmt& s);

// Visits every expression node of `e` in pre-order (load indices and call arguments
// included); true as soon as `fn` returns true for one.
bool any_node(const Expr& e, const std::function<bool(const ir::ExprNode*)>& fn);
// Whether a call is pure: a pure intrinsic in intrinsics.def other than tl.address_of
// (which exposes a buffer's memory).
bool is_pure_call(const ir::CallNode* c);
// Whether `e` mentions the variable / any of the variables.
bool uses_var(const Expr& e, const ir::VarNode* v);
// Bytes a shared buffer takes in the arena, rounded up to 1 KiB (a symbolic extent counts as
// 2^20: too big for any budget). Budget checks of warp_specialize and stage_output_tiles.
int64_t shared_alloc_bytes(const ir::Buffer& b);
bool uses_any_var(const Expr& e, const std::unordered_set<const ir::VarNode*>& vars);
// Whether `e` reads memory (contains a BufferLoad or a non-pure call).
bool reads_memory(const Expr& e);
// Whether the intrinsic is marked pure in intrinsics.def.
bool is_pure_intrinsic(const std::string& op);
// Every variable `e` mentions, in order of first use.
std::vector<Var> free_vars(const Expr& e);
// The variables `s` uses but does not bind itself (For, Let, KernelLaunch), in order of
// first use: parameters and symbolic dimensions, for a kernel body.
std::vector<Var> free_vars_of_stmt(const ir::Stmt& s);

// Deep structural equality of expressions; variables and buffers compare by identity.
bool same_expr(const Expr& a, const Expr& b);

// Constant folding builders: a + b, a * b, a - b with integer immediates folded and
// x + 0, x * 1, x * 0 removed. Types follow ir::binary.
Expr add(const Expr& a, const Expr& b);
Expr sub(const Expr& a, const Expr& b);
Expr mul(const Expr& a, const Expr& b);
// `e` with + - * of integer constants folded bottom-up (x * 1, 1 * 512, 3 + 0, ...).
Expr fold_constants(const Expr& e);
// a && b where either side may be null (= true).
Expr conj(const Expr& a, const Expr& b);
// The conjuncts of a (nested) And.
std::vector<Expr> split_conjuncts(const Expr& cond);

// A loop `for v in [mn, mn + ext)` with a constant even start and an even constant extent >= 2
// taken two elements at a time (float4_e2m1 is stored in whole bytes): `pair` runs over
// [0, ext / 2), `lane` over [0, 2), and `body` is the loop's body at v = mn + 2 * pair + lane.
// The caller binds the two ranges in its analyzer. nullopt for other loops.
struct PairSplit {
  Var pair, lane;
  int64_t pairs = 0;
  ir::Stmt body;
};
std::optional<PairSplit> split_into_pairs(const ir::ForNode* loop);

// True when `e` is provably a multiple of `factor`: by the analyzer, or because it is a sum
// of terms each carrying a constant factor that is a multiple of `factor`.
bool provably_divisible(arith::Analyzer& az, const Expr& e, int64_t factor);
// The part of `e` (a sum) whose divisibility by `factor` is not evident: the terms whose
// constant factor is not a multiple of `factor`. Null when every term is evidently divisible.
Expr non_divisible_part(const Expr& e, int64_t factor);

// True when `e` is provably >= 0: analyzer bounds, or built from non-negative leaves with
// + * and floor division / modulo by positive constants. `nonneg_vars` are known >= 0.
bool provably_nonneg(arith::Analyzer* az, const Expr& e,
                     const std::unordered_set<const ir::VarNode*>& nonneg_vars);

// The memory-effect spec of an intrinsic (TILEC_INTRIN_EFFECT in intrinsics.def): "barrier",
// "async_wait", "none", or one letter per argument; "" when the intrinsic has no row.
const std::string& intrinsic_effect(const std::string& op);
// The effect letter of argument `i` of a call with spec `spec` ('?' when unknown).
char effect_of_arg(const std::string& spec, size_t i);
// The bytes argument `i` accesses per call (the number after its letter), 0 when not given.
int64_t effect_bytes_of_arg(const std::string& spec, size_t i);

// A copy of `s` whose loops and lets bind fresh variables (same names and types), for a
// statement duplicated next to its original (each variable keeps one definition site).
ir::Stmt renew_bound_vars(const ir::Stmt& s);

// A buffer's strides: its explicit strides, else row-major over its shape (constants folded).
std::vector<Expr> strides_of(const ir::Buffer& b);

// The call an Evaluate statement makes, else null.
const ir::CallNode* evaluated_call(const ir::Stmt& s);
// Whether `s` is a call to a barrier intrinsic (effect "barrier": block or named barrier).
bool is_barrier_stmt(const ir::Stmt& s);
// Whether a barrier call (effect "barrier") appears anywhere in `s`.
bool contains_barrier(const ir::Stmt& s);

// Evaluate(call(void, op, args)): a statement that calls an intrinsic for its effect.
ir::Stmt call_stmt(const std::string& op, std::vector<Expr> args, const ir::SourceLoc& loc = {});

// A zero of the given (scalar) type.
Expr zero_of(ir::DataType t);

// Bytes of one element of a buffer (sub-byte types round up).
int64_t element_bytes(ir::DataType t);

// Reads a boolean config value, `fallback` when the key is unset or unknown to this build.
bool config_flag(const PassContext& ctx, const std::string& key, bool fallback = false);
// Reads a string config value, "" when the key is unset or unknown to this build.
std::string config_string(const PassContext& ctx, const std::string& key);

// Instruction-selection queries (ops::OpEnv) answered from a pass context for `threads`
// threads: warp_specialize's consumers, explain().
class PassOpEnv : public ops::OpEnv {
 public:
  PassOpEnv(const PassContext& ctx, int64_t threads) : ctx_(ctx), threads_(threads) {}
  const target::Target& target() const override { return ctx_.target(); }
  int64_t num_threads() const override { return threads_; }
  bool config_flag(const std::string& key) const override { return back::config_flag(ctx_, key); }
  std::string config_string(const std::string& key) const override { return back::config_string(ctx_, key); }

 private:
  const PassContext& ctx_;
  int64_t threads_;
};

// The KernelLaunch of a lowered function (under Let/Annotate wrappers); null if none.
const ir::KernelLaunchNode* find_kernel(const ir::Stmt& body);
// Rebuilds `body` with the KernelLaunch replaced by `kernel`.
ir::Stmt replace_kernel(const ir::Stmt& body, const ir::Stmt& kernel);

// Binds the ranges of a kernel's block and thread variables in the analyzer.
void bind_kernel_vars(arith::Analyzer& az, const ir::KernelLaunchNode* k);

// The PrimFunc attr kStagedOverStagesAttr ("tile: buffer", stage_output_tiles): the staged
// result tile's name and the pipelined buffer's; nullopt when the function has none.
std::optional<std::pair<std::string, std::string>> staged_over_stages(const ir::PrimFunc& f);

}  // namespace tilec::passes::back
