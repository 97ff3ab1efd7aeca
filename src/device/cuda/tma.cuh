// TMA (sm_90): bulk tensor copies between global and shared memory, addressed through
// a tensor map (CUtensorMap) that the runtime encodes on the host at launch and passes
// as a `const __grid_constant__ tl::TmaDescriptor` kernel parameter.
//
//   tma_load(dst, desc, bar, c0[, c1, ...])   one box global -> shared; completes on the
//                                             mbarrier as a transaction of the box's bytes
//   tma_load_multicast(dst, desc, bar, mask, c0, ...)
//                                             the same box into every CTA of the cluster
//                                             whose bit is set in `mask`, each completing
//                                             on its barrier at the same offset
//   tma_store(desc, src, c0, ...)             one box shared -> global (bulk group)
//   tma_reduce_add(desc, src, c0, ...)        one box shared -> global, added to what the
//                                             tensor holds (each element atomically; bulk group)
//   tma_store_commit(); tma_store_wait<N>()   close / wait for the issuing thread's groups
//                                             (.read: the shared source may be reused)
//   tma_prefetch_descriptor(desc)
//
// Coordinates are element indices, innermost dimension first, and may lie outside the
// tensor: out-of-bounds elements of a load are zero, of a store are dropped.
// The tensor map's own structure is the driver's (128 bytes, 64-byte aligned); NVRTC has
// no <cuda.h>, so the type is declared here with the same size and alignment.
#pragma once

#include "tilec/mbarrier.cuh"

namespace tl {

struct alignas(64) TmaDescriptor {
  uint64 opaque[16];
};
static_assert(sizeof(TmaDescriptor) == 128, "a tensor map is 128 bytes");

TL_DEVICE uint64 tma_desc_addr(const TmaDescriptor& d) { return reinterpret_cast<uint64>(&d); }

TL_DEVICE void tma_prefetch_descriptor(const TmaDescriptor& d) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tma_desc_addr(d)) : "memory");
}

#define TL_TMA_LOAD_PREFIX "cp.async.bulk.tensor."
#define TL_TMA_LOAD_SUFFIX ".shared::cluster.global.mbarrier::complete_tx::bytes"

