"""split_rows: a register-bound attention kernel (FlashAttention 128×128 on 128 threads) runs its
rows in two halves. The rewritten tile program computes what the original did (tile interpreter,
odd sequence length, causal and not); kernels that do not qualify are left alone; on sm_90a the
halves keep wgmma instead of falling back to mma.sync."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.split_rows import split_rows
from tilelang.backend.target import nvcc_path, parse
from tilelang.transform.simplify import simplify
from tilelang.transform.verify import verify

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)
from flash_attention import mha_fwd  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from tests.transform.tile_interp import run  # noqa: E402

SM90A = {"target": parse({"kind": "cuda", "arch": "sm_90a"})}


def flash(causal, seq=200, bm=128, bn=128, threads=128, stages=1, heads=2):
    f = mha_fwd.flashattn.get_tir(1, heads, seq, 128, causal, block_M=bm, block_N=bn, num_stages=stages,
                                  threads=threads)  # fmt: skip
    return simplify(verify(f))


@pytest.mark.parametrize("causal", [False, True])
def test_the_halves_compute_what_the_whole_did(causal):
    f = flash(causal)
    g = split_rows(f, SM90A)
    assert g is not f
    names = {a.buffer.name for a in g.body.body.stmts if hasattr(a, "buffer")}
    assert {"acc_o_0", "acc_o_1", "acc_s", "Q_shared_0", "Q_shared_1"} <= names and "acc_o" not in names
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 200, 2, 128, generator=gen).half() for _ in range(3))
    want, got = torch.zeros(1, 200, 2, 128).half(), torch.zeros(1, 200, 2, 128).half()
    run(f, q, k, v, want, race_check=False)
    run(g, q, k, v, got, race_check=False)
    torch.testing.assert_close(got.float(), want.float(), atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(got.float(), mha_fwd.reference(q, k, v, causal).float(), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize(
    "func, ctx",
    [
        (lambda: flash(False), {}),  # no target: no wgmma, nothing to win
        (lambda: flash(False), {**SM90A, "pass_configs": {"tl.disable_row_split": True}}),
        (lambda: flash(False), {**SM90A, "pass_configs": {"tl.disable_wgmma": True}}),
        (lambda: flash(False, bn=64), SM90A),  # 224 registers: fits without splitting
        (lambda: flash(False, threads=256), SM90A),  # two warpgroups: fits
    ],
)
def test_left_alone(func, ctx):
    f = func()
    assert split_rows(f, ctx) is f


def test_a_tile_read_before_it_is_written_keeps_one_copy_per_half():
    """The seed's non-causal kernel accumulates into acc_s across iterations (no clear): acc_s
    must then be one tile per half — which no longer fits the registers, so nothing is split."""
    from seeds import seed_kernels as S

    f = simplify(verify(S.flashattn.get_tir(1, 2, 256, 128, False, block_M=128, block_N=128, threads=128)))
    assert split_rows(f, SM90A) is f


@tilelang.jit
def attention_like(M, N, variant):
    """Q·Kᵀ, P·V over one tile, then an epilogue that is not row-separable: `read_across` reads
    another row's scores; `transpose_out` has each half write half of a shared tile's columns,
    which is then read whole."""

    @T.prim_func
    def main(A: T.Tensor((M, 128), "float16"), B: T.Tensor((N, 128), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, 128), "float16")
            B_s = T.alloc_shared((N, 128), "float16")
            S_t = T.alloc_shared((N, M), "float16")
            s = T.alloc_fragment((M, N), "float32")
            p = T.alloc_fragment((M, N), "float16")
            o = T.alloc_fragment((M, N), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.clear(s)
            T.gemm(A_s, B_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(s, p)
            T.clear(o)
            T.gemm(p, B_s, o, policy=T.GemmWarpPolicy.FullRow)
            if variant == "read_across":
                for i, j in T.Parallel(M, N):
                    o[i, j] = o[i, j] + s[j, i]
                T.copy(o, C[0, 0])
            else:
                for i, j in T.Parallel(M, N):
                    S_t[j, i] = o[i, j]
                T.copy(S_t, C[0, 0])

    return main


@pytest.mark.parametrize("variant", ["read_across", "transpose_out"])
def test_statements_that_are_not_row_separable_block_the_split(variant):
    f = simplify(verify(attention_like.get_tir(128, 128, variant)))
    assert split_rows(f, SM90A) is f


@pytest.mark.parametrize("causal", [False, True])
def test_on_sm90a_the_halves_use_wgmma(causal):
    from tma_kernels import lower_source

    src = lower_source(mha_fwd.flashattn.get_tir(8, 32, 4096, 128, causal, block_M=128, block_N=128, num_stages=1,
                                                 threads=128), build=nvcc_path() is not None)  # fmt: skip
    # causal: the scores gemm is in both branches of the per-block mask test (fold_gemm_clear)
    assert src.count("tl::wgmma_gemm_rs<64, 128") == 2 and src.count("tl::wgmma_gemm_ss<64, 128") == 2 * (1 + causal)
    assert "tl::gemm_rs<" not in src


@pytest.mark.parametrize("causal", [False, True])
def test_the_lowered_sm90a_halves_compute_attention(causal):
    """The per-thread sm_90a code of the split kernel (wgmma per half; cp.async, which the CPU
    simulator runs, instead of TMA) against torch, odd sequence length."""
    from sim import simulate

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 200, 1, 128, generator=gen).half() for _ in range(3))
    o = torch.zeros(1, 200, 1, 128).half()
    func = mha_fwd.flashattn.get_tir(1, 1, 200, 128, causal, block_M=128, block_N=128, num_stages=1, threads=128)
    lowered = simulate(func, [q, k, v, o], arch="sm_90a", pass_configs={"tl.disable_tma_lower": True})
    assert "acc_o_1" in lowered.script()
    torch.testing.assert_close(o.float(), mha_fwd.reference(q, k, v, causal).float(), atol=2e-3, rtol=1e-2)


def test_the_split_is_worked_out_once_per_kernel_node(monkeypatch):
    import tilelang.backend.cuda.split_rows as SR
    from tilelang.analysis.api import analyze_function

    calls: list = []
    real = SR._split
    monkeypatch.setattr(SR, "_split", lambda k: calls.append(k) or real(k))
    path = os.path.join(ROOT, "examples", "flash_attention", "mha_fwd.py")
    source = open(path).read()
    binds = dict(batch=1, heads=2, seq_len=256, dim=128, is_causal=False, block_M=128, block_N=128, threads=128)
    info = analyze_function(source, path, "flashattn", bindings=binds)
    assert not [d for d in info.diagnostics if d.severity == "error"]
    # once: the analysis runs the CUDA pipeline once, and layout inference reuses split_rows' split
    assert len(calls) == len({id(k) for k in calls}) == 1
    k = calls[0]
    assert SR.split_kernel(k) is SR.split_kernel(k) and len(calls) == 1
