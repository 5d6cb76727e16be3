"""The register estimate against ptxas (#19 item 3): for every reference kernel (the CUDA catalogue)
at sm_80 and sm_90a, the estimate the editor shows where no nvcc is installed
(`analysis.resources.estimate_registers`: the register-pressure scan of `analysis/register_model.py`
over the per-thread IR the code generator consumes) is compared with the count ptxas reports for
the build of the same kernel. Goal: within ±15 % everywhere. Result (nvcc 13): 89 of the 92
builds are within 15 % (mean error 6.8 % over all 100), and 6 of the 8 builds of EXTRA_KERNELS
(written for this test, not in the catalogue). The misses are strict xfails with the measured
numbers, so a model change that fixes one must remove it.

What the remaining misses have in common is a ptxas scheduling choice the IR does not decide:
for gemm_bf16_fullcol (1x4 warps) ptxas needs 27 registers beside the accumulators where the
2x2 and 4x1 warp grids of the same kernel need 42 and 41 (the template's own prefetch does not
decide it: without it, 70); reducer_rows's 30 guarded scalar loads are sunk to the row sums at
sm_90a (31 registers, 39 at sm_80; unguarded: 30 at both) while the 40 of
x.reduce_rows_512_threads are not (45); a row softmax keeping more than the scan across its two
reductions at sm_90a; a 7-iteration unrolled bf16 K loop keeping more of its operand loads.

ptxas's counts come from `ptxas_reference.json` (see `ptxas_reference.py`), keyed by every input
of the build; a build whose key changed is compiled with ptxas here (through the kernel cache)
and fails `test_ptxas_reference_is_current` until the table is regenerated; VERIFY_SAMPLE builds
of the table are recompiled on every run. Needs nvcc (CI has it)."""

from __future__ import annotations

import os
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tilelang.analysis import analyze_traced
from tilelang.backend.target import nvcc_path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "analysis"), str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402
import ptxas_reference  # noqa: E402 - tests/analysis/ptxas_reference.py

ARCHS = ("sm_80", "sm_90a")
TOLERANCE = 0.15
KNOWN_MISSES = {
    # mma.sync, 1x4 warps: ptxas holds 27 registers besides the accumulators (2x2: 42, 4x1: 41)
    ("kz.gemm_bf16_fullcol", "sm_80"),  # ptxas 64, estimate 87
    # guarded loads sunk to their uses at sm_90a: fewer registers than the array they fill (39 at
    # sm_80: within)
    ("ex.reducer_rows", "sm_90a"),  # ptxas 31, estimate 38
    ("ex.reducer_rows_max", "sm_90a"),  # ptxas 30, estimate 38
}


def _extra_kernels() -> dict:
    """Kernels outside the catalogue (no constant of the model was measured on them): does the
    estimate generalise?"""
    import kernels as KZ  # tests/cuda/kernels.py
    from estimate_kernels import softmax_rows  # tests/analysis/estimate_kernels.py

    return {
        "x.gemm_64x64x32_3stages": lambda: KZ.gemm.get_tir(200, 136, 168, 64, 64, 32, stages=3),
        "x.reduce_rows_512_threads": lambda: KZ.reduce_dim.get_tir(64, 300, 1, threads=512),
        "x.softmax_rows": lambda: softmax_rows.get_tir(100, 256),
        "x.gemm_bf16_128x128_256_threads": lambda: KZ.gemm.get_tir(
            300, 260, 200, 128, 128, 32, "bfloat16", threads=256
        ),
    }


EXTRA_MISSES = {
    # exponentials and row statistics live across both reductions: ptxas keeps more than the scan
    # (24 at sm_80, ptxas 28: within)
    ("x.softmax_rows", "sm_90a"),  # ptxas 29, estimate 24
    # 64 guarded stores hoisted through a 7-iteration unrolled K loop: counted (193 without them:
    # 129); ptxas also keeps more of the unrolled operand loads (159 without the guards, 127 rolled)
    ("x.gemm_bf16_128x128_256_threads", "sm_80"),  # ptxas 242, estimate 193
}
KNOWN_MISSES |= EXTRA_MISSES
FUNCS = {**catalog.all_funcs(), **_extra_kernels()}
CASES = [(name, arch) for name in FUNCS for arch in ARCHS]
pytestmark = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
# builds of the committed table recompiled on every run to prove it is current (the first ones in
# key order: a different sample whenever sources change); TL_PTXAS_VERIFY=all checks every build
VERIFY_SAMPLE = 2


def _ws_gemm_384():
    import kernels as KZ  # tests/cuda/kernels.py

    return KZ.gemm.get_tir(M=8192, N=8192, K=8192, bm=128, bn=256, bk=64, stages=3, threads=256, out="float16")