TL_DEVICE void tma_load(void* dst, const TmaDescriptor& d, uint64* bar, int c0) {
  asm volatile(TL_TMA_LOAD_PREFIX "1d" TL_TMA_LOAD_SUFFIX " [%0], [%1, {%3}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "r"(c0)
               : "memory");
}
TL_DEVICE void tma_load(void* dst, const TmaDescriptor& d, uint64* bar, int c0, int c1) {
  asm volatile(TL_TMA_LOAD_PREFIX "2d" TL_TMA_LOAD_SUFFIX " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
               : "memory");
}
TL_DEVICE void tma_load(void* dst, const TmaDescriptor& d, uint64* bar, int c0, int c1, int c2) {
  asm volatile(TL_TMA_LOAD_PREFIX "3d" TL_TMA_LOAD_SUFFIX " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
TL_DEVICE void tma_load(void* dst, const TmaDescriptor& d, uint64* bar, int c0, int c1, int c2, int c3) {
  asm volatile(TL_TMA_LOAD_PREFIX "4d" TL_TMA_LOAD_SUFFIX " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(
                   smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
TL_DEVICE void tma_load(void* dst, const TmaDescriptor& d, uint64* bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile(TL_TMA_LOAD_PREFIX "5d" TL_TMA_LOAD_SUFFIX " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(
                   smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

#define TL_TMA_MC_SUFFIX ".shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"

TL_DEVICE void tma_load_multicast(void* dst, const TmaDescriptor& d, uint64* bar, uint16 mask, int c0, int c1) {
  asm volatile(TL_TMA_LOAD_PREFIX "2d" TL_TMA_MC_SUFFIX " [%0], [%1, {%4, %5}], [%2], %3;\n" ::"r"(smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1)
               : "memory");
}
TL_DEVICE void tma_load_multicast(void* dst, const TmaDescriptor& d, uint64* bar, uint16 mask, int c0, int c1,
                                  int c2) {
  asm volatile(TL_TMA_LOAD_PREFIX "3d" TL_TMA_MC_SUFFIX " [%0], [%1, {%4, %5, %6}], [%2], %3;\n" ::"r"(
                   smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

TL_DEVICE void tma_load_multicast(void* dst, const TmaDescriptor& d, uint64* bar, uint16 mask, int c0, int c1,
                                  int c2, int c3) {
  asm volatile(TL_TMA_LOAD_PREFIX "4d" TL_TMA_MC_SUFFIX " [%0], [%1, {%4, %5, %6, %7}], [%2], %3;\n" ::"r"(
                   smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
TL_DEVICE void tma_load_multicast(void* dst, const TmaDescriptor& d, uint64* bar, uint16 mask, int c0, int c1,
                                  int c2, int c3, int c4) {
  asm volatile(TL_TMA_LOAD_PREFIX "5d" TL_TMA_MC_SUFFIX " [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;\n" ::"r"(
                   smem_addr(dst)),
               "l"(tma_desc_addr(d)), "r"(smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

#define TL_TMA_STORE_SUFFIX ".global.shared::cta.bulk_group"

// One box shared -> global: NAME(desc, src, c0[, ... c4]) issues "OP.<n>d SUFFIX".
#define TL_TMA_SHARED_TO_GLOBAL(NAME, OP, SUFFIX)                                                                  \
  TL_DEVICE void NAME(const TmaDescriptor& d, const void* src, int c0) {                                           \
    asm volatile(OP "1d" SUFFIX " [%0, {%2}], [%1];\n" ::"l"(tma_desc_addr(d)), "r"(smem_addr(src)), "r"(c0)       \
                 : "memory");                                                                                       \
  }                                                                                                                 \
  TL_DEVICE void NAME(const TmaDescriptor& d, const void* src, int c0, int c1) {                                   \
    asm volatile(OP "2d" SUFFIX " [%0, {%2, %3}], [%1];\n" ::"l"(tma_desc_addr(d)), "r"(smem_addr(src)), "r"(c0),  \
                 "r"(c1)                                                                                            \
                 : "memory");                                                                                       \
  }                                                                                                                 \
  TL_DEVICE void NAME(const TmaDescriptor& d, const void* src, int c0, int c1, int c2) {                           \
    asm volatile(OP "3d" SUFFIX " [%0, {%2, %3, %4}], [%1];\n" ::"l"(tma_desc_addr(d)), "r"(smem_addr(src)),       \
                 "r"(c0), "r"(c1), "r"(c2)                                                                          \
                 : "memory");                                                                                       \
  }                                                                                                                 \
  TL_DEVICE void NAME(const TmaDescriptor& d, const void* src, int c0, int c1, int c2, int c3) {                   \
    asm volatile(OP "4d" SUFFIX " [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(tma_desc_addr(d)), "r"(smem_addr(src)),   \
                 "r"(c0), "r"(c1), "r"(c2), "r"(c3)                                                                 \
                 : "memory");                                                                                       \
  }                                                                                                                 \
  TL_DEVICE void NAME(const TmaDescriptor& d, const void* src, int c0, int c1, int c2, int c3, int c4) {           \
    asm volatile(OP "5d" SUFFIX " [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(tma_desc_addr(d)),                    \
                 "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)                                   \
                 : "memory");                                                                                       \
  }

TL_TMA_SHARED_TO_GLOBAL(tma_store, TL_TMA_LOAD_PREFIX, TL_TMA_STORE_SUFFIX)
TL_TMA_SHARED_TO_GLOBAL(tma_reduce_add, "cp.reduce.async.bulk.tensor.", ".global.shared::cta.add.tile.bulk_group")
#undef TL_TMA_SHARED_TO_GLOBAL

TL_DEVICE void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's bulk groups still read shared memory.
template <int N>
TL_DEVICE void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until at most N of this thread's bulk groups are incomplete (writes visible).
template <int N>
TL_DEVICE void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

#undef TL_TMA_LOAD_PREFIX
#undef TL_TMA_LOAD_SUFFIX
#undef TL_TMA_MC_SUFFIX
#undef TL_TMA_STORE_SUFFIX

}  // namespace tl
