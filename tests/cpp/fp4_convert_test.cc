// float4_e2m1 conversions: the device library's (src/device/cuda/fp4_convert.cuh, compiled
// here for the host) and the CPU target's (cpu::round_float) against one table, and against
// each other on a sweep, so both targets round identically (nearest, ties to the even code,
// saturating at +-6, NaN -> +6, the sign of zero kept).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "device/cuda/fp4_convert.cuh"
#include "target/cpu/dtype.h"

namespace {

using tilec::ir::DataType;

// The value of each code 0..15.
const float kCodeValues[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                               -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

struct Case {
  float input;
  unsigned code;
};

// Every value, every midpoint (ties to the even code: 0, 2, 4, 6 are even), just around the
// midpoints, saturation and the special values. Negative inputs mirror with bit 3 set.
const Case kCases[] = {
    {0.0f, 0x0},     {0.5f, 0x1},     {1.0f, 0x2},     {1.5f, 0x3},    {2.0f, 0x4},  {3.0f, 0x5},
    {4.0f, 0x6},     {6.0f, 0x7},                                                                 // values
    {0.25f, 0x0},    {0.75f, 0x2},    {1.25f, 0x2},    {1.75f, 0x4},   {2.5f, 0x4},  {3.5f, 0x6},
    {5.0f, 0x6},                                                                                  // midpoints
    {0.2499f, 0x0},  {0.2501f, 0x1},  {0.7499f, 0x1},  {0.7501f, 0x2}, {1.2499f, 0x2},
    {1.2501f, 0x3},  {1.7499f, 0x3},  {1.7501f, 0x4},  {2.4999f, 0x4}, {2.5001f, 0x5},
    {3.4999f, 0x5},  {3.5001f, 0x6},  {4.9999f, 0x6},  {5.0001f, 0x7},                           // near them
    {1e-30f, 0x0},   {6.5f, 0x7},     {7.0f, 0x7},     {1e30f, 0x7},                             // tiny, saturating
};

unsigned cpu_code(float x) {
  // The CPU target keeps float values; map its rounded value back to a code.
  const double r = tilec::cpu::round_float(DataType::Float4E2M1(), x);
  for (unsigned c = 0; c < 16; ++c)
    if (static_cast<double>(kCodeValues[c]) == r && std::signbit(r) == std::signbit(kCodeValues[c])) return c;
  return 0xFF;
}

TEST(Fp4Convert, TableBothTargets) {
  for (const Case& k : kCases) {
    for (float sign : {1.0f, -1.0f}) {
      const float x = sign * k.input;
      const unsigned want = k.code | (sign < 0 ? 0x8u : 0u);
      EXPECT_EQ(tl::e2m1_code_from_float(x), want) << "device lib, input " << x;
      EXPECT_EQ(cpu_code(x), want) << "CPU target, input " << x;
    }
  }
}

TEST(Fp4Convert, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(tl::e2m1_code_from_float(inf), 0x7u);
  EXPECT_EQ(tl::e2m1_code_from_float(-inf), 0xFu);
  EXPECT_EQ(tl::e2m1_code_from_float(nan), 0x7u);  // cvt.rn.satfinite.e2m1x2: NaN -> +MAXNORM
  EXPECT_EQ(tl::e2m1_code_from_float(-nan), 0x7u);
  EXPECT_EQ(cpu_code(inf), 0x7u);
  EXPECT_EQ(cpu_code(-inf), 0xFu);
  EXPECT_EQ(cpu_code(nan), 0x7u);
  EXPECT_EQ(tl::e2m1_code_from_float(-0.0f), 0x8u);
  EXPECT_EQ(tl::e2m1_code_from_float(-0.1f), 0x8u);
}

TEST(Fp4Convert, DecodeRoundTrip) {
  for (unsigned c = 0; c < 16; ++c) {
    const float v = tl::e2m1_code_to_float(c);
    EXPECT_EQ(v, kCodeValues[c]) << "code " << c;
    EXPECT_EQ(std::signbit(v), std::signbit(kCodeValues[c])) << "code " << c;
    EXPECT_EQ(tl::e2m1_code_from_float(v), c) << "code " << c;
    EXPECT_EQ(cpu_code(v), c) << "code " << c;
    EXPECT_EQ(tl::e2m1_code_to_float(c | 0xF0u), v) << "high bits are ignored";
  }
}

// Every float32 bit pattern in steps (all exponents, many mantissas): the two agree.
TEST(Fp4Convert, SweepAgreesWithCpuTarget) {
  int checked = 0;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 0x10001ull) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, sizeof(x));
    ASSERT_EQ(tl::e2m1_code_from_float(x), cpu_code(x)) << "input bits 0x" << std::hex << b;
    ++checked;
  }
  EXPECT_GT(checked, 60000);
}

}  // namespace
