// msl_host.h — lets a C++20 compiler (g++ / clang++) compile Metal Shading Language kernels
// UNCHANGED on the CPU, and runs them the way a Metal GPU runs one threadgroup: every Metal
// thread is a fiber (a stack switch of our own on x86-64, ucontext elsewhere), `threadgroup_barrier` is a real barrier over the threadgroup's
// fibers, SIMD-group functions and `simdgroup_matrix` operations exchange values among the 32
// lanes of a SIMD-group in lock step, and threadgroups run one after another.
//
// Test code for TileLang's Metal backend (tests/metal/), not part of the product. Semantics
// follow Apple's Metal Shading Language Specification; where it leaves the distribution of a
// simdgroup_matrix over lanes to the implementation, the layout Apple's GPUs use is modelled
// (lane l holds row (l/4 & 4) + (l/2 % 4), columns (l/4 & 2)*2 + (l%2)*2 + {0, 1}).
//
// Address spaces: `device`, `constant`, `thread` and `threadgroup` expand to nothing (one
// address space on the CPU), so threadgroup pointers and casts compile as written. What
// differs is storage duration: a kernel-scope `threadgroup` variable (`threadgroup float4
// tl_smem4[704];`, `threadgroup union {...} s;`) is ONE object per threadgroup in MSL but a
// local in C++ — so the runner (msl_runner.py: shared_storage) puts `static` in front of
// exactly those declarations, its only change to the kernel text. Threadgroups run one after
// another on one OS thread, so that one object is the threadgroup's memory.
#pragma once

