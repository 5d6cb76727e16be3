"""Kernels of the API-semantics conformance tests, shared by the CPU suite
(`test_api_semantics.py`) and its GPU twin (`tests/gpu/test_conformance_api.py`).

Written the way public TileLang 0.1.x programs are: lazy factories with `out_idx`, one of
them getting its PrimFunc from a helper function, ragged loops whose trip counts are read
from per-group lengths with the y block index."""

from __future__ import annotations

import torch

import tilelang
import tilelang.language as T


# -- ragged grouped GEMM: group `by` has m_lens[by] rows and k_lens[by] of the K dimension --------
@tilelang.jit(out_idx=[-1])
def grouped_gemm(G, M_max, K_max, N, block_M=32, block_N=32, block_K=32, num_stages=2, threads=128):
    """C[g, :m_g] = A[g, :m_g, :k_g] @ B[g, :k_g]: the row-tile loop (`T.serial`) and the K loop
    (`T.Pipelined`) both run as many trips as group `by` needs."""

    @T.prim_func
    def main(
        A: T.Tensor((G, M_max, K_max), "float16"),
        B: T.Tensor((G, K_max, N), "float16"),
        m_lens: T.Tensor((G,), "int32"),
        k_lens: T.Tensor((G,), "int32"),
        C: T.Tensor((G, M_max, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), G, threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            for mt in T.serial(T.ceildiv(m_lens[by], block_M)):
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(k_lens[by], block_K), num_stages=num_stages):
                    for i, j in T.Parallel(block_M, block_K):
                        A_s[i, j] = T.if_then_else(
                            k * block_K + j < k_lens[by], A[by, mt * block_M + i, k * block_K + j], 0
                        )
                    for i, j in T.Parallel(block_K, block_N):
                        B_s[i, j] = T.if_then_else(
                            k * block_K + i < k_lens[by], B[by, k * block_K + i, bx * block_N + j], 0
                        )
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[by, mt * block_M, bx * block_N])

    return main


# -- grouped GEMM with a per-group K: the kernel's top-level loop is the ragged T.Pipelined ----------
@tilelang.jit(out_idx=[-1])
def grouped_gemm_k(G, M, K_max, N, block_M=64, block_N=64, block_K=32, num_stages=3, threads=128):
    """C[g] = A[g, :, :k_g] @ B[g, :k_g] on a (N tiles, groups, M tiles) grid."""

    @T.prim_func
    def main(
        A: T.Tensor((G, M, K_max), "float16"),
        B: T.Tensor((G, K_max, N), "float16"),
        k_lens: T.Tensor((G,), "int32"),
        C: T.Tensor((G, M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), G, T.ceildiv(M, block_M), threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(k_lens[by], block_K), num_stages=num_stages):
                for i, j in T.Parallel(block_M, block_K):
                    A_s[i, j] = T.if_then_else(
                        k * block_K + j < k_lens[by], A[by, bz * block_M + i, k * block_K + j], 0
                    )
                for i, j in T.Parallel(block_K, block_N):
                    B_s[i, j] = T.if_then_else(
                        k * block_K + i < k_lens[by], B[by, k * block_K + i, bx * block_N + j], 0
                    )
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by, bz * block_M, bx * block_N])

    return main


def grouped_inputs(G, M_max, K_max, N, m_lens, k_lens, device="cpu"):
    torch.manual_seed(0)
    A = torch.randn(G, M_max, K_max).half().to(device)
    B = torch.randn(G, K_max, N).half().to(device)
    ml = torch.tensor(m_lens, dtype=torch.int32, device=device)
    kl = torch.tensor(k_lens, dtype=torch.int32, device=device)
    return A, B, ml, kl


def grouped_reference(A, B, m_lens, k_lens) -> list:
    """Per group: the valid (m_g, N) block of the product, in float32."""
    return [A[g, :m, :k].float() @ B[g, :k].float() for g, (m, k) in enumerate(zip(m_lens, k_lens))]


# -- a lazy factory whose PrimFunc comes from a helper --------------------------------------------
def make_affine(M, N, block_M, alpha, beta, dtype):
    """The helper: builds `B = alpha * A + beta` (the factory below only forwards to it)."""

    @T.prim_func
    def affine(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            for i, j in T.Parallel(block_M, N):
                B[bx * block_M + i, j] = A[bx * block_M + i, j] * alpha + beta

    return affine


FACTORY_CALLS: list = []  # (M, N) of every call of the factory body: it must run once per key


@tilelang.jit(out_idx=[-1])
def affine_from_helper(M, N, block_M=16, alpha=2.5, beta=-1.0, dtype="float32"):
    FACTORY_CALLS.append((M, N))
    scratch = torch.empty(1)  # `torch.empty` in a factory is not `T.empty`: still a lazy factory
    del scratch
    return make_affine(M, N, block_M, alpha, beta, dtype)


# -- integer division flavours, computed in the kernel ---------------------------------------------
@tilelang.jit(out_idx=[2, 3, 4, 5])
def int_division(N, block=64):
    @T.prim_func
    def main(
        A: T.Tensor((N,), "int32"),
        B: T.Tensor((N,), "int32"),
        FD: T.Tensor((N,), "int32"),
        FM: T.Tensor((N,), "int32"),
        TD: T.Tensor((N,), "int32"),
        TM: T.Tensor((N,), "int32"),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                FD[bx * block + i] = T.floordiv(A[bx * block + i], B[bx * block + i])
                FM[bx * block + i] = T.floormod(A[bx * block + i], B[bx * block + i])
                TD[bx * block + i] = T.truncdiv(A[bx * block + i], B[bx * block + i])
                TM[bx * block + i] = T.truncmod(A[bx * block + i], B[bx * block + i])

    return main


def division_inputs(N, device="cpu"):
    torch.manual_seed(1)
    a = torch.randint(-1000, 1000, (N,), dtype=torch.int32)
    b = torch.randint(1, 37, (N,), dtype=torch.int32) * (torch.randint(0, 2, (N,), dtype=torch.int32) * 2 - 1)
    return a.to(device), b.to(device)


def division_reference(a, b) -> list:
    a64, b64 = a.long(), b.long()
    return [
        torch.div(a64, b64, rounding_mode="floor"),
        torch.remainder(a64, b64),
        torch.div(a64, b64, rounding_mode="trunc"),
        torch.fmod(a64, b64),
    ]


# -- the TVMScript-cased aliases inside a kernel ----------------------------------------------------
@tilelang.jit(out_idx=[-1])
def saturated_row_max(M, N, block_M=16):
    """O[i] = float16(min(max_j A[i, j], the largest float16)), written with T.Serial, T.Select,
    T.infinity, T.max_value and TVM's dtype-first T.Cast."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), O: T.Tensor((M,), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            acc = T.alloc_fragment((block_M,), "float32")
            T.fill(acc, -T.infinity(T.float32))
            for j in T.Serial(N):
                for i in T.Parallel(block_M):
                    x = A[bx * block_M + i, j]
                    acc[i] = T.Select(x > acc[i], x, acc[i])
            for i in T.Parallel(block_M):
                O[bx * block_M + i] = T.Cast(T.float16, T.min(acc[i], T.max_value(T.float16)))

    return main


def saturated_row_max_reference(A):
    return A.float().amax(dim=1).clamp(max=65504.0).half()
