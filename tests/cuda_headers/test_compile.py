"""Compile-only tests of the CUDA header library (tilelang/backend/cuda/include/tl).

No GPU is needed: every template family of the headers is instantiated in a
few generated translation units, which nvcc compiles for sm_80 and sm_90a
(ptxas therefore checks every emitted PTX instruction).  Numerical checks live
in tests/gpu/cuda_headers/*.cu and run on a GPU machine.

The nvcc invocations run concurrently (two at a time) in a module-scoped
fixture; each test waits for the compile it needs.  Set
TL_HEADERS_FULL_WGMMA=1 to instantiate every wgmma shape of every family
(about 900 kernels; minutes instead of seconds).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "tilelang" / "backend" / "cuda" / "include"
TL_DIR = INCLUDE / "tl"
HERE = Path(__file__).resolve().parent

# The headers of the instruction library documented in tl/README.md.  Other
# headers in the directory (e.g. gemm.h / swizzle.h of the code generator) are
# built on top of these and documented / tested by their owners.
LIBRARY_HEADERS = [
    "common.h",
    "mma.h",
    "ldmatrix.h",
    "cp_async.h",
    "copy.h",
    "reduce.h",
    "atomic.h",
    "sync.h",
    "debug.h",
    "rasterize.h",
    "mbarrier.h",
    "tma.h",
    "wgmma.h",
    "setmaxnreg.h",
]

sys.path.insert(0, str(HERE))
import gen_wgmma_table  # noqa: E402


def _find_nvcc() -> str | None:
    for cand in (shutil.which("nvcc"), "/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).exists():
            return cand
    return None


NVCC = _find_nvcc()
SM80 = ["-gencode", "arch=compute_80,code=sm_80"]
SM90A = ["-gencode", "arch=compute_90a,code=sm_90a"]

needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")

# ---------------------------------------------------------------------------
# Translation unit 1: everything that exists from sm_80 on (compiled for sm_80
# and for sm_90a).
# ---------------------------------------------------------------------------
SCALARS = [
    "float",
    "double",
    "tl::half_t",
    "tl::bfloat16_t",
    "tl::fp8_e4m3_t",
    "tl::fp8_e5m2_t",
    "bool",
    "int8_t",
    "uint8_t",
    "int16_t",
    "uint16_t",
    "int32_t",
    "uint32_t",
    "int64_t",
    "uint64_t",
    "long",
    "char",
]
FLOATS = ["float", "double", "tl::half_t", "tl::bfloat16_t"]
INTS = ["int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"]
UNARY_MATH = [
    "exp2",
    "exp",
    "log",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
    "erf",
    "floor",
    "ceil",
    "trunc",
    "round",
    "abs",
]
ATOMIC_TYPES = ["float", "double", "tl::half_t", "tl::bfloat16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "long"]
# (kThreads, kScale) pairs: inside one warp, spanning warps with kScale < 32,
# and spanning warps with kScale >= 32.
ALLREDUCE_SHAPES = [
    (1, 1),
    (2, 1),
    (4, 1),
    (32, 1),
    (4, 4),
    (8, 4),
    (2, 16),
    (64, 1),
    (128, 1),
    (16, 4),
    (2, 32),
    (4, 64),
]


def _cvt_block() -> str:
    lines = ["__global__ void k_cvt(char* out, const char* in) {", "  int o = 0;"]
    for to in SCALARS:
        for frm in SCALARS:
            lines.append(
                f"  *reinterpret_cast<{to}*>(out + o) = tl::cvt<{to}>(*reinterpret_cast<const {frm}*>(in + o)); o += 8;"
            )
    lines.append("}")
    return "\n".join(lines)


def _math_block() -> str:
    lines = ["template <class T> __device__ void math_probe(T* out, T x, T y) {"]
    for fn in UNARY_MATH:
        lines.append(f"  *out++ = tl::{fn}(x);")
    lines += [
        "  *out++ = tl::max(x, y); *out++ = tl::min(x, y); *out++ = tl::pow(x, y);",
        "  *out++ = tl::infinity<T>(); *out++ = tl::neg_infinity<T>();",
        "  *out++ = tl::max_value<T>(); *out++ = tl::min_value<T>();",
        "}",
        "template <class T> __device__ void int_probe(T* out, T x, T y) {",
        "  *out++ = tl::abs(x); *out++ = tl::max(x, y); *out++ = tl::min(x, y);",
        "  *out++ = tl::floordiv(x, y); *out++ = tl::floormod(x, y); *out++ = tl::ceildiv(x, y);",
        "  *out++ = tl::infinity<T>(); *out++ = tl::neg_infinity<T>();",
        "  *out++ = tl::max_value<T>(); *out++ = tl::min_value<T>();",
        "}",
        "template <class T> __device__ void lim_probe(T* out) {",
        "  *out++ = tl::infinity<T>(); *out++ = tl::neg_infinity<T>();",
        "  *out++ = tl::max_value<T>(); *out++ = tl::min_value<T>();",
        "}",
        "__global__ void k_math(char* buf, float fx, int ix) {",
    ]
    for t in FLOATS:
        lines.append(
            f"  math_probe<{t}>(reinterpret_cast<{t}*>(buf), tl::cvt<{t}>(fx), tl::cvt<{t}>(fx + 1.f)); buf += 256;"
        )
    for t in INTS:
        lines.append(f"  int_probe<{t}>(reinterpret_cast<{t}*>(buf), ({t})ix, ({t})(ix + 3)); buf += 256;")
    for t in ("tl::fp8_e4m3_t", "tl::fp8_e5m2_t"):
        lines.append(f"  lim_probe<{t}>(reinterpret_cast<{t}*>(buf)); buf += 256;")
    lines += [
        "  float* f = reinterpret_cast<float*>(buf);",
        "  f[0] = tl::fast_exp2(fx); f[1] = tl::fast_exp(fx); f[2] = tl::fast_log2(fx); f[3] = tl::fast_log(fx);",
        "  f[4] = tl::fast_tanh(fx); f[5] = tl::fast_rcp(fx); f[6] = tl::fast_div(fx, f[0]);",
        "  f[7] = tl::floordiv(fx, 3.f); f[8] = tl::floormod(fx, 3.f);",
        "  double* dd = reinterpret_cast<double*>(buf + 64); dd[0] = tl::floordiv(1.5, -0.5); dd[1] = tl::floormod(1.5, -0.7);",
        "  uint32_t* u = reinterpret_cast<uint32_t*>(buf + 128);",
        "  u[0] = tl::pack_half2(tl::cvt<tl::half_t>(fx), tl::cvt<tl::half_t>(2.f));",
        "  u[1] = tl::pack_bfloat162(tl::cvt<tl::bfloat16_t>(fx), tl::cvt<tl::bfloat16_t>(2.f));",
        "  u[2] = tl::pack_float2_to_half2(fx, 1.f); u[3] = tl::pack_float2_to_bfloat162(fx, 1.f);",
        "  u[4] = tl::bit_cast<uint32_t>(fx); u[5] = tl::smem_addr(buf);",
        "}",
    ]
    return "\n".join(lines)


MMA_CASES = [
    # (A, B, C, M, N, K, fp8)
    ("tl::half_t", "tl::half_t", "float", 16, 8, 16, False),
    ("tl::bfloat16_t", "tl::bfloat16_t", "float", 16, 8, 16, False),
    ("tl::half_t", "tl::half_t", "tl::half_t", 16, 8, 16, False),
    ("tl::half_t", "tl::half_t", "float", 16, 8, 8, False),
    ("tl::bfloat16_t", "tl::bfloat16_t", "float", 16, 8, 8, False),
    ("tl::tfloat32_t", "tl::tfloat32_t", "float", 16, 8, 8, False),
    ("float", "float", "float", 16, 8, 8, False),
    ("int8_t", "int8_t", "int32_t", 16, 8, 32, False),
    ("int8_t", "uint8_t", "int32_t", 16, 8, 32, False),
    ("uint8_t", "int8_t", "int32_t", 16, 8, 32, False),
    ("uint8_t", "uint8_t", "int32_t", 16, 8, 32, False),
    ("tl::fp8_e4m3_t", "tl::fp8_e4m3_t", "float", 16, 8, 32, True),
    ("tl::fp8_e4m3_t", "tl::fp8_e5m2_t", "float", 16, 8, 32, True),
    ("tl::fp8_e5m2_t", "tl::fp8_e4m3_t", "float", 16, 8, 32, True),
    ("tl::fp8_e5m2_t", "tl::fp8_e5m2_t", "float", 16, 8, 32, True),
]


def _mma_block() -> str:
    lines = [
        "__global__ void k_mma(char* buf) {",
        "  uint32_t a[4], b[2];",
        "  for (int i = 0; i < 4; ++i) a[i] = reinterpret_cast<uint32_t*>(buf)[i];",
        "  b[0] = a[1] ^ a[2]; b[1] = a[3];",
    ]
    for i, (a, b, c, m, n, k, _fp8) in enumerate(MMA_CASES):
        # fp8 compiles for every arch too: below sm_89 it runs as f16 mmas
        body = f"  {{ {c} acc[4] = {{}}; tl::mma_sync<{a}, {b}, {c}, {m}, {n}, {k}>(acc, a, b); reinterpret_cast<{c}*>(buf + 64)[{i}] = acc[{i % 4}]; }}"
        lines.append(body)
    lines.append("}")
    return "\n".join(lines)


def _reduce_block() -> str:
    lines = [
        "template <class Op, class T> __device__ T op_probe(T a, T b) { Op op; return op(op(a, b), Op::template identity<T>()); }",
        "__global__ void k_reduce(char* buf) {",
        "  __shared__ char scratch[128 * 8];",
    ]
    for t in ["float", "double", "tl::half_t", "tl::bfloat16_t", "int32_t", "int64_t", "uint32_t"]:
        lines.append(f"  {{ {t}* o = reinterpret_cast<{t}*>(buf); {t} v = o[threadIdx.x];")
        for op in ("SumOp", "MaxOp", "MinOp", "AbsMaxOp"):
            lines.append(f"    v = op_probe<tl::{op}>(v, o[1]);")
        lines.append("    v = tl::warp_reduce_sum(v) + tl::warp_reduce_max(v); v = tl::warp_reduce_min(v);")
        for kt, ks in ALLREDUCE_SHAPES:
            lines.append(f"    v = tl::AllReduce<tl::SumOp, {kt}, {ks}>::run(v, reinterpret_cast<{t}*>(scratch));")
        lines.append("    o[threadIdx.x] = v; buf += 1024; }")
    for t in ["int32_t", "uint32_t", "int64_t", "uint8_t"]:
        lines.append(f"  {{ {t}* o = reinterpret_cast<{t}*>(buf); {t} v = o[threadIdx.x];")
        for op in ("BitAndOp", "BitOrOp", "BitXorOp"):
            lines.append(f"    v = op_probe<tl::{op}>(v, o[1]);")
            lines.append(f"    v = tl::AllReduce<tl::{op}, 8, 2>::run(v);")
            lines.append(f"    v = tl::AllReduce<tl::{op}, 4, 32>::run(v, reinterpret_cast<{t}*>(scratch));")
        lines.append("    v = tl::warp_reduce<tl::BitOrOp>(v);")
        lines.append("    o[threadIdx.x] = v; buf += 1024; }")
    lines += [
        "  { float* o = reinterpret_cast<float*>(buf); float v = o[threadIdx.x];",
        "    // warp-specialised form: threads 128..255 reduce, named barrier 3",
        "    if (threadIdx.x >= 128) v = tl::AllReduce<tl::MaxOp, 64, 2, 128, 128, 3>::run(v, reinterpret_cast<float*>(scratch));",
        "    v = tl::AllReduce<tl::MinOp, 2, 64, 0, 256>::run(v, reinterpret_cast<float*>(scratch));",
        "    constexpr int kScratch = tl::AllReduce<tl::SumOp, 16, 4>::scratch_elems(256);",
        '    static_assert(kScratch == 32, "scratch_elems");',
        '    static_assert(tl::AllReduce<tl::SumOp, 4, 64>::scratch_elems(256) == 256, "scratch_elems");',
        '    static_assert(tl::AllReduce<tl::SumOp, 8, 4>::scratch_elems(256) == 0, "scratch_elems");',
        "    o[threadIdx.x] = v + tl::shfl_xor(v, 1) + tl::shfl_sync(v, 0);",
        "    bool bv = tl::shfl_xor(v > 0.f, 2); int8_t i8 = tl::shfl_xor((int8_t)v, 4);",
        "    double dv = tl::shfl_sync((double)v, 3); o[0] = bv + i8 + (float)dv; }",
        "}",
    ]
    return "\n".join(lines)


def _atomic_block() -> str:
    lines = ["__global__ void k_atomic(char* buf, int order) {"]
    for t in ATOMIC_TYPES:
        lines.append(f"  {{ {t}* p = reinterpret_cast<{t}*>(buf); {t} v = p[1]; {t} r = p[2];")
        for fn in ("atomic_add", "atomic_max", "atomic_min"):
            lines.append(f"    r = tl::{fn}(p, v); r = tl::{fn}(p, r, order);")
            for o in range(6):
                lines.append(f"    r = tl::{fn}(p + 3, r, {o});")
        lines.append("    p[4] = r; buf += 64; }")
    lines += [
        "  { __shared__ float sf[4]; tl::atomic_add(sf, 1.f); tl::atomic_max(sf + 1, -2.f, tl::kMemoryOrderAcqRel);",
        "    __shared__ tl::half_t sh[2]; tl::atomic_max(sh, tl::cvt<tl::half_t>(1.f)); }",
        "  tl::half_t* h = reinterpret_cast<tl::half_t*>(buf); tl::bfloat16_t* bf = reinterpret_cast<tl::bfloat16_t*>(buf + 64);",
        "  float* f = reinterpret_cast<float*>(buf + 128);",
        "  __half2 h2 = tl::atomic_add_x2(h, __half2(h[2], h[3])); h2 = tl::atomic_add_x2(h, h + 4, order);",
        "  __nv_bfloat162 b2 = tl::atomic_add_x2(bf, __nv_bfloat162(bf[2], bf[3])); b2 = tl::atomic_add_x2(bf, bf + 4, 3);",
        "  float2 f2 = tl::atomic_add_x2(f, make_float2(1.f, 2.f)); f2 = tl::atomic_add_x2(f, f + 8, order);",
        "  float4 f4 = tl::atomic_add_x4(f + 16, make_float4(1.f, 2.f, 3.f, 4.f)); f4 = tl::atomic_add_x4(f + 16, f + 8, 5);",
        "  h[8] = h2.x; bf[8] = b2.y; f[32] = f2.x + f4.w;",
        "  tl::atomic_add(h + 9, 1.0f); tl::atomic_max(bf + 9, 2.0f, order); tl::atomic_add(f + 33, 1);",
        "  int* ip = reinterpret_cast<int*>(buf + 256); long long* lp = reinterpret_cast<long long*>(buf + 320);",
        "  double* dp = reinterpret_cast<double*>(buf + 384);",
        "  for (int o = 0; o < 6; ++o) {",
        "    ip[1] = tl::atomic_load(ip, o); tl::atomic_store(ip + 2, ip[1], o);",
        "    lp[1] = tl::atomic_load(lp, o); tl::atomic_store(lp + 2, lp[1], o);",
        "    f[40] = tl::atomic_load(f + 41, o); tl::atomic_store(dp, tl::atomic_load(dp + 1, order), o);",
        "  }",
        "}",
    ]
    return "\n".join(lines)


def _print_block() -> str:
    lines = ["using fptr = float*;", "__global__ void k_print(const char* buf) {", '  tl::device_print("hello");']
    for t in SCALARS + ["fptr", "unsigned long long", "long long"]:
        lines.append(f'  tl::device_print("v", *reinterpret_cast<const {t}*>(buf));')
    lines += [
        '  TL_DEVICE_ASSERT(buf[0] != 7, "buf[0] must not be 7");',
        '  if (buf[1] == 3) tl::device_assert_fail("explicit", __FILE__, __LINE__);',
        "}",
    ]
    return "\n".join(lines)


TU_COMMON = "\n\n".join(
    [
        '#include "tl/all.h"',
        _cvt_block(),
        _math_block(),
        _mma_block(),
        r"""
