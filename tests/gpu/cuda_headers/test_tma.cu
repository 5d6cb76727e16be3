// mbarrier transaction counts + TMA (sm_90): 2D / 3D tensor loads (including
// out-of-bounds zero fill and negative coordinates), multi-phase barriers,
// tensor stores and reduce-add stores, 1D bulk copies, and multicast loads in
// a 2-CTA cluster.
#include <cuda.h>

#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

// ---------------------------------------------------------------------------
// Host: cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda).
// ---------------------------------------------------------------------------
using EncodeTiledFn = decltype(&cuTensorMapEncodeTiled);

static EncodeTiledFn encode_fn() {
  static EncodeTiledFn fn = nullptr;
  if (fn) return fn;
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
  CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
#else
  CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q));
#endif
  if (p == nullptr || q != cudaDriverEntryPointSuccess) {
    std::printf("FAIL tma_setup cuTensorMapEncodeTiled not available\n");
    std::exit(2);
  }
  fn = reinterpret_cast<EncodeTiledFn>(p);
  return fn;
}

// Row-major float tensor with dims[0] innermost.
static CUtensorMap make_map(float* base, int rank, const uint64_t* dims, const uint32_t* box,
                            CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE) {
  CUtensorMap map;
  cuuint64_t gdim[5], gstride[4];
  cuuint32_t bdim[5], estride[5];
  uint64_t stride = sizeof(float);
  for (int i = 0; i < rank; ++i) {
    gdim[i] = dims[i];
    bdim[i] = box[i];
    estride[i] = 1;
    if (i > 0) gstride[i - 1] = stride;
    stride *= dims[i];
  }
  CUresult r = encode_fn()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, base, gdim, gstride, bdim, estride,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::printf("FAIL tma_setup cuTensorMapEncodeTiled error %d\n", static_cast<int>(r));
    std::exit(2);
  }
  return map;
}

constexpr int kCols = 128, kRows = 64;          // 2D tensor: dims = {128, 64}
constexpr int kBoxCols = 32, kBoxRows = 16;     // box = {32, 16}
constexpr int kBoxElems = kBoxCols * kBoxRows;  // 512 floats = 2 KiB

__host__ __device__ inline float gval(int r, int c) { return static_cast<float>(r * 1000 + c + 1); }

// Kernel bodies are compiled only for sm_90+ device passes (the program skips
// itself on older GPUs, but must still build for them).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define TL_TEST_SM90_ONLY(...) \
  {}
#define TL_TEST_CLUSTER2
#else
#define TL_TEST_SM90_ONLY(...) __VA_ARGS__
#define TL_TEST_CLUSTER2 __cluster_dims__(2, 1, 1)
#endif

// Load boxes at (c0, c1) = coords[2p], coords[2p+1] for phases p = 0 .. n-1
// through one barrier; mode 0: arrive_expect_tx, mode 1: expect_tx + tma_load
// overload + plain arrive.
__global__ void load2d_kernel(const __grid_constant__ CUtensorMap map, const int* coords, int nphases, int mode,
                              float* out) TL_TEST_SM90_ONLY({
  __shared__ alignas(128) float tile[kBoxElems];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    tl::prefetch_tma_descriptor(&map);
    tl::mbarrier_init(&bar, 1);
    tl::fence_barrier_init();
  }
  __syncthreads();
  for (int p = 0; p < nphases; ++p) {
    if (threadIdx.x == 0) {
      if (mode == 0) {
        tl::mbarrier_arrive_expect_tx(&bar, kBoxElems * sizeof(float));
        tl::tma_load_2d(&map, &bar, tile, coords[2 * p], coords[2 * p + 1]);
      } else {
        tl::mbarrier_expect_tx(&bar, kBoxElems * sizeof(float));
        tl::tma_load(&map, &bar, tile, coords[2 * p], coords[2 * p + 1]);
        tl::mbarrier_arrive(&bar);
      }
    }
    tl::mbarrier_wait(&bar, p & 1);
    for (int i = threadIdx.x; i < kBoxElems; i += blockDim.x) out[p * kBoxElems + i] = tile[i];
    __syncthreads();  // everyone done reading before the next load overwrites the tile
  }
})

