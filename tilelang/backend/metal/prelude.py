"""The MSL helpers a generated kernel calls, written into the kernel's own source.

Why inline: `torch.mps.compile_shader` compiles one source string (no include path), so the
few helpers a kernel needs travel with it — only the sections it uses (`SECTIONS`, chosen by
the code generator from the names it emitted). MSL is C++14: overloads and class templates,
no `if constexpr`. Float math goes through `metal::precise::` so a kernel computes the same
under the fast-math default of the Metal compiler (`metal::fast::` with tl.enable_fast_math).

What the sections rely on (the Metal Shading Language Specification; a CPU harness must
provide exactly these): `half`, `bfloat` (MSL 3.1), `as_type<T>`, `metal::precise::` math
(`exp`, `exp2`, `log`, `log2`, `log10`, `sqrt`, `rsqrt`, `tanh`, `sin`, `cos`, `pow`,
`tan`, `sinh`, ...), `metal::floor` / `ceil` / `trunc` / `round` / `rint` / `fabs` / `fmax` /
`fmin` / `fmod` / `copysign` / `atan2` / `nextafter`, `isnan` / `isinf` / `isfinite`,
`simd_shuffle_xor` / `simd_shuffle` / `simd_shuffle_up` / `simd_shuffle_down`,
`threadgroup_barrier(mem_flags::mem_threadgroup)`, `INFINITY`. Each section is include-guarded,
so several kernels' sources concatenate into one valid translation unit."""

from __future__ import annotations

import re

HEAD = """#include <metal_stdlib>
using namespace metal;
"""

# name of section -> (the generated names that need it, MSL text)
SECTIONS: dict = {}

SECTIONS["minmax"] = (
    ("tl::min", "tl::max", "tl::abs"),
    """namespace tl {
template <class T> inline T min(T a, T b) { return a < b ? a : b; }
template <class T> inline T max(T a, T b) { return a < b ? b : a; }
// fmin / fmax: a NaN operand yields the other one (CUDA's fminf / fmaxf)
inline float min(float a, float b) { return metal::fmin(a, b); }
inline float max(float a, float b) { return metal::fmax(a, b); }
inline half min(half a, half b) { return metal::fmin(a, b); }
inline half max(half a, half b) { return metal::fmax(a, b); }
template <class T> inline T abs(T x) { return x < T(0) ? T(-x) : x; }
inline float abs(float x) { return metal::fabs(x); }
inline half abs(half x) { return metal::fabs(x); }
}  // namespace tl
""",
)

SECTIONS["limits"] = (
    ("tl::infinity", "tl::neg_infinity"),
    """namespace tl {
template <class T> inline T infinity() { return static_cast<T>(INFINITY); }
template <class T> inline T neg_infinity() { return static_cast<T>(-INFINITY); }
template <> inline int infinity<int>() { return 2147483647; }
template <> inline int neg_infinity<int>() { return -2147483647 - 1; }
template <> inline uint infinity<uint>() { return 0xffffffffu; }
template <> inline uint neg_infinity<uint>() { return 0u; }
}  // namespace tl
""",
)

SECTIONS["floordiv"] = (
    ("tl::floordiv", "tl::floormod"),
    """namespace tl {
// Python floor division / modulo: quotient rounded toward -inf, remainder with the divisor's sign
template <class T> inline T floordiv(T a, T b) {
  T q = a / b;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? T(q - 1) : q;
}
template <class T> inline T floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
}
template <> inline uint floordiv<uint>(uint a, uint b) { return a / b; }
template <> inline uint floormod<uint>(uint a, uint b) { return a % b; }
template <> inline ulong floordiv<ulong>(ulong a, ulong b) { return a / b; }
template <> inline ulong floormod<ulong>(ulong a, ulong b) { return a % b; }
inline float floormod(float a, float b) { return a - b * metal::floor(a / b); }
inline half floormod(half a, half b) { return half(floormod(float(a), float(b))); }
}  // namespace tl
""",
)

SECTIONS["math"] = (
    (
        "tl::exp",
        "tl::log",
        "tl::sqrt",
        "tl::rsqrt",
        "tl::tanh",
        "tl::sigmoid",
        "tl::sin",
        "tl::cos",
        "tl::floor",
        "tl::ceil",
        "tl::trunc",
        "tl::round",
        "tl::pow",
        "tl::fast_rcp",
    ),
    """namespace tl {
// float math, computed precisely; half / bfloat through float, rounded once
#define TL_MSL_UNARY(NAME, EXPR)                          \\
  inline float NAME(float x) { return EXPR; }             \\
  inline half NAME(half x) { return half(NAME(float(x))); }
TL_MSL_UNARY(exp, metal::precise::exp(x))
TL_MSL_UNARY(exp2, metal::precise::exp2(x))
TL_MSL_UNARY(log, metal::precise::log(x))
TL_MSL_UNARY(log2, metal::precise::log2(x))
TL_MSL_UNARY(log10, metal::precise::log10(x))
TL_MSL_UNARY(sqrt, metal::precise::sqrt(x))
TL_MSL_UNARY(rsqrt, metal::precise::rsqrt(x))
TL_MSL_UNARY(tanh, metal::precise::tanh(x))
TL_MSL_UNARY(sin, metal::precise::sin(x))
TL_MSL_UNARY(cos, metal::precise::cos(x))
TL_MSL_UNARY(sigmoid, 1.0f / (1.0f + metal::precise::exp(-x)))
TL_MSL_UNARY(floor, metal::floor(x))
TL_MSL_UNARY(ceil, metal::ceil(x))
TL_MSL_UNARY(trunc, metal::trunc(x))
TL_MSL_UNARY(round, metal::rint(x))
#undef TL_MSL_UNARY
inline float pow(float a, float b) { return metal::precise::pow(a, b); }
inline half pow(half a, half b) { return half(metal::precise::pow(float(a), float(b))); }
inline float fast_rcp(float x) { return 1.0f / x; }
}  // namespace tl
""",
)

