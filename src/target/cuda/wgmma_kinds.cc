// The wgmma operand type table (see wgmma_kinds.h). PTX ISA "warpgroup MMA": K is 16 for
// f16/bf16, 8 for tf32, 32 for fp8 and int8; only f16/bf16 take transpose immediates and
// a register A; int8 accumulates in s32 without the imm-scale operands.
#include "target/cuda/wgmma_kinds.h"

#include <vector>

#include "tilec/support/diag.h"

namespace tilec::cuda {

using ir::DataType;

namespace {

const std::vector<WgmmaKind>& table() {
  const DataType f16 = DataType::Float(16), bf16 = DataType::BFloat16(), f32 = DataType::Float(32);
  const DataType e4 = DataType::Float8E4M3(), e5 = DataType::Float8E5M2(), s32 = DataType::Int(32);
  static const std::vector<WgmmaKind> kinds = {
      {0, f16, f16, f32, "tl::kWgmmaF16", "f16", "f16", 16, false, true},
      {1, bf16, bf16, f32, "tl::kWgmmaBF16", "bf16", "bf16", 16, false, true},
      {2, f32, f32, f32, "tl::kWgmmaTF32", "tf32", "tf32", 8, false, false},
      {3, e4, e4, f32, "tl::kWgmmaE4M3E4M3", "e4m3", "e4m3", 32, false, false},
      {4, e4, e5, f32, "tl::kWgmmaE4M3E5M2", "e4m3", "e5m2", 32, false, false},
      {5, e5, e4, f32, "tl::kWgmmaE5M2E4M3", "e5m2", "e4m3", 32, false, false},
      {6, e5, e5, f32, "tl::kWgmmaE5M2E5M2", "e5m2", "e5m2", 32, false, false},
      {7, DataType::Int(8), DataType::Int(8), s32, "tl::kWgmmaS8", "s8", "s8", 32, true, false},
      {8, DataType::UInt(8), DataType::UInt(8), s32, "tl::kWgmmaU8", "u8", "u8", 32, true, false},
  };
  return kinds;
}

}  // namespace

const WgmmaKind& wgmma_kind(int id) {
  const auto& kinds = table();
  TILEC_ICHECK(id >= 0 && id < static_cast<int>(kinds.size())) << "unknown wgmma operand kind " << id;
  return kinds[id];
}

const WgmmaKind* find_wgmma_kind(DataType a, DataType b, DataType c) {
  for (const auto& k : table())
    if (k.a == a && k.b == b && k.c == c) return &k;
  return nullptr;
}

}  // namespace tilec::cuda
