// tilec device library: warp votes, ballots and block barriers that count (TileLang's
// T.any_sync / all_sync / ballot_sync / ballot / activemask / syncthreads_count / _and / _or,
// T.__ffs / T.__fns). The lanes named by a mask must all execute a vote (CUDA's rule); the
// syncthreads forms are block barriers every thread must reach. Ballots and the active mask
// are 64-bit (TileLang's uint64, zero-extended from the 32-lane warp).
#pragma once

#include "tilec/common.cuh"

namespace tl {

TL_DEVICE int any_sync(unsigned mask, int predicate) { return __any_sync(mask, predicate); }
TL_DEVICE int all_sync(unsigned mask, int predicate) { return __all_sync(mask, predicate); }
TL_DEVICE unsigned long long ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned long long>(__ballot_sync(mask, predicate));
}
TL_DEVICE unsigned long long activemask() { return static_cast<unsigned long long>(__activemask()); }
TL_DEVICE int syncthreads_count(int predicate) { return __syncthreads_count(predicate); }
TL_DEVICE int syncthreads_and(int predicate) { return __syncthreads_and(predicate); }
TL_DEVICE int syncthreads_or(int predicate) { return __syncthreads_or(predicate); }
// One-based position of the lowest set bit, 0 for 0 (CUDA __ffs / __ffsll).
TL_DEVICE int ffs(int v) { return __ffs(v); }
TL_DEVICE int ffs(unsigned v) { return __ffs(static_cast<int>(v)); }
TL_DEVICE int ffs(long long v) { return __ffsll(v); }
TL_DEVICE int ffs(unsigned long long v) { return __ffsll(static_cast<long long>(v)); }
// The position of the offset-th set bit of mask counting from base (CUDA __fns).
TL_DEVICE unsigned fns(unsigned mask, unsigned base, int offset) { return __fns(mask, base, offset); }

}  // namespace tl