static void check_load2d(const char* name, CUtensorMap map, const std::vector<int>& coords, int mode) {
  const int n = static_cast<int>(coords.size()) / 2;
  DeviceBuffer<int> dc(coords);
  DeviceBuffer<float> out(n * kBoxElems);
  load2d_kernel<<<1, 128>>>(map, dc.ptr, n, mode, out.ptr);
  sync_or_die(name);
  auto o = out.download();
  Check check(name);
  for (int p = 0; p < n; ++p) {
    for (int r = 0; r < kBoxRows; ++r) {
      for (int c = 0; c < kBoxCols; ++c) {
        const int gr = coords[2 * p + 1] + r, gc = coords[2 * p] + c;
        const bool in = gr >= 0 && gr < kRows && gc >= 0 && gc < kCols;
        const float want = in ? gval(gr, gc) : 0.0f;
        const float got = o[p * kBoxElems + r * kBoxCols + c];
        check.expect(got == want, "phase %d box (%d,%d) got %g want %g", p, r, c, got, want);
      }
    }
  }
}

// 3D: dims {32, 16, 4}, box {8, 4, 2} at (c0, c1, c2) = (8, 4, 1).
__global__ void load3d_kernel(const __grid_constant__ CUtensorMap map, float* out) TL_TEST_SM90_ONLY({
  __shared__ alignas(128) float tile[64];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    tl::mbarrier_init(&bar, 1);
    tl::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    tl::mbarrier_arrive_expect_tx(&bar, 64 * sizeof(float));
    tl::tma_load_3d(&map, &bar, tile, 8, 4, 1);
  }
  while (!tl::mbarrier_try_wait(&bar, 0)) {
  }
  for (int i = threadIdx.x; i < 64; i += blockDim.x) out[i] = tile[i];
})

// Store a box of values from shared memory: mode 0 tma_store_2d, mode 1
// tma_store_add_2d, mode 2 tma_store overload with a partly out-of-bounds box.
__global__ void store2d_kernel(const __grid_constant__ CUtensorMap map, int c0, int c1, int mode) TL_TEST_SM90_ONLY({
  __shared__ alignas(128) float tile[kBoxElems];
  for (int i = threadIdx.x; i < kBoxElems; i += blockDim.x) tile[i] = -static_cast<float>(i + 1);
  tl::fence_proxy_async();  // generic-proxy writes -> async-proxy (TMA) reads
  __syncthreads();
  if (threadIdx.x == 0) {
    if (mode == 0) {
      tl::tma_store_2d(&map, tile, c0, c1);
    } else if (mode == 1) {
      tl::tma_store_add_2d(&map, tile, c0, c1);
    } else {
      tl::tma_store(&map, tile, c0, c1);
    }
    tl::tma_store_arrive();
    tl::tma_store_wait<0>();
    tl::tma_store_wait_complete<0>();
  }
  __syncthreads();
})

static void check_store2d(const char* name, float* dtensor, CUtensorMap map, int c0, int c1, int mode) {
  std::vector<float> init(kRows * kCols);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) init[r * kCols + c] = gval(r, c);
  CUDA_CHECK(cudaMemcpy(dtensor, init.data(), init.size() * sizeof(float), cudaMemcpyHostToDevice));
  store2d_kernel<<<1, 128>>>(map, c0, c1, mode);
  sync_or_die(name);
  std::vector<float> got(kRows * kCols);
  CUDA_CHECK(cudaMemcpy(got.data(), dtensor, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  Check check(name);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kCols; ++c) {
      const int br = r - c1, bc = c - c0;
      const bool in_box = br >= 0 && br < kBoxRows && bc >= 0 && bc < kBoxCols;
      float want = init[r * kCols + c];
      if (in_box) {
        const float v = -static_cast<float>(br * kBoxCols + bc + 1);
        want = mode == 1 ? want + v : v;
      }
      check.expect(got[r * kCols + c] == want, "(%d,%d) got %g want %g", r, c, got[r * kCols + c], want);
    }
  }
}

// 1D bulk copies: global -> shared (mbarrier) -> global.
__global__ void bulk_kernel(const float* src, float* dst) TL_TEST_SM90_ONLY({
  __shared__ alignas(128) float buf[1024];
  __shared__ alignas(8) uint64_t bar;
  if (threadIdx.x == 0) {
    tl::mbarrier_init(&bar, 1);
    tl::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    tl::mbarrier_arrive_expect_tx(&bar, 4096);
    tl::bulk_copy_g2s(buf, src, 2048, &bar);
    tl::bulk_copy_g2s(buf + 512, src + 512, 2048, &bar);
  }
  tl::mbarrier_wait(&bar, 0);
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) buf[i] *= 2.0f;
  tl::fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    tl::bulk_copy_s2g(dst, buf, 4096);
    tl::tma_store_arrive();
    tl::tma_store_wait<0>();
  }
})

