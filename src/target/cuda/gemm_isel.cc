// Instruction selection and warp partition for T.gemm on CUDA (see gemm_isel.h).
//
// The chain is a list of candidates tried in order; each candidate either accepts the gemm
// or says why not. An explicit `instruction=` keeps only its candidate and turns its
// refusal into the UserError; automatic selection takes the first that accepts.
#include "tilec/target/cuda/gemm_isel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

namespace tilec::cuda {

using ir::DataType;

const char* gemm_inst_name(GemmInst inst) {
  switch (inst) {
    case GemmInst::kMma: return "mma";
    case GemmInst::kFma: return "fma";
    case GemmInst::kWgmma: return "wgmma";
  }
  return "?";
}

int mma_k(MmaKind kind) {
  switch (kind) {
    case MmaKind::kF16:
    case MmaKind::kBF16: return 16;
    case MmaKind::kTF32: return 8;
    case MmaKind::kS8:
    case MmaKind::kU8: return 32;
  }
  return 0;
}

const char* mma_kind_constant(MmaKind kind) {
  switch (kind) {
    case MmaKind::kF16: return "tl::kMmaF16";
    case MmaKind::kBF16: return "tl::kMmaBF16";
    case MmaKind::kTF32: return "tl::kMmaTF32";
    case MmaKind::kS8: return "tl::kMmaS8";
    case MmaKind::kU8: return "tl::kMmaU8";
  }
  return "?";
}

std::optional<WarpPolicy> parse_warp_policy(const std::string& name) {
  std::string s;
  for (char c : name) s += char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* prefix : {"gemmwarppolicy.", "t.gemmwarppolicy."})
    if (s.rfind(prefix, 0) == 0) s = s.substr(std::string(prefix).size());
  if (s == "square") return WarpPolicy::kSquare;
  if (s == "fullrow") return WarpPolicy::kFullRow;
  if (s == "fullcol") return WarpPolicy::kFullCol;
  return std::nullopt;
}

const char* warp_policy_name(WarpPolicy p) {
  switch (p) {
    case WarpPolicy::kSquare: return "Square";
    case WarpPolicy::kFullRow: return "FullRow";
    case WarpPolicy::kFullCol: return "FullCol";
  }
  return "?";
}

std::optional<std::pair<int, int>> compute_warp_partition(WarpPolicy policy, int64_t m, int64_t n, int num_warps,
                                                          int n_per_warp) {
  constexpr int kMPerWarp = 16;
  std::vector<std::pair<int, int>> splits;  // every legal (m_warp, n_warp), m_warp ascending
  for (int mw = 1; mw <= num_warps; ++mw) {
    if (num_warps % mw != 0) continue;
    const int nw = num_warps / mw;
    if (m % (int64_t(kMPerWarp) * mw) == 0 && n % (int64_t(n_per_warp) * nw) == 0) splits.emplace_back(mw, nw);
  }
  if (splits.empty()) return std::nullopt;
  switch (policy) {
    case WarpPolicy::kFullRow: return splits.back();   // most warps along M
    case WarpPolicy::kFullCol: return splits.front();  // most warps along N
    case WarpPolicy::kSquare: {
      // TileLang's balance: |(M / (16 m_warp)) / (N / (8 n_warp)) - M / N|, first minimum wins.
      const double ideal = double(m) / double(n);
      double best = std::numeric_limits<double>::max();
      std::pair<int, int> pick = splits.front();
      for (auto [mw, nw] : splits) {
        const double per_m = double(m) / (kMPerWarp * mw), per_n = double(n) / (double(n_per_warp) * nw);
        const double balance = std::fabs(per_m / per_n - ideal);
        if (balance < best) best = balance, pick = {mw, nw};
      }
      return pick;
    }
  }
  return std::nullopt;
}

