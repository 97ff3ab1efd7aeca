// mbarriers (sm_90): shared-memory barriers with a phase bit and a transaction count,
// the completion mechanism of TMA loads and the handshake of warp-specialized pipelines.
//
//   mbarrier_init(bar, count)            one thread; then mbarrier_init_fence() and a
//                                        block barrier before any other thread uses it
//   mbarrier_arrive(bar)                 one arrival (release, CTA scope)
//   mbarrier_arrive_expect_tx(bar, n)    raises the transaction count by n bytes, then arrives
//   mbarrier_expect_tx(bar, n)           raises the transaction count only
//   mbarrier_wait(bar, parity)           blocks until the phase with that parity completed
//                                        (acquire: data the phase's TMA copies wrote is visible)
//
// A phase completes when its pending arrivals and its transaction count are both zero;
// the barrier then flips its phase bit. Waiting for parity (k / stages) & 1 on slot
// k % stages is the ring protocol; waiting for the opposite parity of a fresh barrier
// returns at once (the "previous" phase counts as complete).
//
// Generated code waits through TL_MBARRIER_WAIT(&bar[i], parity). With TILEC_DEBUG_SYNC
// defined (knob TILEC_DEBUG_SYNC=1) a wait that spins longer than about two seconds
// prints the kernel, the barrier expression, the parity and the block and traps, instead
// of hanging the GPU.
#pragma once

namespace tl {

TL_DEVICE uint32 smem_addr(const void* p) { return static_cast<uint32>(__cvta_generic_to_shared(p)); }

TL_DEVICE void mbarrier_init(uint64* bar, uint32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// Makes this thread's mbarrier_init calls visible to the other threads (and the async
// proxy) of the cluster; a block (or cluster) barrier must still follow.
TL_DEVICE void mbarrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

TL_DEVICE void mbarrier_arrive(uint64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

TL_DEVICE void mbarrier_arrive_expect_tx(uint64* bar, uint32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

TL_DEVICE void mbarrier_expect_tx(uint64* bar, uint32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

// Arrives on the barrier at the same offset in the shared memory of CTA `cta` of the
// cluster (mapa + remote arrive). The arrive keeps PTX's default semantics (release at CTA
// scope), as CUTLASS's ClusterBarrier does: what it publishes is "my wgmma reads of this slot
// are done" (already ordered by wgmma.wait_group), and the slot is then overwritten by TMA,
// which the waiting producer orders itself. `.release.cluster` compiles to a cluster-wide
// memory fence per arrive: measured on the H200 it halved a 2-CTA multicast GEMM (ncu: tensor
// pipe 44% against 92% without multicast).
TL_DEVICE void mbarrier_arrive_cluster(uint64* bar, uint32 cta) {
  asm volatile(
      "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
      " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
      "r"(cta)
      : "memory");
}

TL_DEVICE bool mbarrier_try_wait(uint64* bar, uint32 parity) {
  uint32 done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

#if defined(TILEC_DEBUG_SYNC)
// The bounded wait of the hang detector; `kernel` and `what` come from TL_MBARRIER_WAIT.
TL_DEVICE void mbarrier_wait_checked(uint64* bar, uint32 parity, const char* kernel, const char* what) {
  const long long start = clock64();
  while (!mbarrier_try_wait(bar, parity)) {
    if (clock64() - start > 4000000000ll) {
      printf("tilec: mbarrier wait timed out in kernel %s: barrier %s, waiting for parity %u, block (%d, %d, %d), "
             "thread %d\n",
             kernel, what, parity, (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x);
      __trap();
    }
  }
}
#define TL_MBARRIER_WAIT(bar, parity) ::tl::mbarrier_wait_checked((bar), (parity), __func__, #bar)
#else
#define TL_MBARRIER_WAIT(bar, parity) ::tl::mbarrier_wait((bar), (parity))
#endif

TL_DEVICE void mbarrier_wait(uint64* bar, uint32 parity) {
  while (!mbarrier_try_wait(bar, parity)) {
  }
}

// fence.proxy.async: orders this thread's generic-proxy shared-memory accesses with the
// async proxy (TMA, wgmma) in both directions. Writers run it before the barrier that
// hands shared memory to TMA stores or wgmma.
TL_DEVICE void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Programmatic dependent launch (T.pdl_trigger / T.pdl_sync): griddepcontrol on sm_90+, where
// both return at once unless the launch asked for programmatic stream serialization; nothing
// before sm_90.
TL_DEVICE void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
TL_DEVICE void pdl_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// A barrier over `count` threads (a multiple of 32) of the block, id 1..15 (0 is
// __syncthreads): the block barrier of one warp-specialized role.
TL_DEVICE void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Turns of two consumer warpgroups (256 threads): the one whose turn it is waits on its
// barrier, the other passes it (bar.arrive does not wait).
TL_DEVICE void pingpong_wait(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
TL_DEVICE void pingpong_pass(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }

// setmaxnreg: all warps of a warpgroup change their register budget (sm_90a).
template <int N>
TL_DEVICE void setmaxnreg_inc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
TL_DEVICE void setmaxnreg_dec() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// The number of blocks of the grid along x (a persistent kernel's stride over its tiles).
TL_DEVICE int grid_dim_x() { return static_cast<int>(gridDim.x); }

// ---- clusters ----
TL_DEVICE uint32 block_rank_in_cluster() {
  uint32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
TL_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

}  // namespace tl
