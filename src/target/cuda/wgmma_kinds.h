// The wgmma operand types: one table that instruction selection (gemm_isel_sm90.cc) and
// the per-kernel atom emission (wgmma_atoms.cc) both read. A row's id is its index and
// the value of its device constant (tl::kWgmma* of src/device/cuda/gemm_sm90.cuh).
#pragma once

#include "tilec/ir/type.h"

namespace tilec::cuda {

struct WgmmaKind {
  int id;
  ir::DataType a, b, c;  // A x B -> C
  const char* constant;  // "tl::kWgmmaBF16"
  const char* ptx_a;     // PTX operand type names: "bf16", "e4m3", ...
  const char* ptx_b;
  int k;             // K of one instruction
  bool integer;      // s32 accumulator, no imm-scale operands, N <= 32 or a multiple of 16
  bool sixteen_bit;  // f16/bf16: MN-major operands (transpose bits) and A from registers
};

// The row of an operand type id (ICHECK on an unknown id).
const WgmmaKind& wgmma_kind(int id);
// The row for A x B -> C; null when wgmma has no such form.
const WgmmaKind* find_wgmma_kind(ir::DataType a, ir::DataType b, ir::DataType c);

}  // namespace tilec::cuda
