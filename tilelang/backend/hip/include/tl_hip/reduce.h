// tl_hip/reduce.h -- reduction operators and the group all-reduce over waves of 64 lanes.
//
//   SumOp, MaxOp, MinOp, AbsMaxOp, BitAndOp, BitOrOp, BitXorOp: Op{}(a, b), Op::identity<T>()
//   shfl_lane<kind>(v, lane, width, mask): T.shfl_* within groups of `width` lanes
//   AllReduce<Op, kThreads, kScale>::run(v[, scratch])
//     all-reduce among the kThreads threads {base + k * kScale : k < kThreads} (the IR's
//     `tl.all_reduce` fields).  kThreads * kScale <= 64: butterfly `__shfl_xor` (width 64:
//     ds_bpermute / DPP) inside the wave, no scratch, no barrier.  Otherwise each wave folds its
//     members with shuffles, writes one partial per group to `scratch` (LDS, at least
//     blockDim.x elements: what lower_threads allocates), __syncthreads(), every member combines
//     its group's partials in a fixed order, __syncthreads() again.  Every member returns the
//     same bits.
#pragma once

#include "common.h"

namespace tl {

constexpr int kWaveSize = 64;

template <class T>
TL_DEVICE T shfl_xor(T v, int lane_mask) {
  static_assert(sizeof(T) <= 8, "tl::shfl_xor: values up to 8 bytes");
  if constexpr (sizeof(T) <= 4) {
    uint32_t u = 0;
    __builtin_memcpy(&u, &v, sizeof(T));
    u = static_cast<uint32_t>(__shfl_xor(static_cast<int>(u), lane_mask, kWaveSize));
    T r;
    __builtin_memcpy(&r, &u, sizeof(T));
    return r;
  } else {
    long long u;
    __builtin_memcpy(&u, &v, sizeof(T));
    u = __shfl_xor(u, lane_mask, kWaveSize);
    T r;
    __builtin_memcpy(&r, &u, sizeof(T));
    return r;
  }
}

// T.shfl_xor / shfl_down / shfl_up / shfl_sync: kKind 0 xor, 1 down, 2 up, 3 idx, lanes in
// groups of `width` (a power of two up to 64) as HIP's __shfl_* define them; the CUDA member
// mask has no AMD counterpart (a wave executes the shuffle with its active lanes) and is unused.
template <int kKind, class T>
TL_DEVICE T shfl_lane(T v, int lane, int width, unsigned mask) {
  (void)mask;
  static_assert(sizeof(T) <= 4, "tl::shfl_lane (HIP): values up to 4 bytes");
  int u = 0;
  __builtin_memcpy(&u, &v, sizeof(T));
  if constexpr (kKind == 0) {
    u = __shfl_xor(u, lane, width);
  } else if constexpr (kKind == 1) {
    u = __shfl_down(u, static_cast<unsigned>(lane), width);
  } else if constexpr (kKind == 2) {
    u = __shfl_up(u, static_cast<unsigned>(lane), width);
  } else {
    u = __shfl(u, lane, width);
  }
  T r;
  __builtin_memcpy(&r, &u, sizeof(T));
  return r;
}

struct SumOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
  template <class T>
  static TL_DEVICE T identity() {
    return cvt<T>(0);
  }
};
struct MaxOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return tl::max(a, b);
  }
  template <class T>
  static TL_DEVICE T identity() {
    return neg_infinity<T>();
  }
};
struct MinOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return tl::min(a, b);
  }
  template <class T>
  static TL_DEVICE T identity() {
    return infinity<T>();
  }
};
struct AbsMaxOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return tl::max(tl::abs(a), tl::abs(b));
  }
  template <class T>
  static TL_DEVICE T identity() {
    return cvt<T>(0);
  }
};
struct BitAndOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
  template <class T>
  static TL_DEVICE T identity() {
    return static_cast<T>(~static_cast<T>(0));
  }
};
struct BitOrOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
  template <class T>
  static TL_DEVICE T identity() {
    return static_cast<T>(0);
  }
};
struct BitXorOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
  template <class T>
  static TL_DEVICE T identity() {
    return static_cast<T>(0);
  }
};

template <class Op, int kThreads, int kScale = 1>
struct AllReduce {
  static_assert(kThreads >= 1 && (kThreads & (kThreads - 1)) == 0, "tl::AllReduce: kThreads must be a power of two");
  static_assert(kScale >= 1 && (kScale & (kScale - 1)) == 0, "tl::AllReduce: kScale must be a power of two");
  static constexpr int kSpan = kThreads * kScale;

  template <class T>
  static TL_DEVICE T run(T v, T* scratch = nullptr) {
    Op op;
    if constexpr (kThreads == 1) {
      return v;
    } else if constexpr (kSpan <= kWaveSize) {
#pragma unroll
      for (int offset = kSpan / 2; offset >= kScale; offset >>= 1) {
        v = op(v, shfl_xor(v, offset));
      }
      return v;
    } else {
      const int tid = static_cast<int>(threadIdx.x);
      int first;
      int count;
      if constexpr (kScale < kWaveSize) {
#pragma unroll
        for (int offset = kWaveSize / 2; offset >= kScale; offset >>= 1) {
          v = op(v, shfl_xor(v, offset));
        }
        constexpr int kWavesPerGroup = kSpan / kWaveSize;
        const int wave = tid / kWaveSize;
        const int lane = tid % kWaveSize;
        if (lane < kScale) {
          scratch[wave * kScale + lane] = v;
        }
        first = (wave / kWavesPerGroup) * kWavesPerGroup * kScale + lane % kScale;
        count = kWavesPerGroup;
      } else {
        scratch[tid] = v;
        first = (tid / kSpan) * kSpan + tid % kScale;
        count = kThreads;
      }
      __syncthreads();
      T r = scratch[first];
      for (int i = 1; i < count; ++i) {
        r = op(r, scratch[first + i * kScale]);
      }
      __syncthreads();
      return r;
    }
  }
};

}  // namespace tl