namespace {

std::string dtype_triple(const GemmQuery& q) {
  return "A " + q.a_dtype.str() + ", B " + q.b_dtype.str() + ", C " + q.c_dtype.str();
}

// The mma.sync operand kind for a dtype combination, or a reason.
std::optional<MmaKind> mma_kind_for(const GemmQuery& q, std::string* why) {
  const DataType a = q.a_dtype, b = q.b_dtype, c = q.c_dtype;
  if (a != b) {
    *why = "mma.sync needs A and B of one dtype (" + dtype_triple(q) + ")";
    return std::nullopt;
  }
  if (a == DataType::Float(16) && c == DataType::Float(32)) return MmaKind::kF16;
  if (a == DataType::BFloat16() && c == DataType::Float(32)) return MmaKind::kBF16;
  if (a == DataType::Float(32) && c == DataType::Float(32)) return MmaKind::kTF32;
  if (a == DataType::Int(8) && c == DataType::Int(32)) return MmaKind::kS8;
  if (a == DataType::UInt(8) && c == DataType::Int(32)) return MmaKind::kU8;
  *why = "mma.sync supports float16/bfloat16 -> float32, float32 (as tf32) -> float32 and int8/uint8 -> int32, not " +
         dtype_triple(q);
  return std::nullopt;
}

// A in a register fragment (tl::gemm_rs): the fragment must hold exactly the mma.sync A
// registers, which the accumulator layout over M x K with WARP_N = 1 does for 16-bit
// elements (src/ops/gemm.cc, a_fragment_layout).
bool a_fragment_fits(const GemmQuery& q, std::string* why) {
  if (q.a_scope != ir::Scope::kFragment) {
    *why = std::string("mma.sync reads A from shared memory (T.alloc_shared) or from a register fragment "
                       "(T.alloc_fragment), not ") +
           ir::scope_name(q.a_scope);
    return false;
  }
  if (q.trans_a) {
    *why = "A in a register fragment cannot be transposed (transpose_A=True); store A as M x K";
    return false;
  }
  if (q.a_dtype != DataType::Float(16) && q.a_dtype != DataType::BFloat16()) {
    *why = "A in a register fragment must be float16 or bfloat16 (cast it in a T.Parallel loop or with T.copy "
           "into a 16-bit fragment), not " +
           q.a_dtype.str();
    return false;
  }
  return true;
}

// The warp grid of a gemm with A in registers: every warp along M (WARP_N = 1), so each
// warp's rows of A are its own. Square (the default) is read as FullRow; FullCol, or a tile
// whose M does not split over all warps, cannot be used.
std::optional<std::pair<int, int>> a_fragment_partition(const GemmQuery& q, std::string* why) {
  const int warps = q.num_threads / 32;
  const WarpPolicy policy = q.policy == WarpPolicy::kFullCol ? WarpPolicy::kFullCol : WarpPolicy::kFullRow;
  auto split = compute_warp_partition(policy, q.m, q.n, warps);
  if (split && split->second == 1) return split;
  if (split && q.policy == WarpPolicy::kFullCol) {
    std::ostringstream os;
    os << "T.gemm: A is a register fragment, which needs every warp along M (WARP_N = 1), but policy FullCol "
       << "splits the " << q.m << "x" << q.n << " C tile into " << split->first << "x" << split->second << " warps";
    throw_user_error(os.str(), q.loc, "use policy=T.GemmWarpPolicy.FullRow");
  }
  std::ostringstream os;
  os << "A in a register fragment needs all " << warps << " warps along M (WARP_N = 1): M must be a multiple of "
     << 16 * warps << " (16 rows per warp), the tile has M=" << q.m;
  *why = os.str();
  return std::nullopt;
}

struct Candidate {
  const char* name;
  // Fills the plan and returns true, or explains in *why.
  std::function<bool(const GemmQuery&, const target::Target&, GemmPlan*, std::string*)> accept;
  // Whether the instruction exists on the target's generation at all: the error of an
  // automatic selection lists only those (no tcgen05 line for sm_90a, no wgmma for sm_80).
  bool (*on_generation)(const target::Target&) = nullptr;
};

bool accept_mma(const GemmQuery& q, const target::Target& t, GemmPlan* plan, std::string* why) {
  if (!t.has_mma_sync()) {
    *why = "mma.sync needs sm_80 or newer, the target is " + t.str();
    return false;
  }
  if (!ir::is_shared(q.b_scope)) {
    *why = std::string("mma.sync reads B from shared memory (T.alloc_shared), not ") + ir::scope_name(q.b_scope);
    return false;
  }
  const bool a_in_registers = !ir::is_shared(q.a_scope);
  if (a_in_registers && !a_fragment_fits(q, why)) return false;
  auto kind = mma_kind_for(q, why);
  if (!kind) return false;
  const int kk = mma_k(*kind);
  if (q.m % 16 != 0 || q.n % 8 != 0 || q.k % kk != 0) {
    std::ostringstream os;
    os << "mma.sync needs M % 16 == 0, N % 8 == 0 and K % " << kk << " == 0 for " << q.a_dtype.str()
       << ", the tile is M=" << q.m << " N=" << q.n << " K=" << q.k;
    *why = os.str();
    return false;
  }
  const int bytes = q.a_dtype.bytes();
  if ((!a_in_registers && (q.lda * bytes) % 16 != 0) || (q.ldb * bytes) % 16 != 0) {
    std::ostringstream os;
    os << "ldmatrix needs shared rows of whole 16-byte chunks, ";
    if (!a_in_registers) os << "A_shared rows are " << q.lda * bytes << " bytes and ";
    os << "B_shared rows " << q.ldb * bytes << " bytes";
    *why = os.str();
    return false;
  }
  if (q.num_threads % 32 != 0) {
    *why = "mma.sync needs whole warps, the block has " + std::to_string(q.num_threads) + " threads";
    return false;
  }
  if (a_in_registers) {
    auto split = a_fragment_partition(q, why);
    if (!split) return false;
    plan->inst = GemmInst::kMma;
    plan->kind = *kind;
    plan->warp_m = split->first;
    plan->warp_n = split->second;
    plan->a_in_registers = true;
    return true;
  }
  auto split = compute_warp_partition(q.policy, q.m, q.n, q.num_threads / 32);
  if (!split) {
    std::ostringstream os;
    os << "the " << q.m << "x" << q.n << " C tile cannot be split over " << q.num_threads / 32
       << " warps with policy " << warp_policy_name(q.policy)
       << " (each warp needs a multiple of 16 rows and 8 columns)";
    *why = os.str();
    return false;
  }
  plan->inst = GemmInst::kMma;
  plan->kind = *kind;
  plan->warp_m = split->first;
  plan->warp_n = split->second;
  return true;
}

bool accept_fma(const GemmQuery& q, const target::Target&, GemmPlan* plan, std::string* why) {
  if (!ir::is_shared(q.a_scope) || !ir::is_shared(q.b_scope)) {
    *why = "the FMA path reads A and B from shared memory (T.alloc_shared)";
    return false;
  }
  if (q.a_dtype != q.b_dtype) {
    *why = "A and B must have one dtype (" + dtype_triple(q) + ")";
    return false;
  }
  auto numeric = [](DataType d) { return d.is_float() || d.is_integer(); };
  if (!numeric(q.a_dtype) || !numeric(q.c_dtype)) {
    *why = "operands must be numbers (" + dtype_triple(q) + ")";
    return false;
  }
  // Thread grid tm x tn = threads dividing M x N; fewest operand loads per k (RM + RN).
  int best_tn = 0;
  int64_t best_cost = std::numeric_limits<int64_t>::max();
  for (int tn = q.num_threads; tn >= 1; --tn) {
    if (q.num_threads % tn != 0) continue;
    const int tm = q.num_threads / tn;
    if (q.n % tn != 0 || q.m % tm != 0) continue;
    const int64_t cost = q.m / tm + q.n / tn;
    if (cost < best_cost) best_cost = cost, best_tn = tn;
  }
  if (best_tn == 0) {
    std::ostringstream os;
    os << "the " << q.m << "x" << q.n << " C tile cannot be split evenly over " << q.num_threads << " threads";
    *why = os.str();
    return false;
  }
  plan->inst = GemmInst::kFma;
  plan->thread_n = best_tn;
  plan->thread_m = q.num_threads / best_tn;
  return true;
}

bool refuse_later_issue(const char* what, const GemmQuery&, const target::Target&, GemmPlan*, std::string* why) {
  *why = std::string(what) + " lowering of T.gemm is not implemented yet (use instruction=\"mma\" or leave it out)";
  return false;
}

const std::vector<Candidate>& chain() {
  static const std::vector<Candidate> kChain = {
      // tcgen05 (sm_100, C in tensor memory): a later issue adds it here.
      {"tcgen05", [](auto& q, auto& t, auto* p, auto* w) { return refuse_later_issue("tcgen05", q, t, p, w); },
       [](const target::Target& t) { return t.arch >= 100; }},
      {"wgmma", accept_wgmma, [](const target::Target& t) { return t.arch == 90; }},
      {"mma", accept_mma},
      {"fma", accept_fma},
  };
  return kChain;
}

}  // namespace