#include <ucontext.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// ---------------------------------------------------------------------------------------------
// The runner: fibers, the threadgroup barrier, SIMD-group lock step
// ---------------------------------------------------------------------------------------------
namespace msl_host {
constexpr int kSimdWidth = 32;
constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;
constexpr int kSlotBytes = 64;

struct SimdGroup {
  int size = 0;      // lanes in this SIMD-group (the last one of a threadgroup may be partial)
  int arrived = 0;   // lanes waiting at the current collective
  int returned = 0;  // lanes whose kernel invocation has returned
  int op = 0;        // which collective the waiting lanes are at (all lanes must agree)
  int at_barrier = 0;  // lanes waiting at threadgroup_barrier
  unsigned gen = 0;  // bumped when a collective releases its lanes
  // two banks: collective k writes bank k % 2, so a lane that is already at collective k + 1
  // never overwrites values a slower lane is still reading from collective k
  alignas(16) unsigned char slots[2][kSimdWidth][kSlotBytes];
};

struct ThreadIds {
  vec<uint, 3> tg_pos, tg_size, grid_groups, local;
  uint linear, simd_index, lane;
};

// Switching fibers. On x86-64 a switch saves the callee-saved registers on the current stack
// and swaps stack pointers (no signal-mask system call, unlike swapcontext: GEMMs switch
// fibers at every SIMD-group matrix operation); elsewhere ucontext does it.
#if defined(__x86_64__) && !defined(MSL_HOST_NO_FAST_SWITCH)
#define MSL_HOST_FAST_SWITCH 1
extern "C" void msl_host_switch(void** save_sp, void* next_sp);
asm(R"(
  .text
  .p2align 4
  .hidden msl_host_switch
  .globl msl_host_switch
  .type msl_host_switch, @function
msl_host_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size msl_host_switch, .-msl_host_switch
)");
#endif

struct State {
  int n = 0, cur = 0, returned = 0;
#if MSL_HOST_FAST_SWITCH
  void* sched_sp = nullptr;
  void* sp[kMaxThreads];
#else
  ucontext_t sched;
  ucontext_t ctx[kMaxThreads];
#endif
  bool finished[kMaxThreads];
  unsigned seq[kMaxThreads];  // collectives each lane has executed (selects the slot bank)
  bool at_barrier[kMaxThreads];  // waiting at a threadgroup_barrier that has not opened yet
  bool reverse = false;  // the order the scheduler runs SIMD-groups ahead in
  char* stacks = nullptr;
  int stacks_for = 0;
  void (*body)(int) = nullptr;
  int tg_arrived = 0;
  unsigned tg_gen = 0;
  SimdGroup simd[kMaxThreads / kSimdWidth];
  vec<uint, 3> tg_pos, tg_size, grid_groups;
  char error[512] = {0};
};
static State S;  // one translation unit (one kernel) per shared library

inline ThreadIds ids(int t) {
  ThreadIds r;
  r.tg_pos = S.tg_pos;
  r.tg_size = S.tg_size;
  r.grid_groups = S.grid_groups;
  uint tx = S.tg_size.x, ty = S.tg_size.y;
  r.local = vec<uint, 3>(uint(t) % tx, (uint(t) / tx) % ty, uint(t) / (tx * ty));
  r.linear = uint(t);
  r.simd_index = uint(t) / kSimdWidth;
  r.lane = uint(t) % kSimdWidth;
  return r;
}

template <class T>
struct vec_traits {
  static constexpr int n = 1;
};
template <class T, int N>
struct vec_traits<vec<T, N>> {
  using elem = T;
  static constexpr int n = N;
};

// a builtin kernel argument of the declared type from a 3-component value (scalars take .x)
template <class T>
T builtin(vec<uint, 3> v) {
  if constexpr (vec_traits<T>::n == 1) {
    return T(v.x);
  } else {
    using E = typename vec_traits<T>::elem;
    if constexpr (vec_traits<T>::n == 2) {
      return T(E(v.x), E(v.y));
    } else {
      return T(E(v.x), E(v.y), E(v.z));
    }
  }
}

inline void to_scheduler() {
#if MSL_HOST_FAST_SWITCH
  msl_host_switch(&S.sp[S.cur], S.sched_sp);
#else
  swapcontext(&S.ctx[S.cur], &S.sched);
#endif
}

inline void yield() { to_scheduler(); }

inline void fail(const char* what) {
  if (!S.error[0]) std::snprintf(S.error, sizeof S.error, "%s", what);
  to_scheduler();  // never resumed: the launch reports the error
}

inline void threadgroup_sync() {
  if (S.returned > 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  "thread %d reached threadgroup_barrier after another thread of its threadgroup returned", S.cur);
    fail(msg);
  }
  SimdGroup& g = S.simd[S.cur / kSimdWidth];
  if (g.arrived > 0) fail("lanes of a SIMD-group diverged: some at threadgroup_barrier, others at a SIMD-group function");
  unsigned gen = S.tg_gen;
  if (++S.tg_arrived == S.n) {  // the barrier opens for every thread at once
    S.tg_arrived = 0;
    ++S.tg_gen;
    for (int t = 0; t < S.n; ++t) S.at_barrier[t] = false;
    for (int k = 0; k * kSimdWidth < S.n; ++k) S.simd[k].at_barrier = 0;
    return;
  }
  ++g.at_barrier;
  S.at_barrier[S.cur] = true;  // not resumed until the barrier opens
  while (S.tg_gen == gen) yield();
}

// Every lane of the current SIMD-group reaches collective `op` (lock step); returns when all have.
inline void simd_sync(int op) {
  SimdGroup& g = S.simd[S.cur / kSimdWidth];
  if (g.returned > 0) fail("a SIMD-group function was called after another lane of the SIMD-group returned");
  if (g.at_barrier > 0) fail("lanes of a SIMD-group diverged: some at threadgroup_barrier, others at a SIMD-group function");
  if (g.arrived == 0) {
    g.op = op;
  } else if (g.op != op) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "lanes of SIMD-group %d reached different SIMD-group functions (ops %d and %d)",
                  S.cur / kSimdWidth, g.op, op);
    fail(msg);
  }
  unsigned gen = g.gen;
  if (++g.arrived == g.size) {
    g.arrived = 0;
    ++g.gen;
    return;
  }
  while (g.gen == gen) yield();
}

// Lock-step exchange: every lane contributes `v`; returns the lane count and the values of all
// lanes in `all` (all[lane] for lane < count).
template <class T>
int simd_exchange(int op, const T& v, T* all) {
  static_assert(sizeof(T) <= kSlotBytes, "simd_exchange: value too large");
  static_assert(std::is_trivially_copyable_v<T>, "simd_exchange: value must be trivially copyable");
  SimdGroup& g = S.simd[S.cur / kSimdWidth];
  int lane = S.cur % kSimdWidth;
  unsigned bank = S.seq[S.cur]++ & 1u;
  std::memcpy(g.slots[bank][lane], &v, sizeof(T));
  simd_sync(op);
  for (int l = 0; l < g.size; ++l) std::memcpy(&all[l], g.slots[bank][l], sizeof(T));
  return g.size;
}

