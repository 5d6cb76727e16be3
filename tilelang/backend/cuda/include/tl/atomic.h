// tl/atomic.h -- atomic read-modify-write operations.
//
//   T atomic_add(T* addr, T val, int memory_order = kMemoryOrderRelaxed)
//       (T is deduced from addr only; val converts to T)
//   T atomic_max(T* addr, T val, int memory_order = kMemoryOrderRelaxed)
//   T atomic_min(T* addr, T val, int memory_order = kMemoryOrderRelaxed)
//       T in {float, double, half_t, bfloat16_t, int32_t, uint32_t, int64_t, uint64_t}
//       (any 4 / 8-byte integer type); returns the previous value.
//   atomic_add_x2(half_t*, __half2 | const half_t*, order)                -> __half2
//   atomic_add_x2(bfloat16_t*, __nv_bfloat162 | const bfloat16_t*, order) -> __nv_bfloat162
//   atomic_add_x2(float*, float2 | const float*, order)                   -> float2
//   atomic_add_x4(float*, float4 | const float*, order)                   -> float4
//   T atomic_load(const T* addr, int memory_order)   4 / 8-byte T
//   void atomic_store(T* addr, T val, int memory_order)
//
// Scope is always the whole GPU (.gpu).  Addresses are generic pointers to
// global or shared memory (float2 / float4 vector atomics: global only).
//
// memory_order uses the std::memory_order numbering:
//   0 relaxed, 1 consume (treated as acquire), 2 acquire, 3 release,
//   4 acq_rel, 5 seq_cst.
// It should be a compile-time constant at the call site (it selects an
// instruction); the relaxed case uses the CUDA atomic intrinsics, so an unused
// result still compiles to a fire-and-forget RED instruction.
#pragma once

#include "common.h"