// Multicast: cluster of 2 CTAs; CTA r loads rows [8r, 8r+8) of the box and
// multicasts them to both CTAs.  Each CTA expects the full box on its own barrier.
__global__ void TL_TEST_CLUSTER2 multicast_kernel(const __grid_constant__ CUtensorMap half_map, int c0, int c1,
                                                            float* out) TL_TEST_SM90_ONLY({
  __shared__ alignas(128) float tile[kBoxElems];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t rank = tl::cluster_ctarank();
  if (threadIdx.x == 0) {
    tl::mbarrier_init(&bar, 1);
    tl::fence_barrier_init();
  }
  tl::cluster_sync();
  if (threadIdx.x == 0) {
    tl::mbarrier_arrive_expect_tx(&bar, kBoxElems * sizeof(float));
    const int half = kBoxElems / 2;
    tl::tma_load_multicast_2d(&half_map, &bar, tile + rank * half, 0x3, c0, c1 + 8 * static_cast<int>(rank));
  }
  tl::mbarrier_wait(&bar, 0);
  for (int i = threadIdx.x; i < kBoxElems; i += blockDim.x) out[blockIdx.x * kBoxElems + i] = tile[i];
  tl::cluster_sync();  // keep shared memory alive until the peer's multicast has landed
})

int main() {
  if (device_cc() < 90) {
    skip("tma", "needs sm_90+");
    return finish();
  }
  std::vector<float> host(kRows * kCols);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) host[r * kCols + c] = gval(r, c);
  DeviceBuffer<float> tensor(host);
  const uint64_t dims[2] = {kCols, kRows};
  const uint32_t box[2] = {kBoxCols, kBoxRows};
  CUtensorMap map = make_map(tensor.ptr, 2, dims, box);

  check_load2d("tma_load_2d", map, {32, 8}, 0);
  check_load2d("tma_load_2d_oob_zero_fill", map, {112, 56, -8, -4}, 0);
  // c0 * sizeof(float) must be a multiple of 16 bytes (tma.h): 4, not 5
  check_load2d("tma_load_2d_four_phases_expect_tx", map, {0, 0, 96, 48, 64, 17, 4, 3}, 1);
  {
    const uint64_t d3[3] = {32, 16, 4};
    const uint32_t b3[3] = {8, 4, 2};
    std::vector<float> h3(32 * 16 * 4);
    for (size_t i = 0; i < h3.size(); ++i) h3[i] = static_cast<float>(i);
    DeviceBuffer<float> t3(h3), out(64);
    CUtensorMap map3 = make_map(t3.ptr, 3, d3, b3);
    load3d_kernel<<<1, 64>>>(map3, out.ptr);
    sync_or_die("tma_load_3d");
    auto o = out.download();
    Check check("tma_load_3d");
    for (int z = 0; z < 2; ++z)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 8; ++x) {
          const float want = static_cast<float>(((1 + z) * 16 + (4 + y)) * 32 + (8 + x));
          check.expect(o[(z * 4 + y) * 8 + x] == want, "(%d,%d,%d)", z, y, x);
        }
  }
  check_store2d("tma_store_2d", tensor.ptr, map, 64, 16, 0);
  check_store2d("tma_store_add_2d", tensor.ptr, map, 32, 40, 1);
  check_store2d("tma_store_2d_partly_out_of_bounds", tensor.ptr, map, 112, 56, 2);
  {
    std::vector<float> src(1024);
    for (int i = 0; i < 1024; ++i) src[i] = 0.5f * i - 100.f;
    DeviceBuffer<float> dsrc(src), ddst(1024);
    ddst.fill_bytes(0);
    bulk_kernel<<<1, 128>>>(dsrc.ptr, ddst.ptr);
    sync_or_die("bulk_copy");
    auto o = ddst.download();
    Check check("bulk_copy_g2s_s2g");
    for (int i = 0; i < 1024; ++i) check.expect(o[i] == 2.0f * src[i], "element %d got %g", i, o[i]);
  }
  {
    // Re-upload the original tensor (the store tests modified it).
    tensor.upload(host);
    const uint32_t half_box[2] = {kBoxCols, kBoxRows / 2};
    CUtensorMap half_map = make_map(tensor.ptr, 2, dims, half_box);
    DeviceBuffer<float> out(4 * kBoxElems);
    multicast_kernel<<<4, 128>>>(half_map, 16, 24, out.ptr);
    sync_or_die("tma_load_multicast_2d");
    auto o = out.download();
    Check check("tma_load_multicast_2d");
    for (int b = 0; b < 4; ++b)
      for (int r = 0; r < kBoxRows; ++r)
        for (int c = 0; c < kBoxCols; ++c) {
          const float want = gval(24 + r, 16 + c);
          const float got = o[b * kBoxElems + r * kBoxCols + c];
          check.expect(got == want, "block %d (%d,%d) got %g want %g", b, r, c, got, want);
        }
  }
  return finish();
}
