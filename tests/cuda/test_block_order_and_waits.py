"""heavy_blocks_first (causal FlashAttention: the blocks with the longest loops start first) and
defer_wgmma_wait (two wgmma gemms back to back: the first leaves its group in flight for the
second's wait). Both keep the results (tile interpreter; per-thread sm_90a simulator) and both
leave kernels outside their conditions alone."""

from __future__ import annotations

import os
import re
import sys

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.heavy_blocks_first import heavy_blocks_first
from tilelang.backend.target import nvcc_path
from tilelang.transform.simplify import simplify
from tilelang.transform.verify import verify

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))
from flash_attention import mha_fwd  # noqa: E402

from tests.transform.tile_interp import run  # noqa: E402


def flash(causal, seq=256, bm=64, bn=64, threads=128):
    f = mha_fwd.flashattn.get_tir(1, 2, seq, 128, causal, block_M=bm, block_N=bn, threads=threads)
    return simplify(verify(f))


def test_causal_blocks_run_longest_first_with_the_same_result():
    f = flash(True)
    g = heavy_blocks_first(f)
    assert g is not f
    assert "3 - bx" in g.script()
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 256, 2, 128, generator=gen).half() for _ in range(3))
    want, got = torch.zeros(1, 256, 2, 128).half(), torch.zeros(1, 256, 2, 128).half()
    run(f, q, k, v, want, race_check=False)
    run(g, q, k, v, got, race_check=False)
    torch.testing.assert_close(got, want)


def test_blocks_of_equal_work_keep_their_order():
    f = flash(False)
    assert heavy_blocks_first(f) is f


def test_an_explicit_block_order_is_kept():
    f = flash(True)
    assert heavy_blocks_first(f, {"pass_configs": {"tl.disable_rasterization": True}}) is f


@tilelang.jit
def two_gemms(shared_acc):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            d = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.clear(c)
            T.clear(d)
            T.gemm(A_s, B_s, c)
            T.gemm(A_s, B_s, c if shared_acc else d)
            for i, j in T.Parallel(64, 64):
                c[i, j] = c[i, j] + d[i, j]
            T.copy(c, C[0, 0])

    return main


def waits(src):
    return [m.group(1) for m in re.finditer(r"tl::wgmma_gemm_ss<[^(]*, (true|false), 0>\(", src)]


@tilelang.jit
def three_gemms():
    """p = A·B (fp16 accumulator), d = A·B, e = p·B: e's register A operand is p, still in flight
    when e issues unless the chain waits before it."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            p = T.alloc_fragment((64, 64), "float16")
            d = T.alloc_fragment((64, 64), "float32")
            e = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, p, clear_accum=True)
            T.gemm(A_s, B_s, d, clear_accum=True)
            T.gemm(p, B_s, e, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                e[i, j] = e[i, j] + d[i, j]
            T.copy(e, C[0, 0])

    return main


def test_a_chain_waits_before_a_gemm_that_reads_an_in_flight_tile():
    from tma_kernels import lower_source

    src = lower_source(three_gemms.get_tir(), build=nvcc_path() is not None)
    assert waits(src) == ["false", "true"]  # p·B reads p: the second gemm waits for the chain
    rs = re.findall(r"tl::wgmma_gemm_rs<[^(]*, (true|false), 0>\(", src)
    assert rs == ["true"]
    after = src.split("tl::wgmma_gemm_ss<")[2]
    assert "tl::warpgroup_fence_operands<32>(&p[0])" in after.split("tl::wgmma_gemm_rs<")[0]


@pytest.mark.parametrize("shared_acc, expected", [(False, ["false", "true"]), (True, ["true", "true"])])
def test_only_independent_back_to_back_gemms_defer_the_wait(shared_acc, expected):
    from tma_kernels import lower_source

    src = lower_source(two_gemms.get_tir(shared_acc), build=nvcc_path() is not None)
    assert waits(src) == expected


@pytest.mark.parametrize("shared_acc", [False, True])
def test_deferred_waits_compute_the_same(shared_acc):
    from sim import simulate

    gen = torch.Generator().manual_seed(2)
    a, b = torch.randn(64, 64, generator=gen).half(), torch.randn(64, 64, generator=gen).half()
    c = torch.zeros(64, 64)
    simulate(two_gemms.get_tir(shared_acc), [a, b, c], arch="sm_90a")
    ab = a.float() @ b.float()
    torch.testing.assert_close(c, 2 * ab, atol=1e-2, rtol=1e-3)


def test_flash_attention_halves_issue_pv_and_the_next_scores_back_to_back():
    from tma_kernels import lower_source

    f = mha_fwd.flashattn.get_tir(8, 32, 4096, 128, False, block_M=128, block_N=128, num_stages=1, threads=128)
    src = lower_source(f)
    rs = re.findall(r"tl::wgmma_gemm_rs<[^(]*, (true|false), 0>\(", src)
    assert rs == ["false", "true"]  # P0·V in flight while Q1·Kᵀ issues; P1·V waits (a barrier follows)