inline int lane() { return S.cur % kSimdWidth; }

inline void fiber_main(int t) {
  S.body(t);
  S.finished[t] = true;
  ++S.returned;
  SimdGroup& g = S.simd[t / kSimdWidth];
  ++g.returned;
  if (S.tg_arrived > 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "thread %d returned while other threads wait at threadgroup_barrier", t);
    fail(msg);
  }
  if (g.arrived > 0) {
    char msg[200];
    std::snprintf(msg, sizeof msg, "lane %d returned while other lanes wait at a SIMD-group function", t % kSimdWidth);
    fail(msg);
  }
}

#if MSL_HOST_FAST_SWITCH
// where a fiber starts (it runs S.cur), and whence it goes back to the scheduler for good
[[noreturn]] inline void fiber_entry() {
  fiber_main(S.cur);
  to_scheduler();
  __builtin_trap();  // a finished fiber is never resumed
}
#endif

// Run one threadgroup of `n` threads to completion; 0 on success, 1 with S.error set.
inline int run_threadgroup(int n, void (*body)(int)) {
  if (n < 1 || n > kMaxThreads) {
    std::snprintf(S.error, sizeof S.error, "threadgroup of %d threads (1 to %d supported)", n, kMaxThreads);
    return 1;
  }
  if (S.stacks_for < n) {
    std::free(S.stacks);
    S.stacks = static_cast<char*>(std::malloc(kStackBytes * size_t(n)));
    S.stacks_for = n;
  }
  S.n = n;
  S.body = body;
  S.returned = 0;
  S.tg_arrived = 0;
  for (int s = 0; s * kSimdWidth < n; ++s) {
    SimdGroup& g = S.simd[s];
    g.size = (n - s * kSimdWidth) < kSimdWidth ? n - s * kSimdWidth : kSimdWidth;
    g.arrived = g.returned = g.op = g.at_barrier = 0;
  }
  for (int t = 0; t < n; ++t) {
    S.finished[t] = false;
    S.at_barrier[t] = false;
    S.seq[t] = 0;
    char* stack = S.stacks + kStackBytes * size_t(t);
#if MSL_HOST_FAST_SWITCH
    // the frame msl_host_switch pops: six registers, then `fiber_entry` as the return address,
    // then a zero "return address" of fiber_entry itself (entry with rsp = 8 mod 16, as a call)
    uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + kStackBytes) & ~uintptr_t(15);
    void** frame = reinterpret_cast<void**>(top) - 8;
    for (int i = 0; i < 6; ++i) frame[i] = nullptr;
    frame[6] = reinterpret_cast<void*>(&fiber_entry);
    frame[7] = nullptr;
    S.sp[t] = frame;
#else
    getcontext(&S.ctx[t]);
    S.ctx[t].uc_stack.ss_sp = stack;
    S.ctx[t].uc_stack.ss_size = kStackBytes;
    S.ctx[t].uc_link = &S.sched;
    makecontext(&S.ctx[t], reinterpret_cast<void (*)()>(&fiber_main), 1, t);
#endif
  }
  // Each SIMD-group in turn runs as far as it can (its lanes in lock step) — to its next
  // threadgroup_barrier or its end — before the next one starts: the largest skew between
  // SIMD-groups a GPU may show, so a missing barrier between them reads stale or unwritten
  // threadgroup memory. `S.reverse` (odd threadgroups) runs the last SIMD-group first.
  int groups = (n + kSimdWidth - 1) / kSimdWidth;
  while (S.returned < n && !S.error[0]) {
    for (int k = 0; k < groups && !S.error[0]; ++k) {
      int sg = S.reverse ? groups - 1 - k : k;
      int end = (sg + 1) * kSimdWidth < n ? (sg + 1) * kSimdWidth : n;
      for (bool ran = true; ran && !S.error[0];) {
        ran = false;
        for (int t = sg * kSimdWidth; t < end && !S.error[0]; ++t) {
          if (S.finished[t] || S.at_barrier[t]) continue;
          S.cur = t;
          ran = true;
#if MSL_HOST_FAST_SWITCH
          msl_host_switch(&S.sched_sp, S.sp[t]);
#else
          swapcontext(&S.sched, &S.ctx[t]);
#endif
        }
      }
    }
  }
  return S.error[0] ? 1 : 0;
}

