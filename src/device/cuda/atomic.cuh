// tilec device library: atomics on global or shared memory. Each returns the old value.
//
//   tl::atomic_add(T* address, T value)   int32, uint32, int64, uint64, float, double,
//                                         half, bfloat16, half2, bfloat162 (sm_80+)
//   tl::atomic_add(T* address, vec<T, N> v)  the lanes to N consecutive elements, no old value
//                                         (the vectorize pass's form): float x2 / x4 in global
//                                         memory as one red.global.add.v2/v4.f32 on sm_90+,
//                                         half x2 and bfloat16 x2 as one 32-bit atomic; lane by
//                                         lane elsewhere
//   tl::atomic_max / tl::atomic_min       the same scalar types; float, double, half and
//                                         bfloat16 by a compare-and-swap loop (NaN values are
//                                         ignored, like fmaxf)
#pragma once

#include "tilec/common.cuh"

namespace tl {

// ---- add ----
TL_DEVICE int atomic_add(int* address, int value) { return atomicAdd(address, value); }
TL_DEVICE unsigned int atomic_add(unsigned int* address, unsigned int value) { return atomicAdd(address, value); }
TL_DEVICE unsigned long long atomic_add(unsigned long long* address, unsigned long long value) {
  return atomicAdd(address, value);
}
TL_DEVICE long long atomic_add(long long* address, long long value) {
  // Two's complement addition is the same operation on unsigned bits.
  return static_cast<long long>(atomicAdd(reinterpret_cast<unsigned long long*>(address),
                                          static_cast<unsigned long long>(value)));
}
TL_DEVICE float atomic_add(float* address, float value) { return atomicAdd(address, value); }
TL_DEVICE double atomic_add(double* address, double value) { return atomicAdd(address, value); }
TL_DEVICE __half atomic_add(__half* address, __half value) { return atomicAdd(address, value); }
TL_DEVICE __nv_bfloat16 atomic_add(__nv_bfloat16* address, __nv_bfloat16 value) { return atomicAdd(address, value); }
TL_DEVICE __half2 atomic_add(__half2* address, __half2 value) { return atomicAdd(address, value); }
TL_DEVICE __nv_bfloat162 atomic_add(__nv_bfloat162* address, __nv_bfloat162 value) {
  return atomicAdd(address, value);
}

// ---- add of a vector to consecutive elements ----
template <int N>
TL_DEVICE void atomic_add(float* address, const vec<float, N>& v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // sm_90's vector float atomics (global memory only: the vectorize pass emits them for
  // global buffers alone).
  if constexpr (N == 4) {
    atomicAdd(reinterpret_cast<float4*>(address), make_float4(v[0], v[1], v[2], v[3]));
    return;
  } else if constexpr (N == 2) {
    atomicAdd(reinterpret_cast<float2*>(address), make_float2(v[0], v[1]));
    return;
  }
#endif
#pragma unroll
  for (int i = 0; i < N; ++i) atomicAdd(address + i, v[i]);
}
TL_DEVICE void atomic_add(__half* address, const vec<__half, 2>& v) {
  atomicAdd(reinterpret_cast<__half2*>(address), __halves2half2(v[0], v[1]));
}
TL_DEVICE void atomic_add(__nv_bfloat16* address, const vec<__nv_bfloat16, 2>& v) {
  atomicAdd(reinterpret_cast<__nv_bfloat162*>(address), __halves2bfloat162(v[0], v[1]));
}

// ---- max / min on integers: native ----
#define TL_INT_ATOMIC_MINMAX(T)                                                       \
  TL_DEVICE T atomic_max(T* address, T value) { return atomicMax(address, value); }  \
  TL_DEVICE T atomic_min(T* address, T value) { return atomicMin(address, value); }
TL_INT_ATOMIC_MINMAX(int)
TL_INT_ATOMIC_MINMAX(unsigned int)
TL_INT_ATOMIC_MINMAX(long long)
TL_INT_ATOMIC_MINMAX(unsigned long long)
#undef TL_INT_ATOMIC_MINMAX

namespace detail {
// Replaces *address by value while `better(value, current)`; returns the old value.
// Bits is the unsigned type of T's width, as atomicCAS takes it.
template <typename T, typename Bits, typename Better>
TL_DEVICE T atomic_update_if(T* address, T value, Better better) {
  static_assert(sizeof(T) == sizeof(Bits), "tl::atomic: value and CAS word must have the same width");
  Bits* word = reinterpret_cast<Bits*>(address);
  Bits old = *word;
  while (true) {
    T current = *reinterpret_cast<T*>(&old);
    if (!better(value, current)) return current;
    Bits assumed = old;
    old = atomicCAS(word, assumed, *reinterpret_cast<Bits*>(&value));
    if (old == assumed) return current;
  }
}
struct Greater {
  template <typename T>
  TL_DEVICE bool operator()(const T& a, const T& b) const {
    return cast<float>(a) > cast<float>(b) || (cast<float>(b) != cast<float>(b) && cast<float>(a) == cast<float>(a));
  }
};
struct Less {
  template <typename T>
  TL_DEVICE bool operator()(const T& a, const T& b) const {
    return cast<float>(a) < cast<float>(b) || (cast<float>(b) != cast<float>(b) && cast<float>(a) == cast<float>(a));
  }
};
struct GreaterD {
  TL_DEVICE bool operator()(double a, double b) const { return a > b || (b != b && a == a); }
};
struct LessD {
  TL_DEVICE bool operator()(double a, double b) const { return a < b || (b != b && a == a); }
};
}  // namespace detail

TL_DEVICE float atomic_max(float* address, float value) {
  return detail::atomic_update_if<float, unsigned int>(address, value, detail::Greater());
}
TL_DEVICE float atomic_min(float* address, float value) {
  return detail::atomic_update_if<float, unsigned int>(address, value, detail::Less());
}
TL_DEVICE double atomic_max(double* address, double value) {
  return detail::atomic_update_if<double, unsigned long long>(address, value, detail::GreaterD());
}
TL_DEVICE double atomic_min(double* address, double value) {
  return detail::atomic_update_if<double, unsigned long long>(address, value, detail::LessD());
}
TL_DEVICE __half atomic_max(__half* address, __half value) {
  return detail::atomic_update_if<__half, unsigned short>(address, value, detail::Greater());
}
TL_DEVICE __half atomic_min(__half* address, __half value) {
  return detail::atomic_update_if<__half, unsigned short>(address, value, detail::Less());
}
TL_DEVICE __nv_bfloat16 atomic_max(__nv_bfloat16* address, __nv_bfloat16 value) {
  return detail::atomic_update_if<__nv_bfloat16, unsigned short>(address, value, detail::Greater());
}
TL_DEVICE __nv_bfloat16 atomic_min(__nv_bfloat16* address, __nv_bfloat16 value) {
  return detail::atomic_update_if<__nv_bfloat16, unsigned short>(address, value, detail::Less());
}

// Loads and stores with a memory order at GPU scope (T.atomic_load / T.atomic_store), as
// libcu++ maps C++'s orders to PTX: relaxed -> ld/st.relaxed.gpu, acquire -> ld.acquire.gpu,
// release -> st.release.gpu, seq_cst -> fence.sc.gpu then ld.acquire / st.relaxed. ORDER:
// 0 relaxed, 2 acquire, 3 release, 5 seq_cst. 32- and 64-bit types, through their bits.
template <int ORDER, typename T>
TL_DEVICE T atomic_load(const T* address) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "tl::atomic_load: 32- or 64-bit values");
  if constexpr (ORDER == 5) asm volatile("fence.sc.gpu;" ::: "memory");
  T out;
  if constexpr (sizeof(T) == 4) {
    unsigned int bits;
    if constexpr (ORDER == 0) asm volatile("ld.relaxed.gpu.b32 %0, [%1];" : "=r"(bits) : "l"(address) : "memory");
    else asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(bits) : "l"(address) : "memory");
    memcpy(&out, &bits, 4);
  } else {
    unsigned long long bits;
    if constexpr (ORDER == 0) asm volatile("ld.relaxed.gpu.b64 %0, [%1];" : "=l"(bits) : "l"(address) : "memory");
    else asm volatile("ld.acquire.gpu.b64 %0, [%1];" : "=l"(bits) : "l"(address) : "memory");
    memcpy(&out, &bits, 8);
  }
  return out;
}

template <int ORDER, typename T>
TL_DEVICE void atomic_store(T* address, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "tl::atomic_store: 32- or 64-bit values");
  if constexpr (ORDER == 5) asm volatile("fence.sc.gpu;" ::: "memory");
  if constexpr (sizeof(T) == 4) {
    unsigned int bits;
    memcpy(&bits, &value, 4);
    if constexpr (ORDER == 3) asm volatile("st.release.gpu.b32 [%0], %1;" ::"l"(address), "r"(bits) : "memory");
    else asm volatile("st.relaxed.gpu.b32 [%0], %1;" ::"l"(address), "r"(bits) : "memory");
  } else {
    unsigned long long bits;
    memcpy(&bits, &value, 8);
    if constexpr (ORDER == 3) asm volatile("st.release.gpu.b64 [%0], %1;" ::"l"(address), "l"(bits) : "memory");
    else asm volatile("st.relaxed.gpu.b64 [%0], %1;" ::"l"(address), "l"(bits) : "memory");
  }
}

}  // namespace tl