__global__ void k_ldmatrix(uint32_t* out) {
  __shared__ alignas(16) tl::half_t tile[32 * 8 * 4];
  const tl::half_t* row = tile + (threadIdx.x % 32) * 8;
  uint32_t r[4];
  tl::ldmatrix_x1(r, row); out[0] = r[0];
  tl::ldmatrix_x2(r, row); out[1] = r[1];
  tl::ldmatrix_x4(r, row); out[2] = r[3];
  tl::ldmatrix_x1_trans(r, row); out[3] = r[0];
  tl::ldmatrix_x2_trans(r, row); out[4] = r[1];
  tl::ldmatrix_x4_trans(r, row); out[5] = r[3];
  tl::ldmatrix<4, true>(r, row); out[6] = r[2];
  tl::ldmatrix<2>(r, row); out[7] = r[0];
  tl::ldmatrix<1, true>(r, row); out[8] = r[0];
}

__global__ void k_cp_async(const char* g, char* out, int n) {
  __shared__ alignas(16) char s[256];
  tl::cp_async<4>(s, g); tl::cp_async<8>(s + 8, g + 8); tl::cp_async<16>(s + 16, g + 16);
  tl::cp_async<16, true>(s + 32, g + 32);
  tl::cp_async_commit();
  tl::cp_async_zfill<4>(s + 48, g + 48, n > 1); tl::cp_async_zfill<8>(s + 56, g + 56, n > 2);
  tl::cp_async_zfill<16>(s + 64, g + 64, n > 3); tl::cp_async_zfill<16, true>(s + 80, g + 80, n > 4);
  tl::cp_async_pred<16>(s + 96, g + 96, n > 5);
  tl::cp_async_commit();
  tl::cp_async_wait<1>(); tl::cp_async_wait<0>(); tl::cp_async_wait_all();
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}

