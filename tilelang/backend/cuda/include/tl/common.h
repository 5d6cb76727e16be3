// tl/common.h -- base definitions shared by every TileLang CUDA header.
//
// Provides: the TL_DEVICE / TL_HOST_DEVICE macros, architecture-detection
// macros, scalar type aliases (half, bfloat16, fp8, tf32 tag), tl::cvt<To>()
// conversions, math wrappers usable on float / double / half / bfloat16, value
// limits (tl::infinity<T>() ...), integer floordiv / floormod and a few small
// bit-packing helpers.  See tl/README.md for the reference documentation.
#pragma once

#include <stdint.h>
#include <string.h>

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(__has_include)
#if __has_include(<cuda_fp8.h>)
#include <cuda_fp8.h>
#define TL_HAS_FP8 1
#endif
#endif
#ifndef TL_HAS_FP8
#define TL_HAS_FP8 0
#endif

// ---------------------------------------------------------------------------
// Qualifier macros
// ---------------------------------------------------------------------------
#define TL_DEVICE __device__ __forceinline__
#define TL_HOST_DEVICE __host__ __device__ __forceinline__

// ---------------------------------------------------------------------------
// Architecture macros.  The *_ENABLED macros are 1 when the current device
// compilation pass targets an architecture with the feature.  The *_DECLARE
// macros are additionally 1 in the host pass (where __CUDA_ARCH__ is not
// defined), so that kernels using a feature still parse there; a device pass
// for an older architecture does not see the declarations at all, so using an
// arch-specific helper there is a compile-time error ("identifier undefined").
// ---------------------------------------------------------------------------
#if defined(__CUDA_ARCH__)
#define TL_CUDA_ARCH __CUDA_ARCH__
#else
#define TL_CUDA_ARCH 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define TL_SM89_ENABLED 1
#else
#define TL_SM89_ENABLED 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TL_SM90_ENABLED 1
#else
#define TL_SM90_ENABLED 0
#endif

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TL_SM90_DECLARE 1
#else
#define TL_SM90_DECLARE 0
#endif

// wgmma and setmaxnreg exist only on the arch-specific sm_90a target.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TL_SM90A_ENABLED 1
#else
#define TL_SM90A_ENABLED 0
#endif

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TL_SM90A_DECLARE 1
#else
#define TL_SM90A_DECLARE 0
#endif

namespace tl {

// ---------------------------------------------------------------------------
// Scalar types
// ---------------------------------------------------------------------------
using half_t = __half;
using bfloat16_t = __nv_bfloat16;
#if TL_HAS_FP8
using fp8_e4m3_t = __nv_fp8_e4m3;
using fp8_e5m2_t = __nv_fp8_e5m2;
#endif

// Tag type naming the TF32 tensor-core input format in mma / wgmma template
// arguments (`float` is accepted as a synonym there).  Never instantiated.
struct tfloat32_t {};

namespace detail {

template <class T>
struct always_false : std::false_type {};

template <class T>
inline constexpr bool is_half_v = std::is_same_v<std::remove_cv_t<T>, half_t>;
template <class T>
inline constexpr bool is_bf16_v = std::is_same_v<std::remove_cv_t<T>, bfloat16_t>;
#if TL_HAS_FP8
template <class T>
inline constexpr bool is_e4m3_v = std::is_same_v<std::remove_cv_t<T>, fp8_e4m3_t>;
template <class T>
inline constexpr bool is_e5m2_v = std::is_same_v<std::remove_cv_t<T>, fp8_e5m2_t>;
#else
template <class T>
inline constexpr bool is_e4m3_v = false;
template <class T>
inline constexpr bool is_e5m2_v = false;
#endif
template <class T>
inline constexpr bool is_fp8_v = is_e4m3_v<T> || is_e5m2_v<T>;
// half / bfloat16 / fp8: the storage-only floating types that are converted
// through float for arithmetic.
template <class T>
inline constexpr bool is_low_precision_v = is_half_v<T> || is_bf16_v<T> || is_fp8_v<T>;
template <class T>
inline constexpr bool is_bool_v = std::is_same_v<std::remove_cv_t<T>, bool>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;
template <class T>
inline constexpr bool is_tf32_v =
    std::is_same_v<std::remove_cv_t<T>, tfloat32_t> || std::is_same_v<std::remove_cv_t<T>, float>;

// Integer type of the same size and signedness, with `long` mapped onto
// `long long` (CUDA atomics and shuffles have no `long` overloads).
template <class T>
using canonical_int_t = std::conditional_t<
    sizeof(T) == 8, std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>,
    std::conditional_t<sizeof(T) == 4, std::conditional_t<std::is_signed_v<T>, int, unsigned int>, T>>;

}  // namespace detail

// Reinterpret the bits of `from` as a `To` of the same size.
template <class To, class From>
TL_HOST_DEVICE To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "tl::bit_cast: size mismatch");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

