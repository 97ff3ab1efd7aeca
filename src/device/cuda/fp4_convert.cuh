// tilec device library: float4_e2m1 (OCP MX "FP4": 1 sign, 2 exponent, 1 mantissa bit)
// codes <-> float, in plain C++ that compiles for the device (NVRTC) and for the host (the
// C++ tests compare it with the CPU target's rounding, tests/cpp/fp4_convert_test.cc).
//
// A code is 4 bits: bit 3 the sign, bits 2..0 the magnitude 0, 0.5, 1, 1.5, 2, 3, 4, 6.
// float -> code is what `cvt.rn.satfinite.e2m1x2.f32` does: round to nearest, ties to the
// even code, magnitudes above 6 (and inf) saturate to 6, the sign of zero is kept, and NaN
// gives +6 (code 0x7), the largest positive value. No toolkit header: no <cuda_fp4.h>.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TL_FP4_HD __host__ __device__ __forceinline__
#else
#define TL_FP4_HD inline
#endif

namespace tl {
namespace fp4_detail {

TL_FP4_HD unsigned int float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  unsigned int u;
  __builtin_memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

}  // namespace fp4_detail

// The 4-bit code of x (in the low bits of the result).
TL_FP4_HD unsigned char e2m1_code_from_float(float x) {
  const unsigned int bits = fp4_detail::float_bits(x);
  const unsigned int abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return 0x7;  // NaN -> +6
  const float a = x < 0.0f ? -x : x;
  // One step per rounding boundary passed. The midpoints 0.25, 1.25, 2.5 and 5 round down
  // (to the even codes 0, 2, 4, 6: strict >), 0.75, 1.75 and 3.5 round up (to 2, 4, 6: >=).
  // Written out, not as an array: a namespace-scope array is host-only for nvcc.
  const unsigned char code = static_cast<unsigned char>((a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) +
                                                        (a > 2.5f) + (a >= 3.5f) + (a > 5.0f));
  return static_cast<unsigned char>(code | ((bits >> 28) & 0x8u));
}

// The value of a 4-bit code (bits above the low four are ignored).
TL_FP4_HD float e2m1_code_to_float(unsigned int code) {
  const unsigned int e = (code >> 1) & 3u, m = code & 1u;
  // e == 0: 0 or 0.5 (subnormal); else (1 + m / 2) * 2^(e - 1).
  const float mag = e == 0 ? 0.5f * static_cast<float>(m) : static_cast<float>(2u + m) * static_cast<float>(1u << e) * 0.25f;
  return (code & 0x8u) ? -mag : mag;
}

}  // namespace tl
