"""With target "metal" the analysis (what the language server shows) reports Metal's facts, read
from the Metal pipeline itself (issue 21, item 4): threadgroup memory against the 32 KiB limit,
the simdgroup_matrix gemm decision recorded by the pass, pipelined loops as the plain loops they
become — and equals the build."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tilelang
from tilelang.analysis import analyze_traced

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402

FUNCS = catalog.all_funcs()


@pytest.fixture(scope="module")
def matmul():
    func = FUNCS["seed.matmul"]()
    return func, analyze_traced(func, "metal", {})


def test_threadgroup_memory_against_32_kib_equals_the_build(matmul):
    func, info = matmul
    res = info.resources
    assert res.shared_limit == 32 * 1024 and res.threads == 128
    src = tilelang.lower(func, target="metal", enable_device_compile=False).kernel_source
    planned = re.search(r"threadgroup memory (\d+) bytes", src)
    assert planned and int(planned.group(1)) == res.shared_bytes
    assert not [d for d in info.diagnostics if d.severity == "error"]


def test_gemm_decision_is_simdgroup_matrix(matmul):
    _, info = matmul
    gemms = [op for op in info.ops if op.op == "gemm"]
    assert gemms and all(op.decision.startswith("simdgroup_matrix 8x8x8") for op in gemms), gemms


def test_generated_source_is_msl(tmp_path):
    from tilelang.analysis.api import generate_source

    src = (ROOT / "tests" / "seeds" / "seed_kernels.py").read_text()
    path = str(ROOT / "tests" / "seeds" / "seed_kernels.py")
    got = generate_source(src, path, "vector_add", "metal", {"M": 1000})
    assert got.language == "metal" and "kernel void vector_add_kernel(" in got.text


def test_register_a_operand_is_reported():
    info = analyze_traced(FUNCS["seed.flashattn_causal"](), "metal", {})
    decisions = [op.decision for op in info.ops if op.op == "gemm"]
    assert any("A from registers" in d for d in decisions) and all("simdgroup_matrix" in d for d in decisions)


def test_over_the_limit_is_a_diagnostic_at_the_kernel():
    info = analyze_traced(FUNCS["seed.matmul_persistent"](), "metal", {})
    errors = [d for d in info.diagnostics if d.severity == "error"]
    msg = errors[0].message if errors else ""
    assert msg.startswith("threadgroup memory 51 KiB per threadgroup exceeds") and "32 KiB" in msg and "C_shared" in msg
