"""wgmma (sm_90a) lowering of T.gemm on a real Hopper GPU, against torch.

Covers fp16 / bf16 in all four transposes, tf32, fp8 (e4m3 / e5m2, fp32
accumulate) and int8, sizes that are not tile multiples, every warp policy
with one and two warpgroups, the 128x256x64 / 256-thread config, dynamic
M/N/K, FlashAttention (register-A wgmma) causal and not, and
`tl.disable_wgmma` (the mma.sync path) giving the same results. Every kernel's
source is checked for the path it must take, and one cubin's SASS for HGMMA.
Kernels are compiled up front in parallel. Marked `cuda`: skipped without a
Hopper GPU.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not _HOPPER, reason="needs a Hopper (sm_90) GPU")]

import kernels as KZ  # noqa: E402
from catalog import _example  # noqa: E402

import tilelang  # noqa: E402

DEV = "cuda"
SM90A = {"kind": "cuda", "arch": "sm_90a"}
# wgmma fed by the cp.async pipeline (this file tests the wgmma lowering itself; the
# TMA / warp-specialised pipelines that also feed it are exercised by the "-default" cases)
CP_ASYNC = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}
NO_WGMMA = {"tl.disable_wgmma": True, **CP_ASYNC}
TRANSPOSES = ((False, False), (False, True), (True, False), (True, True))
M_, N_, K_ = 1000, 1100, 1200  # not multiples of any tile


def _gemm_cases() -> dict:
    """name -> (gemm args, pass_configs, expect wgmma in the source)."""
    cases = {}
    for dt in ("float16", "bfloat16"):
        for ta, tb in TRANSPOSES:
            name = f"{dt}-{'T' if ta else 'N'}{'T' if tb else 'N'}"
            cases[name] = ((M_, N_, K_, 128, 128, 32, dt, "float32", "float32", ta, tb, "Square", 3, 128), {}, True)
    cases["float16-acc16"] = ((512, 512, 256, 128, 128, 32, "float16", "float16", "float16"), {}, True)
    # tf32 wgmma reads K-major operands only: NT is wgmma, NN falls back to mma.sync
    cases["tf32-NT"] = ((M_, N_, K_, 128, 128, 32, "float32", "float32", "float32", False, True), {}, True)
    cases["tf32-NN"] = ((M_, N_, K_, 128, 128, 32, "float32", "float32", "float32", False, False), {}, False)
    for dt in ("float8_e4m3fn", "float8_e5m2"):
        cases[dt] = ((M_, N_, K_, 128, 128, 64, dt, "float32", "float32", False, True, "Square", 3, 128), {}, True)
    cases["int8"] = ((M_, N_, K_, 128, 128, 64, "int8", "int32", "int32", False, True, "Square", 3, 128), {}, True)
    for pol in ("Square", "FullRow", "FullCol"):
        cases[f"policy-{pol}-256t"] = (
            (M_, N_, K_, 128, 128, 32, "float16", "float32", "float32", False, False, pol, 3, 256),
            {},
            True,
        )
        cases[f"policy-{pol}-128x256-256t"] = (
            (M_, N_, K_, 128, 256, 64, "float16", "float32", "float32", False, False, pol, 3, 256),
            {},
            True,
        )
    cases["float16-NN-default"] = ((M_, N_, K_, 128, 128, 32, "float16", "float32", "float32"), {"default": True}, True)
    cases["no-wgmma"] = ((M_, N_, K_, 128, 128, 32, "float16", "float32", "float32"), NO_WGMMA, False)
    cases["no-wgmma-TT"] = (
        (M_, N_, K_, 128, 128, 32, "float16", "float32", "float32", True, True, "Square", 3),
        NO_WGMMA,
        False,
    )
    return cases


GEMMS = _gemm_cases()


def _fa(causal: bool, bm: int, bn: int, stages: int, threads: int, cfg: dict):
    mod = _example("flash_attention/mha_fwd.py")
    func = mod.flashattn.get_tir(2, 4, 1000, 128, causal, block_M=bm, block_N=bn, num_stages=stages, threads=threads)
    return tilelang.compile(func, out_idx=[3], target=SM90A, pass_configs={**CP_ASYNC, **cfg})


WHOLE_ROWS = {"tl.disable_row_split": True}
FAS = {
    f"{'causal' if c else 'full'}-{bm}x{bn}-{t}t{label}": (c, bm, bn, s, t, cfg)
    for c in (False, True)
    for (bm, bn, s, t, cfg, label) in (
        (128, 128, 1, 128, {}, ""),  # register-bound: rows in two halves (split_rows), wgmma
        (128, 128, 1, 128, WHOLE_ROWS, "-whole-rows"),  # the same kept whole: mma.sync
        (128, 64, 1, 128, {}, ""),
        (128, 128, 2, 256, {}, ""),
        (64, 64, 1, 128, NO_WGMMA, "-nowgmma"),
    )
}


@pytest.fixture(scope="module")
def built():
    def gemm(item):
        name, (args, cfg, _) = item
        func = KZ.gemm.get_tir(*args)
        cfg = {} if cfg.get("default") else {**CP_ASYNC, **cfg}
        return name, tilelang.compile(func, out_idx=[-1], target=SM90A, pass_configs=cfg)

    def fa(item):
        name, args = item
        return name, _fa(*args)

    with ThreadPoolExecutor(16) as ex:
        g = dict(ex.map(gemm, GEMMS.items()))
        f = dict(ex.map(fa, FAS.items()))
    return g, f


def _inputs(args):
    M, N, K = args[:3]
    dt = args[6]
    ta, tb = (args[9], args[10]) if len(args) > 10 else (False, False)
    a_shape, b_shape = ((K, M) if ta else (M, K)), ((N, K) if tb else (K, N))
    if dt == "int8":
        a = torch.randint(-16, 16, a_shape, dtype=torch.int8, device=DEV)
        b = torch.randint(-16, 16, b_shape, dtype=torch.int8, device=DEV)
    else:
        scale = 0.25 if args[7] == "float16" else 1.0
        a = (torch.randn(a_shape, device=DEV) * scale).to(getattr(torch, dt))
        b = (torch.randn(b_shape, device=DEV) * scale).to(getattr(torch, dt))
    ref = (a.T if ta else a).double() @ (b.T if tb else b).double()
    return a, b, ref


@pytest.mark.parametrize("name", list(GEMMS))
def test_gemm(built, name):
    args, _, want_wgmma = GEMMS[name]
    kern = built[0][name]
    src = kern.get_kernel_source()
    assert ("tl::wgmma_gemm_ss<" in src) == want_wgmma, name
    assert ("tl::gemm_ss<" in src) == (not want_wgmma), name
    if want_wgmma and "tl::cp_async" in src:
        assert "tl::fence_proxy_async();" in src  # cp.async-written tiles read by the async proxy
    a, b, ref = _inputs(args)
    c = kern(a, b)
    K, dt = args[2], args[6]
    if dt == "int8":
        assert torch.equal(c.long(), ref.long())
    elif dt.startswith("float8"):
        torch.testing.assert_close(c.double(), ref, atol=1e-3 * K, rtol=1e-2)
    elif dt == "float32":
        torch.testing.assert_close(c.double(), ref, atol=5e-3 * K**0.5, rtol=1e-2)
    else:
        tol = (5e-2 if args[7] == "float16" else 1e-2) * K**0.5
        torch.testing.assert_close(c.double(), ref, atol=tol, rtol=2e-2)


def test_dynamic_mnk_uses_wgmma():
    from seeds import seed_kernels as S

    cfg = dict(block_M=128, block_N=128, block_K=32, trans_A=False, trans_B=False, in_dtype="float16",
               out_dtype="float16", accum_dtype="float32", num_stages=3, threads=128)  # fmt: skip
    func = S.matmul_dynamic_mnk.get_tir(**cfg)
    kern = tilelang.compile(func, target=SM90A, pass_configs=CP_ASYNC)  # outputs declared with T.empty
    assert "tl::wgmma_gemm_ss<" in kern.get_kernel_source()
    for m, n, k in ((1024, 1024, 1024), (1000, 900, 77), (17, 4096, 2000)):
        a, b = torch.randn(m, k, device=DEV).half(), torch.randn(k, n, device=DEV).half()
        torch.testing.assert_close(kern(a, b).float(), a.float() @ b.float(), atol=1e-2 * k**0.5, rtol=1e-2)


@pytest.mark.parametrize("name", list(FAS))
def test_flash_attention(built, name):
    causal, bm, bn, _, t, cfg = FAS[name]
    kern = built[1][name]
    src = kern.get_kernel_source()
    # S and O in fp32 plus P in fp16 (dim 128): over 255 registers a thread means mma.sync,
    # unless the rows run in two halves
    register_bound = (bm * bn * 6 + bm * 128 * 4) / t / 4 > 255
    mma_sync = cfg is NO_WGMMA or (register_bound and cfg is WHOLE_ROWS)
    assert ("tl::wgmma_gemm_rs<" in src) == (not mma_sync), name
    assert ("tl::gemm_rs<" in src) == mma_sync, name
    if register_bound and not mma_sync:
        assert "acc_o_1" in src, name  # the second half's accumulator
    mod = _example("flash_attention/mha_fwd.py")
    q, k, v = (torch.randn(2, 1000, 4, 128, device=DEV, dtype=torch.float16) for _ in range(3))
    torch.testing.assert_close(kern(q, k, v).float(), mod.reference(q, k, v, causal), atol=2e-2, rtol=2e-2)


def test_sass_has_hgmma(built):
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not Path(tool).exists():
        pytest.skip("cuobjdump not found")
    for name, op in (("float16-NN", "HGMMA"), ("float8_e4m3fn", "QGMMA"), ("int8", "IGMMA")):
        lib = built[0][name].artifact.lib_path
        sass = subprocess.run([tool, "-sass", lib], capture_output=True, text=True).stdout
        assert op in sass, (name, sass[:2000])