SECTIONS["reduce"] = (
    ("tl::AllReduce", "tl::SumOp", "tl::MaxOp", "tl::MinOp"),
    """namespace tl {
struct SumOp {
  template <class T> T operator()(T a, T b) const { return a + b; }
  template <class T> static T identity() { return T(0); }
};
struct MaxOp {
  template <class T> T operator()(T a, T b) const { return tl::max(a, b); }
  template <class T> static T identity() { return neg_infinity<T>(); }
};
struct MinOp {
  template <class T> T operator()(T a, T b) const { return tl::min(a, b); }
  template <class T> static T identity() { return infinity<T>(); }
};
struct BitAndOp {
  template <class T> T operator()(T a, T b) const { return T(a & b); }
};
struct BitOrOp {
  template <class T> T operator()(T a, T b) const { return T(a | b); }
};
struct BitXorOp {
  template <class T> T operator()(T a, T b) const { return T(a ^ b); }
};
// All-reduce among the kThreads threads {t0 + k * kScale}: a group is the threads with equal
// tid % kScale and equal tid / (kThreads * kScale). Inside one SIMD-group (kThreads * kScale
// <= 32): xor shuffles. Across SIMD-groups: each SIMD-group folds its members, one partial per
// group goes to `scratch` (threadgroup memory, `tid` = thread_position_in_threadgroup.x), a
// threadgroup barrier, every member folds its group's partials in a fixed order, a second
// barrier frees scratch. Every member returns the same bits. All threads of the threadgroup
// call it (uniform control: inject_sync proved it).
template <class Op, int kThreads, int kScale>
struct AllReduce {
  template <class T> static T run(T v) {
    Op op;
    for (int offset = kThreads * kScale / 2; offset >= kScale; offset >>= 1) {
      v = op(v, simd_shuffle_xor(v, ushort(offset)));
    }
    return v;
  }
  // P: a `threadgroup T*` (a template parameter, so the address space is deduced)
  template <class T, class P> static T run(T v, P scratch, uint tid) {
    Op op;
    const int span = kThreads * kScale;
    if (span <= 32) {
      return run(v);
    }
    int first;
    int count;
    if (kScale < 32) {
      for (int offset = 16; offset >= kScale; offset >>= 1) {
        v = op(v, simd_shuffle_xor(v, ushort(offset)));
      }
      const int groups = span / 32;
      const int warp = int(tid) / 32;
      const int lane = int(tid) % 32;
      if (lane < kScale) {
        scratch[warp * kScale + lane] = v;
      }
      first = (warp / groups) * groups * kScale + lane % kScale;
      count = groups;
    } else {
      scratch[tid] = v;
      first = (int(tid) / span) * span + int(tid) % kScale;
      count = kThreads;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T r = scratch[first];
    for (int i = 1; i < count; ++i) {
      r = op(r, scratch[first + i * kScale]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return r;
  }
};
}  // namespace tl
""",
)

SECTIONS["shfl"] = (
    ("tl::shfl_lane",),
    """namespace tl {
// T.shfl_xor / _down / _up / _sync (kKind 0 / 1 / 2 / 3) within groups of `width` lanes (a
// power of two up to 32), CUDA's __shfl_*_sync semantics; `lane` is thread_index_in_simdgroup.
// The member mask is CUDA's: every lane of the SIMD-group takes part, as on CUDA's full mask.
template <int kKind, class T> inline T shfl_lane(T v, int arg, int width, uint mask, uint lane) {
  const int base = int(lane) & ~(width - 1);
  int src;
  if (kKind == 0) {
    src = int(lane) ^ arg;
  } else if (kKind == 1) {
    src = int(lane) + arg;
  } else if (kKind == 2) {
    src = int(lane) - arg;
  } else {
    src = base + (arg & (width - 1));
  }
  const bool inside = src >= base && src < base + width;
  T r = simd_shuffle(v, ushort(inside ? src : int(lane)));
  return r;
}
}  // namespace tl
""",
)

SECTIONS["cvt_pair"] = (
    ("tl::cvt_pair",),
    """namespace tl {
template <class T> inline void cvt_pair(thread T* dst, float lo, float hi) {
  dst[0] = T(lo);
  dst[1] = T(hi);
}
}  // namespace tl
""",
)


# sections another section's text calls
NEEDS = {"reduce": ("minmax", "limits")}
_NAME = re.compile(r"tl::[A-Za-z_][A-Za-z0-9_]*")


def prelude(body: str, fast_math: bool = False) -> str:
    """HEAD plus, in a fixed order, the sections that the kernel text `body` calls (`tl::name`)
    and the sections those call; with `fast_math` (tl.enable_fast_math) the float functions are
    `metal::fast::`'s instead of `metal::precise::`'s."""
    names = set(_NAME.findall(body))
    want = {key for key, (prefixes, _) in SECTIONS.items() if any(n.startswith(prefixes) for n in names)}
    for key in list(want):
        want.update(NEEDS.get(key, ()))
    texts = [_guarded(key, text) for key, (_, text) in SECTIONS.items() if key in want]
    if fast_math:
        texts = [t.replace("metal::precise::", "metal::fast::") for t in texts]
    return "\n".join([HEAD] + texts)


def _guarded(key: str, text: str) -> str:
    """A section defined once per translation unit: the kernels of a multi-kernel function
    (`backend.build_joined`) are one MSL source, each with its own prelude."""
    macro = f"TL_MSL_{key.upper()}"
    return f"#ifndef {macro}\n#define {macro}\n{text}#endif  // {macro}\n"
