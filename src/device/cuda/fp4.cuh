// tilec device library: float4_e2m1 values and their packed storage.
//
//  * tl::float4_e2m1: one value in registers (its 4-bit code in a byte); converts from and to
//    float, so tl::cast and the lane-wise vector casts of common.cuh apply (through float);
//  * tl::fp4x2: the storage unit of every float4_e2m1 buffer (global, shared, local): one
//    byte holding elements 2k (low nibble) and 2k + 1 (high nibble), as torch's
//    float4_e2m1fn_x2 does;
//  * tl::fp4_get(p, i): element i of a packed buffer (any i);
//    tl::fp4_load<N>(p) / tl::fp4_store(p, v): N consecutive elements (N even) at the byte
//    p, one 1/2/4/8-byte access. There is no single-element store: two elements share a
//    byte, so the compiler only writes whole bytes (pairs) from one thread.
//
// float -> float4_e2m1 rounds to nearest even and saturates (fp4_convert.cuh); on targets
// with `cvt.rn.satfinite.e2m1x2.f32` (sm_100a / sm_101a / sm_120a and their families) that
// instruction does it, elsewhere the table of fp4_convert.cuh (identical results).
#pragma once

#include "tilec/common.cuh"
#include "tilec/fp4_convert.cuh"

#if defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM101_ALL) || \
    defined(__CUDA_ARCH_FEAT_SM103_ALL) || defined(__CUDA_ARCH_FEAT_SM120_ALL) || \
    defined(__CUDA_ARCH_FEAT_SM121_ALL) ||                                       \
    (defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && __CUDA_ARCH_FAMILY_SPECIFIC__ >= 1000)
#define TL_HAS_CVT_E2M1X2 1
#else
#define TL_HAS_CVT_E2M1X2 0
#endif

namespace tl {

// Codes of (lo, hi) packed into one byte: lo in bits 3..0, hi in bits 7..4.
TL_DEVICE uint8 e2m1x2_from_floats(float lo, float hi) {
#if TL_HAS_CVT_E2M1X2
  unsigned int r;
  // The first source operand goes to the upper half of the destination.
  asm("{\n .reg .b8 t;\n cvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n cvt.u32.u8 %0, t;\n}" : "=r"(r) : "f"(hi), "f"(lo));
  return static_cast<uint8>(r);
#else
  return static_cast<uint8>(e2m1_code_from_float(lo) | (e2m1_code_from_float(hi) << 4));
#endif
}

struct float4_e2m1 {
  uint8 code;  // bits 3..0
  float4_e2m1() = default;
  TL_DEVICE explicit float4_e2m1(float x) : code(static_cast<uint8>(e2m1x2_from_floats(x, 0.0f) & 0xF)) {}
  TL_DEVICE operator float() const { return e2m1_code_to_float(code); }
  TL_DEVICE static float4_e2m1 from_code(unsigned int c) {
    float4_e2m1 v;
    v.code = static_cast<uint8>(c & 0xF);
    return v;
  }
};

template <>
struct is_narrow_float<float4_e2m1> {
  static constexpr bool value = true;
};

struct fp4x2 {
  uint8 bits;
};
static_assert(sizeof(fp4x2) == 1 && sizeof(float4_e2m1) == 1, "tl::fp4x2 / tl::float4_e2m1 must be one byte");

template <>
TL_DEVICE float4_e2m1 cast<float4_e2m1, float>(const float& x) {
  return float4_e2m1(x);
}

template <typename I>
TL_DEVICE float4_e2m1 fp4_get(const fp4x2* p, I i) {
  const uint8 b = p[i >> 1].bits;
  return float4_e2m1::from_code((i & 1) ? (b >> 4) : b);
}

template <int N>
TL_DEVICE vec<float4_e2m1, N> fp4_load(const fp4x2* p) {
  static_assert(N % 2 == 0 && N >= 2 && N <= 32, "tl::fp4_load: 2 to 32 elements, an even number");
  const vec<fp4x2, N / 2> packed = load<N / 2>(p);
  vec<float4_e2m1, N> r;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    r[2 * i] = float4_e2m1::from_code(packed[i].bits);
    r[2 * i + 1] = float4_e2m1::from_code(packed[i].bits >> 4);
  }
  return r;
}

template <int N>
TL_DEVICE void fp4_store(fp4x2* p, const vec<float4_e2m1, N>& v) {
  static_assert(N % 2 == 0 && N >= 2 && N <= 32, "tl::fp4_store: 2 to 32 elements, an even number");
  vec<fp4x2, N / 2> packed;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) packed[i].bits = static_cast<uint8>((v[2 * i].code & 0xF) | (v[2 * i + 1].code << 4));
  store(p, packed);
}

TL_DEVICE void print_value(float4_e2m1 v) { printf("%g", static_cast<float>(v)); }

}  // namespace tl
