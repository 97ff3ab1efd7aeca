// The mixed-radix ("digit") form of a fragment, the structure behind inverses,
// projections and register-index rewriting.
//
// Each input coordinate x_d is written in mixed radix: x_d = sum_g v_g * in_stride_g with
// digit value v_g = (x_d // in_stride_g) % extent_g. Each digit goes either to the thread
// index or to the register index, scaled by out_stride_g:
//     thread   = sum_{thread digits} v_g * out_stride_g   (+ replica digits)
//     register = sum_{register digits} v_g * out_stride_g
// The replica index r in [0, replicate) is a pseudo-dimension (kRepDim) whose digits all
// go to the thread. The top digit of a dimension may be "open": in_stride * extent can
// exceed the dimension's extent (e.g. 100 elements over 32 threads: 4 registers, the
// last partly empty). Digits of extent 1 are never stored.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tilec/ir/buffer.h"

namespace tilec::layout {

inline constexpr int kRepDim = -1;

struct Digit {
  int dim = 0;             // input dimension, or kRepDim
  int64_t in_stride = 1;   // value = (x_dim // in_stride) % extent
  int64_t extent = 1;
  bool on_thread = false;  // else register
  int64_t out_stride = 1;
};

struct DigitForm {
  std::vector<int64_t> shape;
  int64_t replicate = 1;
  std::vector<Digit> digits;

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t dim_extent(int dim) const { return dim == kRepDim ? replicate : shape[dim]; }
  int64_t local_size() const;     // max register + 1
  int64_t thread_extent() const;  // max thread + 1
  // Digits of one dimension (or kRepDim), sorted by in_stride.
  std::vector<Digit> digits_of(int dim) const;
  bool is_top(const Digit& d) const;  // highest digit of its dimension
  int64_t thread_of(const int64_t* idx, int64_t rep) const;
  int64_t local_of(const int64_t* idx) const;
  // Checks the invariants above (contiguous in_strides per dimension, extents cover it).
  bool well_formed() const;
};

// Keeps the dimensions `kept` (in that order): thread digits of dropped dimensions
// become replica digits, their register digits disappear, registers are renumbered
// densely (see layout::project).
DigitForm project_form(const DigitForm& f, const std::vector<int>& kept);

// Splits dimension `dim` at `c` (which must divide its extent): the dimension becomes
// x // c and a new last dimension x % c is appended (extent c). A digit that straddles c
// is cut in two when c falls on one of its multiples. Nullopt when c cuts a digit
// elsewhere. Used to read a loop layout through an index `j // c` (project the new
// dimension away: its thread digits become replicas).
std::optional<DigitForm> split_dim_form(const DigitForm& f, int dim, int64_t c);

// Recovers the digit form of a constant-shaped fragment by probing and then verifying
// every element. Nullopt when the fragment is not of this form.
std::optional<DigitForm> fit_digit_form(const ir::Layout& frag);
// The fragment with clean expressions (no trivial divisions or modulos).
ir::Layout to_layout(const DigitForm& f);

// ---- symbolic mixed-radix values (used for inverses and register indices) ----
// An atom contributes value * in_stride, value = (src // src_div) % src_mod in
// [0, extent); src_mod == 0 means no modulo (the value is already < extent).
struct Atom {
  ir::Expr src;
  int64_t src_div = 1;
  int64_t src_mod = 0;
  int64_t extent = 1;
  int64_t in_stride = 1;
  ir::Expr value() const;
};
// Sorted by in_stride, contiguous (in_stride of atom k+1 = in_stride_k * extent_k).
using MixedRadix = std::vector<Atom>;

ir::Expr radix_value(const MixedRadix& x);  // sum value * in_stride
// (x // s) % e as a sum of (parts of) atoms, when s and s*e fall on atom boundaries or
// inside atoms that can be split there; e == 0 means no modulo. Nullopt otherwise.
std::optional<ir::Expr> extract_digit(const MixedRadix& x, int64_t s, int64_t e);

struct DigitInverse {
  std::vector<MixedRadix> dims;  // per input dimension
  MixedRadix rep;                // the replica index the thread holds
  ir::Expr valid;                // null = always
};
// See layout::inverse.
DigitInverse invert(const DigitForm& f, const ir::Expr& thread, const ir::Expr& local, int64_t num_threads,
                    bool first_replica_only);

// Small constructors that fold the trivial cases (x * 1, x + 0, x // 1, ...).
ir::Expr idx_add(const ir::Expr& a, const ir::Expr& b);
ir::Expr idx_mul(const ir::Expr& a, int64_t c);
ir::Expr idx_div(const ir::Expr& a, int64_t c);
ir::Expr idx_mod(const ir::Expr& a, int64_t c);
ir::Expr idx_and(const ir::Expr& a, const ir::Expr& b);  // null = true

}  // namespace tilec::layout