__global__ void k_copy(const char* g, char* out, int n) {
  __shared__ alignas(16) char s[512];
  bool p = threadIdx.x < n;
  uint4 a = tl::ld_global_128(g); uint2 b = tl::ld_global_64(g + 16); uint32_t c = tl::ld_global_32(g + 24);
  a = tl::ld_global_128_pred(g + 32, p); b = tl::ld_global_64_pred(g + 48, p); c ^= tl::ld_global_32_pred(g + 56, p);
  tl::st_shared_128(s, a); tl::st_shared_64(s + 16, b); tl::st_shared_32(s + 24, c);
  tl::st_shared_128_pred(s + 32, a, p); tl::st_shared_64_pred(s + 48, b, p); tl::st_shared_32_pred(s + 56, c, p);
  __syncthreads();
  a = tl::ld_shared_128(s); b = tl::ld_shared_64(s + 16); c = tl::ld_shared_32(s + 24);
  a.x ^= tl::ld_shared_128_pred(s + 32, p).y; b.y ^= tl::ld_shared_64_pred(s + 48, p).x; c ^= tl::ld_shared_32_pred(s + 56, p);
  tl::st_global_128(out, a); tl::st_global_64(out + 16, b); tl::st_global_32(out + 24, c);
  tl::st_global_128_pred(out + 32, a, p); tl::st_global_64_pred(out + 48, b, p); tl::st_global_32_pred(out + 56, c, p);
  tl::vec_t<2> h = tl::ld<2>(g + 64); tl::vec_t<1> q = tl::ld_pred<1>(g + 66, p);
  tl::st<2>(out + 64, h); tl::st_pred<1>(out + 66, q, p);
  tl::copy_vec<16>(out + 80, g + 80); tl::copy_vec<8>(out + 96, s + 96); tl::copy_vec<4>(s + 104, g + 104);
  tl::copy_vec_pred<16>(out + 112, g + 112, p); tl::copy_vec_pred<4>(out + 128, g + 128, p);
  a = tl::ld_global_nc_128(g + 144); b = tl::ld_global_nc_64(g + 160); c = tl::ld_global_nc_32(g + 168);
  tl::st_global_128(out + 144, a); tl::st_global_64(out + 160, b); tl::st_global_32(out + 168, c);
}
""",
        _reduce_block(),
        _atomic_block(),
        r"""
