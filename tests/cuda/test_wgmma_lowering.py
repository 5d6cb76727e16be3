"""wgmma lowering of T.gemm on sm_90a, without a GPU.

- `plan_wgmma`: warpgroup grids, instruction shapes and the mma.sync fallbacks;
- the register A operand of a wgmma RS gemm, element by element against the PTX
  m16n8k16 A table, and equal to the accumulator of the gemm that produced it;
- descriptor start offsets of gemm_sm90.h (compiled on the host by nvcc) against the
  hardware's address formula (PTX "matrix descriptor" layouts, tl/README.md) applied
  to the shared layouts of tilelang/layout/swizzle.py, for every swizzle, K-major and
  MN-major;
- which path the generated source takes: sm_90a → tl::wgmma_gemm_*, sm_80 and
  `tl.disable_wgmma` → tl::gemm_*; the analysis API reports the same;
- one nvcc build for sm_90a instantiating gemm variants (dtypes × transposes ×
  warpgroup grids × ss/rs).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

import tilelang
from tilelang.backend.target import nvcc_path
from tilelang.layout import (
    WgmmaPlan,
    make_swizzle_layout,
    make_wgmma_accumulator_fragment,
    make_wgmma_operand_a_fragment,
    plan_wgmma,
)
from tilelang.layout.swizzle import SwizzleMode

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "tilelang" / "backend" / "cuda" / "include"
sys.path.insert(0, str(ROOT / "tests"))
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")

SM90A = {"kind": "cuda", "arch": "sm_90a"}


# -- plans ------------------------------------------------------------------------------------------


def _plan(M=128, N=128, K=32, threads=128, policy="Square", a="float16", b=None, c="float32", ta=False, tb=False,
          a_sw=64, b_sw=128):  # fmt: skip
    return plan_wgmma(M, N, K, threads, policy, a, b or a, c, ta, tb, a_sw, b_sw)


def test_plan_shapes_follow_the_brief():
    assert _plan(128, 256, 64, 256, a_sw=128, b_sw=128) == WgmmaPlan(2, 1, 256, 16, "K", "MN")  # m64n256k16
    assert _plan() == WgmmaPlan(1, 1, 128, 16, "K", "MN")  # the seed's 128x128x32: 2 x m64n128 per k-step
    assert _plan(128, 256, 64, 256, "FullCol", a_sw=128) == WgmmaPlan(1, 2, 128, 16, "K", "MN")
    assert _plan(64, 384, 32, 128).inst_n == 192  # widest N <= 256 dividing the tile
    assert _plan(a="float32", tb=True, a_sw=128, b_sw=128).inst_k == 8  # tf32
    assert _plan(a="float8_e4m3fn", b="float8_e5m2", K=64, tb=True).inst_k == 32
    p = _plan(a="int8", c="int32", N=200, K=64, tb=True)
    assert p.inst_n == 8  # 8-bit integer N list: only 8 of it divides 200


@pytest.mark.parametrize(
    "kw,why",
    [
        (dict(threads=96), "whole warpgroups"),
        (dict(M=64, threads=256, policy="FullRow", N=8), "cannot split"),
        (dict(a="float32"), "K-major"),  # tf32 with (K, N) B
        (dict(a="int8", c="int32", K=64), "K-major"),
        (dict(a="float16", c="int32"), "cannot accumulate"),
        (dict(a="bfloat16", c="float16"), "cannot accumulate"),
        (dict(K=24), "not a multiple"),
        (dict(a_sw=0), "not 32/64/128-byte swizzled"),
        (dict(N=8, b_sw=128), "whole 128-byte rows"),  # N-major B, 8 columns per instruction
        (dict(a_sw=None, ta=True), "register A"),
        (dict(a_sw=None, M=64, threads=256), "all 2 warpgroups along M"),
    ],
)
def test_plan_falls_back_with_a_reason(kw, why):
    got = _plan(**kw)
    assert isinstance(got, str) and why in got, got


# -- register A operand -----------------------------------------------------------------------------


def _ptx_a_m16k16(lane: int, r: int) -> tuple[int, int]:
    """PTX m16n8k16 A fragment (16-bit): element of register half r (a0..a7) of a lane."""
    g, t = lane // 4, lane % 4
    return g + 8 * ((r // 2) % 2), 2 * t + (r % 2) + 8 * (r // 4)


@pytest.mark.parametrize("M,K,warps", [(64, 64, 4), (128, 128, 4), (128, 64, 8), (256, 32, 8)])
def test_register_a_matches_ptx_and_the_producing_accumulator(M, K, warps):
    frag = make_wgmma_operand_a_fragment(M, K, warps, "float16")
    groups = warps // 4
    tile_m = M // groups
    for tid in range(warps * 32):
        g, w, lane = tid // 128, (tid % 128) // 32, tid % 32
        for mi in range(tile_m // 64):
            for ks in range(K // 16):
                for r in range(8):  # k-step ks of row atom mi: halves 4 * (mi * K/8 + 2 ks) + r
                    i, j = _ptx_a_m16k16(lane, r)
                    row, col = g * tile_m + 64 * mi + 16 * w + i, 16 * ks + j
                    assert frag.locate(row, col) == (tid, 4 * (mi * K // 8 + 2 * ks) + r)
    acc = make_wgmma_accumulator_fragment(M, K, warps, "FullRow", "float32")
    assert acc.is_equal(frag)  # acc_s -> acc_s_cast -> gemm is a register cast


# -- descriptors ------------------------------------------------------------------------------------


def _swizzle(a: int, S: int) -> int:
    return a ^ (((a >> 7) & (S // 16 - 1)) << 4)


def _hw_kmajor(start: int, S: int, r: int, kb: int) -> int:
    """Byte the hardware reads for row r, K byte kb (< 32) of a K-major swizzled descriptor
    (SBO = 8 S): the swizzle acts on the absolute address."""
    return _swizzle(start + (r // 8) * 8 * S + (r % 8) * S + kb, S)


def _hw_mnmajor(start: int, S: int, lbo: int, mb: int, k: int) -> int:
    """Byte read for MN byte mb, k-row k of an MN-major swizzled descriptor (SBO = 8 S)."""
    return _swizzle(start + (mb // S) * lbo + (k // 8) * 8 * S + (k % 8) * S + mb % S, S)


OFFSET_CASES = [
    # (rows, cols, elem bytes, swizzle, mn_major, instruction rows / MN width)
    (128, 32, 2, 64, False, 64),
    (128, 64, 2, 128, False, 64),
    (64, 16, 2, 32, False, 64),
    (256, 64, 2, 128, False, 256),
    (128, 32, 4, 128, False, 64),  # tf32
    (128, 64, 1, 64, False, 128),  # 8-bit
    (32, 128, 2, 128, True, 128),  # B (K, N), N-major
    (32, 256, 2, 128, True, 256),
    (64, 64, 2, 64, True, 64),
    (64, 32, 2, 32, True, 64),  # A (K, M) with 32-byte panels
]


@pytest.fixture(scope="module")
def host_offsets(tmp_path_factory):
    """{case: [(mn0, k_step, offset)]} from gemm_sm90.h's own function, run on the host."""
    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    lines = ["#include <cstdio>", '#include "tl/gemm_sm90.h"', "int main() {"]
    for n, (R, C, E, S, mn, width) in enumerate(OFFSET_CASES):
        kdim = R if mn else C
        steps = kdim * E // 32
        lines.append(f"  for (int m = 0; m < {C if mn else R}; m += {width}) for (int s = 0; s < {steps}; ++s)")
        lines.append(f'    printf("{n} %d %d %u\\n", m, s, tl::detail::wgmma_operand_offset<'
                     f"tl::SmemLayout<{R}, {C}, {E}, {S}>, {E}, {'true' if mn else 'false'}>(m, s));")  # fmt: skip
    lines.append("  return 0;\n}")
    d = tmp_path_factory.mktemp("wgmma_off")
    (d / "off.cu").write_text("\n".join(lines))
    subprocess.run([nvcc_path(), "-std=c++17", f"-I{INCLUDE}", "-o", str(d / "off"), str(d / "off.cu")], check=True)
    out: dict = {}
    for line in subprocess.run([str(d / "off")], capture_output=True, text=True, check=True).stdout.split("\n"):
        if line:
            n, m, s, off = map(int, line.split())
            out.setdefault(n, []).append((m, s, off))
    return out


