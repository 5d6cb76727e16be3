// tl_hip/common.h -- base definitions of TileLang's HIP (AMDGPU) device headers.
//
// Provides: TL_DEVICE, the scalar types the generated code names (tl::half_t = _Float16,
// tl::bfloat16_t: 16 bits of a float32, round-to-nearest-even), tl::cvt<To>(x), math wrappers
// on float / double / half / bfloat16 (16-bit types compute in float), tl::max / tl::min,
// tl::infinity<T>() / tl::neg_infinity<T>().  Compiled by clang (HIP) for gfx90a / gfx94x.
#pragma once

#include <hip/hip_runtime.h>
#include <stdint.h>

#include <limits>
#include <type_traits>

#define TL_DEVICE __device__ __forceinline__
#define TL_HOST_DEVICE __host__ __device__ __forceinline__

namespace tl {

using half_t = _Float16;

// bfloat16 as its bit pattern: the AMDGPU targets of clang 15 have no __bf16 arithmetic type.
struct bfloat16_t {
  uint16_t bits;
  bfloat16_t() = default;
  TL_HOST_DEVICE bfloat16_t(float f) : bits(from_float(f)) {}
  TL_HOST_DEVICE operator float() const { return __builtin_bit_cast(float, static_cast<uint32_t>(bits) << 16); }
  static TL_HOST_DEVICE uint16_t from_float(float f) {
    uint32_t u = __builtin_bit_cast(uint32_t, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return static_cast<uint16_t>(u >> 16);
  }
};
#define TL_BF16_BINARY(OP)                                                                                   \
  TL_DEVICE bfloat16_t operator OP(bfloat16_t a, bfloat16_t b) { return bfloat16_t(float(a) OP float(b)); }
TL_BF16_BINARY(+)
TL_BF16_BINARY(-)
TL_BF16_BINARY(*)
TL_BF16_BINARY(/)
#undef TL_BF16_BINARY

namespace detail {
template <class T>
inline constexpr bool is_half_v = std::is_same_v<std::remove_cv_t<T>, half_t>;
template <class T>
inline constexpr bool is_bf16_v = std::is_same_v<std::remove_cv_t<T>, bfloat16_t>;
template <class T>
inline constexpr bool is_low_precision_v = is_half_v<T> || is_bf16_v<T>;
// the type a math function computes in: float for the 16-bit types
template <class T>
using compute_t = std::conditional_t<is_low_precision_v<T>, float, T>;
template <class T>
struct non_deduced {
  using type = T;
};
template <class T>
using non_deduced_t = typename non_deduced<T>::type;
}  // namespace detail

template <class To, class From>
TL_HOST_DEVICE To cvt(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (detail::is_bf16_v<To> || detail::is_bf16_v<From>) {
    return static_cast<To>(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

template <class T>
TL_DEVICE T infinity() {
  if constexpr (std::is_integral_v<T>) {
    return std::numeric_limits<T>::max();
  } else {
    return cvt<T>(__builtin_huge_valf());
  }
}
template <class T>
TL_DEVICE T neg_infinity() {
  if constexpr (std::is_integral_v<T>) {
    return std::numeric_limits<T>::lowest();
  } else {
    return cvt<T>(-__builtin_huge_valf());
  }
}

template <class T>
TL_DEVICE T max(T a, T b) {
  if constexpr (std::is_floating_point_v<T> || detail::is_low_precision_v<T>) {
    return cvt<T>(fmaxf(static_cast<float>(a), static_cast<float>(b)));
  } else {
    return a > b ? a : b;
  }
}
TL_DEVICE double max(double a, double b) { return fmax(a, b); }
template <class T>
TL_DEVICE T min(T a, T b) {
  if constexpr (std::is_floating_point_v<T> || detail::is_low_precision_v<T>) {
    return cvt<T>(fminf(static_cast<float>(a), static_cast<float>(b)));
  } else {
    return a < b ? a : b;
  }
}
TL_DEVICE double min(double a, double b) { return fmin(a, b); }

// One-argument math: float and double call the device library; 16-bit types go through float.
#define TL_MATH1(NAME, FEXPR, DEXPR)                                  \
  TL_DEVICE float NAME(float x) { return FEXPR; }                      \
  TL_DEVICE double NAME(double x) { return DEXPR; }                    \
  TL_DEVICE half_t NAME(half_t h) { return cvt<half_t>(NAME(static_cast<float>(h))); } \
  TL_DEVICE bfloat16_t NAME(bfloat16_t h) { return bfloat16_t(NAME(static_cast<float>(h))); }
TL_MATH1(exp2, exp2f(x), ::exp2(x))
TL_MATH1(exp, expf(x), ::exp(x))
TL_MATH1(log, logf(x), ::log(x))
TL_MATH1(log2, log2f(x), ::log2(x))
TL_MATH1(log10, log10f(x), ::log10(x))
TL_MATH1(sqrt, sqrtf(x), ::sqrt(x))
TL_MATH1(rsqrt, rsqrtf(x), ::rsqrt(x))
TL_MATH1(tanh, tanhf(x), ::tanh(x))
TL_MATH1(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + ::exp(-x)))
TL_MATH1(sin, sinf(x), ::sin(x))
TL_MATH1(cos, cosf(x), ::cos(x))
TL_MATH1(erf, erff(x), ::erf(x))
TL_MATH1(floor, floorf(x), ::floor(x))
TL_MATH1(ceil, ceilf(x), ::ceil(x))
TL_MATH1(trunc, truncf(x), ::trunc(x))
TL_MATH1(round, roundf(x), ::round(x))
#undef TL_MATH1

TL_DEVICE float pow(float a, float b) { return powf(a, b); }
TL_DEVICE double pow(double a, double b) { return ::pow(a, b); }
template <class T>
TL_DEVICE T pow(T a, T b) {
  return cvt<T>(powf(static_cast<float>(a), static_cast<float>(b)));
}

template <class T>
TL_DEVICE T abs(T x) {
  if constexpr (std::is_integral_v<T>) {
    return x < 0 ? static_cast<T>(-x) : x;
  } else if constexpr (std::is_same_v<T, double>) {
    return fabs(x);
  } else {
    return cvt<T>(fabsf(static_cast<float>(x)));
  }
}

}  // namespace tl
