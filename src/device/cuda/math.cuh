// tilec device library: math functions for float, double, half and bfloat16 (and lane-wise
// for tl::vec), the spellings of the user-visible math intrinsics (T.exp, T.max, ...).
//
// half and bfloat16 compute in float and round once: the precise result, not the
// approximate hardware f16 paths. Float uses the accurate CUDA functions; defining
// TILEC_FAST_MATH before including this header switches exp/exp2/log/log2/sin/cos/tanh
// to the fast intrinsics (__expf, ...), as -use_fast_math would.
#pragma once

#include "tilec/common.cuh"

namespace tl {

#ifdef TILEC_FAST_MATH
TL_DEVICE float exp(float x) { return __expf(x); }
// One MUFU.EX2 (ex2.approx.ftz: ~2 ulp, subnormal results flushed to zero); exp2f without
// -use_fast_math adds the subnormal range handling around it.
TL_DEVICE float exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TL_DEVICE float log(float x) { return __logf(x); }
TL_DEVICE float log2(float x) { return __log2f(x); }
TL_DEVICE float sin(float x) { return __sinf(x); }
TL_DEVICE float cos(float x) { return __cosf(x); }
TL_DEVICE float tanh(float x) { return 2.0f / (1.0f + __expf(-2.0f * x)) - 1.0f; }
#else
TL_DEVICE float exp(float x) { return ::expf(x); }
TL_DEVICE float exp2(float x) { return ::exp2f(x); }
TL_DEVICE float log(float x) { return ::logf(x); }
TL_DEVICE float log2(float x) { return ::log2f(x); }
TL_DEVICE float sin(float x) { return ::sinf(x); }
TL_DEVICE float cos(float x) { return ::cosf(x); }
TL_DEVICE float tanh(float x) { return ::tanhf(x); }
#endif
TL_DEVICE float log10(float x) { return ::log10f(x); }
TL_DEVICE float sqrt(float x) { return ::sqrtf(x); }
TL_DEVICE float rsqrt(float x) { return ::rsqrtf(x); }
TL_DEVICE float abs(float x) { return ::fabsf(x); }
TL_DEVICE float floor(float x) { return ::floorf(x); }
TL_DEVICE float ceil(float x) { return ::ceilf(x); }
TL_DEVICE float round(float x) { return ::rintf(x); }  // half to even, like torch.round
TL_DEVICE float trunc(float x) { return ::truncf(x); }
TL_DEVICE float erf(float x) { return ::erff(x); }
TL_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + tl::exp(-x)); }
TL_DEVICE float pow(float x, float y) { return ::powf(x, y); }
TL_DEVICE float max(float a, float b) { return ::fmaxf(a, b); }
TL_DEVICE float min(float a, float b) { return ::fminf(a, b); }

TL_DEVICE double exp(double x) { return ::exp(x); }
TL_DEVICE double exp2(double x) { return ::exp2(x); }
TL_DEVICE double log(double x) { return ::log(x); }
TL_DEVICE double log2(double x) { return ::log2(x); }
TL_DEVICE double log10(double x) { return ::log10(x); }
TL_DEVICE double sin(double x) { return ::sin(x); }
TL_DEVICE double cos(double x) { return ::cos(x); }
TL_DEVICE double tanh(double x) { return ::tanh(x); }
TL_DEVICE double sqrt(double x) { return ::sqrt(x); }
TL_DEVICE double rsqrt(double x) { return ::rsqrt(x); }
TL_DEVICE double abs(double x) { return ::fabs(x); }
TL_DEVICE double floor(double x) { return ::floor(x); }
TL_DEVICE double ceil(double x) { return ::ceil(x); }
TL_DEVICE double round(double x) { return ::rint(x); }
TL_DEVICE double trunc(double x) { return ::trunc(x); }
TL_DEVICE double erf(double x) { return ::erf(x); }
TL_DEVICE double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
TL_DEVICE double pow(double x, double y) { return ::pow(x, y); }
TL_DEVICE double max(double a, double b) { return ::fmax(a, b); }
TL_DEVICE double min(double a, double b) { return ::fmin(a, b); }

