// The wgmma candidate of T.gemm's instruction selection (sm_90a; see gemm_isel.h).
//
// Accepts when: the target has wgmma and tl.disable_wgmma is not set; C is f32 (s32 for
// int8) and the operand types have a wgmma form; A and B are K-major unless the type is
// f16/bf16 (which may be MN-major: the transpose bits of the descriptor); A comes from
// shared memory, or from a 16-bit or fp8 register fragment that is not transposed; the block is
// whole warpgroups; M splits into 64-row atoms per warpgroup and N into columns that are a
// multiple of 8 per warpgroup; K is a multiple of the instruction's K.
// Warpgroup partition: TileLang's wgmma partitions, in warps (m_warp a multiple of 4, 16
// rows and 8 columns per warp at least), read as warpgroups: wg_m = m_warp / 4, wg_n =
// n_warp. FullRow takes the most warpgroups along M, FullCol the fewest; Square (whose
// split changes only speed) the one whose instructions read the least shared memory,
// then the one whose per-warp tile is closest in shape to the whole tile. With A in registers every
// warpgroup sits along M (wg_n = 1): each holds the rows of A it multiplies.
// The instruction N (atom_n) is the widest legal wgmma N dividing a warpgroup's columns.
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "target/cuda/wgmma_kinds.h"
#include "tilec/target/cuda/gemm_isel.h"

