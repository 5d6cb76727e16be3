// tl/reduce.h -- reduction operators, warp reductions and the group all-reduce.
//
// Operators (function objects with a static identity):
//   SumOp, MaxOp, MinOp, AbsMaxOp, BitAndOp, BitOrOp, BitXorOp
//     Op{}(a, b)                  combine two values
//     Op::template identity<T>()  neutral element
//
//   warp_reduce<Op>(v) / warp_reduce_sum / _max / _min(v)
//     butterfly over all 32 lanes; every lane returns the full result.
//
//   AllReduce<Op, kThreads, kScale, kThreadOffset, kBarrierThreads, kBarrierId>::run(v, scratch)
//     all-reduce among the kThreads threads {base + k * kScale : k < kThreads}
//     (thread index t = threadIdx.x - kThreadOffset; a group is the set of
//     threads with equal t % kScale and equal t / (kThreads * kScale)).
//     Every member returns the full, bitwise identical result.  See below.
#pragma once

#include "common.h"

namespace tl {

// Shuffle any trivially copyable value of at most 8 bytes (bit-exact).
template <class T>
TL_DEVICE T shfl_xor(T v, int lane_mask, unsigned member_mask = 0xffffffffu) {
  static_assert(sizeof(T) <= 8, "tl::shfl_xor: values up to 8 bytes");
  if constexpr (sizeof(T) <= 4) {
    uint32_t u = 0;
    memcpy(&u, &v, sizeof(T));
    u = __shfl_xor_sync(member_mask, u, lane_mask);
    T r;
    memcpy(&r, &u, sizeof(T));
    return r;
  } else {
    unsigned long long u;
    memcpy(&u, &v, sizeof(T));
    u = __shfl_xor_sync(member_mask, u, lane_mask);
    T r;
    memcpy(&r, &u, sizeof(T));
    return r;
  }
}

template <class T>
TL_DEVICE T shfl_sync(T v, int src_lane, unsigned member_mask = 0xffffffffu) {
  static_assert(sizeof(T) <= 8, "tl::shfl_sync: values up to 8 bytes");
  if constexpr (sizeof(T) <= 4) {
    uint32_t u = 0;
    memcpy(&u, &v, sizeof(T));
    u = __shfl_sync(member_mask, u, src_lane);
    T r;
    memcpy(&r, &u, sizeof(T));
    return r;
  } else {
    unsigned long long u;
    memcpy(&u, &v, sizeof(T));
    u = __shfl_sync(member_mask, u, src_lane);
    T r;
    memcpy(&r, &u, sizeof(T));
    return r;
  }
}

// T.shfl_xor / shfl_down / shfl_up / shfl_sync: kKind 0 xor, 1 down, 2 up, 3 idx; lanes in
// groups of `width` (a power of two up to 32), as CUDA's __shfl_*_sync (bit-exact for any
// trivially copyable value of at most 8 bytes).
template <int kKind, class U>
TL_DEVICE U shfl_bits(unsigned mask, U u, int lane, int width) {
  if constexpr (kKind == 0) {
    return __shfl_xor_sync(mask, u, lane, width);
  } else if constexpr (kKind == 1) {
    return __shfl_down_sync(mask, u, static_cast<unsigned>(lane), width);
  } else if constexpr (kKind == 2) {
    return __shfl_up_sync(mask, u, static_cast<unsigned>(lane), width);
  } else {
    return __shfl_sync(mask, u, lane, width);
  }
}

template <int kKind, class T>
TL_DEVICE T shfl_lane(T v, int lane, int width, unsigned mask) {
  static_assert(sizeof(T) <= 8, "tl::shfl_lane: values up to 8 bytes");
  T r;
  if constexpr (sizeof(T) <= 4) {
    uint32_t u = 0;
    memcpy(&u, &v, sizeof(T));
    u = shfl_bits<kKind>(mask, u, lane, width);
    memcpy(&r, &u, sizeof(T));
  } else {
    unsigned long long u;
    memcpy(&u, &v, sizeof(T));
    u = shfl_bits<kKind>(mask, u, lane, width);
    memcpy(&r, &u, sizeof(T));
  }
  return r;
}

// ---------------------------------------------------------------------------
// Operators.  Arithmetic works on float, double, half_t, bfloat16_t and
// integers (half / bfloat16 sums are rounded after every addition, exactly like
// a chain of __hadd); bit operators on integers only.
// ---------------------------------------------------------------------------
struct SumOp {
  template <class T>
  TL_DEVICE T operator()(T a, T b) const {
    if constexpr (detail::is_half_v<T> || detail::is_bf16_v<T>) {
      return __hadd(a, b);
    } else {
      return a + b;
    }
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

// max(|a|, |b|).  Inputs may be negative; the result is non-negative.
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

// ---------------------------------------------------------------------------
// Full-warp reductions (all 32 lanes must call; every lane gets the result).
// ---------------------------------------------------------------------------
template <class Op, class T>
TL_DEVICE T warp_reduce(T v) {
  Op op;
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    v = op(v, shfl_xor(v, offset));
  }
  return v;
}

template <class T>
TL_DEVICE T warp_reduce_sum(T v) {
  return warp_reduce<SumOp>(v);
}
template <class T>
TL_DEVICE T warp_reduce_max(T v) {
  return warp_reduce<MaxOp>(v);
}
template <class T>
TL_DEVICE T warp_reduce_min(T v) {
  return warp_reduce<MinOp>(v);
}

// ---------------------------------------------------------------------------
// AllReduce
//
//   kThreads        number of threads in a group (power of two)
//   kScale          distance between consecutive group members (power of two)
//   kThreadOffset   subtracted from threadIdx.x (warp-specialised kernels whose
//                   reducing threads start at a non-zero thread index; must be
//                   a multiple of 32)
//   kBarrierThreads 0: cross-warp steps use __syncthreads() (every thread of
//                   the block must call run); > 0: they use the named barrier
//                   `bar.sync kBarrierId, kBarrierThreads`, and exactly those
//                   kBarrierThreads threads must call run.
//
// kThreads * kScale <= 32: pure warp shuffles (xor offsets kThreads*kScale/2,
//   ..., kScale), no scratch and no barrier; `scratch` may be nullptr.
// kThreads * kScale >  32: the group spans warps.  Each warp first reduces its
//   own members with shuffles, writes one partial per group to `scratch`
//   (shared memory), synchronises, every member combines the partials of its
//   group in a fixed order, and a second barrier makes scratch reusable as soon
//   as run() returns.  scratch must hold scratch_elems(num_threads) elements of
//   T, where num_threads is the number of participating threads (threads
//   t = 0 .. num_threads-1 after kThreadOffset):
//     kScale <  32: (num_threads / 32) * kScale elements
//     kScale >= 32: num_threads elements
//
// Preconditions: all 32 lanes of every participating warp call run together
// (full-mask shuffles); num_threads is a multiple of kThreads * kScale when
// the group spans warps.
// ---------------------------------------------------------------------------
template <class Op, int kThreads, int kScale = 1, int kThreadOffset = 0, int kBarrierThreads = 0, int kBarrierId = 1>
struct AllReduce {
  static_assert(kThreads >= 1 && (kThreads & (kThreads - 1)) == 0, "tl::AllReduce: kThreads must be a power of two");
  static_assert(kScale >= 1 && (kScale & (kScale - 1)) == 0, "tl::AllReduce: kScale must be a power of two");
  static_assert(kThreadOffset % 32 == 0, "tl::AllReduce: kThreadOffset must be a multiple of 32");
  static_assert(kBarrierThreads % 32 == 0, "tl::AllReduce: kBarrierThreads must be a multiple of 32");