// half / bfloat16: through float, one rounding.
#define TL_NARROW_UNARY(fn)                                                                     \
  TL_DEVICE __half fn(__half x) { return __float2half_rn(tl::fn(__half2float(x))); }           \
  TL_DEVICE __nv_bfloat16 fn(__nv_bfloat16 x) {                                                 \
    return __float2bfloat16_rn(tl::fn(__bfloat162float(x)));                                    \
  }
TL_NARROW_UNARY(exp)
TL_NARROW_UNARY(exp2)
TL_NARROW_UNARY(log)
TL_NARROW_UNARY(log2)
TL_NARROW_UNARY(log10)
TL_NARROW_UNARY(sin)
TL_NARROW_UNARY(cos)
TL_NARROW_UNARY(tanh)
TL_NARROW_UNARY(sqrt)
TL_NARROW_UNARY(rsqrt)
TL_NARROW_UNARY(floor)
TL_NARROW_UNARY(ceil)
TL_NARROW_UNARY(round)
TL_NARROW_UNARY(trunc)
TL_NARROW_UNARY(erf)
TL_NARROW_UNARY(sigmoid)
#undef TL_NARROW_UNARY
TL_DEVICE __half abs(__half x) { return __habs(x); }
TL_DEVICE __nv_bfloat16 abs(__nv_bfloat16 x) { return __habs(x); }
TL_DEVICE __half pow(__half x, __half y) { return __float2half_rn(::powf(__half2float(x), __half2float(y))); }
TL_DEVICE __nv_bfloat16 pow(__nv_bfloat16 x, __nv_bfloat16 y) {
  return __float2bfloat16_rn(::powf(__bfloat162float(x), __bfloat162float(y)));
}
// Float classification (T.isnan / T.isinf / T.isfinite): exact in float for every narrower
// type (their NaNs and infinities convert to float's).
TL_DEVICE bool isnan(float x) { return ::isnan(x); }
TL_DEVICE bool isinf(float x) { return ::isinf(x); }
TL_DEVICE bool isfinite(float x) { return ::isfinite(x); }
TL_DEVICE bool isnan(double x) { return ::isnan(x); }
TL_DEVICE bool isinf(double x) { return ::isinf(x); }
TL_DEVICE bool isfinite(double x) { return ::isfinite(x); }
template <typename T>
TL_DEVICE bool isnan(T x) { return ::isnan(static_cast<float>(x)); }
template <typename T>
TL_DEVICE bool isinf(T x) { return ::isinf(static_cast<float>(x)); }
template <typename T>
TL_DEVICE bool isfinite(T x) { return ::isfinite(static_cast<float>(x)); }
// max/min of narrow floats: NaN-ignoring like fmaxf, compared in float (exact).
TL_DEVICE __half max(__half a, __half b) { return __float2half_rn(::fmaxf(__half2float(a), __half2float(b))); }
TL_DEVICE __half min(__half a, __half b) { return __float2half_rn(::fminf(__half2float(a), __half2float(b))); }
TL_DEVICE __nv_bfloat16 max(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(::fmaxf(__bfloat162float(a), __bfloat162float(b)));
}
TL_DEVICE __nv_bfloat16 min(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(::fminf(__bfloat162float(a), __bfloat162float(b)));
}

