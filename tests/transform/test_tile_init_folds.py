"""hoist_uniform_select and fold_gemm_clear: FlashAttention's score-tile initialisation is decided
once per block (causal mask off the diagonal, padding mask off the last block) and a zero fill
right before a gemm becomes the gemm's clear. The rewritten tile programs compute what the
originals did (tile interpreter, causal and not, sequence lengths that are and are not a multiple
of the tile); kernels whose initialisation is not of that form are left alone."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.split_rows import split_rows
from tilelang.backend.target import parse
from tilelang.ir.stmt import For, Gemm, IfThenElse
from tilelang.ir.visitor import collect
from tilelang.transform.fold_gemm_clear import fold_gemm_clear
from tilelang.transform.hoist_uniform_select import hoist_uniform_select
from tilelang.transform.simplify import simplify
from tilelang.transform.verify import verify

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)
from flash_attention import mha_fwd  # noqa: E402

from tests.transform.tile_interp import run  # noqa: E402

SM90A = {"target": parse({"kind": "cuda", "arch": "sm_90a"})}


def flash(causal, seq, bm=128, bn=128, threads=128):
    f = mha_fwd.flashattn.get_tir(1, 2, seq, 128, causal, block_M=bm, block_N=bn, threads=threads)
    return simplify(verify(f))


def both(f):
    return fold_gemm_clear(hoist_uniform_select(f))


def attention(f, seq, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, seq, 2, 128, generator=gen).half() for _ in range(3))
    out = torch.zeros(1, seq, 2, 128).half()
    run(f, q, k, v, out, race_check=False)
    return out.float(), (q, k, v)


def clearing_gemms(f):
    return [g for g in collect(f.body, lambda n: isinstance(n, Gemm)) if g.clear_accum]


def mask_branches(f):
    return collect(f.body, lambda n: isinstance(n, IfThenElse) and collect(n, lambda m: isinstance(m, For)))


@pytest.mark.parametrize("causal, seq", [(False, 256), (False, 200), (True, 256), (True, 200)])
def test_the_rewritten_kernel_computes_what_the_original_did(causal, seq):
    f = flash(causal, seq)
    g = both(f)
    assert g is not f
    want, qkv = attention(f, seq)
    got, _ = attention(g, seq)
    torch.testing.assert_close(got, want, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(got, mha_fwd.reference(*qkv, causal).float(), atol=2e-2, rtol=2e-2)
    # then split into row halves (what sm_90a compiles), still the same
    h = split_rows(g, SM90A)
    assert h is not g
    halves, _ = attention(h, seq)
    torch.testing.assert_close(halves, want, atol=1e-3, rtol=1e-3)


def test_non_causal_whole_tiles_zero_the_scores_in_the_gemm():
    f = both(flash(False, 256))
    assert len(clearing_gemms(f)) == 1 and not mask_branches(f)


def test_the_padding_mask_is_decided_per_block():
    f = both(flash(False, 200))
    assert mask_branches(f) and not clearing_gemms(f)


def test_the_causal_mask_is_decided_per_block():
    f = hoist_uniform_select(flash(True, 256))
    branch = mask_branches(f)[0]
    assert "bx" in str(branch.cond) and "k" in str(branch.cond)


@tilelang.jit
def tiles(variant):
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((192, 64), "float32")):
        with T.Kernel(3, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            if variant == "fill":
                T.fill(c, 0)
            elif variant == "read_between":
                T.clear(c)
                c[0, 0] = c[0, 1] + 1
            elif variant == "print_between":
                T.clear(c)
                T.print(c)
            elif variant == "not_zero":
                T.fill(c, 1)
            elif variant == "part":
                for i, j in T.Parallel(32, 64):
                    c[i, j] = 0
            elif variant == "non_affine":
                for i, j in T.Parallel(64, 64):
                    c[i, j] = T.if_then_else(i * j >= bx * 64, 0.0, 1.0)
            elif variant == "affine":
                for i, j in T.Parallel(64, 64):
                    c[i, j] = T.if_then_else(i + 2 * j >= bx * 150 - 100, 0.0, 1.0)
            T.gemm(A_s, B_s, c)
            T.copy(c, C[bx * 64, 0])

    return main


def test_a_whole_fill_of_zero_folds():
    f = simplify(verify(tiles.get_tir("fill")))
    g = fold_gemm_clear(f)
    assert len(clearing_gemms(g)) == 1


@pytest.mark.parametrize("variant", ["read_between", "print_between", "not_zero", "part"])
def test_other_initialisations_are_kept(variant):
    f = simplify(verify(tiles.get_tir(variant)))
    assert fold_gemm_clear(f) is f


def test_a_select_that_is_not_affine_in_the_loop_variables_is_kept():
    f = simplify(verify(tiles.get_tir("non_affine")))
    assert hoist_uniform_select(f) is f


def test_an_affine_select_is_hoisted_exactly():
    """i + 2j >= 150·bx - 100 over 64×64 (i + 2j spans 0..189): true everywhere on block 0,
    mixed on block 1, nowhere on block 2 — decided by the corner tests, each block as before."""
    f = simplify(verify(tiles.get_tir("affine")))
    g = hoist_uniform_select(f)
    assert g is not f and len(mask_branches(g)) == 2
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(64, 32, generator=gen).half(), torch.randn(32, 64, generator=gen).half()
    want, got = torch.zeros(192, 64), torch.zeros(192, 64)
    run(f, a, b, want, race_check=False)
    run(g, a, b, got, race_check=False)
    torch.testing.assert_close(got, want)
    ab = a.float() @ b.float()
    torch.testing.assert_close(got[:64], ab)  # all-true block: zeros + A·B
    torch.testing.assert_close(got[128:], ab + 1)
