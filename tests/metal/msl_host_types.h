// msl_host_types.h — MSL scalar and vector types, as_type, metal_stdlib math.
// Part of msl_host.h (the MSL execution harness, tests/metal/); include that, not this.
#pragma once

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Scalar and vector types
// ---------------------------------------------------------------------------------------------
typedef _Float16 half;
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef uint64_t ulong;

struct bfloat {  // bfloat16: storage bits, arithmetic through float (round to nearest even)
  uint16_t bits;
  bfloat() = default;
  bfloat(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = uint16_t((u >> 16) | 0x40u);  // quiet NaN
    } else {
      bits = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

template <class T, int N>
struct vec;

#define MSL_HOST_VEC_COMMON(N)                                        \
  T& operator[](int i) { return (&x)[i]; }                            \
  const T& operator[](int i) const { return (&x)[i]; }                \
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T>>> \
  explicit vec(const vec<U, N>& o) {                                  \
    for (int i = 0; i < N; ++i) (*this)[i] = T(o[i]);                 \
  }

template <class T>
struct alignas(2 * sizeof(T)) vec<T, 2> {
  T x, y;
  vec() = default;
  constexpr vec(T s) : x(s), y(s) {}
  constexpr vec(T a, T b) : x(a), y(b) {}
  MSL_HOST_VEC_COMMON(2)
};

template <class T>
struct alignas(4 * sizeof(T)) vec<T, 3> {  // like MSL: a 3-vector has the size of a 4-vector
  T x, y, z;
  vec() = default;
  constexpr vec(T s) : x(s), y(s), z(s) {}
  constexpr vec(T a, T b, T c) : x(a), y(b), z(c) {}
  vec(vec<T, 2> a, T c) : x(a.x), y(a.y), z(c) {}
  vec(T a, vec<T, 2> b) : x(a), y(b.x), z(b.y) {}
  vec<T, 2> xy() const { return vec<T, 2>(x, y); }
  MSL_HOST_VEC_COMMON(3)
};

template <class T>
struct alignas(4 * sizeof(T)) vec<T, 4> {
  T x, y, z, w;
  vec() = default;
  constexpr vec(T s) : x(s), y(s), z(s), w(s) {}
  constexpr vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  vec(vec<T, 2> a, vec<T, 2> b) : x(a.x), y(a.y), z(b.x), w(b.y) {}
  vec(vec<T, 3> a, T d) : x(a.x), y(a.y), z(a.z), w(d) {}
  vec(vec<T, 2> a, T c, T d) : x(a.x), y(a.y), z(c), w(d) {}
  MSL_HOST_VEC_COMMON(4)
};
#undef MSL_HOST_VEC_COMMON

#define MSL_HOST_VEC_BINOP(OP)                                             \
  template <class T, int N>                                                \
  vec<T, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {          \
    vec<T, N> r;                                                           \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] OP b[i]);                    \
    return r;                                                              \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N> operator OP(const vec<T, N>& a, std::type_identity_t<T> b) {   \
    return a OP vec<T, N>(b);                                              \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N> operator OP(std::type_identity_t<T> a, const vec<T, N>& b) {   \
    return vec<T, N>(a) OP b;                                              \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N>& operator OP##=(vec<T, N>& a, const vec<T, N>& b) {            \
    return a = a OP b;                                                     \
  }                                                                        \
  template <class T, int N>                                                \
  vec<T, N>& operator OP##=(vec<T, N>& a, std::type_identity_t<T> b) {     \
    return a = a OP vec<T, N>(b);                                          \
  }
MSL_HOST_VEC_BINOP(+)
MSL_HOST_VEC_BINOP(-)
MSL_HOST_VEC_BINOP(*)
MSL_HOST_VEC_BINOP(/)
#undef MSL_HOST_VEC_BINOP

template <class T, int N>
vec<T, N> operator-(const vec<T, N>& a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = T(-a[i]);
  return r;
}

#define MSL_HOST_VEC_TYPES(T)   \
  typedef vec<T, 2> T##2;       \
  typedef vec<T, 3> T##3;       \
  typedef vec<T, 4> T##4;
MSL_HOST_VEC_TYPES(float)
MSL_HOST_VEC_TYPES(half)
MSL_HOST_VEC_TYPES(bfloat)
MSL_HOST_VEC_TYPES(int)
MSL_HOST_VEC_TYPES(uint)
MSL_HOST_VEC_TYPES(short)
MSL_HOST_VEC_TYPES(ushort)
MSL_HOST_VEC_TYPES(char)
MSL_HOST_VEC_TYPES(uchar)
MSL_HOST_VEC_TYPES(long)
MSL_HOST_VEC_TYPES(ulong)
MSL_HOST_VEC_TYPES(bool)
#undef MSL_HOST_VEC_TYPES

template <class To, class From>
To as_type(const From& v) {
  static_assert(sizeof(To) == sizeof(From), "as_type: the two types must have the same size");
  To r;
  std::memcpy(&r, &v, sizeof(To));
  return r;
}

// ---------------------------------------------------------------------------------------------
// Math (metal_stdlib): float and half overloads, elementwise on vectors; `fast::` and
// `precise::` name the same functions (the harness computes precisely)
// ---------------------------------------------------------------------------------------------
namespace msl_host_math {
#define MSL_HOST_UNARY(NAME, EXPR)                                  \
  inline float NAME(float x) { return EXPR; }                       \
  inline half NAME(half h) {                                        \
    float x = float(h);                                             \
    return half(EXPR);                                              \
  }                                                                 \
  inline bfloat NAME(bfloat b) {                                    \
    float x = float(b);                                             \
    return bfloat(EXPR);                                            \
  }                                                                 \
  template <class T, int N>                                         \
  vec<T, N> NAME(const vec<T, N>& v) {                              \
    vec<T, N> r;                                                    \
    for (int i = 0; i < N; ++i) r[i] = NAME(v[i]);                  \
    return r;                                                       \
  }
MSL_HOST_UNARY(exp, std::exp(x))
MSL_HOST_UNARY(exp2, std::exp2(x))
MSL_HOST_UNARY(exp10, std::pow(10.0f, x))
MSL_HOST_UNARY(log, std::log(x))
MSL_HOST_UNARY(log2, std::log2(x))
MSL_HOST_UNARY(log10, std::log10(x))
MSL_HOST_UNARY(sqrt, std::sqrt(x))
MSL_HOST_UNARY(rsqrt, 1.0f / std::sqrt(x))
MSL_HOST_UNARY(sin, std::sin(x))
MSL_HOST_UNARY(cos, std::cos(x))
MSL_HOST_UNARY(tan, std::tan(x))
MSL_HOST_UNARY(asin, std::asin(x))
MSL_HOST_UNARY(acos, std::acos(x))
MSL_HOST_UNARY(atan, std::atan(x))
MSL_HOST_UNARY(sinh, std::sinh(x))
MSL_HOST_UNARY(cosh, std::cosh(x))
MSL_HOST_UNARY(tanh, std::tanh(x))
MSL_HOST_UNARY(erf, std::erf(x))
MSL_HOST_UNARY(abs, std::fabs(x))
MSL_HOST_UNARY(fabs, std::fabs(x))
MSL_HOST_UNARY(floor, std::floor(x))
MSL_HOST_UNARY(ceil, std::ceil(x))
MSL_HOST_UNARY(round, std::round(x))
MSL_HOST_UNARY(trunc, std::trunc(x))
MSL_HOST_UNARY(rint, std::nearbyint(x))
MSL_HOST_UNARY(fract, x - std::floor(x))
MSL_HOST_UNARY(saturate, std::fmin(std::fmax(x, 0.0f), 1.0f))
MSL_HOST_UNARY(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f))
MSL_HOST_UNARY(recip, 1.0f / x)
#undef MSL_HOST_UNARY

#define MSL_HOST_BINARY(NAME, EXPR)                                     \
  inline float NAME(float x, float y) { return EXPR; }                  \
  inline half NAME(half hx, half hy) {                                  \
    float x = float(hx), y = float(hy);                                 \
    return half(EXPR);                                                  \
  }                                                                     \
  inline bfloat NAME(bfloat bx, bfloat by) {                            \
    float x = float(bx), y = float(by);                                 \
    return bfloat(EXPR);                                                \
  }                                                                     \
  template <class T, int N>                                             \
  vec<T, N> NAME(const vec<T, N>& a, const vec<T, N>& b) {              \
    vec<T, N> r;                                                        \
    for (int i = 0; i < N; ++i) r[i] = NAME(a[i], b[i]);                \
    return r;                                                           \
  }
MSL_HOST_BINARY(pow, std::pow(x, y))
MSL_HOST_BINARY(powr, std::pow(x, y))
MSL_HOST_BINARY(atan2, std::atan2(x, y))
MSL_HOST_BINARY(fmod, std::fmod(x, y))
MSL_HOST_BINARY(fmin, std::fmin(x, y))
MSL_HOST_BINARY(fmax, std::fmax(x, y))
MSL_HOST_BINARY(copysign, std::copysign(x, y))
MSL_HOST_BINARY(divide, x / y)
MSL_HOST_BINARY(step, y < x ? 0.0f : 1.0f)
#undef MSL_HOST_BINARY

// min / max / clamp: floating-point as fmin/fmax, integers exactly
#define MSL_HOST_MINMAX(T)                                                             \
  inline T min(T a, T b) { return b < a ? b : a; }                                     \
  inline T max(T a, T b) { return a < b ? b : a; }                                     \
  inline T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
MSL_HOST_MINMAX(int)
MSL_HOST_MINMAX(uint)
MSL_HOST_MINMAX(short)
MSL_HOST_MINMAX(ushort)
MSL_HOST_MINMAX(char)
MSL_HOST_MINMAX(uchar)
MSL_HOST_MINMAX(long)
MSL_HOST_MINMAX(ulong)
#undef MSL_HOST_MINMAX
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline half min(half a, half b) { return half(std::fmin(float(a), float(b))); }
inline half max(half a, half b) { return half(std::fmax(float(a), float(b))); }
inline bfloat min(bfloat a, bfloat b) { return bfloat(std::fmin(float(a), float(b))); }
inline bfloat max(bfloat a, bfloat b) { return bfloat(std::fmax(float(a), float(b))); }
inline float clamp(float x, float lo, float hi) { return min(max(x, lo), hi); }
inline half clamp(half x, half lo, half hi) { return min(max(x, lo), hi); }
template <class T, int N>
vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = min(a[i], b[i]);
  return r;
}
template <class T, int N>
vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = max(a[i], b[i]);
  return r;
}
inline int abs(int x) { return x < 0 ? -x : x; }
inline long abs(long x) { return x < 0 ? -x : x; }

inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline half fma(half a, half b, half c) { return half(std::fma(float(a), float(b), float(c))); }
inline float mix(float x, float y, float a) { return x + (y - x) * a; }
inline half mix(half x, half y, half a) { return half(float(x) + (float(y) - float(x)) * float(a)); }
template <class T, int N>
vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = fma(a[i], b[i], c[i]);
  return r;
}
template <class T>
T select(T a, T b, bool c) {
  return c ? b : a;
}
inline bool isnan(float x) { return std::isnan(x); }
inline bool isnan(half x) { return std::isnan(float(x)); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isinf(half x) { return std::isinf(float(x)); }
inline bool isfinite(float x) { return std::isfinite(x); }
inline bool isfinite(half x) { return std::isfinite(float(x)); }
template <class T, int N>
T dot(const vec<T, N>& a, const vec<T, N>& b) {
  float s = 0.0f;
  for (int i = 0; i < N; ++i) s += float(a[i]) * float(b[i]);
  return T(s);
}
}  // namespace msl_host_math

using namespace msl_host_math;
namespace metal {
using namespace ::msl_host_math;
namespace fast {
using namespace ::msl_host_math;
}
namespace precise {
using namespace ::msl_host_math;
}
}  // namespace metal

// Numeric limits spelled the MSL way
#ifndef MAXFLOAT
#define MAXFLOAT 3.402823466e+38f
#endif
#define MAXHALF half(65504.0f)
#define HALF_MAX half(65504.0f)
