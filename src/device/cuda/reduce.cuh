// tilec device library: warp shuffles for every element type, and warp-level reductions.
//
//   tl::shfl_xor(v, lane_mask)   tl::shfl_down(v, delta)   tl::shfl_up(v, delta)
//   tl::shfl_idx(v, src_lane)
// exchange a value of any type (int8 ... int64, half, bfloat16, fp8, float, double, tl::vec)
// among the 32 lanes of a warp; all lanes must take part (full mask). Types the hardware
// shuffle lacks are moved as 32-bit words.
//
//   tl::warp_reduce_sum<Width>(v)   (max, min, bitand, bitor alike)
// combines v over aligned groups of Width lanes (1, 2, 4, 8, 16, 32) by a butterfly of
// shfl_xor, so every lane of a group ends with the group's result.
#pragma once

#include "tilec/common.cuh"
#include "tilec/math.cuh"

namespace tl {

constexpr unsigned kFullWarpMask = 0xffffffffu;

namespace detail {
// Moves an arbitrary trivially copyable value through 32-bit shuffles.
template <typename T, typename Shuffle>
TL_DEVICE T shuffle_words(const T& v, Shuffle shuffle) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  unsigned words[kWords];
  unsigned char* bytes = reinterpret_cast<unsigned char*>(words);
  const unsigned char* src = reinterpret_cast<const unsigned char*>(&v);
#pragma unroll
  for (int i = 0; i < kWords * 4; ++i) bytes[i] = i < static_cast<int>(sizeof(T)) ? src[i] : 0;
#pragma unroll
  for (int i = 0; i < kWords; ++i) words[i] = shuffle(words[i]);
  T out;
  unsigned char* dst = reinterpret_cast<unsigned char*>(&out);
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(T)); ++i) dst[i] = bytes[i];
  return out;
}
template <typename T>
struct has_native_shuffle {
  static constexpr bool value = is_same<T, int>::value || is_same<T, unsigned int>::value ||
                                is_same<T, long long>::value || is_same<T, unsigned long long>::value ||
                                is_same<T, float>::value || is_same<T, double>::value ||
                                is_same<T, __half>::value || is_same<T, __half2>::value ||
                                is_same<T, __nv_bfloat16>::value || is_same<T, __nv_bfloat162>::value;
};
}  // namespace detail

template <typename T>
TL_DEVICE typename enable_if<detail::has_native_shuffle<T>::value, T>::type shfl_xor(const T& v, int lane_mask) {
  return __shfl_xor_sync(kFullWarpMask, v, lane_mask);
}
template <typename T>
TL_DEVICE typename enable_if<!detail::has_native_shuffle<T>::value, T>::type shfl_xor(const T& v, int lane_mask) {
  return detail::shuffle_words(v, [=](unsigned w) { return __shfl_xor_sync(kFullWarpMask, w, lane_mask); });
}

template <typename T>
TL_DEVICE typename enable_if<detail::has_native_shuffle<T>::value, T>::type shfl_down(const T& v, int delta) {
  return __shfl_down_sync(kFullWarpMask, v, delta);
}
template <typename T>
TL_DEVICE typename enable_if<!detail::has_native_shuffle<T>::value, T>::type shfl_down(const T& v, int delta) {
  return detail::shuffle_words(v, [=](unsigned w) { return __shfl_down_sync(kFullWarpMask, w, delta); });
}

template <typename T>
TL_DEVICE typename enable_if<detail::has_native_shuffle<T>::value, T>::type shfl_up(const T& v, int delta) {
  return __shfl_up_sync(kFullWarpMask, v, delta);
}
template <typename T>
TL_DEVICE typename enable_if<!detail::has_native_shuffle<T>::value, T>::type shfl_up(const T& v, int delta) {
  return detail::shuffle_words(v, [=](unsigned w) { return __shfl_up_sync(kFullWarpMask, w, delta); });
}

template <typename T>
TL_DEVICE typename enable_if<detail::has_native_shuffle<T>::value, T>::type shfl_idx(const T& v, int src_lane) {
  return __shfl_sync(kFullWarpMask, v, src_lane);
}
template <typename T>
TL_DEVICE typename enable_if<!detail::has_native_shuffle<T>::value, T>::type shfl_idx(const T& v, int src_lane) {
  return detail::shuffle_words(v, [=](unsigned w) { return __shfl_sync(kFullWarpMask, w, src_lane); });
}

// ---- warp reductions ----
struct SumOp {
  template <typename T>
  TL_DEVICE T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename T>
  TL_DEVICE T operator()(const T& a, const T& b) const {
    return tl::max(a, b);
  }
};
struct MinOp {
  template <typename T>
  TL_DEVICE T operator()(const T& a, const T& b) const {
    return tl::min(a, b);
  }
};

template <int Width, typename Op, typename T>
TL_DEVICE T warp_allreduce(T v, Op op) {
  static_assert(Width == 1 || Width == 2 || Width == 4 || Width == 8 || Width == 16 || Width == 32,
                "tl::warp_reduce: Width must be a power of two between 1 and 32");
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2) v = op(v, shfl_xor(v, offset));
  return v;
}

template <int Width, typename T>
TL_DEVICE T warp_reduce_sum(const T& v) {
  return warp_allreduce<Width>(v, SumOp());
}
template <int Width, typename T>
TL_DEVICE T warp_reduce_max(const T& v) {
  return warp_allreduce<Width>(v, MaxOp());
}
template <int Width, typename T>
TL_DEVICE T warp_reduce_min(const T& v) {
  return warp_allreduce<Width>(v, MinOp());
}
struct BitAndOp {
  template <typename T>
  TL_DEVICE T operator()(const T& a, const T& b) const {
    return a & b;
  }
};
struct BitOrOp {
  template <typename T>
  TL_DEVICE T operator()(const T& a, const T& b) const {
    return a | b;
  }
};
template <int Width, typename T>
TL_DEVICE T warp_reduce_bitand(const T& v) {
  return warp_allreduce<Width>(v, BitAndOp());
}
template <int Width, typename T>
TL_DEVICE T warp_reduce_bitor(const T& v) {
  return warp_allreduce<Width>(v, BitOrOp());
}

}  // namespace tl
