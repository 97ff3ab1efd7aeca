// IEEE half <-> float on the host, round to nearest even (no <cuda_fp16.h> needed): the C++
// examples fill float16 inputs and read float16 results with these, and check their
// GEMM + ReLU result against a double-precision host reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace tilec_examples {

inline uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) {  // subnormal or zero in half
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: inf
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float from_half(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    f = mant ? NAN : INFINITY;
  } else {
    f = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  }
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x |= sign;
  std::memcpy(&f, &x, 4);
  return f;
}

// C = relu(A @ B) for row-major float16 A (m x k), B (k x n), C (m x n), against a double
// reference: prints what is wrong and returns false on a non-finite element (the poison left
// unwritten) or an error above 1e-2 of the largest reference value.
inline bool matches_gemm_relu(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                              const std::vector<uint16_t>& c, int64_t m, int64_t n, int64_t k) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t x = 0; x < k; ++x) ref += double(from_half(a[i * k + x])) * double(from_half(b[x * n + j]));
      ref = std::max(ref, 0.0);  // ReLU
      const double got = from_half(c[i * n + j]);
      if (!std::isfinite(got)) {
        std::printf("C[%lld, %lld] is not finite (poison not overwritten?)\n", static_cast<long long>(i),
                    static_cast<long long>(j));
        return false;
      }
      worst = std::max(worst, std::fabs(got - ref));
      scale = std::max(scale, std::fabs(ref));
    }
  if (worst > 1e-2 * std::max(scale, 1.0)) {
    std::printf("mismatch: max error %g of max %g\n", worst, scale);
    return false;
  }
  return true;
}

}  // namespace tilec_examples