__global__ void k_sync(int* out) {
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) tl::mbarrier_init(&bar, blockDim.x);
  __syncthreads();
  tl::mbarrier_arrive(&bar);
  tl::mbarrier_wait(&bar, 0);
  out[0] = tl::mbarrier_test_wait(&bar, 0);
  __syncthreads();
  if (threadIdx.x == 0) tl::mbarrier_invalidate(&bar);
  tl::named_barrier_sync(1, 64);
  tl::named_barrier_arrive(2, 64);
  tl::named_barrier_sync<3, 128>();
  tl::named_barrier_arrive<4, 96>();
  out[1] = tl::syncthreads_count(threadIdx.x & 1);
  out[2] = tl::syncthreads_and(threadIdx.x < 1000);
  out[3] = tl::syncthreads_or(threadIdx.x == 5);
  tl::syncwarp(); tl::syncwarp(0xffffu); tl::threadfence(); tl::threadfence_block();
}
""",
        _print_block(),
        r"""
__global__ void k_raster(int* out) {
  dim3 a = tl::rasterize2d_row<4>();
  dim3 b = tl::rasterize2d_column<3>();
  dim3 c = tl::rasterize2d(out[0], out[1] != 0);
  int bx, by;
  tl::rasterize2d_row_map(out[2], 7, 5, 2, bx, by);
  tl::rasterize2d_column_map(out[3], 7, 5, 2, bx, by);
  out[threadIdx.x] = a.x + b.y + c.z + bx + by;
}
""",
    ]
)

# ---------------------------------------------------------------------------
# Translation unit 2: sm_90 / sm_90a only (stmatrix, mbarrier tx, TMA,
# cluster, setmaxnreg, wgmma).
# ---------------------------------------------------------------------------
WG_N_ALL = list(range(8, 257, 8))
WG_N_INT = [8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256]
# (A, B, C, N list, supports transpose, supports negation)
WG_FAMILIES = [
    ("tl::half_t", "tl::half_t", "float", WG_N_ALL, True, True),
    ("tl::half_t", "tl::half_t", "tl::half_t", WG_N_ALL, True, True),
    ("tl::bfloat16_t", "tl::bfloat16_t", "float", WG_N_ALL, True, True),
    ("tl::tfloat32_t", "tl::tfloat32_t", "float", WG_N_ALL, False, True),
    ("float", "float", "float", [8, 256], False, True),
    ("tl::fp8_e4m3_t", "tl::fp8_e4m3_t", "float", WG_N_ALL, False, True),
    ("tl::fp8_e4m3_t", "tl::fp8_e5m2_t", "float", WG_N_ALL, False, True),
    ("tl::fp8_e5m2_t", "tl::fp8_e4m3_t", "float", WG_N_ALL, False, True),
    ("tl::fp8_e5m2_t", "tl::fp8_e5m2_t", "float", WG_N_ALL, False, True),
    ("tl::fp8_e4m3_t", "tl::fp8_e4m3_t", "tl::half_t", WG_N_ALL, False, True),
    ("tl::fp8_e4m3_t", "tl::fp8_e5m2_t", "tl::half_t", WG_N_ALL, False, True),
    ("tl::fp8_e5m2_t", "tl::fp8_e4m3_t", "tl::half_t", WG_N_ALL, False, True),
    ("tl::fp8_e5m2_t", "tl::fp8_e5m2_t", "tl::half_t", WG_N_ALL, False, True),
    ("int8_t", "int8_t", "int32_t", WG_N_INT, False, False),
    ("int8_t", "uint8_t", "int32_t", WG_N_INT, False, False),
    ("uint8_t", "int8_t", "int32_t", WG_N_INT, False, False),
    ("uint8_t", "uint8_t", "int32_t", WG_N_INT, False, False),
]


def _wgmma_cases(full: bool) -> list[tuple[str, str, str, int, str, str, str, str, str]]:
    """(form, A, B, C, N, transA, transB, scaleA, scaleB) instantiations.

    Default set (fast): every register-table entry (f16 -> f32 over all N
    covers R = N/2, f16 -> f16 at N = 8, 24, ..., 248 the remaining R = N/4),
    the full integer shape list, and every family in both SS and RS form with
    the transpose / negation immediates it allows.  full=True instantiates
    every family at every N in both forms (about 900 kernels, minutes).
    """
    cases = []

    def add(form, a, b, c, n, i, trans, neg):
        ta = "true" if trans and i % 2 == 1 else "false"
        tb = "true" if trans and i % 4 >= 2 else "false"
        sa = "-1" if neg and i % 3 == 1 else "1"
        sb = "-1" if neg and i % 3 == 2 else "1"
        cases.append((form, a, b, c, n, ta, tb, sa, sb))

    if full:
        for a, b, c, ns, trans, neg in WG_FAMILIES:
            for i, n in enumerate(ns):
                add("ss", a, b, c, n, i, trans, neg)
                add("rs", a, b, c, n, i, trans, neg)
        return cases
    for i, n in enumerate(WG_N_ALL):
        add("ss", "tl::half_t", "tl::half_t", "float", n, i, True, True)
    for i, n in enumerate(range(8, 257, 16)):
        add("ss", "tl::half_t", "tl::half_t", "tl::half_t", n, i, True, True)
    for i, n in enumerate(WG_N_INT):
        add("rs", "int8_t", "int8_t", "int32_t", n, i, False, False)
    for j, (a, b, c, ns, trans, neg) in enumerate(WG_FAMILIES):
        for k, form in enumerate(("ss", "rs")):
            n = ns[(5 * j + 11 * k) % len(ns)]
            add(form, a, b, c, n, j + k, trans, neg)
    return list(dict.fromkeys(cases))


def _wgmma_block(full: bool) -> str:
    lines = [
        "template <class A, class B, class C, int N, bool TA, bool TB, int SA, int SB>",
        "__global__ void k_wg_ss(uint64_t da, uint64_t db, C* out, int scale_d) {",
        "  C d[N / 2];",
        "  tl::wgmma_ss<A, B, C, N, TA, TB, SA, SB>(da, db, d, scale_d);",
        "  out[threadIdx.x] = d[0] + d[N / 2 - 1];",
        "}",
        "template <class A, class B, class C, int N, bool TA, bool TB, int SA, int SB>",
        "__global__ void k_wg_rs(const uint32_t* a, uint64_t db, C* out, int scale_d) {",
        "  C d[N / 2];",
        "  uint32_t ar[4] = {a[threadIdx.x], a[threadIdx.x + 1], a[threadIdx.x + 2], a[threadIdx.x + 3]};",
        "  tl::wgmma_rs<A, B, C, N, TB, SA, SB>(ar, db, d, scale_d);",
        "  out[threadIdx.x] = d[0] + d[N / 2 - 1];",
        "}",
    ]
    for form, a, b, c, n, ta, tb, sa, sb in _wgmma_cases(full):
        if form == "ss":
            sig = f"(uint64_t, uint64_t, {c}*, int)"
        else:
            sig = f"(const uint32_t*, uint64_t, {c}*, int)"
        lines.append(f"template __global__ void k_wg_{form}<{a}, {b}, {c}, {n}, {ta}, {tb}, {sa}, {sb}>{sig};")
    return "\n".join(lines)


_HOPPER_FIXED = r"""
__global__ void k_stmatrix(const uint32_t* in) {
  __shared__ alignas(16) tl::half_t tile[32 * 8 * 4];
  tl::half_t* row = tile + (threadIdx.x % 32) * 8;
  uint32_t r[4] = {in[0], in[1], in[2], in[3]};
  tl::stmatrix_x1(row, r); tl::stmatrix_x2(row, r); tl::stmatrix_x4(row, r);
  tl::stmatrix_x1_trans(row, r); tl::stmatrix_x2_trans(row, r); tl::stmatrix_x4_trans(row, r);
  tl::stmatrix<4, true>(row, r); tl::stmatrix<2>(row, r); tl::stmatrix<1, true>(row, r);
}