@needs_nvcc
@pytest.mark.parametrize("n", range(len(OFFSET_CASES)))
def test_descriptor_offsets_address_the_layout(host_offsets, n):
    R, C, E, S, mn, width = OFFSET_CASES[n]
    dtype = {1: "int8", 2: "float16", 4: "float32"}[E]
    lay = make_swizzle_layout((R, C), SwizzleMode.from_bytes(S), dtype)
    assert host_offsets[n]
    for m0, s, off in host_offsets[n]:
        if not mn:  # rows = M/N, columns = K; the instruction reads `width` rows x 32 bytes
            for r, kb in itertools.product(range(width), range(0, 32, E)):
                want = lay.linear_offset(m0 + r, (32 * s + kb) // E) * E + kb % E
                assert _hw_kmajor(off, S, r, kb) == want, (m0, s, r, kb)
        else:  # rows = K, columns = M/N; one step is 32 / E k-rows x `width` MN elements
            for k, x in itertools.product(range(32 // E), range(width)):
                want = lay.linear_offset(s * (32 // E) + k, m0 + x) * E
                assert _hw_mnmajor(off, S, R * S, x * E, k) == want, (m0, s, k, x)


# -- generated source and analysis ------------------------------------------------------------------


def _src(func, arch="sm_90a", cfg=None) -> str:
    art = tilelang.lower(func, target={"kind": "cuda", "arch": arch}, pass_configs=cfg, enable_device_compile=False)
    return art.kernel_source


def test_paths_in_generated_source():
    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    import kernels as KZ

    g = KZ.gemm.get_tir(256, 256, 128, 128, 128, 32, "float16", "float32", "float16", False, False, "Square", 3)
    src = _src(g)
    assert "tl::wgmma_gemm_ss<128, 128, 32, 1, 1, 128, false, false," in src and "tl::gemm_ss<" not in src
    assert "tl::gemm_ss<" in _src(g, "sm_80") and "wgmma" not in _src(g, "sm_80")
    off = _src(g, cfg={"tl.disable_wgmma": True})
    assert "tl::gemm_ss<" in off and "wgmma" not in off and "fence_proxy_async" not in off


def test_flash_attention_uses_register_a_wgmma():
    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    from catalog import _example

    fa = _example("flash_attention/mha_fwd.py").flashattn.get_tir(1, 2, 256, 64, True, block_M=128, block_N=64)
    src = _src(fa)
    assert "tl::wgmma_gemm_ss<128, 64, 64, 1, 1, 64, false, true," in src
    assert "tl::wgmma_gemm_rs<128, 64, 64, 1, 1, 64, false," in src
    assert "tl::cvt_pair" in src  # acc_s -> acc_s_cast stays in registers


def test_analysis_reports_the_wgmma_layout():
    from tilelang.analysis import analyze_function

    source = (ROOT / "tests" / "cuda" / "kernels.py").read_text()
    info = analyze_function(source, str(ROOT / "tests" / "cuda" / "kernels.py"), "gemm", target="sm_90a",
                            bindings={"M": 256, "N": 256, "K": 128, "bm": 128, "bn": 128})  # fmt: skip
    text = repr(info)
    assert "wgmma m64n128k16" in text, text[:3000]


# -- nvcc: gemm variants for sm_90a -----------------------------------------------------------------

VARIANTS = [
    # (AT, CT, M, N, K, WG_M, WG_N, INST_N, TRANS_A, TRANS_B, A layout, B layout)
    ("tl::half_t", "float", 128, 128, 32, 1, 1, 128, "false", "false", (128, 32, 2, 64), (32, 128, 2, 128)),
    ("tl::half_t", "tl::half_t", 128, 256, 64, 2, 1, 256, "true", "true", (64, 128, 2, 128), (256, 64, 2, 128)),
    ("tl::bfloat16_t", "float", 128, 256, 64, 1, 2, 128, "false", "true", (128, 64, 2, 128), (256, 64, 2, 128)),
    ("tl::bfloat16_t", "float", 64, 64, 32, 1, 1, 64, "true", "false", (32, 64, 2, 128), (32, 64, 2, 128)),
    ("float", "float", 128, 64, 32, 2, 1, 64, "false", "true", (128, 32, 4, 128), (64, 32, 4, 128)),
    ("tl::fp8_e4m3_t", "float", 128, 128, 64, 1, 1, 128, "false", "true", (128, 64, 1, 64), (128, 64, 1, 64)),
    ("tl::fp8_e5m2_t", "tl::half_t", 64, 64, 128, 1, 1, 64, "false", "true", (64, 128, 1, 128), (64, 128, 1, 128)),
    ("int8_t", "int32_t", 128, 80, 64, 1, 1, 80, "false", "true", (128, 64, 1, 64), (80, 64, 1, 64)),
]


@needs_nvcc
def test_gemm_variants_compile_for_sm90a(tmp_path):
    body = ['#include "tl/gemm_sm90.h"']
    for n, (at, ct, M, N, K, gm, gn, inst, ta, tb, la, lb) in enumerate(VARIANTS):
        a_t, b_t = (f"tl::SmemLayout<{r}, {c}, {e}, {s}>" for r, c, e, s in (la, lb))
        regs = M * N // (128 * gm * gn)
        body.append(f"""extern "C" __global__ void ss{n}({at}* g, {ct}* out) {{
  extern __shared__ __align__(1024) uint8_t smem[];
  {ct} acc[{regs}];
  tl::wgmma_gemm_ss<{M}, {N}, {K}, {gm}, {gn}, {inst}, {ta}, {tb}, {a_t}, {b_t}, true>(
      reinterpret_cast<{at}*>(smem), reinterpret_cast<{at}*>(smem + 65536), acc);
  for (int i = 0; i < {regs}; ++i) out[threadIdx.x * {regs} + i] = acc[i];
}}""")
    # RS: FlashAttention's P x V (A = the cast accumulator, B = V (K, N) N-major)
    body.append("""extern "C" __global__ void rs(float* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  tl::half_t a[64];
  float acc[64];
  for (int i = 0; i < 64; ++i) a[i] = tl::half_t(0.f), acc[i] = 0.f;
  tl::wgmma_gemm_rs<128, 128, 64, 2, 1, 128, false, tl::SmemLayout<64, 128, 2, 128>, false, true, 0>(
      a, reinterpret_cast<tl::half_t*>(smem), acc);
  for (int i = 0; i < 64; ++i) out[threadIdx.x * 64 + i] = acc[i];
}""")
    src = tmp_path / "variants.cu"
    src.write_text("\n".join(body))
    cmd = [nvcc_path(), "-std=c++17", f"-I{INCLUDE}", "-gencode", "arch=compute_90a,code=sm_90a", "-cubin",
           "-o", str(tmp_path / "v.cubin"), str(src)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]


# -- simulated on the CPU (tests/cuda/sim.py: the wgmma register tables restated from PTX) ----------

CP_ASYNC_ONLY = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}


@pytest.mark.parametrize(
    "dtype,ta,tb,threads,bm,bn",
    [
        ("float16", False, False, 128, 64, 64),
        ("float16", True, True, 128, 64, 64),  # MN-major A and B
        ("float32", False, True, 128, 64, 64),  # tf32, K-major
        ("float16", False, True, 256, 128, 64),  # 2 warpgroups along M
    ],
)
def test_simulated_wgmma_gemm(dtype, ta, tb, threads, bm, bn):
    import torch
    from sim import simulate

    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    import kernels as KZ

    M, N, K = 72, 80, 96
    torch.manual_seed(0)
    if dtype == "int8":
        a = torch.randint(-8, 8, (K, M) if ta else (M, K), dtype=torch.int8)
        b = torch.randint(-8, 8, (N, K) if tb else (K, N), dtype=torch.int8)
        acc = "int32"
    else:
        td = getattr(torch, dtype)
        a, b = torch.randn((K, M) if ta else (M, K)).to(td), torch.randn((N, K) if tb else (K, N)).to(td)
        acc = "float32"
    c = torch.zeros(M, N, dtype=getattr(torch, acc))
    bk = 64 if dtype == "int8" else 32
    func = KZ.gemm.get_tir(M, N, K, bm, bn, bk, dtype, acc, acc, ta, tb, "Square", 2, threads)
    lowered = simulate(func, [a, b, c], arch="sm_90a", pass_configs=CP_ASYNC_ONLY)
    assert "tl::wgmma_gemm_ss<" in lowered.script()
    ref = (a.T if ta else a).double() @ (b.T if tb else b).double()
    torch.testing.assert_close(c.double(), ref, atol=1e-3 * (1 if dtype != "float32" else 50), rtol=1e-3)


def test_simulated_wgmma_clear_accum_and_register_a():
    """clear_accum (scale-d 0 on the first k-step) and FlashAttention's P·V with P in registers."""
    import torch
    from sim import simulate

    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    import kernels as KZ
    from catalog import _example

    A, B = torch.randn(64, 32).half(), torch.randn(64, 32).half()
    P = torch.zeros(64, 64)
    lowered = simulate(KZ.gemm_row_softmax.get_tir(64, 64, 32, "FullRow"), [A, B, P], "sm_90a", None, CP_ASYNC_ONLY)
    assert ", true, true, 0>'" in lowered.script()  # CLEAR
    torch.testing.assert_close(P.double(), torch.softmax(A.double() @ B.double().T, 1), atol=2e-3, rtol=1e-2)
    mod = _example("flash_attention/mha_fwd.py")
    q, k, v = (torch.randn(1, 80, 1, 64).half() for _ in range(3))
    o = torch.zeros(1, 80, 1, 64).half()
    func = mod.flashattn.get_tir(1, 1, 80, 64, True, block_M=64, block_N=64)
    lowered = simulate(func, [q, k, v, o], "sm_90a", None, CP_ASYNC_ONLY)
    assert "tl::wgmma_gemm_rs<" in lowered.script()
    torch.testing.assert_close(o.float(), mod.reference(q, k, v, True), atol=2e-2, rtol=2e-2)


def test_explicit_wgmma_gemm_skips_the_wait_or_says_why():
    """T.wgmma_gemm (annotation wgmma_wait=False): issued without the trailing wait on
    sm_90a; a clear UnsupportedError where the gemm cannot run on wgmma."""
    import tilelang.language as T
    from tilelang.errors import UnsupportedError

    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 128), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, C_l, clear_accum=True)
            T.wait_wgmma(0)
            T.copy(C_l, C)

    assert "tl::SmemLayout<64, 128, 2, 128>, true, false, 0>(" in _src(main)
    with pytest.raises(UnsupportedError, match="cannot run on wgmma"):
        _src(main, "sm_80")
