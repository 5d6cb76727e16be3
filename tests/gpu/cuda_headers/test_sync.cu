// Barriers: syncthreads_count/and/or, named barriers (producer / consumer),
// mbarrier on the sm_80 path (init / arrive / test_wait / wait, two phases),
// and on sm_90 the cluster helpers with a remote mbarrier arrive.
#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

__global__ void syncthreads_kernel(int* out) {
  const int t = threadIdx.x;
  const int c = tl::syncthreads_count(t % 3 == 0);
  const bool all = tl::syncthreads_and(t < 1000);
  const bool none = tl::syncthreads_and(t != 17);
  const bool any = tl::syncthreads_or(t == 200);
  const bool nobody = tl::syncthreads_or(t > 1000);
  if (t == 0) {
    out[0] = c;
    out[1] = all;
    out[2] = none;
    out[3] = any;
    out[4] = nobody;
  }
}

// Warps 0-3 produce, warps 4-7 consume through named barrier 3 (256 threads
// total counted: 128 arrive + 128 sync), repeated for several rounds.
__global__ void named_barrier_kernel(int* out) {
  __shared__ int buf[128];
  const int t = threadIdx.x;
  int bad = 0;
  for (int round = 0; round < 8; ++round) {
    if (t < 128) {
      buf[t] = round * 1000 + t;
      tl::named_barrier_arrive(3, 256);  // data ready
      tl::named_barrier_sync(4, 256);    // wait until consumed
    } else {
      tl::named_barrier_sync(3, 256);
      bad += buf[255 - t] != round * 1000 + (255 - t);
      tl::named_barrier_arrive<4, 256>();
    }
  }
  // compile-time-id form for the whole block
  tl::named_barrier_sync<5, 256>();
  out[t] = bad;
}

// mbarrier, sm_80 path: two phases with every thread arriving.
__global__ void mbarrier_kernel(int* out) {
  __shared__ alignas(8) uint64_t bar;
  __shared__ int data[256];
  const int t = threadIdx.x;
  if (t == 0) tl::mbarrier_init(&bar, blockDim.x);
  __syncthreads();
  int bad = 0;
  // Before this thread arrives, phase 0 cannot be complete.
  if (t == 0) bad += tl::mbarrier_test_wait(&bar, 0) ? 1 : 0;
  data[t] = t + 1;
  tl::mbarrier_arrive(&bar);
  tl::mbarrier_wait(&bar, 0);
  bad += data[255 - t] != 256 - t;
  bad += tl::mbarrier_test_wait(&bar, 0) ? 0 : 1;  // phase 0 stays complete
  __syncthreads();
  data[t] = 2 * (t + 1);
  tl::mbarrier_arrive(&bar);
  tl::mbarrier_wait(&bar, 1);
  bad += data[(t + 1) % 256] != 2 * ((t + 1) % 256 + 1);
  __syncthreads();
  if (t == 0) tl::mbarrier_invalidate(&bar);
  out[t] = bad;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
__global__ void cluster_kernel(int*) {}
#else
// Cluster of 2: each CTA's thread 0 arrives on the *other* CTA's barrier; the
// barrier completes only through that remote arrival.
__global__ void __cluster_dims__(2, 1, 1) cluster_kernel(int* out) {
  __shared__ alignas(8) uint64_t bar;
  __shared__ int value;
  const uint32_t rank = tl::cluster_ctarank();
  if (threadIdx.x == 0) {
    tl::mbarrier_init(&bar, 1);
    value = 100 + static_cast<int>(rank);
    tl::fence_barrier_init();
  }
  tl::cluster_sync();
  if (threadIdx.x == 0) tl::mbarrier_arrive_cluster(&bar, rank ^ 1u);
  tl::mbarrier_wait(&bar, 0);
  // Read the peer's shared variable through its cluster address.
  int peer = 0;
  if (threadIdx.x == 0) {
    const uint32_t addr = tl::cluster_map_shared(&value, rank ^ 1u);
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(peer) : "r"(addr));
  }
  tl::cluster_arrive_relaxed();
  tl::cluster_wait();
  if (threadIdx.x == 0) {
    out[blockIdx.x * 4 + 0] = static_cast<int>(rank);
    out[blockIdx.x * 4 + 1] = static_cast<int>(tl::cluster_nctarank());
    out[blockIdx.x * 4 + 2] = peer;
    out[blockIdx.x * 4 + 3] = 1;
  }
  tl::cluster_arrive();
  tl::cluster_wait();
}
#endif

int main() {
  {
    DeviceBuffer<int> out(8);
    syncthreads_kernel<<<1, 256>>>(out.ptr);
    sync_or_die("syncthreads");
    auto o = out.download();
    Check check("syncthreads_count_and_or");
    check.expect(o[0] == 86, "count %d", o[0]);
    check.expect(o[1] == 1 && o[2] == 0 && o[3] == 1 && o[4] == 0, "and/or %d %d %d %d", o[1], o[2], o[3], o[4]);
  }
  {
    DeviceBuffer<int> out(256);
    named_barrier_kernel<<<1, 256>>>(out.ptr);
    sync_or_die("named_barrier");
    auto o = out.download();
    Check check("named_barrier_producer_consumer");
    for (int t = 0; t < 256; ++t) check.expect(o[t] == 0, "thread %d saw %d stale values", t, o[t]);
  }
  {
    DeviceBuffer<int> out(256);
    mbarrier_kernel<<<1, 256>>>(out.ptr);
    sync_or_die("mbarrier");
    auto o = out.download();
    Check check("mbarrier_two_phases");
    for (int t = 0; t < 256; ++t) check.expect(o[t] == 0, "thread %d: %d errors", t, o[t]);
  }
  if (device_cc() >= 90) {
    DeviceBuffer<int> out(16);
    out.fill_bytes(0);
    cluster_kernel<<<4, 64>>>(out.ptr);
    sync_or_die("cluster");
    auto o = out.download();
    Check check("cluster_remote_mbarrier_and_ids");
    for (int b = 0; b < 4; ++b) {
      const int rank = o[b * 4], n = o[b * 4 + 1], peer = o[b * 4 + 2], done = o[b * 4 + 3];
      check.expect(rank == b % 2 && n == 2 && peer == 100 + (rank ^ 1) && done == 1, "block %d: rank %d n %d peer %d",
                   b, rank, n, peer);
    }
  } else {
    skip("cluster", "needs sm_90+");
  }
  return finish();
}
