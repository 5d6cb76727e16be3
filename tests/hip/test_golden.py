"""Golden tests: the exact HIP source generated for the reference kernels (vector add, a
pipelined gemm on MFMA, a row softmax of a gemm — wave-64 reductions —, causal FlashAttention
with P from registers).

A change to the generated code shows up here as a readable diff. When the change is
intended, regenerate with `TL_UPDATE_GOLDEN=1 pytest tests/hip/test_golden.py` and review the
diff of tests/hip/golden/*.hip. tests/hip/test_build.py compiles these kernels."""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import pytest

import tilelang

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests"), str(ROOT / "examples")]
GOLDEN = Path(__file__).resolve().parent / "golden"


def _cases() -> dict:
    import kernels as KZ
    from flash_attention import mha_fwd
    from seeds import seed_kernels as S

    return {
        "vector_add_1024": lambda: S.vector_add.get_tir(M=1 << 20, block_M=1024),
        "gemm_64x64x32_2stages": lambda: KZ.gemm.get_tir(256, 256, 128, 64, 64, 32, "float16", "float32", "float16"),
        "row_softmax_of_gemm": lambda: KZ.gemm_row_softmax.get_tir(64, 64, 32, "FullRow"),
        "flash_attention_causal": lambda: mha_fwd.flashattn.get_tir(1, 2, 1000, 64, True, 64, 64, 2, 128),
    }


CASES = list(_cases())


def _source(name: str) -> str:
    return tilelang.lower(_cases()[name](), target="hip", enable_device_compile=False).kernel_source


@pytest.mark.parametrize("name", CASES)
def test_generated_source_matches_golden(name):
    src = _source(name)
    path = GOLDEN / f"{name}.hip"
    if os.environ.get("TL_UPDATE_GOLDEN") or not path.exists():
        path.write_text(src)
    want = path.read_text()
    if src != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), src.splitlines(True), "golden", "generated"))
        pytest.fail(f"generated HIP for {name} changed (TL_UPDATE_GOLDEN=1 to accept):\n{diff[:6000]}")


def test_golden_gemm_is_mfma_on_lds_tiles():
    text = (GOLDEN / "gemm_64x64x32_2stages.hip").read_text()
    for needle in ('#include "tl_hip/mfma.h"', "tl::mfma_f32_16x16x16f16(", "__launch_bounds__(128)",
                   "extern __shared__ __attribute__((aligned(16))) uint8_t smem[];", "__syncthreads();",
                   "tl::copy_vec_pred<16>(&A_s["):  # fmt: skip
        assert needle in text, needle
    assert "cp_async" not in text and '#include "tl_hip/atomic.h"' not in text  # only the headers it uses


def test_golden_row_softmax_reduces_within_a_wave():
    # FullRow over 2 waves: a row's 16 columns of a 16x16 block live in 4 lanes 16 apart (layout/mfma.py)
    text = (GOLDEN / "row_softmax_of_gemm.hip").read_text()
    assert "tl::AllReduce<tl::MaxOp, 4, 16>::run" in text and "tl::AllReduce<tl::SumOp, 4, 16>::run" in text


def test_golden_flash_attention_feeds_p_from_registers():
    text = (GOLDEN / "flash_attention_causal.hip").read_text()
    # Q K^T twice (the diagonal block and the others: hoist_uniform_select), P V once, its A
    # operand the lane's own registers (the accumulator map of acc_s, converted)
    assert text.count("tl::mfma_f32_16x16x16f16(") == 3
    assert "mfma_a_2[mr_2 * 4 + me_2] = acc_s_cast[mr_2 * 16 + mk_2 * 4 + me_2];" in text
    assert "tl::AllReduce<tl::MaxOp" in text and "tl::exp2" in text
