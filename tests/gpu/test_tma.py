"""TMA-fed GEMMs on an sm_90 GPU against torch: fp16 / bf16, tile-multiple and odd sizes,
warp-specialized and plain mbarrier rings, a trip count below the stage count, run-time M,
a TMA-store epilogue, persistent kernels whose ring phases cross tiles, and the cp.async
fallbacks (misaligned strides, `disable_tma=True`, `tl.disable_tma_lower`).

Kernels are compiled up front in parallel (nvcc is the slow part). Marked `cuda`: skipped
without an sm_90 GPU."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cuda"))
sys.path.insert(0, str(ROOT / "examples" / "gemm"))

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9, reason="needs an sm_90 GPU"
    ),
]

from tma_kernels import gemm_func  # noqa: E402

import tilelang  # noqa: E402

TORCH_DTYPE = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
NO_WS = {"tl.disable_warp_specialized": True}
WS = {"ws": None, "ring": NO_WS}

# Warp specialization needs one block per SM by shared memory: 4 stages of 128x64 + 64x128 fp16 (128 KB)
BIG = dict(block_K=64, num_stages=4)

# name -> (M, N, K, gemm options, pass configs, uses TMA, warp-specialized)
CASES: dict = {}
for ws, pc in WS.items():
    for dtype, M, N, K in [("float16", 1000, 1000, 1000), ("bfloat16", 200, 136, 96), ("float16", 130, 264, 32),
                           ("bfloat16", 512, 512, 512)]:  # fmt: skip
        CASES[f"{ws}-{dtype}-{M}x{N}x{K}"] = (M, N, K, dict(dtype=dtype, **BIG), pc, True, pc is None)
    CASES[f"{ws}-128x256x64"] = (1000, 1000, 1024, dict(block_N=256, block_K=64, threads=256), pc, True, pc is None)
    CASES[f"{ws}-dynamic-m"] = (333, 256, 512, dict(dynamic_m=True, **BIG), pc, True, pc is None)
    CASES[f"{ws}-tma-store-epilogue"] = (300, 264, 256, dict(smem_out=True, **BIG), pc, True, pc is None)
for stages in (2, 4):  # 128x128x32 tiles: several blocks per SM, a plain TMA ring
    CASES[f"small-stages-{stages}"] = (520, 520, 70 * 32, dict(num_stages=stages), None, True, False)
# num_stages=1: one buffer per operand, each refilled once its reader is done (single_stage_prefetch.py)
CASES["single-stage"] = (520, 392, 1000, dict(num_stages=1), None, True, False)
CASES["single-stage-dynamic-m"] = (333, 256, 512, dict(num_stages=1, dynamic_m=True), None, True, False)
# more tiles than SMs and one block per SM: auto_persistent (resident blocks walk the tiles, TMA-store epilogue)
PERSIST = dict(block_N=256, block_K=64, threads=256)
CASES["auto-persistent-fp16"] = (3000, 2104, 1000, PERSIST, None, True, True)
CASES["auto-persistent-cp-async"] = (3000, 2100, 1000, PERSIST, None, False, False)  # 4200-byte rows: no TMA
CASES["auto-persistent-bf16"] = (2900, 2312, 520, dict(dtype="bfloat16", **PERSIST), None, True, True)
CASES["fallback-k1001"] = (512, 512, 1001, {}, None, False, False)  # 2002-byte rows
CASES["fallback-fp32-k70"] = (256, 256, 70, dict(dtype="float32"), None, False, False)  # 280-byte rows
CASES["fallback-disable-tma"] = (512, 512, 512, dict(disable_tma=True), None, False, False)
CASES["fallback-pass-config"] = (512, 512, 512, {}, {"tl.disable_tma_lower": True}, False, False)


def _persistent(pc):
    import persistent

    # 8 x 7 tiles of 128 over 5 resident blocks: up to 12 tiles per block
    return persistent.matmul_persistent.get_tir(1000, 776, 520, 128, 128, 64, 128, 3, 5), pc


@pytest.fixture(scope="module")
def kernels():
    jobs = {name: (gemm_func(M, N, K, **kw), pc) for name, (M, N, K, kw, pc, _, _) in CASES.items()}
    jobs.update({f"persistent-{ws}": _persistent(pc) for ws, pc in WS.items()})

    def build(item):
        name, (func, pc) = item
        try:
            out_idx = [-1] if name.startswith("persistent") else None  # T.empty kernels declare their own
            return name, tilelang.compile(func, out_idx=out_idx, target="cuda", pass_configs=pc)
        except Exception as err:  # noqa: BLE001 - reported by the test of this kernel
            return name, err

    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 2)) as ex:
        return dict(ex.map(build, jobs.items()))


def _get(kernels, name):
    k = kernels[name]
    if isinstance(k, Exception):
        raise k
    return k


@pytest.mark.parametrize("name", list(CASES))
def test_gemm(kernels, name):
    M, N, K, kw, pc, tma, ws = CASES[name]
    kernel = _get(kernels, name)
    src = kernel.get_kernel_source()
    assert ("tl::tma_load" in src) == tma, src[:2000]
    assert ("ko_empty" in src) == ws, src[:2000]
    dt = TORCH_DTYPE[kw.get("dtype", "float16")]
    sizes = [M] if not kw.get("dynamic_m") else [M, 64, 1000]  # one kernel, several run-time M
    for m in sizes:
        a = torch.randn(m, K, device="cuda", dtype=dt)
        b = torch.randn(K, N, device="cuda", dtype=dt)
        tol = 2e-2 * K**0.5
        torch.testing.assert_close(kernel(a, b).float(), a.float() @ b.float(), atol=tol, rtol=2e-2)


@pytest.mark.parametrize("ws", list(WS))
def test_persistent_gemm_ring_crosses_tiles(kernels, ws):
    """Each block walks several tiles: the ring's phases run on across the outer loop
    (warp-specialized: a running ring position; plain ring: re-initialised per tile)."""
    kernel = _get(kernels, f"persistent-{ws}")
    src = kernel.get_kernel_source()
    assert "tl::tma_load" in src and ("k_ring_pos" in src) == (ws == "ws")
    a = torch.randn(1000, 520, device="cuda", dtype=torch.float16)
    b = torch.randn(520, 776, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kernel(a, b).float(), a.float() @ b.float(), atol=0.5, rtol=2e-2)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("auto-persistent")])
def test_auto_persistent_kernels_walk_the_tiles(kernels, name):
    src = _get(kernels, name).get_kernel_source()
    assert "for (int wave = 0;" in src, src[:3000]
    assert ("tl::tma_store(" in src) == CASES[name][5]
