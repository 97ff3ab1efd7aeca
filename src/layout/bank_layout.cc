// A shared buffer's layout chosen from how its threads touch it (include/tilec/layout/bank_layout.h).
#include "tilec/layout/bank_layout.h"

#include <algorithm>
#include <map>
#include <set>

#include "layout/int_eval.h"
#include "tilec/ir/mutator.h"
#include "tilec/layout/layout.h"
#include "tilec/layout/swizzle.h"

namespace tilec::layout {

namespace {

using namespace ir;

constexpr int64_t kMaxPoints = 1 << 16;  // nests larger than this are not sampled
constexpr int kBanks = 32;

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

struct Candidate {
  std::string name;
  Layout layout;
};

// One sampled warp access: per register slot, the element (logical index) each of the first
// warp's lanes touches there (-1: the lane has no element at that slot).
struct Sample {
  std::vector<std::vector<std::vector<int64_t>>> by_slot;  // [slot][lane] -> logical index
};

std::optional<Sample> sample(const SharedAccess& a, const std::vector<int64_t>& shape) {
  int64_t points = 1;
  for (int64_t e : a.extents) points *= e;
  if (points <= 0 || points > kMaxPoints || a.indices.size() != shape.size()) return std::nullopt;
  const Layout& loop = a.loop_layout;
  // The loop layout's thread and register, the access's indices, over the nest's box (other
  // variables at 0: block indices, enclosing serial loops).
  std::vector<Expr> idx;
  for (const auto& e : a.indices) idx.push_back(e);
  std::vector<Var> slots = a.vars;
  // Every variable but the nest's: 0.
  class ZeroOthers : public IRMutator {
   public:
    explicit ZeroOthers(const std::vector<Var>& keep) : keep_(keep) {}

   protected:
    Expr mutate_Var(const Expr& e, const VarNode* op) override {
      for (const auto& k : keep_)
        if (k.get() == op) return e;
      return int_imm(0, op->dtype);
    }

   private:
    const std::vector<Var>& keep_;
  };
  auto at_zero = [&](const Expr& e) { return ZeroOthers(slots).mutate(e); };
  VarMap to_loop;
  for (size_t d = 0; d < loop->vars.size() && d < slots.size(); ++d) to_loop[loop->vars[d].get()] = slots[d];
  Expr thread = substitute(loop->forward_thread, to_loop);
  if (loop->rep_var.defined()) {
    VarMap r;
    r[loop->rep_var.get()] = int_imm(0, loop->rep_var->dtype);
    thread = substitute(thread, r);
  }
  Expr local = substitute(loop->forward_index.empty() ? int_imm(0) : loop->forward_index[0], to_loop);
  for (auto* e : {&thread, &local}) *e = at_zero(*e);
  for (auto& e : idx) e = at_zero(e);
  for (const Expr& e : idx)
    if (!IntProgram::compiles(e, slots)) return std::nullopt;
  if (!IntProgram::compiles(thread, slots) || !IntProgram::compiles(local, slots)) return std::nullopt;
  std::vector<int64_t> t = eval_box(thread, slots, a.extents), l = eval_box(local, slots, a.extents);
  std::vector<std::vector<int64_t>> iv;
  for (const auto& e : idx) iv.push_back(eval_box(e, slots, a.extents));
  Sample s;
  for (int64_t p = 0; p < points; ++p) {
    if (t[p] < 0 || t[p] >= kBanks || l[p] < 0) continue;
    if (static_cast<size_t>(l[p]) >= s.by_slot.size()) s.by_slot.resize(l[p] + 1, std::vector<std::vector<int64_t>>(kBanks));
    std::vector<int64_t> logical;
    for (size_t d = 0; d < iv.size(); ++d) {
      if (iv[d][p] < 0 || iv[d][p] >= shape[d]) return std::nullopt;  // outside the buffer: leave it alone
      logical.push_back(iv[d][p]);
    }
    s.by_slot[l[p]][t[p]] = logical;
  }
  return s;
}

// Shared-memory wavefronts and instructions of one sampled access under `layout`: register
// slots grouped into vectors of up to 16 bytes where every lane's elements are consecutive and
// aligned in the layout (what vectorize emits), each vector instruction served in 128-byte
// phases, each phase taking as many wavefronts as the most distinct words one bank serves.
struct Cost {
  int64_t wavefronts = 0, instructions = 0;
};

Cost cost(const Sample& s, const Layout& layout, int elem_bytes) {
  Cost c;
  const int64_t slots = static_cast<int64_t>(s.by_slot.size());
  auto offset = [&](const std::vector<int64_t>& logical) { return eval_index(layout, logical)[0]; };
  const int64_t max_vec = std::max<int64_t>(1, 16 / elem_bytes);
  for (int64_t v0 = 0; v0 < slots;) {
    // The widest vector starting at v0 that every active lane can use.
    int64_t width = 1;
    for (int64_t w = max_vec; w > 1; w /= 2) {
      if (v0 % w != 0 || v0 + w > slots) continue;
      bool ok = true;
      for (int lane = 0; lane < kBanks && ok; ++lane) {
        const auto& first = s.by_slot[v0][lane];
        if (first.empty()) continue;
        int64_t base = offset(first);
        ok = base % w == 0;
        for (int64_t k = 1; k < w && ok; ++k) {
          const auto& e = s.by_slot[v0 + k][lane];
          ok = !e.empty() && offset(e) == base + k;
        }
      }
      if (ok) {
        width = w;
        break;
      }
    }
    const int64_t bytes = width * elem_bytes;
    const int lanes_per_phase = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kBanks, 128 / bytes)));
    for (int p0 = 0; p0 < kBanks; p0 += lanes_per_phase) {
      std::map<int64_t, std::set<int64_t>> words;  // bank -> words
      for (int lane = p0; lane < p0 + lanes_per_phase; ++lane) {
        const auto& e = s.by_slot[v0][lane];
        if (e.empty()) continue;
        int64_t first_word = offset(e) * elem_bytes / 4;
        for (int64_t b = 0; b < std::max<int64_t>(1, bytes / 4); ++b) words[(first_word + b) % kBanks].insert(first_word + b);
      }
      int64_t degree = 0;
      for (const auto& [bank, ws] : words) degree = std::max<int64_t>(degree, static_cast<int64_t>(ws.size()));
      c.wavefronts += degree;
    }
    c.instructions += 1;
    v0 += width;
  }
  return c;
}