namespace tl {

enum : int {
  kMemoryOrderRelaxed = 0,
  kMemoryOrderConsume = 1,
  kMemoryOrderAcquire = 2,
  kMemoryOrderRelease = 3,
  kMemoryOrderAcqRel = 4,
  kMemoryOrderSeqCst = 5,
};

namespace detail {

// Makes the value parameter a non-deduced context: T comes from the pointer
// and the value converts to it (e.g. a float literal into a half_t slot).
template <class T>
struct non_deduced {
  using type = T;
};
template <class T>
using non_deduced_t = typename non_deduced<T>::type;

// Fence-based ordering, used for the operations without a native .sem form
// (16-bit CAS loops and vector atomics): a release pattern is
// "fence.acq_rel; relaxed RMW", an acquire pattern "relaxed RMW; fence.acq_rel".
TL_DEVICE void atomic_fence_before(int order) {
  if (order == kMemoryOrderSeqCst) {
    asm volatile("fence.sc.gpu;\n" ::: "memory");
  } else if (order == kMemoryOrderRelease || order == kMemoryOrderAcqRel) {
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  }
}

TL_DEVICE void atomic_fence_after(int order) {
  if (order == kMemoryOrderConsume || order == kMemoryOrderAcquire || order == kMemoryOrderAcqRel ||
      order == kMemoryOrderSeqCst) {
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  }
}

// Native atom.<sem>.gpu.<op>.<type>; seq_cst is "fence.sc.gpu; atom.acq_rel.gpu".
#define TL_ATOM_WITH_ORDER(ORDER, INSN, C, RET, ADDR, VAL)                                                      \
  switch (ORDER) {                                                                                              \
    case kMemoryOrderRelaxed:                                                                                   \
      asm volatile("atom.relaxed.gpu." INSN " %0, [%1], %2;\n" : "=" C(RET) : "l"(ADDR), C(VAL) : "memory");   \
      break;                                                                                                    \
    case kMemoryOrderConsume:                                                                                   \
    case kMemoryOrderAcquire:                                                                                   \
      asm volatile("atom.acquire.gpu." INSN " %0, [%1], %2;\n" : "=" C(RET) : "l"(ADDR), C(VAL) : "memory");   \
      break;                                                                                                    \
    case kMemoryOrderRelease:                                                                                   \
      asm volatile("atom.release.gpu." INSN " %0, [%1], %2;\n" : "=" C(RET) : "l"(ADDR), C(VAL) : "memory");   \
      break;                                                                                                    \
    case kMemoryOrderAcqRel:                                                                                    \
      asm volatile("atom.acq_rel.gpu." INSN " %0, [%1], %2;\n" : "=" C(RET) : "l"(ADDR), C(VAL) : "memory");   \
      break;                                                                                                    \
    default:                                                                                                    \
      asm volatile("fence.sc.gpu;\n\tatom.acq_rel.gpu." INSN " %0, [%1], %2;\n"                                 \
                   : "=" C(RET)                                                                                 \
                   : "l"(ADDR), C(VAL)                                                                          \
                   : "memory");                                                                                 \
      break;                                                                                                    \
  }

// Integer RMW on the canonical (int / unsigned / long long / unsigned long long) type.
template <class I>
TL_DEVICE I int_atomic_add(I* addr, I val, int order) {
  if (order == kMemoryOrderRelaxed) {
    if constexpr (sizeof(I) == 8) {
      return static_cast<I>(atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(val)));
    } else {
      return atomicAdd(addr, val);
    }
  }
  I r;
  if constexpr (sizeof(I) == 8) {
    TL_ATOM_WITH_ORDER(order, "add.u64", "l", r, addr, val)
  } else {
    TL_ATOM_WITH_ORDER(order, "add.u32", "r", r, addr, val)
  }
  return r;
}

template <class I>
TL_DEVICE I int_atomic_max(I* addr, I val, int order) {
  if (order == kMemoryOrderRelaxed) {
    return atomicMax(addr, val);
  }
  I r;
  if constexpr (sizeof(I) == 8 && std::is_signed_v<I>) {
    TL_ATOM_WITH_ORDER(order, "max.s64", "l", r, addr, val)
  } else if constexpr (sizeof(I) == 8) {
    TL_ATOM_WITH_ORDER(order, "max.u64", "l", r, addr, val)
  } else if constexpr (std::is_signed_v<I>) {
    TL_ATOM_WITH_ORDER(order, "max.s32", "r", r, addr, val)
  } else {
    TL_ATOM_WITH_ORDER(order, "max.u32", "r", r, addr, val)
  }
  return r;
}

template <class I>
TL_DEVICE I int_atomic_min(I* addr, I val, int order) {
  if (order == kMemoryOrderRelaxed) {
    return atomicMin(addr, val);
  }
  I r;
  if constexpr (sizeof(I) == 8 && std::is_signed_v<I>) {
    TL_ATOM_WITH_ORDER(order, "min.s64", "l", r, addr, val)
  } else if constexpr (sizeof(I) == 8) {
    TL_ATOM_WITH_ORDER(order, "min.u64", "l", r, addr, val)
  } else if constexpr (std::is_signed_v<I>) {
    TL_ATOM_WITH_ORDER(order, "min.s32", "r", r, addr, val)
  } else {
    TL_ATOM_WITH_ORDER(order, "min.u32", "r", r, addr, val)
  }
  return r;
}

// Floating max / min through integer atomics on the bit pattern:
//   val with sign bit clear: signed integer max (min) of the bit patterns --
//     for non-negative floats the signed order is the float order, and every
//     negative float is a negative integer;
//   val with sign bit set: unsigned integer min (max) -- read as unsigned,
//     negative floats are ordered by magnitude and every non-negative float
//     is below them.
// Correct for all non-NaN values including -0.0, +-inf and subnormals.
template <bool kIsMax>
TL_DEVICE float float_atomic_minmax(float* addr, float val, int order) {
  const int bits = __float_as_int(val);
  if (bits >= 0) {
    int old = kIsMax ? int_atomic_max(reinterpret_cast<int*>(addr), bits, order)
                     : int_atomic_min(reinterpret_cast<int*>(addr), bits, order);
    return __int_as_float(old);
  }
  unsigned old = kIsMax ? int_atomic_min(reinterpret_cast<unsigned*>(addr), static_cast<unsigned>(bits), order)
                        : int_atomic_max(reinterpret_cast<unsigned*>(addr), static_cast<unsigned>(bits), order);
  return __uint_as_float(old);
}

template <bool kIsMax>
TL_DEVICE double double_atomic_minmax(double* addr, double val, int order) {
  const long long bits = __double_as_longlong(val);
  if (bits >= 0) {
    long long old = kIsMax ? int_atomic_max(reinterpret_cast<long long*>(addr), bits, order)
                           : int_atomic_min(reinterpret_cast<long long*>(addr), bits, order);
    return __longlong_as_double(old);
  }
  unsigned long long ubits = static_cast<unsigned long long>(bits);
  unsigned long long old = kIsMax ? int_atomic_min(reinterpret_cast<unsigned long long*>(addr), ubits, order)
                                  : int_atomic_max(reinterpret_cast<unsigned long long*>(addr), ubits, order);
  return __longlong_as_double(static_cast<long long>(old));
}

// half / bfloat16 max / min: 16-bit compare-and-swap loop comparing as float.
// A NaN operand never replaces the stored value; a stored NaN is never replaced.
template <bool kIsMax, class T>
TL_DEVICE T half_atomic_minmax(T* addr, T val, int order) {
  atomic_fence_before(order);
  unsigned short* a = reinterpret_cast<unsigned short*>(addr);
  const unsigned short val_bits = bit_cast<unsigned short>(val);
  const float fval = cvt<float>(val);
  unsigned short old = *reinterpret_cast<volatile unsigned short*>(a);
  while (true) {
    const float cur = cvt<float>(bit_cast<T>(old));
    const bool replace = kIsMax ? (fval > cur) : (fval < cur);
    if (!replace) {
      break;
    }
    const unsigned short prev = atomicCAS(a, old, val_bits);
    if (prev == old) {
      break;
    }
    old = prev;
  }
  atomic_fence_after(order);
  return bit_cast<T>(old);
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Scalar atomics
// ---------------------------------------------------------------------------
template <class T>
TL_DEVICE T atomic_add(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  if constexpr (std::is_same_v<T, float>) {
    if (memory_order == kMemoryOrderRelaxed) {
      return atomicAdd(addr, val);
    }
    float r;
    TL_ATOM_WITH_ORDER(memory_order, "add.f32", "f", r, addr, val)
    return r;
  } else if constexpr (std::is_same_v<T, double>) {
    if (memory_order == kMemoryOrderRelaxed) {
      return atomicAdd(addr, val);
    }
    double r;
    TL_ATOM_WITH_ORDER(memory_order, "add.f64", "d", r, addr, val)
    return r;
  } else if constexpr (detail::is_half_v<T> || detail::is_bf16_v<T>) {
    detail::atomic_fence_before(memory_order);
    T r = atomicAdd(addr, val);
    detail::atomic_fence_after(memory_order);
    return r;
  } else if constexpr (detail::is_int_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    using I = detail::canonical_int_t<T>;
    return static_cast<T>(detail::int_atomic_add(reinterpret_cast<I*>(addr), static_cast<I>(val), memory_order));
  } else {
    static_assert(detail::always_false<T>::value, "tl::atomic_add: unsupported type");
  }
}

template <class T>
TL_DEVICE T atomic_max(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  if constexpr (std::is_same_v<T, float>) {
    return detail::float_atomic_minmax<true>(addr, val, memory_order);
  } else if constexpr (std::is_same_v<T, double>) {
    return detail::double_atomic_minmax<true>(addr, val, memory_order);
  } else if constexpr (detail::is_half_v<T> || detail::is_bf16_v<T>) {
    return detail::half_atomic_minmax<true>(addr, val, memory_order);
  } else if constexpr (detail::is_int_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    using I = detail::canonical_int_t<T>;
    return static_cast<T>(detail::int_atomic_max(reinterpret_cast<I*>(addr), static_cast<I>(val), memory_order));
  } else {
    static_assert(detail::always_false<T>::value, "tl::atomic_max: unsupported type");
  }
}

template <class T>
TL_DEVICE T atomic_min(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  if constexpr (std::is_same_v<T, float>) {
    return detail::float_atomic_minmax<false>(addr, val, memory_order);
  } else if constexpr (std::is_same_v<T, double>) {
    return detail::double_atomic_minmax<false>(addr, val, memory_order);
  } else if constexpr (detail::is_half_v<T> || detail::is_bf16_v<T>) {
    return detail::half_atomic_minmax<false>(addr, val, memory_order);
  } else if constexpr (detail::is_int_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    using I = detail::canonical_int_t<T>;
    return static_cast<T>(detail::int_atomic_min(reinterpret_cast<I*>(addr), static_cast<I>(val), memory_order));
  } else {
    static_assert(detail::always_false<T>::value, "tl::atomic_min: unsupported type");
  }
}

#undef TL_ATOM_WITH_ORDER

// ---------------------------------------------------------------------------
// Vector atomics.  Each element is updated atomically; the vector as a whole
// is one instruction where the hardware has it (half2 / bfloat162 always,
// float2 / float4 on sm_90+ for global memory) and per-element atomics
// otherwise.  addr must be aligned to the vector size.
// ---------------------------------------------------------------------------
TL_DEVICE __half2 atomic_add_x2(half_t* addr, __half2 val, int memory_order = kMemoryOrderRelaxed) {
  detail::atomic_fence_before(memory_order);
  __half2 r = atomicAdd(reinterpret_cast<__half2*>(addr), val);
  detail::atomic_fence_after(memory_order);
  return r;
}
TL_DEVICE __half2 atomic_add_x2(half_t* addr, const half_t* val, int memory_order = kMemoryOrderRelaxed) {
  return atomic_add_x2(addr, __halves2half2(val[0], val[1]), memory_order);
}

TL_DEVICE __nv_bfloat162 atomic_add_x2(bfloat16_t* addr, __nv_bfloat162 val, int memory_order = kMemoryOrderRelaxed) {
  detail::atomic_fence_before(memory_order);
  __nv_bfloat162 r = atomicAdd(reinterpret_cast<__nv_bfloat162*>(addr), val);
  detail::atomic_fence_after(memory_order);
  return r;
}
TL_DEVICE __nv_bfloat162 atomic_add_x2(bfloat16_t* addr, const bfloat16_t* val,
                                       int memory_order = kMemoryOrderRelaxed) {
  return atomic_add_x2(addr, __halves2bfloat162(val[0], val[1]), memory_order);
}

TL_DEVICE float2 atomic_add_x2(float* addr, float2 val, int memory_order = kMemoryOrderRelaxed) {
  detail::atomic_fence_before(memory_order);
#if TL_SM90_ENABLED
  float2 r = atomicAdd(reinterpret_cast<float2*>(addr), val);
#else
  float2 r;
  r.x = atomicAdd(addr + 0, val.x);
  r.y = atomicAdd(addr + 1, val.y);
#endif
  detail::atomic_fence_after(memory_order);
  return r;
}
TL_DEVICE float2 atomic_add_x2(float* addr, const float* val, int memory_order = kMemoryOrderRelaxed) {
  return atomic_add_x2(addr, make_float2(val[0], val[1]), memory_order);
}

TL_DEVICE float4 atomic_add_x4(float* addr, float4 val, int memory_order = kMemoryOrderRelaxed) {
  detail::atomic_fence_before(memory_order);
#if TL_SM90_ENABLED
  float4 r = atomicAdd(reinterpret_cast<float4*>(addr), val);
#else
  float4 r;
  r.x = atomicAdd(addr + 0, val.x);
  r.y = atomicAdd(addr + 1, val.y);
  r.z = atomicAdd(addr + 2, val.z);
  r.w = atomicAdd(addr + 3, val.w);
#endif
  detail::atomic_fence_after(memory_order);
  return r;
}
TL_DEVICE float4 atomic_add_x4(float* addr, const float* val, int memory_order = kMemoryOrderRelaxed) {
  return atomic_add_x4(addr, make_float4(val[0], val[1], val[2], val[3]), memory_order);
}

// ---------------------------------------------------------------------------
// Atomic load / store of 4- or 8-byte values (ld / st .relaxed / .acquire /
// .release at .gpu scope).  Load: relaxed, or acquire for consume / acquire /
// acq_rel, "fence.sc; ld.acquire" for seq_cst.  Store: relaxed, or release for
// release / acq_rel, "fence.sc; st.release" for seq_cst.
// ---------------------------------------------------------------------------
template <class T>
TL_DEVICE T atomic_load(const T* addr, int memory_order = kMemoryOrderRelaxed) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "tl::atomic_load: 4 or 8-byte types");
  if constexpr (sizeof(T) == 4) {
    uint32_t r;
    if (memory_order == kMemoryOrderRelaxed) {
      asm volatile("ld.relaxed.gpu.b32 %0, [%1];\n" : "=r"(r) : "l"(addr) : "memory");
    } else if (memory_order == kMemoryOrderSeqCst) {
      asm volatile("fence.sc.gpu;\n\tld.acquire.gpu.b32 %0, [%1];\n" : "=r"(r) : "l"(addr) : "memory");
    } else {
      asm volatile("ld.acquire.gpu.b32 %0, [%1];\n" : "=r"(r) : "l"(addr) : "memory");
    }
    return bit_cast<T>(r);
  } else {
    unsigned long long r;
    if (memory_order == kMemoryOrderRelaxed) {
      asm volatile("ld.relaxed.gpu.b64 %0, [%1];\n" : "=l"(r) : "l"(addr) : "memory");
    } else if (memory_order == kMemoryOrderSeqCst) {
      asm volatile("fence.sc.gpu;\n\tld.acquire.gpu.b64 %0, [%1];\n" : "=l"(r) : "l"(addr) : "memory");
    } else {
      asm volatile("ld.acquire.gpu.b64 %0, [%1];\n" : "=l"(r) : "l"(addr) : "memory");
    }
    return bit_cast<T>(r);
  }
}