// 32-bit shared-memory (shared::cta) address of a generic pointer to shared memory.
TL_DEVICE uint32_t smem_addr(const void* ptr) { return static_cast<uint32_t>(__cvta_generic_to_shared(ptr)); }

template <class T>
TL_HOST_DEVICE constexpr T ceildiv(T a, T b) {
  return (a + b - 1) / b;
}

// ---------------------------------------------------------------------------
// Conversions: tl::cvt<To>(x)
//   floating -> narrower floating : round to nearest, ties to even
//   fp8 destination               : round to nearest even like torch: e4m3 saturates
//                                   to +-448, e5m2 overflows to +-inf (NaN stays NaN)
//   integer -> floating           : round to nearest even
//   floating -> integer           : truncation toward zero (C semantics)
//   integer -> integer            : C semantics (wrap / sign-extend)
//   anything -> bool              : x != 0
// ---------------------------------------------------------------------------
namespace detail {

template <class From>
TL_DEVICE float to_float(From x) {
  if constexpr (std::is_same_v<From, float>) {
    return x;
  } else if constexpr (is_half_v<From>) {
    return __half2float(x);
  } else if constexpr (is_bf16_v<From>) {
    return __bfloat162float(x);
  } else if constexpr (is_fp8_v<From>) {
    return static_cast<float>(x);
  } else if constexpr (is_bool_v<From>) {
    return x ? 1.0f : 0.0f;
  } else {
    return static_cast<float>(x);  // double (RNE), integers (RNE)
  }
}

template <class From>
TL_DEVICE double to_double(From x) {
  if constexpr (is_low_precision_v<From>) {
    return static_cast<double>(to_float(x));  // exact
  } else if constexpr (is_bool_v<From>) {
    return x ? 1.0 : 0.0;
  } else {
    return static_cast<double>(x);
  }
}

template <class From>
TL_DEVICE half_t to_half(From x) {
  if constexpr (is_half_v<From>) {
    return x;
  } else if constexpr (std::is_same_v<From, float>) {
    return __float2half_rn(x);
  } else if constexpr (std::is_same_v<From, double>) {
    return __double2half(x);
  } else if constexpr (is_bf16_v<From> || is_fp8_v<From> || is_bool_v<From>) {
    return __float2half_rn(to_float(x));  // bf16->float exact, single rounding
  } else if constexpr (is_int_v<From> && std::is_signed_v<From>) {
    if constexpr (sizeof(From) == 8) {
      return __ll2half_rn(static_cast<long long>(x));
    } else {
      return __int2half_rn(static_cast<int>(x));
    }
  } else if constexpr (is_int_v<From>) {
    if constexpr (sizeof(From) == 8) {
      return __ull2half_rn(static_cast<unsigned long long>(x));
    } else {
      return __uint2half_rn(static_cast<unsigned int>(x));
    }
  } else {
    static_assert(always_false<From>::value, "tl::cvt: unsupported source type for half");
  }
}

template <class From>
TL_DEVICE bfloat16_t to_bf16(From x) {
  if constexpr (is_bf16_v<From>) {
    return x;
  } else if constexpr (std::is_same_v<From, float>) {
    return __float2bfloat16_rn(x);
  } else if constexpr (std::is_same_v<From, double>) {
    return __double2bfloat16(x);
  } else if constexpr (is_half_v<From> || is_fp8_v<From> || is_bool_v<From>) {
    return __float2bfloat16_rn(to_float(x));  // exact widening, single rounding
  } else if constexpr (is_int_v<From> && std::is_signed_v<From>) {
    if constexpr (sizeof(From) == 8) {
      return __ll2bfloat16_rn(static_cast<long long>(x));
    } else {
      return __int2bfloat16_rn(static_cast<int>(x));
    }
  } else if constexpr (is_int_v<From>) {
    if constexpr (sizeof(From) == 8) {
      return __ull2bfloat16_rn(static_cast<unsigned long long>(x));
    } else {
      return __uint2bfloat16_rn(static_cast<unsigned int>(x));
    }
  } else {
    static_assert(always_false<From>::value, "tl::cvt: unsupported source type for bfloat16");
  }
}

#if TL_HAS_FP8
// torch's e5m2 rule: magnitudes from the midpoint between 57344 (the largest finite
// value) and 65536 upwards overflow to infinity, instead of cuda_fp8's saturation.
template <class F8>
TL_DEVICE F8 e5m2_overflow_to_inf(F8 r, float f) {
  if (fabsf(f) >= 61440.0f) r.__x = signbit(f) ? 0xfc : 0x7c;
  return r;
}

template <class F8, class From>
TL_DEVICE F8 to_fp8(From x) {
  if constexpr (std::is_same_v<From, F8>) {
    return x;
  } else if constexpr (is_e5m2_v<F8> && std::is_same_v<From, double>) {
    F8 r;
    r.__x = __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E5M2);  // one rounding, inf on overflow
    return r;
  } else if constexpr (is_e5m2_v<F8>) {
    const float f = to_float(x);  // exact for half / bfloat16 / e4m3 / bool
    return e5m2_overflow_to_inf(F8(f), f);
  } else if constexpr (std::is_same_v<From, float> || std::is_same_v<From, double> || is_half_v<From> ||
                       is_bf16_v<From>) {
    return F8(x);  // cuda_fp8 constructors: RNE, __NV_SATFINITE
  } else {
    // other fp8 format (exact in float), bool, integers: through float.  An
    // integer is exact in float up to 2^24, far above the fp8 ranges, so the
    // single fp8 rounding is the only rounding that matters.
    return F8(to_float(x));
  }
}
#endif

}  // namespace detail

