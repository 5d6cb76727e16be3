"""Kernels and helpers shared by the transform tests (no tests here)."""

import os
import sys

import torch

import tilelang.language as T
from tests.transform.tile_interp import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in (ROOT, os.path.join(ROOT, "examples"), os.path.join(ROOT, "examples", "flash_attention")):
    if _p not in sys.path:
        sys.path.insert(0, _p)


def gemm(M, N, K, bm=32, bn=32, bk=16, stages=3, a_dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), a_dtype), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def gemm_stage_order(M, N, K, stage, order, num_stages=0, bm=32, bn=32, bk=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=num_stages, stage=stage, order=order):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def seed_two_statement(M, N, K, BK=16):
    """The seed's `stage=[0, 1], order=[1, 0]` example (B stays resident)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((BK, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_shared = T.alloc_shared((M, BK), "float16")
            B_shared = T.alloc_shared((BK, N), "float16")
            C_local = T.alloc_fragment((M, N), "float32")
            T.clear(C_local)
            T.copy(B, B_shared)
            for ko in T.Pipelined(T.ceildiv(K, BK), stage=[0, 1], order=[1, 0]):
                T.copy(A[0, ko * BK], A_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C)

    return main


def seed_gemm_tir(M, N, K, **kw):
    import quickstart

    return quickstart.matmul.get_tir(M=M, N=N, K=K, **kw)


def flash_tir(seq_len, dim, causal, num_stages, block=32):
    import mha_fwd

    return mha_fwd.flashattn.get_tir(1, 1, seq_len, dim, causal, block_M=block, block_N=block, num_stages=num_stages)


def dynamic_tir(a, b, num_stages):
    from tests.seeds import seed_kernels as sk

    return sk.matmul_dynamic_mnk.get_tir(
        a, b, block_M=32, block_N=32, block_K=16, trans_A=False, trans_B=False, in_dtype=T.float16,
        out_dtype=T.float16, accum_dtype=T.float32, num_stages=num_stages, threads=128,
    )  # fmt: skip


def gemm_inputs(M, N, K, seed=0, a_dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).to(a_dtype)
    b = torch.randn(K, N, generator=g).to(torch.float16)
    return a, b


def run_gemm(f, a, b, out_dtype=torch.float32, race_check=True):
    c = torch.zeros(a.shape[0], b.shape[1], dtype=out_dtype)
    stats = run(f, a, b, c, race_check=race_check)
    return c, stats


def gemm_offset(M=32, N=32, K=80, bk=16, stages=3):
    """A pipelined loop that does not start at 0: `for ko in T.Pipelined(3, n + 3)`."""
    n = (K + bk - 1) // bk

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_s = T.alloc_shared((M, bk), "float16")
            B_s = T.alloc_shared((bk, N), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(3, n + 3, num_stages=stages):
                T.copy(A[0, (ko - 3) * bk], A_s)
                T.copy(B[(ko - 3) * bk, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C)

    return main