__global__ void __cluster_dims__(2, 1, 1) k_tma(const __grid_constant__ CUtensorMap tmap, float* g, int* out) {
  __shared__ alignas(1024) float tile[32 * 32];
  __shared__ alignas(8) uint64_t bar;
  tl::prefetch_tma_descriptor(&tmap);
  if (threadIdx.x == 0) {
    tl::mbarrier_init(&bar, 1);
    tl::fence_barrier_init();
  }
  tl::cluster_sync();
  if (threadIdx.x == 0) {
    tl::mbarrier_arrive_expect_tx(&bar, 4096);
    tl::mbarrier_expect_tx(&bar, 0);
    tl::tma_load_1d(&tmap, &bar, tile, 0);
    tl::tma_load_2d(&tmap, &bar, tile, 0, 1);
    tl::tma_load_3d(&tmap, &bar, tile, 0, 1, 2);
    tl::tma_load_4d(&tmap, &bar, tile, 0, 1, 2, 3);
    tl::tma_load_5d(&tmap, &bar, tile, 0, 1, 2, 3, 4);
    tl::tma_load(&tmap, &bar, tile, 0);
    tl::tma_load(&tmap, &bar, tile, 0, 1);
    tl::tma_load(&tmap, &bar, tile, 0, 1, 2);
    tl::tma_load(&tmap, &bar, tile, 0, 1, 2, 3);
    tl::tma_load(&tmap, &bar, tile, 0, 1, 2, 3, 4);
    tl::tma_load_multicast_1d(&tmap, &bar, tile, 0x3, 0);
    tl::tma_load_multicast_2d(&tmap, &bar, tile, 0x3, 0, 1);
    tl::tma_load_multicast_3d(&tmap, &bar, tile, 0x3, 0, 1, 2);
    tl::tma_load_multicast_4d(&tmap, &bar, tile, 0x3, 0, 1, 2, 3);
    tl::tma_load_multicast_5d(&tmap, &bar, tile, 0x3, 0, 1, 2, 3, 4);
    tl::bulk_copy_g2s(tile, g, 256, &bar);
  }
  tl::mbarrier_wait(&bar, 0);
  out[0] = tl::mbarrier_try_wait(&bar, 1);
  tl::mbarrier_arrive_cluster(&bar, tl::cluster_ctarank() ^ 1);
  tl::fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    tl::tma_store_1d(&tmap, tile, 0);
    tl::tma_store_2d(&tmap, tile, 0, 1);
    tl::tma_store_3d(&tmap, tile, 0, 1, 2);
    tl::tma_store_4d(&tmap, tile, 0, 1, 2, 3);
    tl::tma_store_5d(&tmap, tile, 0, 1, 2, 3, 4);
    tl::tma_store(&tmap, tile, 0);
    tl::tma_store(&tmap, tile, 0, 1);
    tl::tma_store(&tmap, tile, 0, 1, 2);
    tl::tma_store(&tmap, tile, 0, 1, 2, 3);
    tl::tma_store(&tmap, tile, 0, 1, 2, 3, 4);
    tl::tma_store_add_1d(&tmap, tile, 0);
    tl::tma_store_add_2d(&tmap, tile, 0, 1);
    tl::tma_store_add_3d(&tmap, tile, 0, 1, 2);
    tl::tma_store_add_4d(&tmap, tile, 0, 1, 2, 3);
    tl::tma_store_add_5d(&tmap, tile, 0, 1, 2, 3, 4);
    tl::bulk_copy_s2g(g, tile, 256);
    tl::tma_store_arrive();
    tl::tma_store_wait<1>();
    tl::tma_store_wait<0>();
    tl::tma_store_wait_complete<0>();
  }
  out[1] = tl::cluster_nctarank() + tl::cluster_map_shared(tile, 1);
  tl::cluster_arrive_relaxed(); tl::cluster_wait();
  tl::cluster_arrive(); tl::cluster_wait();
}

