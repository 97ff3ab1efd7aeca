// Walking a constant-shaped index box, as layout checks and parallel-nest analysis do
// (tiles are constant-shaped, so enumerating them is exact and cheap).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

namespace tilec::layout {

// Calls fn(idx) for every index of `shape` in row-major order (last dimension fastest).
// fn may return bool: false stops the walk early. Returns false only when stopped early;
// a box with an empty dimension visits nothing.
template <typename Fn>
bool for_each_index(const std::vector<int64_t>& shape, Fn&& fn) {
  for (auto e : shape)
    if (e <= 0) return true;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    if constexpr (std::is_same_v<std::invoke_result_t<Fn&, const std::vector<int64_t>&>, bool>) {
      if (!fn(idx)) return false;
    } else {
      fn(idx);
    }
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return true;
  }
}

}  // namespace tilec::layout