  static constexpr int kSpan = kThreads * kScale;
  static constexpr bool kInWarp = kSpan <= 32;

  static __host__ __device__ constexpr int scratch_elems(int num_threads) {
    return kInWarp ? 0 : (kScale < 32 ? (num_threads / 32) * kScale : num_threads);
  }

  static TL_DEVICE void barrier() {
    if constexpr (kBarrierThreads == 0) {
      __syncthreads();
    } else {
      asm volatile("bar.sync %0, %1;\n" ::"n"(kBarrierId), "n"(kBarrierThreads) : "memory");
    }
  }

  template <class T>
  static TL_DEVICE T run(T v, T* scratch = nullptr) {
    Op op;
    if constexpr (kThreads == 1) {
      return v;
    } else if constexpr (kInWarp) {
#pragma unroll
      for (int offset = kSpan / 2; offset >= kScale; offset >>= 1) {
        v = op(v, shfl_xor(v, offset));
      }
      return v;
    } else {
      const int tid = static_cast<int>(threadIdx.x) - kThreadOffset;
      int first;
      int count;
      if constexpr (kScale < 32) {
        // Members inside one warp: lanes with equal lane % kScale.
#pragma unroll
        for (int offset = 16; offset >= kScale; offset >>= 1) {
          v = op(v, shfl_xor(v, offset));
        }
        constexpr int kWarpsPerGroup = kSpan / 32;
        const int warp = tid / 32;
        const int lane = tid % 32;
        if (lane < kScale) {
          scratch[warp * kScale + lane] = v;
        }
        first = (warp / kWarpsPerGroup) * kWarpsPerGroup * kScale + lane % kScale;
        count = kWarpsPerGroup;
      } else {
        // Every member sits in a different warp.
        scratch[tid] = v;
        first = (tid / kSpan) * kSpan + tid % kScale;
        count = kThreads;
      }
      barrier();
      T r = scratch[first];
      for (int i = 1; i < count; ++i) {
        r = op(r, scratch[first + i * kScale]);
      }
      barrier();
      return r;
    }
  }
};

}  // namespace tl
