// mma.sync wrappers (sm_80+), destination first: d = a * b + c for one warp.
//
// Fragments are arrays of 32-bit registers in the PTX order (groupID = lane >> 2,
// tig = lane & 3):
//   m16n8k16 f16/bf16: a[4] = {(g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)}
//                      b[2] = {(k 2t..2t+1, n g), (k 2t+8.., n g)}
//   m16n8k8  tf32:     a[4] = {(g, t), (g+8, t), (g, t+4), (g+8, t+4)}
//                      b[2] = {(k t, n g), (k t+4, n g)}
//   m16n8k32 s8/u8:    a[4] = {(g, 4t..4t+3), (g+8, 4t..), (g, 16+4t..), (g+8, 16+4t..)}
//                      b[2] = {(k 4t..4t+3, n g), (k 16+4t.., n g)}
//   accumulator (f32 / s32), every shape: c[4] = {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)}
//   accumulator f16:   c[2] = {(g, 2t..2t+1), (g+8, 2t..2t+1)} packed as f16x2.
#pragma once

namespace tl {

__device__ __forceinline__ void mma_m16n8k16_f32_bf16(float* d, const unsigned* a, const unsigned* b,
                                                      const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void mma_m16n8k16_f32_f16(float* d, const unsigned* a, const unsigned* b,
                                                     const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

// f16 inputs, f16 accumulator: d and c are two f16x2 registers.
__device__ __forceinline__ void mma_m16n8k16_f16_f16(unsigned* d, const unsigned* a, const unsigned* b,
                                                     const unsigned* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
      "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
}

// a and b hold tf32 bit patterns (see f32_to_tf32).
__device__ __forceinline__ void mma_m16n8k8_f32_tf32(float* d, const unsigned* a, const unsigned* b,
                                                     const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void mma_m16n8k32_s32_s8(int* d, const unsigned* a, const unsigned* b,
                                                    const int* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]),
        "r"(c[2]), "r"(c[3]));
}

__device__ __forceinline__ void mma_m16n8k32_s32_u8(int* d, const unsigned* a, const unsigned* b,
                                                    const int* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]),
        "r"(c[2]), "r"(c[3]));
}

// Round an f32 bit pattern to tf32 (nearest, ties away), as the tensor core expects.
__device__ __forceinline__ unsigned f32_to_tf32(unsigned f32_bits) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(f32_bits)));
  return r;
}

}  // namespace tl
