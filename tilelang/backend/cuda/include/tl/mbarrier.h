// tl/mbarrier.h -- shared-memory transaction barriers (mbarrier).
//
// An mbarrier is a uint64_t in shared memory (8-byte aligned).  Its current
// phase completes when (a) the pending arrival count, set by mbarrier_init,
// reaches zero and (b) (sm_90) the pending transaction byte count reaches zero.
// Then the barrier re-arms with the same arrival count and the next phase
// starts.  Phases alternate parity 0, 1, 0, ...; the first phase has parity 0.
// mbarrier_wait(bar, parity) returns once the phase with that parity (the
// current one, or the most recently completed one) has completed; a consumer
// loop therefore waits with parity (iteration / num_stages) & 1.
//
// sm_80+:  mbarrier_init, mbarrier_arrive, mbarrier_test_wait, mbarrier_wait,
//          mbarrier_invalidate
// sm_90+:  mbarrier_arrive_expect_tx, mbarrier_expect_tx, mbarrier_try_wait,
//          mbarrier_arrive_cluster, fence_barrier_init
//          (mbarrier_wait uses the hardware-suspending try_wait there)
#pragma once

#include "common.h"

namespace tl {

// Initialise with the number of arrivals per phase (1 .. 2^20 - 1).  Must be
// made visible to the other threads (__syncthreads(); for cluster / TMA use:
// fence_barrier_init() + cluster_sync()) before anyone arrives or waits.
TL_DEVICE void mbarrier_init(uint64_t* bar, uint32_t arrive_count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrive_count) : "memory");
}

// Invalidate before the shared memory is reused for something else.
TL_DEVICE void mbarrier_invalidate(uint64_t* bar) {
  asm volatile("mbarrier.inval.shared.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// One arrival (release semantics at CTA scope).  Returns the opaque state
// token of the phase arrived on (usually ignored).
TL_DEVICE uint64_t mbarrier_arrive(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];\n" : "=l"(state) : "r"(smem_addr(bar)) : "memory");
  return state;
}

// Non-blocking: true iff the phase with parity `phase_parity` has completed.
TL_DEVICE bool mbarrier_test_wait(uint64_t* bar, uint32_t phase_parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(phase_parity)
      : "memory");
  return done != 0;
}

#if TL_SM90_DECLARE
// Like test_wait, but the thread may be suspended for a hardware-defined time
// while waiting.  Returns true iff the phase has completed.
TL_DEVICE bool mbarrier_try_wait(uint64_t* bar, uint32_t phase_parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(phase_parity)
      : "memory");
  return done != 0;
}

// One arrival plus `tx_bytes` expected transaction bytes (the bytes that the
// TMA / bulk copies signalling this barrier will deliver in this phase).
TL_DEVICE void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t tx_bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(tx_bytes)
               : "memory");
}

// Add `tx_bytes` expected transaction bytes to the current phase without arriving.
TL_DEVICE void mbarrier_expect_tx(uint64_t* bar, uint32_t tx_bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(tx_bytes)
               : "memory");
}

// Arrive (release, cluster scope) on the barrier at the same shared-memory
// offset in CTA `cta_rank` of this cluster (cta_rank may be this CTA).
TL_DEVICE void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(cta_rank)
      : "memory");
}

// Make mbarrier_init visible to the async proxy and to the other CTAs of the
// cluster (follow with cluster_sync() or __syncthreads()).
TL_DEVICE void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
#endif  // TL_SM90_DECLARE

// Block-wide initialisation of `n` consecutive barriers with `arrive_count`
// arrivals each: thread 0 initialises (and, on sm_90, fences the inits for the
// async proxy), then the block synchronises. Every thread must call it.
TL_DEVICE void mbarrier_init_block(uint64_t* bars, int n, uint32_t arrive_count) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) mbarrier_init(bars + i, arrive_count);
#if TL_SM90_ENABLED
    fence_barrier_init();
#endif
  }
  __syncthreads();
}

// Thread 0 invalidates `n` consecutive barriers that nobody waits on any more
// (e.g. after a block barrier), so that the memory may be initialised again.
TL_DEVICE void mbarrier_invalidate_block(uint64_t* bars, int n) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) mbarrier_invalidate(bars + i);
  }
}

// One arrival per warp (lane 0, after the warp converged): a barrier whose
// arrival count is the number of warps of a thread group hears once from each.
TL_DEVICE void mbarrier_arrive_per_warp(uint64_t* bar) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) mbarrier_arrive(bar);
}

// Block until the phase with parity `phase_parity` has completed.
TL_DEVICE void mbarrier_wait(uint64_t* bar, uint32_t phase_parity) {
#if TL_SM90_ENABLED
  while (!mbarrier_try_wait(bar, phase_parity)) {
  }
#else
  while (!mbarrier_test_wait(bar, phase_parity)) {
  }
#endif
}

}  // namespace tl