// Words XORed with the row (modulo the words of a row, at most 32): a column of 32 rows
// lands in 32 banks; an element keeps its place within its word.
Layout word_xor(const std::vector<int64_t>& shape, int elem_bytes) {
  const int64_t cols = shape.back(), per_word = 4 / elem_bytes;
  const int64_t row_words = cols / per_word, mask = std::min<int64_t>(row_words, kBanks);
  return make_plain(shape, [&](const std::vector<Var>& v) {
    Expr row = nullptr;
    int64_t stride = 1;
    for (size_t d = shape.size() - 1; d-- > 0;) {
      Expr term = stride == 1 ? Expr(v[d]) : Expr(v[d]) * int_imm(stride, v[d]->dtype);
      row = row ? term + row : term;
      stride *= shape[d];
    }
    if (!row) row = int_imm(0, v.back()->dtype);
    Expr col = v.back();
    DataType t = col->dtype;
    Expr word = per_word == 1 ? col : floordiv(col, int_imm(per_word, t));
    Expr swapped = call(DataType::Int(32), "tl.bitwise_xor", {word, floormod(row, int_imm(mask, t))});
    Expr in_row = per_word == 1 ? swapped : swapped * int_imm(per_word, t) + floormod(col, int_imm(per_word, t));
    return std::vector<Expr>{row * int_imm(cols, t) + in_row};
  });
}

}  // namespace

SharedLayoutChoice choose_shared_layout(const std::vector<int64_t>& shape, DataType dtype,
                                        const std::vector<SharedAccess>& accesses) {
  SharedLayoutChoice out{row_major(shape), "row-major", 0, 0};
  const int elem_bytes = dtype.bits() * dtype.lanes() / 8;
  if (shape.size() < 2 || elem_bytes < 1 || elem_bytes > 4 || 4 % elem_bytes != 0 || accesses.empty()) return out;
  std::vector<Sample> samples;
  for (const auto& a : accesses) {
    auto s = sample(a, shape);
    if (!s) return out;  // an access this cannot read: keep the default
    samples.push_back(std::move(*s));
  }
  std::vector<Candidate> cands = {{"row-major", row_major(shape)}};
  for (auto m : {SwizzleMode::k128B, SwizzleMode::k64B, SwizzleMode::k32B})
    if (swizzle_applicable(shape, dtype, m) && shape.back() * elem_bytes >= swizzle_span_bytes(m))
      cands.push_back({std::string(swizzle_name(m)) + " swizzle", swizzled_layout(shape, dtype, m)});
  const int64_t row_words = shape.back() * elem_bytes / 4;
  if (shape.back() * elem_bytes % 4 == 0 && is_pow2(row_words) && row_words >= 2)
    cands.push_back({"word XOR swizzle", word_xor(shape, elem_bytes)});
  bool first = true;
  Cost best;
  for (const auto& c : cands) {
    Cost total;
    for (const auto& s : samples) {
      Cost k = cost(s, c.layout, elem_bytes);
      total.wavefronts += k.wavefronts;
      total.instructions += k.instructions;
    }
    // Fewer wavefronts; then fewer instructions; then the earlier (simpler) candidate.
    if (first) {
      out.row_major_wavefronts = total.wavefronts;
    } else if (total.wavefronts > best.wavefronts ||
               (total.wavefronts == best.wavefronts && total.instructions >= best.instructions)) {
      continue;
    }
    first = false;
    best = total;
    out = {c.layout, c.name, out.row_major_wavefronts, total.wavefronts};
  }
  return out;
}

}  // namespace tilec::layout