// Run the grid: threadgroups in x, then y, then z order, one after another.
inline int launch(const unsigned* grid, const unsigned* tg, void (*body)(int)) {
  S.error[0] = 0;
  S.tg_size = vec<uint, 3>(tg[0], tg[1], tg[2]);
  S.grid_groups = vec<uint, 3>(grid[0], grid[1], grid[2]);
  int n = int(tg[0] * tg[1] * tg[2]);
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        S.tg_pos = vec<uint, 3>(x, y, z);
        S.reverse = (x + y + z) % 2 == 1;
        if (run_threadgroup(n, body)) return 1;
      }
  return 0;
}
}  // namespace msl_host

// ---------------------------------------------------------------------------------------------
// Barriers and SIMD-group functions
// ---------------------------------------------------------------------------------------------
enum class mem_flags : unsigned { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }

inline void threadgroup_barrier(mem_flags) { msl_host::threadgroup_sync(); }
inline void simdgroup_barrier(mem_flags) { msl_host::simd_sync(1); }

namespace msl_host {
enum SimdOp { kBarrier = 1, kSum, kProd, kMax, kMin, kShuffle, kShuffleXor, kShuffleDown, kShuffleUp, kBroadcast,
              kAll, kAny, kPrefix, kMatrix, kAnd, kOr, kXor };
template <class T, class F>
T simd_reduce(int op, T v, F combine) {
  T all[kSimdWidth];
  int n = simd_exchange(op, v, all);
  T acc = all[0];
  for (int l = 1; l < n; ++l) acc = combine(acc, all[l]);
  return acc;
}
}  // namespace msl_host

template <class T>
T simd_sum(T v) {
  return msl_host::simd_reduce(msl_host::kSum, v, [](T a, T b) { return T(a + b); });
}
template <class T>
T simd_product(T v) {
  return msl_host::simd_reduce(msl_host::kProd, v, [](T a, T b) { return T(a * b); });
}
template <class T>
T simd_max(T v) {
  return msl_host::simd_reduce(msl_host::kMax, v, [](T a, T b) { return max(a, b); });
}
template <class T>
T simd_min(T v) {
  return msl_host::simd_reduce(msl_host::kMin, v, [](T a, T b) { return min(a, b); });
}
template <class T>
T simd_and(T v) {
  return msl_host::simd_reduce(msl_host::kAnd, v, [](T a, T b) { return T(a & b); });
}
template <class T>
T simd_or(T v) {
  return msl_host::simd_reduce(msl_host::kOr, v, [](T a, T b) { return T(a | b); });
}
template <class T>
T simd_xor(T v) {
  return msl_host::simd_reduce(msl_host::kXor, v, [](T a, T b) { return T(a ^ b); });
}
inline bool simd_all(bool v) {
  return msl_host::simd_reduce(msl_host::kAll, v, [](bool a, bool b) { return a && b; });
}
inline bool simd_any(bool v) {
  return msl_host::simd_reduce(msl_host::kAny, v, [](bool a, bool b) { return a || b; });
}
template <class T, class L>
T simd_shuffle(T v, L src_lane) {
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kShuffle, v, all);
  int l = int(src_lane);
  if (l < 0 || l >= n) msl_host::fail("simd_shuffle: source lane out of range");
  return all[l];
}
template <class T, class M>
T simd_shuffle_xor(T v, M mask) {
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kShuffleXor, v, all);
  int l = msl_host::lane() ^ int(mask);
  if (l < 0 || l >= n) msl_host::fail("simd_shuffle_xor: source lane out of range");
  return all[l];
}
template <class T, class D>
T simd_shuffle_down(T v, D delta) {  // the upper `delta` lanes keep their own value
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kShuffleDown, v, all);
  int l = msl_host::lane() + int(delta);
  return l < n ? all[l] : v;
}
template <class T, class D>
T simd_shuffle_up(T v, D delta) {  // the lower `delta` lanes keep their own value
  T all[msl_host::kSimdWidth];
  msl_host::simd_exchange(msl_host::kShuffleUp, v, all);
  int l = msl_host::lane() - int(delta);
  return l >= 0 ? all[l] : v;
}
template <class T, class L>
T simd_broadcast(T v, L src_lane) {
  T all[msl_host::kSimdWidth];
  int n = msl_host::simd_exchange(msl_host::kBroadcast, v, all);
  int l = int(src_lane);
  if (l < 0 || l >= n) msl_host::fail("simd_broadcast: source lane out of range");
  return all[l];
}
template <class T>
T simd_broadcast_first(T v) {
  return simd_broadcast(v, 0);
}
template <class T>
T simd_prefix_inclusive_sum(T v) {
  T all[msl_host::kSimdWidth];
  msl_host::simd_exchange(msl_host::kPrefix, v, all);
  T acc = all[0];
  for (int l = 1; l <= msl_host::lane(); ++l) acc = T(acc + all[l]);
  return acc;
}
template <class T>
T simd_prefix_exclusive_sum(T v) {
  T all[msl_host::kSimdWidth];
  msl_host::simd_exchange(msl_host::kPrefix, v, all);
  T acc = T(0);
  for (int l = 0; l < msl_host::lane(); ++l) acc = T(acc + all[l]);
  return acc;
}

