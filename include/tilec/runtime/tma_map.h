// TMA tensor maps at launch: the geometry of a map over a tensor argument (checked against
// the hardware's rules, so a bad argument is a clear error and never a fault), and a cache
// of encoded maps so that a repeated launch with the same tensor costs no encode.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "tilec/runtime/launch_plan.h"

namespace tilec::runtime {

struct TensorView;

struct TmaGeometry {
  int rank = 0;
  uint64_t dims[5] = {};     // innermost first
  uint64_t strides[5] = {};  // bytes, of dimensions 1..rank-1 (strides[0] is dimension 1's)
  uint32_t box[5] = {};
};

// The map geometry of `spec` over tensor `t` (shape/strides in elements, row-major when
// strides is null). Returns "" and fills `g`, or the reason TMA cannot address the tensor
// (base not 16-byte aligned, innermost stride not 1, a stride that is not a multiple of
// 16 bytes or reaches 2^40, an empty or too large dimension).
std::string tma_geometry(const TmaDescSpec& spec, const TensorParam& param, const TensorView& t, TmaGeometry* g);

// Encoded maps by (map index, base address, shape, strides); at most kEntries, the oldest
// dropped first. Thread-safe.
class TmaMapCache {
 public:
  static constexpr int kEntries = 64;
  // Copies the encoded map into `out` (128 bytes); on a miss `encode(map, ctx)` fills one.
  using EncodeFn = void (*)(void* map, const void* ctx);
  void get(int index, const TensorView& t, void* out, EncodeFn encode, const void* ctx);

 private:
  struct Entry {
    int index = -1;
    uint64_t data = 0;
    int ndim = 0;
    int64_t shape[5] = {}, strides[5] = {};
    alignas(64) unsigned char map[128];
  };
  bool matches(const Entry& e, int index, const TensorView& t) const;
  void fill_key(Entry& e, int index, const TensorView& t) const;
  std::mutex mu_;
  std::vector<Entry> entries_;
  size_t next_ = 0;
};

}  // namespace tilec::runtime
