"""Golden tests: the exact CUDA source generated for a few small kernels.

A change to the generated code shows up here as a readable diff. When the
change is intended, regenerate with `TL_UPDATE_GOLDEN=1 pytest tests/cuda/test_golden.py`
and review the diff of tests/cuda/golden/*.cu."""

import difflib
import os
from pathlib import Path

import kernels as KZ
import pytest

import tilelang

GOLDEN = Path(__file__).resolve().parent / "golden"


def _cases():
    from seeds import seed_kernels as S

    return {
        "vector_add_1024": lambda: S.vector_add.get_tir(M=1 << 20, block_M=1024),
        "gemm_64x64x32_2stages": lambda: KZ.gemm.get_tir(256, 256, 128, 64, 64, 32, "float16", "float32", "float16"),
        "row_sum_64x96": lambda: KZ.reduce_dim.get_tir(64, 96, 1, "sum"),
        "row_softmax_of_gemm": lambda: KZ.gemm_row_softmax.get_tir(64, 64, 32, "FullRow"),
        # warp-specialized, P·V one trip late, two warpgroups in turns (backend/cuda/overlap_gemms.py);
        # this exact source passed tests/gpu/test_fa_overlap.py on the H200 (2026-11-30)
        "flash_attention_overlapped_causal": lambda: _mha().flashattn.get_tir(2, 4, 1000, 128, True, 128, 128, 2, 256),
    }


def _mha():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    from flash_attention import mha_fwd

    return mha_fwd


@pytest.mark.parametrize("name", list(_cases()))
def test_generated_source_matches_golden(name):
    func = _cases()[name]()
    src = tilelang.lower(func, target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=False).kernel_source
    path = GOLDEN / f"{name}.cu"
    if os.environ.get("TL_UPDATE_GOLDEN") or not path.exists():
        path.write_text(src)
    want = path.read_text()
    if src != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), src.splitlines(True), "golden", "generated"))
        pytest.fail(f"generated CUDA for {name} changed (TL_UPDATE_GOLDEN=1 to accept):\n{diff[:6000]}")


def test_golden_gemm_uses_the_tma_ring_and_wgmma():
    # sm_90a: TMA loads completing on an mbarrier ring (16 KB of shared memory: several blocks per SM, so no
    # producer warpgroup), wgmma on the swizzled tiles
    text = (GOLDEN / "gemm_64x64x32_2stages.cu").read_text()
    for needle in ("const __grid_constant__ CUtensorMap A_tmap", "tl::tma_load(&B_tmap", "tl::mbarrier_expect_tx",
                   "tl::mbarrier_wait(&k_full[k % 2], k / 2);", "__launch_bounds__(128)", "tl::wgmma_gemm_ss<64, 64, 32,",
                   "tl::SmemLayout<64, 32, 2, 64>", "tl::SmemLayout<32, 64, 2, 128>", "tl::copy_vec<4>"):  # fmt: skip
        assert needle in text, needle
    assert '#include "tl/atomic.h"' not in text  # only the headers a kernel uses


def test_golden_vector_add_is_vectorised():
    text = (GOLDEN / "vector_add_1024.cu").read_text()
    assert text.count("tl::copy_vec<16>") == 3 and "seed_kernels.py:" in text


def test_golden_row_reduction_uses_warp_allreduce():
    text = (GOLDEN / "row_softmax_of_gemm.cu").read_text()
    assert "tl::AllReduce<tl::MaxOp, 4, 1>::run" in text and "tl::AllReduce<tl::SumOp, 4, 1>::run" in text