__global__ void k_setmaxnreg(int* out) {
  if (threadIdx.x < 128) {
    tl::warpgroup_reg_dealloc<40>();
  } else {
    tl::warpgroup_reg_alloc<232>();
  }
  out[threadIdx.x] = threadIdx.x;
}

__global__ void k_wg_misc(const tl::half_t* smem_src, uint64_t* out) {
  __shared__ alignas(1024) tl::half_t tile[64 * 64];
  tile[threadIdx.x] = smem_src[threadIdx.x];
  out[0] = tl::make_wgmma_desc(tile, 128, 16, 1024);
  out[1] = tl::make_wgmma_desc(tile, 64, 16, 512, 0);
  out[2] = tl::make_wgmma_desc(tile, 32, 16, 256);
  out[3] = tl::make_wgmma_desc(tile, 0, 128, 256);
  out[4] = tl::wgmma_desc_advance(out[0], 32);
  static_assert(tl::wgmma_desc_encode(0x400, 128, 16, 1024) == ((1ull << 62) | (64ull << 32) | (1ull << 16) | 64ull), "desc");
  float f = 1.f; uint32_t u = 2; int32_t i = 3;
  tl::warpgroup_fence_operand(f); tl::warpgroup_fence_operand(u); tl::warpgroup_fence_operand(i);
  tl::half_t h[4] = {};
  tl::warpgroup_fence_operands<4>(h);
  float acc[32];
  for (int k = 0; k < 32; ++k) acc[k] = 0.f;
  tl::warpgroup_fence_operands<32>(acc);
  tl::wgmma_fence();
  tl::wgmma_ss<tl::half_t, tl::half_t, float, 64>(out[0], out[1], acc, 0);
  tl::wgmma_ss<tl::half_t, tl::half_t, float, 64, false, true>(tl::wgmma_desc_advance(out[0], 32), out[1], acc);
  tl::wgmma_commit_group();
  tl::wgmma_wait<1>();
  tl::wgmma_wait<0>();
  tl::warpgroup_fence_operands<32>(acc);
  out[5] = f + u + i + (float)h[0] + acc[threadIdx.x % 32];
}
"""


def hopper_tu(full: bool = False) -> str:
    return "\n\n".join(['#include "tl/all.h"', _HOPPER_FIXED, _wgmma_block(full)])


# ---------------------------------------------------------------------------
# Translation unit 3: misuse must fail to compile with a clear message.
# ---------------------------------------------------------------------------
# Compiled with -ptx (front end + cicc only) since they are expected to fail.
TU_MISUSE_MMA = r"""
#include "tl/all.h"
__global__ void k_bad_shape(float* c, const uint32_t* a, const uint32_t* b) {
  tl::mma_sync<tl::half_t, tl::half_t, float, 16, 8, 32>(c, a, b);  // no such shape
}
"""

TU_MISUSE_WGMMA_SM90 = r"""
#include "tl/all.h"
__global__ void k_bad_wgmma(float* d) {
  tl::wgmma_ss<tl::half_t, tl::half_t, float, 64>(0, 0, d);  // sm_90 without the "a" features
}
"""

TU_MISUSE_WGMMA_SM90A = r"""
#include "tl/all.h"
__global__ void k_bad(float* d, int32_t* di) {
  tl::wgmma_ss<tl::tfloat32_t, tl::tfloat32_t, float, 64, true>(0, 0, d);  // tf32 cannot be transposed
  tl::wgmma_ss<int8_t, int8_t, int32_t, 64, false, false, -1>(0, 0, di);  // no negation for integers
  tl::wgmma_ss<int8_t, int8_t, int32_t, 40>(0, 0, di);                    // N = 40 is not an integer shape
}
"""

# ---------------------------------------------------------------------------
# Host program: pure functions shared by host and device.
# ---------------------------------------------------------------------------
HOST_PROGRAM = r"""
#include <cstdio>
#include <vector>
#include "tl/all.h"

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { ++failures; std::printf("FAIL " __VA_ARGS__); std::printf("\n"); } } while (0)

