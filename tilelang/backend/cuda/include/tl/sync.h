// tl/sync.h -- barriers, fences and (sm_90) thread-block-cluster helpers.
//
//   named_barrier_sync(id, num_threads)    bar.sync id, num_threads
//   named_barrier_arrive(id, num_threads)  bar.arrive id, num_threads
//       id in 0..15 (0 is the barrier __syncthreads() uses), num_threads a
//       multiple of 32 counting every thread that syncs or arrives on `id`.
//   pingpong_wait / _pass / _first / _last  turns of two consumer warpgroups (ids 2, 3)
//   syncthreads_count / _and / _or(pred)   block barrier + predicate reduction
//   syncwarp(mask)
//   threadfence() / threadfence_block()    __threadfence() / __threadfence_block()
//   fence_proxy_async()                    (sm_90) order this thread's generic-proxy
//                                          shared-memory writes before later
//                                          async-proxy accesses (TMA store, wgmma)
//   cluster_*                              (sm_90) cluster barrier and ids
#pragma once

#include "common.h"

namespace tl {

TL_DEVICE void named_barrier_sync(int id, int num_threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(num_threads) : "memory");
}

TL_DEVICE void named_barrier_arrive(int id, int num_threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(num_threads) : "memory");
}

// Compile-time forms (ids / counts become PTX immediates).
template <int kId, int kNumThreads>
TL_DEVICE void named_barrier_sync() {
  static_assert(kId >= 0 && kId < 16, "tl::named_barrier_sync: id must be in [0, 16)");
  static_assert(kNumThreads % 32 == 0, "tl::named_barrier_sync: thread count must be a multiple of 32");
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kNumThreads) : "memory");
}

template <int kId, int kNumThreads>
TL_DEVICE void named_barrier_arrive() {
  static_assert(kId >= 0 && kId < 16, "tl::named_barrier_arrive: id must be in [0, 16)");
  static_assert(kNumThreads % 32 == 0, "tl::named_barrier_arrive: thread count must be a multiple of 32");
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kId), "n"(kNumThreads) : "memory");
}

// Ping-pong of the two consumer warpgroups (threads [0, 256)) of a warp-specialized loop
// (backend/cuda/overlap_gemms.py): warpgroup w issues its gemms only in its turn, waiting on named
// barrier 2 + w, and hands the turn over by arriving on the other's, so one warpgroup's softmax
// runs while the other's gemms hold the tensor cores. Warpgroup 0 goes first: `pingpong_first`
// makes warpgroup 1 wait for it once, `pingpong_last` ends warpgroup 0's last turn (each
// barrier then has as many arrivals as waits).
TL_DEVICE void pingpong_wait() { named_barrier_sync(2 + static_cast<int>(threadIdx.x) / 128, 256); }
TL_DEVICE void pingpong_pass() { named_barrier_arrive(3 - static_cast<int>(threadIdx.x) / 128, 256); }
TL_DEVICE void pingpong_first() {
  if (threadIdx.x >= 128) named_barrier_sync(3, 256);
}
TL_DEVICE void pingpong_last() {
  if (threadIdx.x < 128) named_barrier_arrive(3, 256);
}

TL_DEVICE int syncthreads_count(int pred) { return __syncthreads_count(pred); }
TL_DEVICE bool syncthreads_and(bool pred) { return __syncthreads_and(pred) != 0; }
TL_DEVICE bool syncthreads_or(bool pred) { return __syncthreads_or(pred) != 0; }
TL_DEVICE void syncwarp(unsigned mask = 0xffffffffu) { __syncwarp(mask); }
TL_DEVICE void threadfence() { __threadfence(); }
TL_DEVICE void threadfence_block() { __threadfence_block(); }

#if TL_SM90_DECLARE
TL_DEVICE void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Cluster barrier.  arrive + wait == cluster_sync().  The relaxed arrive does
// not order this thread's earlier memory accesses.
TL_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory"); }
TL_DEVICE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory"); }
TL_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }
TL_DEVICE void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// Rank of this CTA in its cluster, and number of CTAs in the cluster.
TL_DEVICE uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
TL_DEVICE uint32_t cluster_nctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}

// shared::cluster address of the variable at `smem` (this CTA's shared
// memory) in the shared memory of CTA `cta_rank` of the cluster.
TL_DEVICE uint32_t cluster_map_shared(const void* smem, uint32_t cta_rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem_addr(smem)), "r"(cta_rank));
  return r;
}
#endif  // TL_SM90_DECLARE

}  // namespace tl