template <class To, class From>
TL_DEVICE To cvt(From x) {
  using S = std::remove_cv_t<From>;
  using D = std::remove_cv_t<To>;
  if constexpr (std::is_same_v<D, S>) {
    return x;
  } else if constexpr (std::is_same_v<D, float>) {
    return detail::to_float<S>(x);
  } else if constexpr (std::is_same_v<D, double>) {
    return detail::to_double<S>(x);
  } else if constexpr (detail::is_half_v<D>) {
    return detail::to_half<S>(x);
  } else if constexpr (detail::is_bf16_v<D>) {
    return detail::to_bf16<S>(x);
#if TL_HAS_FP8
  } else if constexpr (detail::is_fp8_v<D>) {
    return detail::to_fp8<D, S>(x);
#endif
  } else if constexpr (detail::is_bool_v<D>) {
    if constexpr (detail::is_low_precision_v<S>) {
      return detail::to_float<S>(x) != 0.0f;
    } else {
      return x != S(0);
    }
  } else if constexpr (std::is_integral_v<D>) {
    if constexpr (detail::is_low_precision_v<S>) {
      return static_cast<D>(detail::to_float<S>(x));  // truncation toward zero
    } else {
      return static_cast<D>(x);
    }
  } else {
    static_assert(detail::always_false<D>::value, "tl::cvt: unsupported destination type");
  }
}