std::vector<GemmCandidate> gemm_candidates(const GemmQuery& q, const target::Target& target) {
  std::vector<GemmCandidate> out;
  for (const auto& c : chain()) {
    if (!q.instruction.empty() && q.instruction != c.name) continue;
    GemmPlan plan;
    std::string why;
    const bool ok = c.accept(q, target, &plan, &why);
    out.push_back({c.name, ok, ok ? "" : why});
    if (ok) break;
  }
  return out;
}

GemmPlan select_gemm(const GemmQuery& q, const target::Target& target) {
  if (q.c_scope != ir::Scope::kFragment) {
    throw_user_error("T.gemm: the accumulator C must be a fragment (T.alloc_fragment), not " +
                         std::string(ir::scope_name(q.c_scope)),
                     q.loc, "allocate C with T.alloc_fragment((M, N), accum_dtype) and copy it out after the loop");
  }
  if (q.m <= 0 || q.n <= 0 || q.k <= 0) {
    throw_user_error("T.gemm: M, N and K must be positive constants (got M=" + std::to_string(q.m) +
                         ", N=" + std::to_string(q.n) + ", K=" + std::to_string(q.k) + ")",
                     q.loc);
  }
  GemmPlan plan;
  std::string why;
  if (!q.instruction.empty()) {
    for (const auto& c : chain()) {
      if (q.instruction != c.name) continue;
      if (c.accept(q, target, &plan, &why)) return plan;
      throw_user_error("T.gemm(instruction=\"" + q.instruction + "\") cannot be used here: " + why, q.loc,
                       "leave `instruction` out to let tilec choose");
    }
    std::string known;
    for (const auto& c : chain()) known += (known.empty() ? "" : ", ") + std::string("\"") + c.name + "\"";
    throw_user_error("T.gemm: unknown instruction \"" + q.instruction + "\"", q.loc, "use one of " + known);
  }
  // A and B of different dtypes: only wgmma's float8 mixes (e4m3 x e5m2) exist; anything
  // else is one clear error, not a list of every instruction's refusal.
  const bool float8_mix = q.a_dtype.bits() == 8 && q.b_dtype.bits() == 8 && q.a_dtype.is_float() && q.b_dtype.is_float();
  if (q.a_dtype != q.b_dtype && !float8_mix) {
    throw_user_error("T.gemm: the operands A and B must have the same dtype, got A " + q.a_dtype.str() + " and B " +
                         q.b_dtype.str(),
                     q.loc,
                     "allocate both tiles with one dtype, or convert one first (T.copy into a " + q.a_dtype.str() +
                         " tile converts)");
  }
  std::string reasons;
  for (const auto& c : chain()) {
    if (c.accept(q, target, &plan, &why)) return plan;
    if (!c.on_generation || c.on_generation(target)) reasons += std::string("\n    ") + c.name + ": " + why;
  }
  throw_user_error("T.gemm cannot be lowered for " + target.str() + ":" + reasons, q.loc);
}

}  // namespace tilec::cuda
