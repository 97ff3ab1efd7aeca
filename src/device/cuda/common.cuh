// tilec device library: the core every generated kernel includes.
//
//  * fixed-width integer names without <cstdint> (NVRTC has no C++ standard library),
//  * tl::vec<T, N>: an aligned value of N lanes, with lane-wise operators, so vector
//    expressions in generated code read like scalar ones,
//  * tl::load<N>(p) / tl::store(p, v): vector memory accesses of 2, 4, 8 or 16 bytes that
//    compile to single ld/st instructions (ld.global.v4.u32 for 16 bytes, ...),
//  * tl::cast<To>(x): conversions including half / bfloat16 / fp8 (through float where the
//    type has no direct conversion),
//  * Python-style floor division and modulo on signed integers, special float values,
//  * tl::print (T.print).
//
// Destination-first signatures; no dependency beyond the CUDA toolkit's own headers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#define TL_DEVICE __device__ __forceinline__

namespace tl {

using int8 = signed char;
using uint8 = unsigned char;
using int16 = short;
using uint16 = unsigned short;
using int32 = int;
using uint32 = unsigned int;
using int64 = long long;
using uint64 = unsigned long long;
using float16 = __half;
using bfloat16 = __nv_bfloat16;
using float8_e4m3 = __nv_fp8_e4m3;
using float8_e5m2 = __nv_fp8_e5m2;

static_assert(sizeof(int64) == 8 && sizeof(int32) == 4 && sizeof(int16) == 2, "unexpected integer widths");

// ---- small type traits (no <type_traits> under NVRTC) ----
template <bool B, typename T = void>
struct enable_if {};
template <typename T>
struct enable_if<true, T> {
  using type = T;
};
template <typename A, typename B>
struct is_same {
  static constexpr bool value = false;
};
template <typename A>
struct is_same<A, A> {
  static constexpr bool value = true;
};

// Largest power of two dividing `bytes`, capped at 16: the alignment a vector of that size gets.
__host__ __device__ constexpr int vec_alignment(int bytes) {
  return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
}

// ---- vectors ----
template <typename T, int N>
struct alignas(vec_alignment(sizeof(T) * N)) vec {
  static_assert(N >= 1, "tl::vec needs at least one lane");
  T data[N];
  TL_DEVICE T& operator[](int i) { return data[i]; }
  TL_DEVICE const T& operator[](int i) const { return data[i]; }
};

// Raw storage of a given width, for single-instruction loads and stores.
template <int Bytes>
struct raw_bits;
template <>
struct raw_bits<1> {
  using type = unsigned char;
};
template <>
struct raw_bits<2> {
  using type = unsigned short;
};
template <>
struct raw_bits<4> {
  using type = unsigned int;
};
template <>
struct raw_bits<8> {
  using type = uint2;
};
template <>
struct raw_bits<16> {
  using type = uint4;
};

// Loads N consecutive elements from p (which must be aligned to N * sizeof(T) bytes).
template <int N, typename T>
TL_DEVICE vec<T, N> load(const T* p) {
  constexpr int kBytes = sizeof(T) * N;
  static_assert(kBytes == 1 || kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16,
                "tl::load: a vector access must be 1, 2, 4, 8 or 16 bytes");
  using R = typename raw_bits<kBytes>::type;
  vec<T, N> v;
  *reinterpret_cast<R*>(&v) = *reinterpret_cast<const R*>(p);
  return v;
}

// Stores the lanes of v to N consecutive elements at p (aligned to N * sizeof(T) bytes).
template <typename T, int N>
TL_DEVICE void store(T* p, const vec<T, N>& v) {
  constexpr int kBytes = sizeof(T) * N;
  static_assert(kBytes == 1 || kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16,
                "tl::store: a vector access must be 1, 2, 4, 8 or 16 bytes");
  using R = typename raw_bits<kBytes>::type;
  *reinterpret_cast<R*>(p) = *reinterpret_cast<const R*>(&v);
}

template <int N, typename T>
TL_DEVICE vec<T, N> broadcast(const T& x) {
  vec<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = x;
  return v;
}

// base, base + stride, ..., base + (N - 1) * stride
template <int N, typename T>
TL_DEVICE vec<T, N> ramp(const T& base, const T& stride) {
  vec<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = base + static_cast<T>(i) * stride;
  return v;
}

// ---- conversions ----
template <typename T>
struct is_narrow_float {  // types whose conversions go through float
  static constexpr bool value = is_same<T, __half>::value || is_same<T, __nv_bfloat16>::value ||
                                is_same<T, __nv_fp8_e4m3>::value || is_same<T, __nv_fp8_e5m2>::value;
};

template <typename To, typename From>
TL_DEVICE typename enable_if<!is_narrow_float<To>::value && !is_narrow_float<From>::value, To>::type cast(
    const From& x) {
  return static_cast<To>(x);
}
template <typename To, typename From>
TL_DEVICE typename enable_if<is_narrow_float<To>::value && !is_narrow_float<From>::value, To>::type cast(
    const From& x) {
  return To(static_cast<float>(x));
}
template <typename To, typename From>
TL_DEVICE typename enable_if<is_narrow_float<From>::value, To>::type cast(const From& x) {
  return cast<To>(static_cast<float>(x));
}
// Exact and direct where the toolkit has the conversion.
template <>
TL_DEVICE __half cast<__half, float>(const float& x) {
  return __float2half_rn(x);
}
template <>
TL_DEVICE __nv_bfloat16 cast<__nv_bfloat16, float>(const float& x) {
  return __float2bfloat16_rn(x);
}
template <>
TL_DEVICE float cast<float, __half>(const __half& x) {
  return __half2float(x);
}
template <>
TL_DEVICE float cast<float, __nv_bfloat16>(const __nv_bfloat16& x) {
  return __bfloat162float(x);
}
template <>
TL_DEVICE __half cast<__half, __half>(const __half& x) {
  return x;
}
template <>
TL_DEVICE __nv_bfloat16 cast<__nv_bfloat16, __nv_bfloat16>(const __nv_bfloat16& x) {
  return x;
}

template <typename To, typename From, int N>
TL_DEVICE vec<To, N> cast(const vec<From, N>& x) {
  vec<To, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = cast<To>(x[i]);
  return v;
}

// ---- special values (any float type, through float) ----
template <typename T>
TL_DEVICE T pos_inf() {
  return cast<T>(__int_as_float(0x7f800000));
}
template <typename T>
TL_DEVICE T neg_inf() {
  return cast<T>(__int_as_float(static_cast<int>(0xff800000u)));
}
template <typename T>
TL_DEVICE T nan() {
  return cast<T>(__int_as_float(0x7fc00000));
}
template <>
TL_DEVICE double pos_inf<double>() {
  return __longlong_as_double(0x7ff0000000000000ll);
}
template <>
TL_DEVICE double neg_inf<double>() {
  return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
}
template <>
TL_DEVICE double nan<double>() {
  return __longlong_as_double(0x7ff8000000000000ll);
}

// ---- Python-style integer division (rounds toward -inf; remainder has the divisor's sign) ----
template <typename T>
TL_DEVICE T floordiv(T a, T b) {
  if constexpr (T(-1) > T(0)) {  // unsigned: C division already rounds down
    return a / b;
  } else {
    T q = a / b;
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
  }
}
template <typename T>
TL_DEVICE T floormod(T a, T b) {
  if constexpr (T(-1) > T(0)) {
    return a % b;
  } else {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
}

// ---- lane-wise operators on vectors ----
#define TL_VEC_BINARY_OP(op)                                                  \
  template <typename T, int N>                                                \
  TL_DEVICE auto operator op(const vec<T, N>& a, const vec<T, N>& b)          \
      ->vec<decltype(a[0] op b[0]), N> {                                      \
    vec<decltype(a[0] op b[0]), N> r;                                         \
    _Pragma("unroll") for (int i = 0; i < N; ++i) r[i] = a[i] op b[i];        \
    return r;                                                                 \
  }
TL_VEC_BINARY_OP(+)
TL_VEC_BINARY_OP(-)
TL_VEC_BINARY_OP(*)
TL_VEC_BINARY_OP(/)
TL_VEC_BINARY_OP(%)
TL_VEC_BINARY_OP(<)
TL_VEC_BINARY_OP(<=)
TL_VEC_BINARY_OP(>)
TL_VEC_BINARY_OP(>=)
TL_VEC_BINARY_OP(==)
TL_VEC_BINARY_OP(!=)
TL_VEC_BINARY_OP(&&)
TL_VEC_BINARY_OP(||)
TL_VEC_BINARY_OP(&)
TL_VEC_BINARY_OP(|)
TL_VEC_BINARY_OP(^)
TL_VEC_BINARY_OP(<<)
TL_VEC_BINARY_OP(>>)
#undef TL_VEC_BINARY_OP

template <typename T, int N>
TL_DEVICE vec<bool, N> operator!(const vec<T, N>& a) {
  vec<bool, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = !a[i];
  return r;
}
template <typename T, int N>
TL_DEVICE vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = -a[i];
  return r;
}
template <typename T, int N>
TL_DEVICE vec<T, N> operator~(const vec<T, N>& a) {
  vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = ~a[i];
  return r;
}

template <typename T, int N>
TL_DEVICE vec<T, N> floordiv(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = floordiv(a[i], b[i]);
  return r;
}
template <typename T, int N>
TL_DEVICE vec<T, N> floormod(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = floormod(a[i], b[i]);
  return r;
}

// Lane-wise c ? a : b (scalar selects print as the C conditional operator).
template <typename T, int N>
TL_DEVICE vec<T, N> select(const vec<bool, N>& c, const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = c[i] ? a[i] : b[i];
  return r;
}

// ---- T.print: values of any scalar type, vectors and strings, prefixed by the block and
// thread indices. (Each piece is its own printf: lines of different threads may interleave.)
TL_DEVICE void print_value(bool v) { printf("%s", v ? "True" : "False"); }
TL_DEVICE void print_value(signed char v) { printf("%d", static_cast<int>(v)); }
TL_DEVICE void print_value(unsigned char v) { printf("%u", static_cast<unsigned>(v)); }
TL_DEVICE void print_value(short v) { printf("%d", static_cast<int>(v)); }
TL_DEVICE void print_value(unsigned short v) { printf("%u", static_cast<unsigned>(v)); }
TL_DEVICE void print_value(int v) { printf("%d", v); }
TL_DEVICE void print_value(unsigned int v) { printf("%u", v); }
TL_DEVICE void print_value(long long v) { printf("%lld", v); }
TL_DEVICE void print_value(unsigned long long v) { printf("%llu", v); }
TL_DEVICE void print_value(float v) { printf("%g", v); }
TL_DEVICE void print_value(double v) { printf("%g", v); }
TL_DEVICE void print_value(__half v) { printf("%g", __half2float(v)); }
TL_DEVICE void print_value(__nv_bfloat16 v) { printf("%g", __bfloat162float(v)); }
TL_DEVICE void print_value(__nv_fp8_e4m3 v) { printf("%g", static_cast<float>(v)); }
TL_DEVICE void print_value(__nv_fp8_e5m2 v) { printf("%g", static_cast<float>(v)); }
TL_DEVICE void print_value(const char* v) { printf("%s", v); }
template <typename T, int N>
TL_DEVICE void print_value(const vec<T, N>& v) {
  printf("[");
  for (int i = 0; i < N; ++i) {
    if (i) printf(", ");
    print_value(v[i]);
  }
  printf("]");
}
template <typename... Ts>
TL_DEVICE void print(const Ts&... values) {
  printf("block (%d, %d, %d) thread (%d, %d, %d):", static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
         static_cast<int>(blockIdx.z), static_cast<int>(threadIdx.x), static_cast<int>(threadIdx.y),
         static_cast<int>(threadIdx.z));
  ((printf(" "), print_value(values)), ...);
  printf("\n");
}

// ---- T.device_assert: a failed check prints where and who, then traps (the launch fails
// with an illegal-instruction error that the runtime reports).
TL_DEVICE void device_assert(bool ok, const char* msg, const char* where) {
  if (ok) return;
  printf("tilec: device assertion failed at %s: %s (block (%d, %d, %d) thread (%d, %d, %d))\n", where, msg,
         static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),
         static_cast<int>(threadIdx.x), static_cast<int>(threadIdx.y), static_cast<int>(threadIdx.z));
  __trap();
}

}  // namespace tl
