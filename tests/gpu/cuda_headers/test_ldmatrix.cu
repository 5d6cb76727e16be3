// ldmatrix x1/x2/x4 (+trans) and, on sm_90, stmatrix x1/x2/x4 (+trans):
// checks the lane <-> element mapping documented in tl/README.md bit-exactly.
#include "harness.h"
#include "tl/all.h"

using namespace tl_test;

// Shared tile: 32 rows x 8 halves with a padded row stride (so the row
// addresses are not contiguous).  Matrix i = rows 8i .. 8i+7.
constexpr int kStride = 24;  // halves; 48 bytes, keeps every row 16-byte aligned

__device__ __host__ inline uint16_t tile_value(int row, int col) { return static_cast<uint16_t>(row * 64 + col + 1); }

template <int kNum, bool kTrans>
__global__ void ldmatrix_kernel(uint32_t* out) {
  __shared__ alignas(16) uint16_t tile[32 * kStride];
  for (int i = threadIdx.x; i < 32 * kStride; i += blockDim.x) {
    const int r = i / kStride, c = i % kStride;
    tile[i] = c < 8 ? tile_value(r, c) : 0xFFFF;
  }
  __syncthreads();
  const int lane = threadIdx.x;
  // Lane 8i + r addresses row r of matrix i; lanes beyond 8*kNum still pass
  // a valid row pointer (ignored by the instruction).
  const uint16_t* row_ptr = tile + (lane % (8 * kNum)) * kStride;
  uint32_t r[4] = {0, 0, 0, 0};
  tl::ldmatrix<kNum, kTrans>(r, row_ptr);
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = r[i];
}

template <int kNum, bool kTrans>
void check_ldmatrix(const char* name) {
  DeviceBuffer<uint32_t> out(32 * 4);
  ldmatrix_kernel<kNum, kTrans><<<1, 32>>>(out.ptr);
  sync_or_die(name);
  std::vector<uint32_t> got = out.download();
  Check check(name);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < kNum; ++i) {
      uint16_t lo, hi;
      if (!kTrans) {  // row lane/4, columns 2(lane%4), +1 of matrix i
        lo = tile_value(8 * i + lane / 4, 2 * (lane % 4));
        hi = tile_value(8 * i + lane / 4, 2 * (lane % 4) + 1);
      } else {  // column lane/4, rows 2(lane%4), +1 of matrix i
        lo = tile_value(8 * i + 2 * (lane % 4), lane / 4);
        hi = tile_value(8 * i + 2 * (lane % 4) + 1, lane / 4);
      }
      const uint32_t want = lo | (static_cast<uint32_t>(hi) << 16);
      check.expect(got[lane * 4 + i] == want, "lane %d reg %d got %08x want %08x", lane, i, got[lane * 4 + i], want);
    }
  }
}

// The documented mma A-operand recipe: ldmatrix_x4 with lane l at
// &A[l % 16][(l / 16) * 8] yields A registers 0..3 of m16n8k16.
__global__ void ldmatrix_mma_a_kernel(uint32_t* out) {
  __shared__ alignas(16) uint16_t A[16 * 16];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) A[i] = tile_value(i / 16, i % 16);
  __syncthreads();
  const int lane = threadIdx.x;
  uint32_t r[4];
  tl::ldmatrix_x4(r, A + (lane % 16) * 16 + (lane / 16) * 8);
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = r[i];
}

void check_mma_a_recipe() {
  DeviceBuffer<uint32_t> out(32 * 4);
  ldmatrix_mma_a_kernel<<<1, 32>>>(out.ptr);
  sync_or_die("ldmatrix_mma_a");
  std::vector<uint32_t> got = out.download();
  Check check("ldmatrix_x4_gives_mma_a_fragment");
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int reg = 0; reg < 4; ++reg) {
      const int row = g + 8 * (reg % 2), col = 2 * t + 8 * (reg / 2);
      const uint32_t want = tile_value(row, col) | (static_cast<uint32_t>(tile_value(row, col + 1)) << 16);
      check.expect(got[lane * 4 + reg] == want, "lane %d reg %d", lane, reg);
    }
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
template <int kNum, bool kTrans>
__global__ void stmatrix_kernel(uint16_t*) {}
#else
template <int kNum, bool kTrans>
__global__ void stmatrix_kernel(uint16_t* out) {
  __shared__ alignas(16) uint16_t tile[32 * kStride];
  for (int i = threadIdx.x; i < 32 * kStride; i += blockDim.x) tile[i] = 0xFFFF;
  __syncthreads();
  const int lane = threadIdx.x;
  uint32_t r[4];
  for (int i = 0; i < 4; ++i) {
    // register i of lane l carries the values (l, i, 0) and (l, i, 1)
    r[i] = static_cast<uint32_t>(lane * 8 + i * 2 + 1) | (static_cast<uint32_t>(lane * 8 + i * 2 + 2) << 16);
  }
  tl::stmatrix<kNum, kTrans>(tile + (lane % (8 * kNum)) * kStride, r);
  __syncthreads();
  for (int i = threadIdx.x; i < 32 * kStride; i += blockDim.x) out[i] = tile[i];
}
#endif

template <int kNum, bool kTrans>
void check_stmatrix(const char* name) {
  DeviceBuffer<uint16_t> out(32 * kStride);
  stmatrix_kernel<kNum, kTrans><<<1, 32>>>(out.ptr);
  sync_or_die(name);
  std::vector<uint16_t> got = out.download();
  std::vector<uint16_t> want(32 * kStride, 0xFFFF);
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < kNum; ++i) {
      for (int h = 0; h < 2; ++h) {
        const uint16_t v = static_cast<uint16_t>(lane * 8 + i * 2 + 1 + h);
        int row, col;
        if (!kTrans) {
          row = 8 * i + lane / 4;
          col = 2 * (lane % 4) + h;
        } else {
          row = 8 * i + 2 * (lane % 4) + h;
          col = lane / 4;
        }
        want[row * kStride + col] = v;
      }
    }
  }
  Check check(name);
  for (int i = 0; i < 32 * kStride; ++i) {
    check.expect(got[i] == want[i], "row %d col %d got %u want %u", i / kStride, i % kStride, got[i], want[i]);
  }
}

int main() {
  check_ldmatrix<1, false>("ldmatrix_x1");
  check_ldmatrix<2, false>("ldmatrix_x2");
  check_ldmatrix<4, false>("ldmatrix_x4");
  check_ldmatrix<1, true>("ldmatrix_x1_trans");
  check_ldmatrix<2, true>("ldmatrix_x2_trans");
  check_ldmatrix<4, true>("ldmatrix_x4_trans");
  check_mma_a_recipe();
  if (device_cc() >= 90) {
    check_stmatrix<1, false>("stmatrix_x1");
    check_stmatrix<2, false>("stmatrix_x2");
    check_stmatrix<4, false>("stmatrix_x4");
    check_stmatrix<1, true>("stmatrix_x1_trans");
    check_stmatrix<2, true>("stmatrix_x2_trans");
    check_stmatrix<4, true>("stmatrix_x4_trans");
  } else {
    skip("stmatrix", "needs sm_90+");
  }
  return finish();
}