// ---------------------------------------------------------------------------------------------
// simdgroup_matrix<T, Cols, Rows> (8x8): each lane holds two elements of one row
// ---------------------------------------------------------------------------------------------
namespace msl_host {
inline int mat_row(int l) { return ((l / 4) & 4) + (l / 2) % 4; }
inline int mat_col(int l) { return ((l / 4) & 2) * 2 + (l % 2) * 2; }
}  // namespace msl_host

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "the harness models 8x8 simdgroup matrices");
  vec<T, 2> e;
  simdgroup_matrix() = default;
  explicit simdgroup_matrix(T diagonal) {  // a diagonal matrix (MSL spec)
    int r = msl_host::mat_row(msl_host::lane()), c = msl_host::mat_col(msl_host::lane());
    e.x = r == c ? diagonal : T(0);
    e.y = r == c + 1 ? diagonal : T(0);
  }
  vec<T, 2>& thread_elements() { return e; }
  const vec<T, 2>& thread_elements() const { return e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  m.e = vec<T, 2>(value);
  return m;
}

// Element (row r, column c) of the matrix at `src` + `origin` (x = column, y = row):
// src[(origin.y + r) * elements_per_row + origin.x + c]; transposed, rows and columns swap.
template <class T, class P, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const P* src, ulong elements_per_row = Cols,
                    vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  static_assert(std::is_same_v<std::remove_cv_t<P>, T>, "simdgroup_load: pointer and matrix element types differ");
  msl_host::simd_sync(msl_host::kMatrix);  // a SIMD-group function: every lane takes part
  int r = msl_host::mat_row(msl_host::lane()), c = msl_host::mat_col(msl_host::lane());
  for (int j = 0; j < 2; ++j) {
    ulong row = transpose ? ulong(c + j) : ulong(r), col = transpose ? ulong(r) : ulong(c + j);
    d.e[j] = src[(origin.y + row) * elements_per_row + origin.x + col];
  }
}

template <class T, class P, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, P* dst, ulong elements_per_row = Cols,
                     vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  static_assert(std::is_same_v<P, T>, "simdgroup_store: pointer and matrix element types differ");
  msl_host::simd_sync(msl_host::kMatrix);
  int r = msl_host::mat_row(msl_host::lane()), c = msl_host::mat_col(msl_host::lane());
  for (int j = 0; j < 2; ++j) {
    ulong row = transpose ? ulong(c + j) : ulong(r), col = transpose ? ulong(r) : ulong(c + j);
    dst[(origin.y + row) * elements_per_row + origin.x + col] = a.e[j];
  }
}