// NaN-propagating max / min (reductions with nan_propagate=True): NaN when either operand is
// NaN, else max / min. Narrow floats compare in float (exact); integers have no NaN.
TL_DEVICE float max_nan(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : ::fmaxf(a, b); }
TL_DEVICE float min_nan(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : ::fminf(a, b); }
TL_DEVICE double max_nan(double a, double b) { return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000LL) : ::fmax(a, b); }
TL_DEVICE double min_nan(double a, double b) { return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000LL) : ::fmin(a, b); }
TL_DEVICE __half max_nan(__half a, __half b) { return __float2half_rn(max_nan(__half2float(a), __half2float(b))); }
TL_DEVICE __half min_nan(__half a, __half b) { return __float2half_rn(min_nan(__half2float(a), __half2float(b))); }
TL_DEVICE __nv_bfloat16 max_nan(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(max_nan(__bfloat162float(a), __bfloat162float(b)));
}
TL_DEVICE __nv_bfloat16 min_nan(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(min_nan(__bfloat162float(a), __bfloat162float(b)));
}

// Integers.
#define TL_INT_MINMAX(T)                                   \
  TL_DEVICE T max(T a, T b) { return a > b ? a : b; }      \
  TL_DEVICE T min(T a, T b) { return a < b ? a : b; }
TL_INT_MINMAX(signed char)
TL_INT_MINMAX(unsigned char)
TL_INT_MINMAX(short)
TL_INT_MINMAX(unsigned short)
TL_INT_MINMAX(int)
TL_INT_MINMAX(unsigned int)
TL_INT_MINMAX(long long)
TL_INT_MINMAX(unsigned long long)
#undef TL_INT_MINMAX
template <typename T>
TL_DEVICE T max_nan(T a, T b) {  // integers: no NaN
  return max(a, b);
}
template <typename T>
TL_DEVICE T min_nan(T a, T b) {
  return min(a, b);
}
TL_DEVICE int abs(int x) { return x < 0 ? -x : x; }
TL_DEVICE long long abs(long long x) { return x < 0 ? -x : x; }
TL_DEVICE short abs(short x) { return x < 0 ? static_cast<short>(-x) : x; }
TL_DEVICE signed char abs(signed char x) { return x < 0 ? static_cast<signed char>(-x) : x; }

// +inf of a float type; T.infinity(dtype).
template <typename T>
TL_DEVICE T infinity() {
  return pos_inf<T>();
}

// The bits of x as a value of type R of the same size; T.reinterpret(x, dtype).
template <typename R, typename T>
TL_DEVICE R reinterpret(const T& x) {
  static_assert(sizeof(R) == sizeof(T), "T.reinterpret needs two types of one size");
  return *reinterpret_cast<const R*>(&x);
}

// Lane-wise versions for tl::vec.
#define TL_VEC_UNARY(fn)                                 \
  template <typename T, int N>                           \
  TL_DEVICE vec<T, N> fn(const vec<T, N>& x) {           \
    vec<T, N> r;                                         \
    _Pragma("unroll") for (int i = 0; i < N; ++i) r[i] = tl::fn(x[i]); \
    return r;                                            \
  }
TL_VEC_UNARY(exp)
TL_VEC_UNARY(exp2)
TL_VEC_UNARY(log)
TL_VEC_UNARY(log2)
TL_VEC_UNARY(log10)
TL_VEC_UNARY(sin)
TL_VEC_UNARY(cos)
TL_VEC_UNARY(tanh)
TL_VEC_UNARY(sqrt)
TL_VEC_UNARY(rsqrt)
TL_VEC_UNARY(abs)
TL_VEC_UNARY(floor)
TL_VEC_UNARY(ceil)
TL_VEC_UNARY(round)
TL_VEC_UNARY(trunc)
TL_VEC_UNARY(erf)
TL_VEC_UNARY(sigmoid)
#undef TL_VEC_UNARY
#define TL_VEC_BINARY(fn)                                                  \
  template <typename T, int N>                                             \
  TL_DEVICE vec<T, N> fn(const vec<T, N>& a, const vec<T, N>& b) {         \
    vec<T, N> r;                                                           \
    _Pragma("unroll") for (int i = 0; i < N; ++i) r[i] = tl::fn(a[i], b[i]); \
    return r;                                                              \
  }
TL_VEC_BINARY(max)
TL_VEC_BINARY(min)
TL_VEC_BINARY(pow)
#undef TL_VEC_BINARY

}  // namespace tl
