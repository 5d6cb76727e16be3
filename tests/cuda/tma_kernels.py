"""GEMM kernels the TMA tests (tests/cuda/test_tma_lower.py, tests/gpu/test_tma.py) share."""

from __future__ import annotations

import tilelang
import tilelang.language as T


@tilelang.jit
def gemm(A, B, M, N, K, block_M, block_N, block_K, num_stages, threads, dtype, dynamic_m, disable_tma, smem_out,
         swizzle_panel=0):  # fmt: skip
    """C = A @ B (fp32 accumulation); `dynamic_m`: M is a run-time dimension; `smem_out`: the
    epilogue goes through a shared tile (a TMA store candidate); `swizzle_panel`: T.use_swizzle."""
    if dynamic_m:
        M = T.dynamic("m")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        if swizzle_panel:
            T.use_swizzle(swizzle_panel)
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), "float32")
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], A_shared, disable_tma=disable_tma)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        if smem_out:
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])
        else:
            T.copy(C_local, C[by * block_M, bx * block_N])
    return C


DEFAULTS = dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128, dtype="float16", dynamic_m=False,
                disable_tma=False, smem_out=False)  # fmt: skip


def gemm_func(M, N, K, **kw):
    """The PrimFunc for one configuration."""
    return gemm.get_tir(M=M, N=N, K=K, **{**DEFAULTS, **kw})


def lower_source(func, arch="sm_90a", pass_configs=None, build=False) -> str:
    """The generated CUDA source (`build`: also compile it with nvcc)."""
    art = tilelang.lower(func, target={"kind": "cuda", "arch": arch}, pass_configs=pass_configs,
                         enable_device_compile=build)  # fmt: skip
    return art.kernel_source


@tilelang.jit
def two_gemms(A, B, D, M, N, K):
    """C = A @ B + A @ D in two pipelined loops (one producer warpgroup cannot serve both)."""
    A: T.Tensor((M, K), "float16")
    B: T.Tensor((K, N), "float16")
    D: T.Tensor((K, N), "float16")
    C = T.empty((M, N), "float16")
    with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        D_s = T.alloc_shared((64, 128), "float16")
        A2_s = T.alloc_shared((128, 64), "float16")
        acc = T.alloc_fragment((128, 128), "float32")
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
            T.copy(A[by * 128, k * 64], A_s)
            T.copy(B[k * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, acc)
        for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
            T.copy(A[by * 128, k * 64], A2_s)
            T.copy(D[k * 64, bx * 128], D_s)
            T.gemm(A2_s, D_s, acc)
        T.copy(acc, C[by * 128, bx * 128])
    return C


@tilelang.jit
def batched_gemm(A, B, BATCH, M, N, K):
    """C[b] = A[b] @ B[b]: 3-D tensors, boxes with a unit batch dimension."""
    A: T.Tensor((BATCH, M, K), "float16")
    B: T.Tensor((BATCH, K, N), "float16")
    C = T.empty((BATCH, M, N), "float16")
    with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), BATCH, threads=256) as (bx, by, bz):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        acc = T.alloc_fragment((128, 128), "float32")
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, 64), num_stages=4):
            T.copy(A[bz, by * 128, k * 64], A_s)
            T.copy(B[bz, k * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, acc)
        T.copy(acc, C[bz, by * 128, bx * 128])
    return C


@tilelang.jit
def gemm_in_ws_region(A, B, M, N, K):
    """A T.Pipelined GEMM inside a `T.ws(0)` region of a 256-thread kernel."""
    A: T.Tensor((M, K), "float16")
    B: T.Tensor((K, N), "float16")
    C = T.empty((M, N), "float16")
    with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=256) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        acc = T.alloc_fragment((128, 128), "float32")
        with T.ws(0):
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 128, bx * 128])
    return C