namespace msl_host {
struct MatPair {
  float a[2], b[2];
};
// d = a * b + c over the SIMD-group (float accumulation, rounded to d's type)
template <class TD, class TA, class TB, class TC>
void mma(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a, const simdgroup_matrix<TB, 8, 8>& b,
         const simdgroup_matrix<TC, 8, 8>* c) {
  MatPair mine{{float(a.e.x), float(a.e.y)}, {float(b.e.x), float(b.e.y)}};
  MatPair all[kSimdWidth];
  int n = simd_exchange(kMatrix, mine, all);
  if (n != kSimdWidth) fail("simdgroup_multiply_accumulate needs a full SIMD-group of 32 lanes");
  float A[8][8], B[8][8];
  for (int l = 0; l < kSimdWidth; ++l)
    for (int j = 0; j < 2; ++j) {
      A[mat_row(l)][mat_col(l) + j] = all[l].a[j];
      B[mat_row(l)][mat_col(l) + j] = all[l].b[j];
    }
  int r = mat_row(lane()), col = mat_col(lane());
  for (int j = 0; j < 2; ++j) {
    float acc = c ? float(c->e[j]) : 0.0f;
    for (int k = 0; k < 8; ++k) acc += A[r][k] * B[k][col + j];
    d.e[j] = TD(acc);
  }
}
}  // namespace msl_host

template <class TD, class TA, class TB, class TC>
void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                   const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c) {
  simdgroup_matrix<TC, 8, 8> c_in = c;  // d may alias c
  msl_host::mma(d, a, b, &c_in);
}
template <class TD, class TA, class TB>
void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                        const simdgroup_matrix<TB, 8, 8>& b) {
  msl_host::mma<TD, TA, TB, TD>(d, a, b, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Atomics (fibers of one threadgroup never run at the same time: plain read-modify-write)
// ---------------------------------------------------------------------------------------------
enum memory_order { memory_order_relaxed = 0 };
template <class T>
struct msl_atomic {
  T v;
};
template <class T>
using atomic = msl_atomic<T>;
typedef msl_atomic<int> atomic_int;
typedef msl_atomic<uint> atomic_uint;
typedef msl_atomic<float> atomic_float;
typedef msl_atomic<bool> atomic_bool;

#define MSL_HOST_ATOMIC_RMW(NAME, EXPR)                                          \
  template <class T, class U>                                                    \
  T atomic_fetch_##NAME##_explicit(volatile msl_atomic<T>* o, U arg, memory_order) { \
    T old = o->v;                                                                \
    T b = T(arg);                                                                \
    o->v = EXPR;                                                                 \
    return old;                                                                  \
  }
MSL_HOST_ATOMIC_RMW(add, T(old + b))
MSL_HOST_ATOMIC_RMW(sub, T(old - b))
MSL_HOST_ATOMIC_RMW(max, (old < b ? b : old))
MSL_HOST_ATOMIC_RMW(min, (b < old ? b : old))
MSL_HOST_ATOMIC_RMW(and, T(old & b))
MSL_HOST_ATOMIC_RMW(or, T(old | b))
MSL_HOST_ATOMIC_RMW(xor, T(old ^ b))
#undef MSL_HOST_ATOMIC_RMW
template <class T>
T atomic_load_explicit(volatile msl_atomic<T>* o, memory_order) {
  return o->v;
}
template <class T, class U>
void atomic_store_explicit(volatile msl_atomic<T>* o, U v, memory_order) {
  o->v = T(v);
}
template <class T, class U>
T atomic_exchange_explicit(volatile msl_atomic<T>* o, U v, memory_order) {
  T old = o->v;
  o->v = T(v);
  return old;
}
template <class T, class U>
bool atomic_compare_exchange_weak_explicit(volatile msl_atomic<T>* o, T* expected, U desired, memory_order,
                                           memory_order) {
  if (o->v == *expected) {
    o->v = T(desired);
    return true;
  }
  *expected = o->v;
  return false;
}

// ---------------------------------------------------------------------------------------------
// MSL keywords (last: system headers above must not see them)
// ---------------------------------------------------------------------------------------------
#define kernel
#define device
#define constant
#define thread
#define threadgroup