int main() {
  // Rasterization: bijective on every grid, both orders, many panel sizes.
  for (int gx = 1; gx <= 13; ++gx) {
    for (int gy = 1; gy <= 11; ++gy) {
      for (int panel = 0; panel <= 14; ++panel) {
        for (int order = 0; order < 2; ++order) {
          std::vector<int> seen(gx * gy, 0);
          for (int l = 0; l < gx * gy; ++l) {
            int bx = -1, by = -1;
            if (order == 0) tl::rasterize2d_row_map(l, gx, gy, panel, bx, by);
            else tl::rasterize2d_column_map(l, gx, gy, panel, bx, by);
            CHECK(bx >= 0 && bx < gx && by >= 0 && by < gy, "raster range gx=%d gy=%d panel=%d order=%d l=%d -> (%d,%d)", gx, gy, panel, order, l, bx, by);
            if (bx >= 0 && bx < gx && by >= 0 && by < gy) seen[by * gx + bx]++;
          }
          for (int i = 0; i < gx * gy; ++i) CHECK(seen[i] == 1, "raster not bijective gx=%d gy=%d panel=%d order=%d", gx, gy, panel, order);
        }
      }
    }
  }
  // Row order walks down a panel first: with panel 2 on a 3x4 grid the first
  // blocks are (0,0),(0,1),(1,0),(1,1),(2,0),(2,1), then the second panel runs
  // right-to-left: (2,2),(2,3),(1,2),...
  {
    const int expect[12][2] = {{0,0},{0,1},{1,0},{1,1},{2,0},{2,1},{2,2},{2,3},{1,2},{1,3},{0,2},{0,3}};
    for (int l = 0; l < 12; ++l) {
      int bx, by; tl::rasterize2d_row_map(l, 3, 4, 2, bx, by);
      CHECK(bx == expect[l][0] && by == expect[l][1], "row order l=%d got (%d,%d)", l, bx, by);
    }
    // Column order on a 4x3 grid, panel 2: (0,0),(1,0),(0,1),(1,1),(0,2),(1,2), then (2,2),(3,2),(2,1),...
    const int expect_c[12][2] = {{0,0},{1,0},{0,1},{1,1},{0,2},{1,2},{2,2},{3,2},{2,1},{3,1},{2,0},{3,0}};
    for (int l = 0; l < 12; ++l) {
      int bx, by; tl::rasterize2d_column_map(l, 4, 3, 2, bx, by);
      CHECK(bx == expect_c[l][0] && by == expect_c[l][1], "column order l=%d got (%d,%d)", l, bx, by);
    }
  }
  // floordiv / floormod against the Python definitions.
  for (int a = -20; a <= 20; ++a) {
    for (int b = -7; b <= 7; ++b) {
      if (b == 0) continue;
      int q = tl::floordiv(a, b), r = tl::floormod(a, b);
      CHECK(q * b + r == a, "floordiv identity a=%d b=%d", a, b);
      CHECK(r == 0 || ((r < 0) == (b < 0)), "floormod sign a=%d b=%d r=%d", a, b, r);
      CHECK(r > -((b < 0) ? -b : b) && r < ((b < 0) ? -b : b), "floormod range a=%d b=%d r=%d", a, b, r);
      long long ql = tl::floordiv((long long)a, (long long)b);
      CHECK(ql == q, "floordiv int64 a=%d b=%d", a, b);
      signed char qc = tl::floordiv((signed char)a, (signed char)b);
      CHECK(qc == q, "floordiv int8 a=%d b=%d", a, b);
    }
  }
  CHECK(tl::floordiv(-7, 2) == -4 && tl::floormod(-7, 2) == 1, "floordiv(-7,2)");
  CHECK(tl::floordiv(7, -2) == -4 && tl::floormod(7, -2) == -1, "floordiv(7,-2)");
  CHECK(tl::floordiv(7u, 2u) == 3u && tl::floormod(7u, 2u) == 1u, "unsigned");
  CHECK(tl::floordiv(-7.0, 2.0) == -4.0 && tl::floormod(-7.0, 2.0) == 1.0, "double floordiv");
  CHECK(tl::ceildiv(7, 2) == 4 && tl::ceildiv(8, 2) == 4, "ceildiv");
  // wgmma descriptor bit layout.
  {
    uint64_t d = tl::wgmma_desc_encode(0x1230, 128, 16, 1024);
    CHECK((d & 0x3FFF) == (0x1230 >> 4), "desc start");
    CHECK(((d >> 16) & 0x3FFF) == 1, "desc lbo");
    CHECK(((d >> 32) & 0x3FFF) == 64, "desc sbo");
    CHECK(((d >> 49) & 7) == 0, "desc base");
    CHECK((d >> 62) == 1, "desc 128B");
    CHECK((tl::wgmma_desc_encode(0, 64, 0, 0) >> 62) == 2, "desc 64B");
    CHECK((tl::wgmma_desc_encode(0, 32, 0, 0) >> 62) == 3, "desc 32B");
    CHECK((tl::wgmma_desc_encode(0, 0, 0, 0) >> 62) == 0, "desc none");
    CHECK(((tl::wgmma_desc_encode(0, 0, 0, 0, 5) >> 49) & 7) == 5, "desc base offset");
    CHECK(tl::wgmma_desc_advance(d, 64) == d + 4, "desc advance");
    CHECK((tl::wgmma_desc_encode(0x3FFF0, 0, 0x3FFF0, 0x3FFF0) & 0x3FFF3FFF3FFFull) == 0x3FFF3FFF3FFFull, "desc max fields");
  }
  std::printf(failures ? "host checks: %d failures\n" : "host checks: OK\n", failures);
  return failures ? 1 : 0;
}
"""


def _nvcc(src: Path, out: Path, extra: list[str]) -> subprocess.CompletedProcess:
    cmd = [
        NVCC,
        "-std=c++17",
        "-I",
        str(INCLUDE),
        "-Xcudafe",
        "--display_error_number",
        *extra,
        str(src),
        "-o",
        str(out),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Future]:
    """Start every nvcc job up front; two run at a time (CI has two cores)."""
    if NVCC is None:
        pytest.skip("nvcc not found")
    d = tmp_path_factory.mktemp("tl_headers")
    sources = {
        "common.cu": TU_COMMON,
        "hopper.cu": hopper_tu(full=os.environ.get("TL_HEADERS_FULL_WGMMA") == "1"),
        "misuse_mma.cu": TU_MISUSE_MMA,
        "misuse_wgmma90.cu": TU_MISUSE_WGMMA_SM90,
        "misuse_wgmma90a.cu": TU_MISUSE_WGMMA_SM90A,
        "host.cu": HOST_PROGRAM,
    }
    for name, text in sources.items():
        (d / name).write_text(text)
    jobs = {
        # The two slowest first, so the long poles overlap.
        "hopper_sm90a": (d / "hopper.cu", d / "hopper.o", ["-c", *SM90A]),
        "common_sm90a": (d / "common.cu", d / "common90.o", ["-c", *SM90A]),
        "common_sm80": (d / "common.cu", d / "common80.o", ["-c", *SM80]),
        "host": (d / "host.cu", d / "host_prog", SM80),
        "misuse_mma": (d / "misuse_mma.cu", d / "misuse_mma.ptx", ["-ptx", "-arch=compute_80"]),
        "misuse_wgmma90": (d / "misuse_wgmma90.cu", d / "misuse_wgmma90.ptx", ["-ptx", "-arch=compute_90"]),
        "misuse_wgmma90a": (d / "misuse_wgmma90a.cu", d / "misuse_wgmma90a.ptx", ["-ptx", "-arch=compute_90a"]),
    }
    pool = ThreadPoolExecutor(max_workers=2)
    futures = {name: pool.submit(_nvcc, *args) for name, args in jobs.items()}
    futures["_dir"] = d  # type: ignore[assignment]
    yield futures
    pool.shutdown(wait=True)


def _check_ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"nvcc failed:\n{result.stdout}\n{result.stderr[-20000:]}"
    # ptxas must not have had to serialise or rewrite anything unexpected.
    assert "error" not in result.stderr.lower(), result.stderr[-5000:]


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm80", "sm90a"])
def test_common_headers_compile(builds, arch):
    _check_ok(builds[f"common_{arch}"].result())


@needs_nvcc
def test_hopper_headers_compile(builds):
    _check_ok(builds["hopper_sm90a"].result())


@needs_nvcc
def test_host_side_functions(builds):
    result = builds["host"].result()
    assert result.returncode == 0, f"nvcc failed:\n{result.stderr[-20000:]}"
    run = subprocess.run([str(builds["_dir"] / "host_prog")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "host checks: OK" in run.stdout


def _errors(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0, "expected a compile error"
    return result.stdout + result.stderr


@needs_nvcc
def test_misuse_mma_is_a_compile_error(builds):
    err = _errors(builds["misuse_mma"].result())
    assert "tl::mma_sync: unsupported (AType, BType, CType, M, N, K) combination" in err, err[-5000:]


@needs_nvcc
def test_misuse_wgmma_without_sm90a_is_a_compile_error(builds):
    err = _errors(builds["misuse_wgmma90"].result())
    assert re.search(r'namespace "tl" has no member "wgmma_ss"|wgmma_ss.*undefined', err), err[-5000:]


@needs_nvcc
def test_misuse_wgmma_immediates_are_compile_errors(builds):
    err = _errors(builds["misuse_wgmma90a"].result())
    assert "only K-major A / B for tf32 / fp8 inputs" in err, err[-5000:]
    assert "no operand negation for integer inputs" in err, err[-5000:]
    assert "tl::wgmma_ss: unsupported (AType, BType, CType, N) combination" in err, err[-5000:]


def test_wgmma_register_table_is_current():
    text = (TL_DIR / "wgmma.h").read_text()
    assert gen_wgmma_table.splice(text) == text, "run: python tests/cuda_headers/gen_wgmma_table.py --write"


def test_wgmma_register_table_contents():
    # Independent check of the generated strings: operand numbering is dense.
    text = (TL_DIR / "wgmma.h").read_text()
    entries = re.findall(
        r'#define TL_WG_R(\d+)\(EMIT, \.\.\.\) EMIT\(__VA_ARGS__, "\{([^}]*)\}", (.*), TL_WG_CONS(\d+)\)', text
    )
    assert len(entries) == len(gen_wgmma_table.register_counts())
    for count, regs, trailing, cons in entries:
        r = int(count)
        assert int(cons) == r
        assert regs.split(", ") == [f"%{i}" for i in range(r)]
        assert trailing.split(", ") == [f'"%{r + i}"' for i in range(9)]
    cons = dict(re.findall(r"#define TL_WG_CONS(\d+)\(c, d\) (.*)", text))
    for count, body in cons.items():
        assert body.split(", ") == [f"c(d[{i}])" for i in range(int(count))]


# Public names that are intentionally not part of the reference (none today).
_UNDOCUMENTED_OK: set[str] = set()


def _public_names() -> set[str]:
    names: set[str] = set()
    for name in LIBRARY_HEADERS:
        text = (TL_DIR / name).read_text()
        # Drop everything inside `namespace detail { ... }` blocks (they are
        # never nested and close with the marker comment).
        text = re.sub(r"namespace detail \{.*?\}  // namespace detail", "", text, flags=re.S)
        for m in re.finditer(r"TL_(?:HOST_)?DEVICE\s+(?:constexpr\s+)?[\w:<>, *&]+?\s+(\w+)\s*\(", text):
            names.add(m.group(1))
        for m in re.finditer(r"^(?:struct|using)\s+(\w+)", text, flags=re.M):
            names.add(m.group(1))
        for m in re.finditer(r"^#define (TL_\w+)", text, flags=re.M):
            names.add(m.group(1))
    # Internal macros (table machinery, helper macros undefined after use) and
    # macro parameters (all upper case, e.g. NAME in a defining macro).
    internal = ("TL_WG_", "TL_DEFINE_", "TL_ATOM_", "TL_MMA_", "TL_PRINT_")
    names = {n for n in names if not n.startswith(internal) and not (n.isupper() and not n.startswith("TL_"))}
    # Functions stamped out by defining macros.
    names |= set(UNARY_MATH)
    for space in ("global", "shared"):
        for bits in (128, 64, 32):
            for fmt in ("ld_{}_{}", "ld_{}_{}_pred", "st_{}_{}", "st_{}_{}_pred"):
                names.add(fmt.format(space, bits))
    for dim in range(1, 6):
        names |= {f"tma_load_{dim}d", f"tma_load_multicast_{dim}d", f"tma_store_{dim}d", f"tma_store_add_{dim}d"}
    return names


def test_every_public_name_is_documented():
    readme = (TL_DIR / "README.md").read_text()
    missing = sorted(n for n in _public_names() - _UNDOCUMENTED_OK if not re.search(rf"\b{re.escape(n)}\b", readme))
    assert not missing, f"not documented in tl/README.md: {missing}"


def test_all_h_includes_every_library_header():
    all_h = (TL_DIR / "all.h").read_text()
    for name in LIBRARY_HEADERS:
        assert (TL_DIR / name).exists(), name
        assert f'#include "{name}"' in all_h, name
