// Fast evaluation of integer index expressions over constant inputs.
//
// Layout algebra decides equality, inverses and ownership by enumerating constant tile
// shapes, so it evaluates the same expression many thousands of times. An IntProgram
// compiles an expression once into postfix form over numbered variable slots.
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

// One-off evaluation (compiles each time): for tests and small queries.
int64_t eval_int(const ir::Expr& e, const std::vector<ir::Var>& vars, const std::vector<int64_t>& values);

}  // namespace tilec::layout