// ---------------------------------------------------------------------------
// Value limits
//   infinity<T>()     +inf; largest finite value for fp8 e4m3 (no inf); max for integers
//   neg_infinity<T>() -inf; lowest finite value for fp8 e4m3; min for integers
//   max_value<T>()    largest finite value
//   min_value<T>()    lowest (most negative) finite value
// ---------------------------------------------------------------------------
namespace detail {
template <class T>
TL_DEVICE T from_bits16(unsigned short bits) {
  if constexpr (is_half_v<T>) {
    return __ushort_as_half(bits);
  } else {
    return __ushort_as_bfloat16(bits);
  }
}
#if TL_HAS_FP8
template <class T>
TL_DEVICE T fp8_from_bits(unsigned char bits) {
  T r;
  r.__x = bits;
  return r;
}
#endif
template <class T>
TL_DEVICE constexpr T int_max() {
  if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(~(static_cast<std::make_unsigned_t<T>>(1) << (sizeof(T) * 8 - 1)));
  } else {
    return static_cast<T>(~static_cast<T>(0));
  }
}
template <class T>
TL_DEVICE constexpr T int_min() {
  if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(-int_max<T>() - 1);
  } else {
    return static_cast<T>(0);
  }
}
}  // namespace detail

template <class T>
TL_DEVICE T infinity() {
  if constexpr (std::is_same_v<T, float>) {
    return __int_as_float(0x7f800000);
  } else if constexpr (std::is_same_v<T, double>) {
    return __longlong_as_double(0x7ff0000000000000ll);
  } else if constexpr (detail::is_half_v<T>) {
    return detail::from_bits16<T>(0x7c00);
  } else if constexpr (detail::is_bf16_v<T>) {
    return detail::from_bits16<T>(0x7f80);
#if TL_HAS_FP8
  } else if constexpr (detail::is_e4m3_v<T>) {
    return detail::fp8_from_bits<T>(0x7e);  // 448, e4m3 has no infinity
  } else if constexpr (detail::is_e5m2_v<T>) {
    return detail::fp8_from_bits<T>(0x7c);
#endif
  } else if constexpr (detail::is_int_v<T>) {
    return detail::int_max<T>();
  } else {
    static_assert(detail::always_false<T>::value, "tl::infinity: unsupported type");
  }
}

template <class T>
TL_DEVICE T neg_infinity() {
  if constexpr (std::is_same_v<T, float>) {
    return __int_as_float(0xff800000u);
  } else if constexpr (std::is_same_v<T, double>) {
    return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
  } else if constexpr (detail::is_half_v<T>) {
    return detail::from_bits16<T>(0xfc00);
  } else if constexpr (detail::is_bf16_v<T>) {
    return detail::from_bits16<T>(0xff80);
#if TL_HAS_FP8
  } else if constexpr (detail::is_e4m3_v<T>) {
    return detail::fp8_from_bits<T>(0xfe);  // -448
  } else if constexpr (detail::is_e5m2_v<T>) {
    return detail::fp8_from_bits<T>(0xfc);
#endif
  } else if constexpr (detail::is_int_v<T>) {
    return detail::int_min<T>();
  } else {
    static_assert(detail::always_false<T>::value, "tl::neg_infinity: unsupported type");
  }
}

template <class T>
TL_DEVICE T max_value() {
  if constexpr (std::is_same_v<T, float>) {
    return __int_as_float(0x7f7fffff);
  } else if constexpr (std::is_same_v<T, double>) {
    return __longlong_as_double(0x7fefffffffffffffll);
  } else if constexpr (detail::is_half_v<T>) {
    return detail::from_bits16<T>(0x7bff);  // 65504
  } else if constexpr (detail::is_bf16_v<T>) {
    return detail::from_bits16<T>(0x7f7f);
#if TL_HAS_FP8
  } else if constexpr (detail::is_e4m3_v<T>) {
    return detail::fp8_from_bits<T>(0x7e);  // 448
  } else if constexpr (detail::is_e5m2_v<T>) {
    return detail::fp8_from_bits<T>(0x7b);  // 57344
#endif
  } else if constexpr (detail::is_int_v<T>) {
    return detail::int_max<T>();
  } else {
    static_assert(detail::always_false<T>::value, "tl::max_value: unsupported type");
  }
}

