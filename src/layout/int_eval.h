// Fast evaluation of integer index expressions over constant inputs.
//
// Layout algebra decides equality, inverses and ownership over constant tile shapes. Three
// tools, cheapest first:
//   * is_separable: an expression that is a sum of one-variable terms is known everywhere
//     from its values along each axis (f(x) = f(0) + sum_d (f(x_d e_d) - f(0))), so a check
//     over a box costs the sum of its extents instead of their product;
//   * eval_box: every point of a box at once, one vector loop per expression node;
//   * IntProgram: one point at a time, compiled once into postfix form over numbered slots.
// IntProgram lives in int_eval.cc, the whole-box tools in box_eval.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "tilec/ir/expr.h"

namespace tilec::layout {

class IntProgram {
 public:
  // `slots[i]` is the variable read from values[i] at evaluation. Raises InternalError
  // for an expression it cannot evaluate (a float, a buffer load, an unknown variable);
  // use `compiles()` to ask first.
  IntProgram(const ir::Expr& e, const std::vector<ir::Var>& slots);
  static bool compiles(const ir::Expr& e, const std::vector<ir::Var>& slots);
  int64_t eval(const int64_t* values) const;

 private:
  enum class Code : uint8_t {
    kConst, kSlot, kAdd, kSub, kMul, kTruncDiv, kTruncMod, kFloorDiv, kFloorMod, kMin, kMax,
    kEQ, kNE, kLT, kLE, kGT, kGE, kAnd, kOr, kNot, kSelect, kXor, kBitAnd, kBitOr, kShl, kShr,
  };
  struct Op {
    Code code;
    int64_t arg;
  };
  void emit(const ir::Expr& e, const std::vector<ir::Var>& slots);
  std::vector<Op> ops_;
  int max_depth_ = 0;
};

// Whether `e`, with IntProgram's semantics (casts are transparent), is a sum of terms that
// each read at most one of `slots`: sums, differences and products with slot-free factors of
// such sums, and any subexpression that reads one slot or none. False when `e` does not compile.
bool is_separable(const ir::Expr& e, const std::vector<ir::Var>& slots);

// Whether ea (over slots_a) and eb (over slots_b, positionally the same slots) are equal at
// every point of the box 0 <= slot_i < box[i]: along the axes when both are separable (two
// separable functions that agree at 0 and on every axis agree everywhere), else by eval_box.
bool agree_on_box(const ir::Expr& ea, const std::vector<ir::Var>& slots_a, const ir::Expr& eb,
                  const std::vector<ir::Var>& slots_b, const std::vector<int64_t>& box);

// The value of `e` at every point of the box 0 <= slot_i < box[i], row-major (the last slot
// fastest); a slot of extent 1 stays 0. Same semantics and errors as IntProgram.
std::vector<int64_t> eval_box(const ir::Expr& e, const std::vector<ir::Var>& slots, const std::vector<int64_t>& box);
// The same over the box shifted to start at `lo`: slot_i in lo[i] + [0, box[i]).
std::vector<int64_t> eval_box(const ir::Expr& e, const std::vector<ir::Var>& slots, const std::vector<int64_t>& box,
                              const std::vector<int64_t>& lo);

// One-off evaluation (compiles each time): for tests and small queries.
int64_t eval_int(const ir::Expr& e, const std::vector<ir::Var>& vars, const std::vector<int64_t>& values);

}  // namespace tilec::layout
