// cp.async (sm_80+): asynchronous global -> shared copies, destination first.
//
//   cp_async_cg16(dst, src)          16 bytes, cached in L2 only (.cg; only 16 is legal)
//   cp_async_ca{16,8,4}(dst, src)    cached in L1 and L2 (.ca)
//   *_zfill(dst, src, pred)          when pred is false nothing is read from src (src-size 0)
//                                    and the destination bytes are written with zeros
//   cp_async_commit()                closes the group of copies issued since the last commit
//   cp_async_wait(n)                 blocks until at most n committed groups are pending
//                                    (n must be a compile-time constant after inlining, 0..7)
//   cp_async_mbarrier_arrive_noinc(bar)  the mbarrier `bar` gets one arrival once every
//                                    cp.async this thread issued before has landed; the
//                                    arrival counts against the barrier's expected count
//                                    (.noinc), so init the barrier with the producer threads
//
// Completed copies are visible to the issuing thread only; other threads of the block see
// them after a barrier that follows the wait.
#pragma once

namespace tl {

__device__ __forceinline__ unsigned cp_async_smem_addr(const void* smem_ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(smem_ptr));
}

__device__ __forceinline__ void cp_async_cg16(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src)
               : "memory");
}

__device__ __forceinline__ void cp_async_cg16_zfill(void* smem_dst, const void* gmem_src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src), "r"(pred ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_ca16(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src)
               : "memory");
}

__device__ __forceinline__ void cp_async_ca16_zfill(void* smem_dst, const void* gmem_src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src), "r"(pred ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_ca8(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src)
               : "memory");
}

__device__ __forceinline__ void cp_async_ca8_zfill(void* smem_dst, const void* gmem_src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src), "r"(pred ? 8 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_ca4(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src)
               : "memory");
}

__device__ __forceinline__ void cp_async_ca4_zfill(void* smem_dst, const void* gmem_src, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(cp_async_smem_addr(smem_dst)),
               "l"(gmem_src), "r"(pred ? 4 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(void* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(cp_async_smem_addr(bar)) : "memory");
}

// `n` must fold to a constant: the PTX immediate is chosen by the switch.
__device__ __forceinline__ void cp_async_wait(int n) {
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
}

}  // namespace tl