template <class T>
TL_DEVICE T min_value() {
  if constexpr (std::is_same_v<T, float>) {
    return __int_as_float(0xff7fffffu);
  } else if constexpr (std::is_same_v<T, double>) {
    return __longlong_as_double(static_cast<long long>(0xffefffffffffffffull));
  } else if constexpr (detail::is_half_v<T>) {
    return detail::from_bits16<T>(0xfbff);
  } else if constexpr (detail::is_bf16_v<T>) {
    return detail::from_bits16<T>(0xff7f);
#if TL_HAS_FP8
  } else if constexpr (detail::is_e4m3_v<T>) {
    return detail::fp8_from_bits<T>(0xfe);
  } else if constexpr (detail::is_e5m2_v<T>) {
    return detail::fp8_from_bits<T>(0xfb);
#endif
  } else if constexpr (detail::is_int_v<T>) {
    return detail::int_min<T>();
  } else {
    static_assert(detail::always_false<T>::value, "tl::min_value: unsupported type");
  }
}

// ---------------------------------------------------------------------------
// Math wrappers.  Each unary function has overloads for float, double, half_t
// and bfloat16_t; half / bfloat16 are computed in float and rounded once
// (round-to-nearest-even) back to the argument type.  The float versions are
// the accurate CUDA math library functions (exp2f, expf, ...); see the fast_*
// functions for the approximate hardware instructions.
// ---------------------------------------------------------------------------
#define TL_DEFINE_UNARY_MATH(NAME, FLOAT_EXPR, DOUBLE_EXPR)                                         \
  TL_DEVICE float NAME(float x) { return FLOAT_EXPR; }                                             \
  TL_DEVICE double NAME(double x) { return DOUBLE_EXPR; }                                          \
  TL_DEVICE half_t NAME(half_t x) { return __float2half_rn(NAME(__half2float(x))); }               \
  TL_DEVICE bfloat16_t NAME(bfloat16_t x) { return __float2bfloat16_rn(NAME(__bfloat162float(x))); }

TL_DEFINE_UNARY_MATH(exp2, ::exp2f(x), ::exp2(x))
TL_DEFINE_UNARY_MATH(exp, ::expf(x), ::exp(x))
TL_DEFINE_UNARY_MATH(log, ::logf(x), ::log(x))
TL_DEFINE_UNARY_MATH(log2, ::log2f(x), ::log2(x))
TL_DEFINE_UNARY_MATH(log10, ::log10f(x), ::log10(x))
TL_DEFINE_UNARY_MATH(sqrt, ::sqrtf(x), ::sqrt(x))
TL_DEFINE_UNARY_MATH(rsqrt, ::rsqrtf(x), ::rsqrt(x))
TL_DEFINE_UNARY_MATH(tanh, ::tanhf(x), ::tanh(x))
TL_DEFINE_UNARY_MATH(sigmoid, 1.0f / (1.0f + ::expf(-x)), 1.0 / (1.0 + ::exp(-x)))
TL_DEFINE_UNARY_MATH(sin, ::sinf(x), ::sin(x))
TL_DEFINE_UNARY_MATH(cos, ::cosf(x), ::cos(x))
TL_DEFINE_UNARY_MATH(erf, ::erff(x), ::erf(x))
TL_DEFINE_UNARY_MATH(floor, ::floorf(x), ::floor(x))
TL_DEFINE_UNARY_MATH(ceil, ::ceilf(x), ::ceil(x))
TL_DEFINE_UNARY_MATH(trunc, ::truncf(x), ::trunc(x))
// Round half to even (like torch.round / numpy.round, unlike C roundf).
TL_DEFINE_UNARY_MATH(round, ::rintf(x), ::rint(x))

#undef TL_DEFINE_UNARY_MATH

// abs / max / min: float, double, half_t, bfloat16_t and every integer type.
// max / min of floating types return the non-NaN operand when exactly one is NaN.
TL_DEVICE float abs(float x) { return ::fabsf(x); }
TL_DEVICE double abs(double x) { return ::fabs(x); }
TL_DEVICE half_t abs(half_t x) { return __habs(x); }
TL_DEVICE bfloat16_t abs(bfloat16_t x) { return __habs(x); }
template <class T, std::enable_if_t<detail::is_int_v<T>, int> = 0>
TL_DEVICE T abs(T x) {
  if constexpr (std::is_signed_v<T>) {
    return x < 0 ? static_cast<T>(-x) : x;
  } else {
    return x;
  }
}

