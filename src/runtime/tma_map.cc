// TMA tensor maps at launch (see include/tilec/runtime/tma_map.h).
//
// Rules (CUDA driver API, cuTensorMapEncodeTiled): global address 16-byte aligned,
// dimension 0 contiguous (stride 1 element), every other stride a multiple of 16 bytes
// and below 2^40, every dimension in [1, 2^32], rank 1..5, box extents 1..256.
#include "tilec/runtime/tma_map.h"

#include <cstring>
#include <sstream>

#include "tilec/runtime/kernel.h"

namespace tilec::runtime {

std::string tma_geometry(const TmaDescSpec& spec, const TensorParam& param, const TensorView& t, TmaGeometry* g) {
  const int rank = t.ndim;
  if (rank != static_cast<int>(spec.box.size()) || rank < 1 || rank > 5)
    return "TMA maps tensors of rank 1 to 5 matching the kernel, got rank " + std::to_string(rank);
  const int64_t elem = param.dtype.bytes();
  if (t.data % 16 != 0) {
    std::ostringstream os;
    os << "TMA needs a 16-byte aligned data pointer, got 0x" << std::hex << t.data;
    return os.str();
  }
  int64_t row_major = 1;
  int64_t strides[8];
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = t.strides ? t.strides[i] : row_major;
    row_major *= t.shape[i];
  }
  g->rank = rank;
  for (int i = 0; i < rank; ++i) {
    const int d = rank - 1 - i;  // tensor dimension of map dimension i
    const int64_t extent = t.shape[d];
    if (extent < 1 || extent > (int64_t{1} << 32))
      return "TMA needs every dimension in [1, 2^32], dimension " + std::to_string(d) + " is " + std::to_string(extent);
    g->dims[i] = static_cast<uint64_t>(extent);
    g->box[i] = static_cast<uint32_t>(spec.box[i]);
    if (i == 0) {
      if (strides[d] != 1 && extent > 1)
        return "TMA needs the last dimension contiguous (stride 1), got stride " + std::to_string(strides[d]);
      continue;
    }
    const int64_t bytes = strides[d] * elem;
    if (bytes <= 0 || bytes % 16 != 0 || bytes >= (int64_t{1} << 40))
      return "TMA needs the stride of dimension " + std::to_string(d) + " to be a positive multiple of 16 bytes " +
             "below 2^40, got " + std::to_string(strides[d]) + " elements (" + std::to_string(bytes) + " bytes)";
    g->strides[i - 1] = static_cast<uint64_t>(bytes);
  }
  return "";
}

bool TmaMapCache::matches(const Entry& e, int index, const TensorView& t) const {
  if (e.index != index || e.data != t.data || e.ndim != t.ndim) return false;
  for (int i = 0; i < t.ndim; ++i) {
    if (e.shape[i] != t.shape[i]) return false;
    if (e.strides[i] != (t.strides ? t.strides[i] : -1)) return false;
  }
  return true;
}

void TmaMapCache::fill_key(Entry& e, int index, const TensorView& t) const {
  e.index = index;
  e.data = t.data;
  e.ndim = t.ndim;
  for (int i = 0; i < t.ndim && i < 5; ++i) {
    e.shape[i] = t.shape[i];
    e.strides[i] = t.strides ? t.strides[i] : -1;
  }
}

void TmaMapCache::get(int index, const TensorView& t, void* out, EncodeFn encode, const void* ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_) {
    if (!matches(e, index, t)) continue;
    std::memcpy(out, e.map, sizeof(e.map));
    return;
  }
  Entry fresh;
  encode(fresh.map, ctx);  // raises before the cache changes
  fill_key(fresh, index, t);
  if (entries_.size() < static_cast<size_t>(kEntries)) {
    entries_.push_back(fresh);
  } else {
    entries_[next_] = fresh;
    next_ = (next_ + 1) % kEntries;
  }
  std::memcpy(out, fresh.map, sizeof(fresh.map));
}

}  // namespace tilec::runtime