template <class T>
TL_DEVICE void atomic_store(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "tl::atomic_store: 4 or 8-byte types");
  if constexpr (sizeof(T) == 4) {
    const uint32_t v = bit_cast<uint32_t>(val);
    if (memory_order == kMemoryOrderRelease || memory_order == kMemoryOrderAcqRel) {
      asm volatile("st.release.gpu.b32 [%0], %1;\n" ::"l"(addr), "r"(v) : "memory");
    } else if (memory_order == kMemoryOrderSeqCst) {
      asm volatile("fence.sc.gpu;\n\tst.release.gpu.b32 [%0], %1;\n" ::"l"(addr), "r"(v) : "memory");
    } else {
      asm volatile("st.relaxed.gpu.b32 [%0], %1;\n" ::"l"(addr), "r"(v) : "memory");
    }
  } else {
    const unsigned long long v = bit_cast<unsigned long long>(val);
    if (memory_order == kMemoryOrderRelease || memory_order == kMemoryOrderAcqRel) {
      asm volatile("st.release.gpu.b64 [%0], %1;\n" ::"l"(addr), "l"(v) : "memory");
    } else if (memory_order == kMemoryOrderSeqCst) {
      asm volatile("fence.sc.gpu;\n\tst.release.gpu.b64 [%0], %1;\n" ::"l"(addr), "l"(v) : "memory");
    } else {
      asm volatile("st.relaxed.gpu.b64 [%0], %1;\n" ::"l"(addr), "l"(v) : "memory");
    }
  }
}

}  // namespace tl