TL_DEVICE float max(float a, float b) { return ::fmaxf(a, b); }
TL_DEVICE double max(double a, double b) { return ::fmax(a, b); }
TL_DEVICE half_t max(half_t a, half_t b) { return __hmax(a, b); }
TL_DEVICE bfloat16_t max(bfloat16_t a, bfloat16_t b) { return __hmax(a, b); }
template <class T, std::enable_if_t<detail::is_int_v<T>, int> = 0>
TL_DEVICE T max(T a, T b) {
  return a > b ? a : b;
}

TL_DEVICE float min(float a, float b) { return ::fminf(a, b); }
TL_DEVICE double min(double a, double b) { return ::fmin(a, b); }
TL_DEVICE half_t min(half_t a, half_t b) { return __hmin(a, b); }
TL_DEVICE bfloat16_t min(bfloat16_t a, bfloat16_t b) { return __hmin(a, b); }
template <class T, std::enable_if_t<detail::is_int_v<T>, int> = 0>
TL_DEVICE T min(T a, T b) {
  return a < b ? a : b;
}

TL_DEVICE float pow(float a, float b) { return ::powf(a, b); }
TL_DEVICE double pow(double a, double b) { return ::pow(a, b); }
TL_DEVICE half_t pow(half_t a, half_t b) { return __float2half_rn(::powf(__half2float(a), __half2float(b))); }
TL_DEVICE bfloat16_t pow(bfloat16_t a, bfloat16_t b) {
  return __float2bfloat16_rn(::powf(__bfloat162float(a), __bfloat162float(b)));
}

// Approximate float-only variants (single hardware instruction or close).
// fast_exp2: ex2.approx.ftz.f32 (max rel. error 2^-22, subnormals flushed).
TL_DEVICE float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TL_DEVICE float fast_exp(float x) { return fast_exp2(x * 1.4426950408889634f); }
TL_DEVICE float fast_log2(float x) { return __log2f(x); }
TL_DEVICE float fast_log(float x) { return __logf(x); }
// tanh.approx.f32 (sm_75+), max abs error about 2^-10.7.
TL_DEVICE float fast_tanh(float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TL_DEVICE float fast_rcp(float x) { return __frcp_rn(x); }
TL_DEVICE float fast_div(float a, float b) { return __fdividef(a, b); }

// ---------------------------------------------------------------------------
// floordiv / floormod: Python semantics (quotient rounded toward -inf, result
// of floormod has the sign of the divisor).  Defined for every integer type
// and for float / double.  Precondition: b != 0 (and not INT_MIN / -1).
// ---------------------------------------------------------------------------
template <class T>
TL_HOST_DEVICE T floordiv(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    T q = a / b;
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else if constexpr (std::is_integral_v<T>) {
    return a / b;
  } else {
    return ::floor(a / b);
  }
}

template <class T>
TL_HOST_DEVICE T floormod(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else if constexpr (std::is_integral_v<T>) {
    return a % b;
  } else {
    return a - b * ::floor(a / b);
  }
}

// ---------------------------------------------------------------------------
// Packing helpers (element `lo` goes to the low 16 bits / lowest byte).
// ---------------------------------------------------------------------------
TL_DEVICE uint32_t pack_half2(half_t lo, half_t hi) {
  return static_cast<uint32_t>(__half_as_ushort(lo)) | (static_cast<uint32_t>(__half_as_ushort(hi)) << 16);
}
TL_DEVICE uint32_t pack_bfloat162(bfloat16_t lo, bfloat16_t hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) | (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}
// Two floats -> packed half2 / bfloat162, each rounded to nearest even.
TL_DEVICE uint32_t pack_float2_to_half2(float lo, float hi) {
  return bit_cast<uint32_t>(__floats2half2_rn(lo, hi));
}
TL_DEVICE uint32_t pack_float2_to_bfloat162(float lo, float hi) {
  return bit_cast<uint32_t>(__floats2bfloat162_rn(lo, hi));
}

}  // namespace tl
