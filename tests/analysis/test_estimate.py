"""The register estimate against ptxas (#19 item 3): for every reference kernel (the CUDA catalogue)
at sm_80 and sm_90a, the estimate the editor shows where no nvcc is installed
(`analysis.resources.estimate_registers`: the register-pressure scan of `analysis/register_model.py`
over the per-thread IR the code generator consumes) is compared with the count ptxas reports for
the build of the same kernel. Goal: within ±15 % everywhere. Result (nvcc 13): 76 of the 92 builds
are within 15 % (mean error 10 %); 24 of 25 held-out builds (hopper WS / persistent / stream-K
GEMMs, convolution, 4096-sized gemm, attention, norms, gemv) are too. The 16 in KNOWN_MISSES are
strict xfails with the measured numbers, so a model change that fixes one must remove it.

Most misses are ptxas scheduling choices the IR does not decide: nvcc fully unrolls a K loop of
2-3 iterations (gemm and barriers included), and ptxas then computes the bounds-checked epilogue's
guards and addresses early, live through the gemm (seed.matmul at sm_80: 101 registers, 70 with
`#pragma unroll 1` on the K loop) — for mma.sync plain stores and wgmma atomics, not for mma.sync
atomics or wgmma plain stores; ptxas keeping fewer mma.sync operand fragments than the template's
double buffer; fewer loads in flight at sm_90a than at sm_80 for the same elementwise kernel (22 vs
32 registers, which no single estimate covers within 15 %); loads sunk to their uses.
Needs nvcc (CI has it); builds go through the kernel cache, shared with test_compile."""

from __future__ import annotations

import os
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tilelang
from tilelang.analysis import analyze_traced
from tilelang.backend.target import nvcc_path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402

ARCHS = ("sm_80", "sm_90a")
TOLERANCE = 0.15
KNOWN_MISSES = {
    # the K loop (2-3 iterations) unrolled by nvcc; the epilogue's row and column guards computed
    # before the gemm and live through it
    ("seed.matmul", "sm_80"),  # ptxas 101, estimate 77
    ("seed.matmul_stage_order", "sm_80"),  # ptxas 96, estimate 77
    ("seed.matmul_pattern", "sm_80"),  # ptxas 101, estimate 77
    ("ex.gemm_eager", "sm_80"),  # ptxas 101, estimate 77
    ("ex.gemm_lazy", "sm_80"),  # ptxas 101, estimate 77
    ("ex.gemm_bf16_nt", "sm_80"),  # ptxas 100, estimate 77
    ("ex.gemm_stage_order", "sm_80"),  # ptxas 104, estimate 77
    ("seed.matmul_splitk", "sm_90a"),  # ptxas 74, estimate 55 (58 with the K loop rolled)
    ("ex.splitk", "sm_90a"),  # ptxas 74, estimate 55
    # mma.sync: ptxas holds fewer operand fragments than the template's double buffer
    ("kz.gemm_bf16_fullcol", "sm_80"),  # ptxas 64, estimate 87 (1x4 warps: 4 A atoms per K-step)
    ("kz.column_sum_of_gemm", "sm_80"),  # ptxas 48, estimate 77 (one gemm, no K loop)
    # sm_90a keeps fewer loads in flight than sm_80 (32 registers at sm_80: within 15 %)
    ("seed.elementwise_op", "sm_90a"),  # ptxas 22, estimate 31
    ("ex.elementwise_add", "sm_90a"),  # ptxas 22, estimate 31
    # loads sunk to their uses: fewer registers than the array they fill (39 at sm_80: within)
    ("ex.reducer_rows", "sm_90a"),  # ptxas 31, estimate 38
    ("ex.reducer_rows_max", "sm_90a"),  # ptxas 30, estimate 38
    # three 8-byte loads hoisted ahead of their atomics: counted, ptxas keeps them at sm_90a only
    ("kz.atomic_sum_rows", "sm_80"),  # ptxas 14, estimate 18 (16 at sm_90a: within)
}
CASES = [(name, arch) for name in catalog.all_funcs() for arch in ARCHS]
pytestmark = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


@pytest.fixture(scope="module")
def measured():
    funcs = {name: make() for name, make in catalog.all_funcs().items()}

    def one(job):
        name, arch = job
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            art = tilelang.lower(funcs[name], target={"kind": "cuda", "arch": arch})
            info = analyze_traced(funcs[name], arch, None, measured=False)
        return art.meta["registers"], info.resources.regs_per_thread

    with ThreadPoolExecutor(max_workers=int(os.environ.get("TL_TEST_NVCC_JOBS", "2"))) as ex:
        return dict(zip(CASES, ex.map(one, CASES)))


@pytest.mark.parametrize(
    "name, arch",
    [pytest.param(n, a, marks=pytest.mark.xfail(strict=True, reason="estimate off by > 15 %"))
     if (n, a) in KNOWN_MISSES else (n, a) for n, a in CASES],
)  # fmt: skip
def test_estimate_within_tolerance_of_ptxas(measured, name, arch):
    ptxas, estimate = measured[(name, arch)]
    assert abs(estimate - ptxas) <= TOLERANCE * ptxas, f"estimate {estimate}, ptxas {ptxas}"


def _ws_gemm_384():
    import kernels as KZ  # tests/cuda/kernels.py

    return KZ.gemm.get_tir(M=8192, N=8192, K=8192, bm=128, bn=256, bk=64, stages=3, threads=256, out="float16")


def _persistent_ws():
    mod = catalog._example("hopper/persistent_ws_gemm.py")
    return mod.matmul_persistent_ws.get_tir(4096, 4096, 4096, 128, 128, 64, 132, 4)


@pytest.mark.parametrize(
    "make, ptxas_bound",
    [
        (_ws_gemm_384, 168),  # setmaxnreg 232 for the consumers, capped by __launch_bounds__(384, 1)
        (_persistent_ws, 240),  # 256 threads: setmaxnreg's 240 fits, ptxas reports it
    ],
)
def test_warp_specialized_register_budget(make, ptxas_bound):
    """Kernels outside the catalogue whose count is set by setmaxnreg and the launch bounds."""
    func = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        art = tilelang.lower(func, target={"kind": "cuda", "arch": "sm_90a"})
        estimate = analyze_traced(func, "sm_90a", None, measured=False).resources.regs_per_thread
    assert art.meta["registers"] == ptxas_bound
    assert abs(estimate - ptxas_bound) <= TOLERANCE * ptxas_bound, estimate
