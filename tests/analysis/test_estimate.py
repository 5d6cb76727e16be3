"""The register estimate against ptxas (#19 item 3): for every reference kernel (the CUDA catalogue)
at sm_80 and sm_90a, the estimate the editor shows where no nvcc is installed
(`analysis.resources.estimate_registers`, read from the per-thread IR) is compared with the count
ptxas reports for the build of the same kernel. Goal: within ±15 % everywhere. Not met yet: the
kernels in KNOWN_MISSES are off by more (mostly small elementwise kernels, whose unrolled loops
keep more addresses live than they declare arrays, and mma.sync gemms on sm_80, whose operand
fragments live inside our gemm template); they are strict xfails, so a fix must remove them from
the list. Needs nvcc (CI has it); builds go through the kernel cache, shared with test_compile."""

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
    ("seed.vector_add", "sm_80"),  # ptxas 12, estimate 14
    ("seed.vector_add", "sm_90a"),  # ptxas 12, estimate 14
    ("seed.matmul", "sm_80"),  # ptxas 101, estimate 76
    ("seed.matmul_relu", "sm_80"),  # ptxas 221, estimate 162
    ("seed.fragment_reduce", "sm_80"),  # ptxas 43, estimate 35
    ("seed.fragment_reduce", "sm_90a"),  # ptxas 44, estimate 35
    ("seed.matmul_persistent", "sm_80"),  # ptxas 232, estimate 162
    ("seed.matmul_splitk", "sm_90a"),  # ptxas 74, estimate 57
    ("seed.matmul_stage_order", "sm_80"),  # ptxas 96, estimate 76
    ("seed.elementwise_op", "sm_80"),  # ptxas 32, estimate 14
    ("seed.elementwise_op", "sm_90a"),  # ptxas 22, estimate 14
    ("seed.conditional_elementwise", "sm_80"),  # ptxas 12, estimate 14
    ("seed.matmul_pattern", "sm_80"),  # ptxas 101, estimate 76
    ("seed.gemv", "sm_80"),  # ptxas 28, estimate 15
    ("seed.gemv", "sm_90a"),  # ptxas 30, estimate 15
    ("ex.quickstart", "sm_80"),  # ptxas 207, estimate 162
    ("ex.vector_add", "sm_80"),  # ptxas 12, estimate 14
    ("ex.vector_add", "sm_90a"),  # ptxas 12, estimate 14
    ("ex.vector_add_relu", "sm_80"),  # ptxas 12, estimate 14
    ("ex.vector_add_relu", "sm_90a"),  # ptxas 12, estimate 14
    ("ex.elementwise_add", "sm_80"),  # ptxas 32, estimate 14
    ("ex.elementwise_add", "sm_90a"),  # ptxas 22, estimate 14
    ("ex.conditional_elementwise", "sm_80"),  # ptxas 12, estimate 14
    ("ex.gemm_eager", "sm_80"),  # ptxas 101, estimate 76
    ("ex.gemm_lazy", "sm_80"),  # ptxas 101, estimate 76
    ("ex.gemm_bf16_nt", "sm_80"),  # ptxas 100, estimate 76
    ("ex.gemm_stage_order", "sm_80"),  # ptxas 104, estimate 76
    ("ex.gemm_persistent", "sm_80"),  # ptxas 232, estimate 162
    ("ex.splitk", "sm_90a"),  # ptxas 74, estimate 57
    ("ex.gemv", "sm_80"),  # ptxas 32, estimate 15
    ("ex.gemv", "sm_90a"),  # ptxas 32, estimate 15
    ("ex.row_sum", "sm_80"),  # ptxas 16, estimate 20
    ("ex.row_sum", "sm_90a"),  # ptxas 15, estimate 20
    ("ex.fragment_reduce", "sm_80"),  # ptxas 70, estimate 50
    ("ex.fragment_reduce", "sm_90a"),  # ptxas 70, estimate 50
    ("ex.reducer_rows_max", "sm_90a"),  # ptxas 30, estimate 35
    ("ex.prefix_sum", "sm_80"),  # ptxas 26, estimate 15
    ("ex.prefix_sum", "sm_90a"),  # ptxas 26, estimate 15
    ("kz.debug_print_assert", "sm_80"),  # ptxas 34, estimate 16
    ("kz.debug_print_assert", "sm_90a"),  # ptxas 32, estimate 16
    ("kz.gemm_tf32_trans", "sm_80"),  # ptxas 127, estimate 76
    ("kz.gemm_tf32_trans", "sm_90a"),  # ptxas 127, estimate 76
    ("kz.gemm_bf16_fullcol", "sm_80"),  # ptxas 64, estimate 78
    ("kz.cast_copy", "sm_80"),  # ptxas 25, estimate 29
    ("kz.cast_copy", "sm_90a"),  # ptxas 25, estimate 29
    ("kz.column_sum_of_gemm", "sm_80"),  # ptxas 48, estimate 92
    ("kz.column_sum_of_gemm", "sm_90a"),  # ptxas 58, estimate 83
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
