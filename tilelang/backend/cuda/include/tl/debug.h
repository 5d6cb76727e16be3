// tl/debug.h -- device-side printing and assertions.
//
//   device_print(msg)            "<msg> block=(bx,by,bz) thread=(tx,ty,tz)"
//   device_print(msg, value)     "<msg> block=(..) thread=(..) dtype=<name> value=<v>"
//       for every scalar type: bool, all 8/16/32/64-bit integers, float,
//       double, half_t / bfloat16_t / fp8 (printed through float), and
//       pointers ("%p").  float and narrower print with "%.9g" (round-trips a
//       float), double with "%.17g".
//   device_assert_fail(msg, file, line)
//       prints "<file>:<line>: device assertion failed: <msg> block=.. thread=.."
//       and traps (the kernel aborts with cudaErrorIllegalInstruction /
//       "unspecified launch failure"; the context is unusable afterwards).
//   TL_DEVICE_ASSERT(cond, msg)  calls device_assert_fail when !cond.
#pragma once

#include <stdio.h>

#include "common.h"

namespace tl {

namespace detail {
template <class T>
TL_DEVICE const char* dtype_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<U, float>) {
    return "float32";
  } else if constexpr (std::is_same_v<U, double>) {
    return "float64";
  } else if constexpr (is_half_v<U>) {
    return "float16";
  } else if constexpr (is_bf16_v<U>) {
    return "bfloat16";
  } else if constexpr (is_e4m3_v<U>) {
    return "float8_e4m3";
  } else if constexpr (is_e5m2_v<U>) {
    return "float8_e5m2";
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1) {
      return "int8";
    } else if constexpr (sizeof(U) == 2) {
      return "int16";
    } else if constexpr (sizeof(U) == 4) {
      return "int32";
    } else {
      return "int64";
    }
  } else if constexpr (std::is_integral_v<U>) {
    if constexpr (sizeof(U) == 1) {
      return "uint8";
    } else if constexpr (sizeof(U) == 2) {
      return "uint16";
    } else if constexpr (sizeof(U) == 4) {
      return "uint32";
    } else {
      return "uint64";
    }
  } else if constexpr (std::is_pointer_v<U>) {
    return "pointer";
  } else {
    return "unknown";
  }
}
}  // namespace detail

#define TL_PRINT_PREFIX "%s block=(%d,%d,%d) thread=(%d,%d,%d)"
#define TL_PRINT_IDS                                                                                        \
  static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),                 \
      static_cast<int>(threadIdx.x), static_cast<int>(threadIdx.y), static_cast<int>(threadIdx.z)

TL_DEVICE void device_print(const char* msg) { printf(TL_PRINT_PREFIX "\n", msg, TL_PRINT_IDS); }

template <class T>
TL_DEVICE void device_print(const char* msg, T v) {
  using U = std::remove_cv_t<T>;
  const char* name = detail::dtype_name<U>();
  if constexpr (std::is_same_v<U, bool>) {
    printf(TL_PRINT_PREFIX " dtype=%s value=%s\n", msg, TL_PRINT_IDS, name, v ? "true" : "false");
  } else if constexpr (std::is_same_v<U, double>) {
    printf(TL_PRINT_PREFIX " dtype=%s value=%.17g\n", msg, TL_PRINT_IDS, name, v);
  } else if constexpr (std::is_same_v<U, float> || detail::is_low_precision_v<U>) {
    printf(TL_PRINT_PREFIX " dtype=%s value=%.9g\n", msg, TL_PRINT_IDS, name, cvt<double>(v));
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    printf(TL_PRINT_PREFIX " dtype=%s value=%lld\n", msg, TL_PRINT_IDS, name, static_cast<long long>(v));
  } else if constexpr (std::is_integral_v<U>) {
    printf(TL_PRINT_PREFIX " dtype=%s value=%llu\n", msg, TL_PRINT_IDS, name, static_cast<unsigned long long>(v));
  } else if constexpr (std::is_pointer_v<U>) {
    printf(TL_PRINT_PREFIX " dtype=%s value=%p\n", msg, TL_PRINT_IDS, name, static_cast<const void*>(v));
  } else {
    static_assert(detail::always_false<U>::value, "tl::device_print: unsupported value type");
  }
}

TL_DEVICE void device_assert_fail(const char* msg, const char* file, int line) {
  printf("%s:%d: device assertion failed: " TL_PRINT_PREFIX "\n", file, line, msg, TL_PRINT_IDS);
  __trap();
}

#undef TL_PRINT_IDS
#undef TL_PRINT_PREFIX

}  // namespace tl

#define TL_DEVICE_ASSERT(cond, msg)                          \
  do {                                                       \
    if (!(cond)) {                                           \
      ::tl::device_assert_fail((msg), __FILE__, __LINE__);   \
    }                                                        \
  } while (0)
