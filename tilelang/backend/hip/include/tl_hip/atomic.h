// tl_hip/atomic.h -- T.atomic_* on global memory, relaxed (device scope).
//
//   atomic_add / atomic_max / atomic_min(addr, val[, memory_order])  -> the old value
//   atomic_add_x2 / atomic_add_x4(addr, const T* vals[, order])      -> element-wise adds
// float / int / unsigned / long long use HIP's atomicAdd / atomicMax / atomicMin (float
// max/min by CAS); half / bfloat16 by a 32-bit CAS loop on the word that holds the element.
// check_features admits relaxed orders only, so `memory_order` is accepted and must be relaxed.
#pragma once

#include "common.h"

namespace tl {

constexpr int kMemoryOrderRelaxed = 0;

namespace detail {
template <class T, class F>
TL_DEVICE T cas_update16(T* addr, F f) {
  // the aligned 32-bit word holding the 16-bit element, and the element's half of it
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  unsigned int* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t(3));
  const int shift = (a & 2) ? 16 : 0;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    uint16_t bits = static_cast<uint16_t>(assumed >> shift);
    T cur = __builtin_bit_cast(T, bits);
    uint16_t nb = __builtin_bit_cast(uint16_t, f(cur));
    unsigned int next = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(nb) << shift);
    old = atomicCAS(word, assumed, next);
  } while (old != assumed);
  return __builtin_bit_cast(T, static_cast<uint16_t>(old >> shift));
}

template <bool kIsMax>
TL_DEVICE float float_minmax(float* addr, float val) {
  unsigned int* p = reinterpret_cast<unsigned int*>(addr);
  unsigned int old = *p, assumed;
  do {
    assumed = old;
    float cur = __builtin_bit_cast(float, assumed);
    float next = kIsMax ? fmaxf(cur, val) : fminf(cur, val);
    if (next == cur) break;
    old = atomicCAS(p, assumed, __builtin_bit_cast(unsigned int, next));
  } while (old != assumed);
  return __builtin_bit_cast(float, old);
}
}  // namespace detail

template <class T>
TL_DEVICE T atomic_add(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  (void)memory_order;
  if constexpr (detail::is_low_precision_v<T>) {
    return detail::cas_update16(addr, [&](T cur) { return cvt<T>(static_cast<float>(cur) + static_cast<float>(val)); });
  } else if constexpr (std::is_same_v<T, long> || std::is_same_v<T, int64_t>) {
    return static_cast<T>(atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(val)));
  } else {
    return atomicAdd(addr, val);
  }
}

template <class T>
TL_DEVICE T atomic_max(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  (void)memory_order;
  if constexpr (std::is_same_v<T, float>) {
    return detail::float_minmax<true>(addr, val);
  } else if constexpr (detail::is_low_precision_v<T>) {
    return detail::cas_update16(addr, [&](T cur) { return tl::max(cur, static_cast<T>(val)); });
  } else {
    return atomicMax(addr, val);
  }
}

template <class T>
TL_DEVICE T atomic_min(T* addr, detail::non_deduced_t<T> val, int memory_order = kMemoryOrderRelaxed) {
  (void)memory_order;
  if constexpr (std::is_same_v<T, float>) {
    return detail::float_minmax<false>(addr, val);
  } else if constexpr (detail::is_low_precision_v<T>) {
    return detail::cas_update16(addr, [&](T cur) { return tl::min(cur, static_cast<T>(val)); });
  } else {
    return atomicMin(addr, val);
  }
}

template <class T>
TL_DEVICE void atomic_add_x2(T* addr, const T* val, int memory_order = kMemoryOrderRelaxed) {
  atomic_add(addr, val[0], memory_order);
  atomic_add(addr + 1, val[1], memory_order);
}

template <class T>
TL_DEVICE void atomic_add_x4(T* addr, const T* val, int memory_order = kMemoryOrderRelaxed) {
#pragma unroll
  for (int i = 0; i < 4; ++i) atomic_add(addr + i, val[i], memory_order);
}

}  // namespace tl