namespace tilec::cuda {

using ir::DataType;

namespace {

// The operand type of (A, B, C), or null with the reason.
const WgmmaKind* wgmma_kind_for(const GemmQuery& q, std::string* why) {
  if (const WgmmaKind* k = find_wgmma_kind(q.a_dtype, q.b_dtype, q.c_dtype)) return k;
  *why = "wgmma supports float16 x float16, bfloat16 x bfloat16, float32 (as tf32) and float8 (e4m3/e5m2, any "
         "mix) -> float32, and int8 x int8 / uint8 x uint8 -> int32, not A " +
         q.a_dtype.str() + ", B " + q.b_dtype.str() + ", C " + q.c_dtype.str();
  return nullptr;
}

bool legal_atom_n(const WgmmaKind& kind, int64_t n) {
  if (n % 8 != 0 || n < 8 || n > 256) return false;
  if (kind.integer) return n <= 32 || n % 16 == 0;
  return true;
}

// The widest instruction N that divides a warpgroup's `columns`; 0 when none does.
int widest_atom(const WgmmaKind& kind, int64_t columns) {
  for (int n = 256; n >= 8; n -= 8)
    if (columns % n == 0 && legal_atom_n(kind, n)) return n;
  return 0;
}

}  // namespace

int wgmma_k(int kind) { return wgmma_kind(kind).k; }

const char* wgmma_kind_constant(int kind) { return wgmma_kind(kind).constant; }

bool accept_wgmma(const GemmQuery& q, const target::Target& t, GemmPlan* plan, std::string* why) {
  if (!t.has_wgmma()) {
    *why = "wgmma needs sm_90a, the target is " + t.str();
    return false;
  }
  if (!q.allow_wgmma) {
    *why = "disabled by the pass config tl.disable_wgmma";
    return false;
  }
  if (!ir::is_shared(q.b_scope)) {
    *why = std::string("wgmma reads B from shared memory (T.alloc_shared), not ") + ir::scope_name(q.b_scope);
    return false;
  }
  const bool a_in_registers = !ir::is_shared(q.a_scope);
  if (a_in_registers && q.a_scope != ir::Scope::kFragment) {
    *why = std::string("wgmma reads A from shared memory or a register fragment, not ") + ir::scope_name(q.a_scope);
    return false;
  }
  const WgmmaKind* kind = wgmma_kind_for(q, why);
  if (!kind) return false;
  const bool sixteen_bit = kind->sixteen_bit;
  // K-major means A not transposed (M x K) and B transposed (N x K).
  if (!sixteen_bit && (q.trans_a || !q.trans_b)) {
    *why = "wgmma reads " + q.a_dtype.str() + " operands K-major only: store A as M x K and B as N x K " +
           "(transpose_B=True)";
    return false;
  }
  // Register A: 16-bit (the accumulator layout) or fp8 (its own layout, which T.copy makes
  // from a float32 accumulator: ops/copy_wgmma_a8.cc); never tf32 or integers here.
  const bool fp8_a = !kind->integer && q.a_dtype.bits() == 8;
  if (a_in_registers && (!(sixteen_bit || fp8_a) || q.trans_a)) {
    *why = "wgmma takes A from registers only for float16/bfloat16/float8 A that is not transposed";
    return false;
  }
  const int kk = kind->k;
  if (q.num_threads % 128 != 0) {
    *why = "wgmma runs on whole warpgroups (128 threads), the block has " + std::to_string(q.num_threads);
    return false;
  }
  if (q.m % 64 != 0 || q.k % kk != 0 || q.n % 8 != 0) {
    std::ostringstream os;
    os << "wgmma needs M % 64 == 0, N % 8 == 0 and K % " << kk << " == 0, the tile is M=" << q.m << " N=" << q.n
       << " K=" << q.k;
    *why = os.str();
    return false;
  }
  // Warp splits (m_warp a multiple of 4), as TileLang enumerates them.
  const int warps = q.num_threads / 32;
  std::vector<std::pair<int, int>> splits;
  for (int mw = 4; mw <= warps; mw += 4) {
    if (warps % mw != 0) continue;
    const int nw = warps / mw;
    if (q.m % (16 * mw) != 0 || q.n % (8 * nw) != 0) continue;
    const int atom = widest_atom(*kind, q.n / nw);
    if (atom == 0) continue;
    // B stored K x N (N contiguous) is read in swizzle spans of N: at least 32 bytes each.
    if (!q.trans_b && (int64_t(atom) * q.b_dtype.bytes()) % 32 != 0) continue;
    if (a_in_registers && nw != 1) continue;
    splits.emplace_back(mw, nw);
  }
  if (splits.empty()) {
    std::ostringstream os;
    os << "the " << q.m << "x" << q.n << " C tile cannot be split over " << warps / 4
       << " warpgroups (each needs a multiple of 64 rows and of 8 columns that a wgmma N divides"
       << (a_in_registers ? ", and with A in registers all of them along M" : "") << ")";
    *why = os.str();
    return false;
  }
  std::pair<int, int> pick = splits.front();
  WarpPolicy policy = a_in_registers ? WarpPolicy::kFullRow : q.policy;
  // The partition changes only speed, never results: a Square gemm may be asked to split
  // like FullRow / FullCol instead (pass config tilec.wgmma_partition).
  if (policy == WarpPolicy::kSquare && !q.wgmma_partition.empty()) {
    auto p = parse_warp_policy(q.wgmma_partition);
    if (p) policy = *p;
  }
  switch (policy) {
    case WarpPolicy::kFullRow: pick = splits.back(); break;
    case WarpPolicy::kFullCol: pick = splits.front(); break;
    case WarpPolicy::kSquare: {
      // The split changes only speed. Square picks the one whose instructions read the
      // fewest operand elements from shared memory per K step (each 64 x N atom reads 64 rows
      // of A and N columns of B): for 128 x 256 on two warpgroups one m64n256 each (what
      // CUTLASS's cooperative kernel does) rather than TileLang's two m64n128 each. Ties go
      // to TileLang's balance rule.
      const double ideal = double(q.m) / double(q.n);
      double best_balance = std::numeric_limits<double>::max();
      int64_t best_traffic = std::numeric_limits<int64_t>::max();
      for (auto [mw, nw] : splits) {
        const int64_t atom = widest_atom(*kind, q.n / nw);
        const int64_t m_atoms = q.m / (mw / 4) / 64, n_atoms = q.n / nw / atom;  // per warpgroup
        const int64_t traffic = int64_t(mw / 4) * nw * m_atoms * n_atoms * (64 + atom);
        const double per_m = double(q.m) / (16.0 * mw), per_n = double(q.n) / (8.0 * nw);
        const double balance = std::fabs(per_m / per_n - ideal);
        if (traffic < best_traffic || (traffic == best_traffic && balance < best_balance)) {
          best_traffic = traffic, best_balance = balance, pick = {mw, nw};
        }
      }
      break;
    }
  }
  plan->inst = GemmInst::kWgmma;
  plan->wg_m = pick.first / 4;
  plan->wg_n = pick.second;
  plan->atom_n = widest_atom(*kind, q.n / pick.second);
  plan->wgmma_kind = kind->id;
  plan->a_in_registers = a_in_registers;
  return true;
}

}  // namespace tilec::cuda