def _persistent_ws():
    mod = catalog._example("hopper/persistent_ws_gemm.py")
    return mod.matmul_persistent_ws.get_tir(4096, 4096, 4096, 128, 128, 64, 132, 4)


WS_BUILDS = {"ws.gemm_384": _ws_gemm_384, "ws.persistent": _persistent_ws}


def all_builds() -> dict:
    """{(name, arch): PrimFunc} of every build the tests compare with ptxas (the table's rows)."""
    funcs = {name: make() for name, make in FUNCS.items()}
    out = {(name, arch): funcs[name] for name, arch in CASES}
    out.update({(name, "sm_90a"): make() for name, make in WS_BUILDS.items()})
    return out


@dataclass
class Measured:
    figures: dict  # (name, arch) -> (ptxas registers, estimate)
    stale: list  # builds whose table entry is missing or keyed by other inputs (compiled instead)
    wrong: list  # (build, table's registers, ptxas's) of the verified sample that disagree


@pytest.fixture(scope="module")
def measured() -> Measured:
    """ptxas's count from the committed table where its key matches the build's inputs (compiled
    with ptxas where it does not: a stale entry), and the estimate, for every build."""
    table = ptxas_reference.load()
    builds = all_builds()
    figures, keys, stale = {}, {}, []
    for (name, arch), func in builds.items():
        key, _ = ptxas_reference.build_key(func, arch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimate = analyze_traced(func, arch, None, measured=False).resources.regs_per_thread
        entry = table.get(ptxas_reference.case_id(name, arch))
        if entry is not None and entry["key"] == key:
            figures[(name, arch)] = (entry["registers"], estimate)
            keys[(name, arch)] = key
        else:
            stale.append((name, arch))
            figures[(name, arch)] = (None, estimate)
    verify = sorted(keys, key=keys.get)
    if os.environ.get("TL_PTXAS_VERIFY") != "all":
        verify = verify[:VERIFY_SAMPLE]
    jobs = stale + verify
    with ThreadPoolExecutor(max_workers=int(os.environ.get("TL_TEST_NVCC_JOBS", "2"))) as ex:
        got = dict(zip(jobs, ex.map(lambda c: ptxas_reference.ptxas_registers(builds[c], c[1]), jobs)))
    wrong = [(c, figures[c][0], got[c]) for c in verify if got[c] != figures[c][0]]
    for c in stale:
        figures[c] = (got[c], figures[c][1])
    return Measured(figures, stale, wrong)


def test_ptxas_reference_is_current(measured):
    """The committed table holds ptxas's count for the current sources, headers and toolkit (a
    stale entry was compiled instead, so the tolerance tests still compare with ptxas)."""
    fix = "regenerate it: PYTHONPATH=. python tests/analysis/ptxas_reference.py"
    assert not measured.stale, f"{ptxas_reference.TABLE.name}: stale for {measured.stale}; {fix}"
    assert not measured.wrong, f"{ptxas_reference.TABLE.name}: (build, table, ptxas) {measured.wrong}; {fix}"


@pytest.mark.parametrize(
    "name, arch",
    [pytest.param(n, a, marks=pytest.mark.xfail(strict=True, reason="estimate off by > 15 %"))
     if (n, a) in KNOWN_MISSES else (n, a) for n, a in CASES],
)  # fmt: skip
def test_estimate_within_tolerance_of_ptxas(measured, name, arch):
    ptxas, estimate = measured.figures[(name, arch)]
    assert abs(estimate - ptxas) <= TOLERANCE * ptxas, f"estimate {estimate}, ptxas {ptxas}"


def _ws_gemm_384():
    import kernels as KZ  # tests/cuda/kernels.py

    return KZ.gemm.get_tir(M=8192, N=8192, K=8192, bm=128, bn=256, bk=64, stages=3, threads=256, out="float16")


def _persistent_ws():
    mod = catalog._example("hopper/persistent_ws_gemm.py")
    return mod.matmul_persistent_ws.get_tir(4096, 4096, 4096, 128, 128, 64, 132, 4)


@pytest.mark.parametrize(
    "name, ptxas_bound",
    [
        ("ws.gemm_384", 168),  # setmaxnreg 232 for the consumers, capped by __launch_bounds__(384, 1)
        ("ws.persistent", 240),  # 256 threads: setmaxnreg's 240 fits, ptxas reports it
    ],
)
def test_warp_specialized_register_budget(measured, name, ptxas_bound):
    """Kernels outside the catalogue whose count is set by setmaxnreg and the launch bounds."""
    ptxas, estimate = measured.figures[(name, "sm_90a")]
    assert ptxas == ptxas_bound
    assert abs(estimate - ptxas_bound) <= TOLERANCE * ptxas_bound, estimate
