"""Kernels of the sub-byte conformance tests (`test_subbyte.py`) and their GPU twin
(`tests/gpu/test_conformance_subbyte.py`).

Written the way public TileLang 0.1.x quantized programs are: lazy factories with `out_idx`,
packed weights copied into shared memory with `T.copy`, the dequantize step in a `T.Parallel`
from the packed tile into a float16 shared tile scaled per group, then `T.gemm` in float16 with a
float32 accumulator; an int4 × int4 → int32 tensor-core GEMM; element casts in both directions.
4-bit tensors travel as int8 tensors of half the last dimension (`tilelang.quantize`)."""

from __future__ import annotations

import torch

import tilelang
import tilelang.language as T
from tilelang.quantize import fp4_values, pack_fp4, pack_int4, unpack_fp4


# -- element casts ---------------------------------------------------------------------------------
@tilelang.jit(out_idx=[1, 2, 3])
def decode(N, wdtype, block=64):
    """Every element of a packed 4-bit vector cast to float32, float16 and bfloat16."""

    @T.prim_func
    def main(
        X: T.Tensor((N,), wdtype),
        F32: T.Tensor((N,), T.float32),
        F16: T.Tensor((N,), T.float16),
        BF16: T.Tensor((N,), T.bfloat16),
    ):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                F32[bx * block + i] = T.cast(X[bx * block + i], T.float32)
                F16[bx * block + i] = T.cast(X[bx * block + i], T.float16)
                BF16[bx * block + i] = T.cast(X[bx * block + i], T.bfloat16)

    return main


@tilelang.jit(out_idx=[-1])
def encode(N, src_dtype, wdtype, block=64):
    """Y = X cast to a packed 4-bit dtype (float: round to nearest even, saturating; int: wrap)."""

    @T.prim_func
    def main(X: T.Tensor((N,), src_dtype), Y: T.Tensor((N,), wdtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = T.cast(X[bx * block + i], wdtype)

    return main


@tilelang.jit(out_idx=[-1])
def repack(M, N, wdtype, block_M=3, block_N=5, threads=32):
    """Y = X through a shared tile and a fragment, with odd tile widths: neighbouring blocks (and
    threads) write the two nibbles of one byte."""

    @T.prim_func
    def main(X: T.Tensor((M, N), wdtype), Y: T.Tensor((M, N), wdtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            S = T.alloc_shared((block_M, block_N), wdtype)
            F = T.alloc_fragment((block_M, block_N), wdtype)
            T.copy(X[by * block_M, bx * block_N], S)
            T.copy(S, F)
            T.copy(F, Y[by * block_M, bx * block_N])

    return main


# -- dequantize-then-GEMM ----------------------------------------------------------------------------
@tilelang.jit(out_idx=[-1])
def dequant_gemm(M, N, K, wdtype, group_size, block_M=64, block_N=64, block_K=64, num_stages=2, threads=128):
    """C = A @ (B * Scale)ᵀ: B (N, K) packed int4 / fp4 weights, one float16 scale per `group_size`
    elements of a row, float16 activations, float32 accumulation."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((N, K), wdtype),
        Scale: T.Tensor((N, K // group_size), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.float16)
            B_shared = T.alloc_shared((block_N, block_K), wdtype)
            B_dequant = T.alloc_shared((block_N, block_K), T.float16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                for i, j in T.Parallel(block_N, block_K):
                    B_dequant[i, j] = (
                        T.cast(B_shared[i, j], T.float16) * Scale[bx * block_N + i, (k * block_K + j) // group_size]
                    )
                T.gemm(A_shared, B_dequant, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[-1])
def dequant_gemm_local(M, N, K, group_size, block_M=64, block_N=64, block_K=64, threads=128):
    """The int4 variant that dequantizes from a register (fragment) copy of the packed tile."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), T.float16),
        B: T.Tensor((N, K), T.int4),
        Scale: T.Tensor((N, K // group_size), T.float16),
        C: T.Tensor((M, N), T.float16),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.float16)
            B_shared = T.alloc_shared((block_N, block_K), T.int4)
            B_local = T.alloc_fragment((block_N, block_K), T.int4)
            B_dequant = T.alloc_shared((block_N, block_K), T.float16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(block_N, block_K):
                    B_dequant[i, j] = (
                        T.cast(B_local[i, j], T.float16) * Scale[bx * block_N + i, (k * block_K + j) // group_size]
                    )
                T.gemm(A_shared, B_dequant, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def dequant_inputs(M, N, K, wdtype, group_size, device="cpu", seed=0):
    """(A, packed B, Scale, float32 reference of C) — the reference dequantizes exactly as the
    kernel does (weight × scale rounded to float16) and multiplies in float32."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(M, K, generator=g).half()
    if str(wdtype) == "int4":
        W = torch.randint(-8, 8, (N, K), generator=g)
        B = pack_int4(W)
        Wf = W.float()
    else:
        B = pack_fp4(torch.randn(N, K, generator=g) * 2.5)
        Wf = unpack_fp4(B)
    Scale = (torch.rand(N, K // group_size, generator=g) * 0.05 + 0.01).half()
    deq = (Wf * Scale.float().repeat_interleave(group_size, dim=1)).half().float()
    ref = A.float() @ deq.T
    return A.to(device), B.to(device), Scale.to(device), ref.to(device)


# -- int4 × int4 → int32 on the tensor cores -----------------------------------------------------------
@tilelang.jit(out_idx=[-1])
def int4_gemm(M, N, K, adtype=T.int4, bdtype=T.int4, block_M=64, block_N=64, block_K=128, num_stages=2, threads=128):
    """C = A @ Bᵀ with A (M, K) and B (N, K) packed 4-bit integers, C int32 (mma.sync m16n8k64)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), adtype), B: T.Tensor((N, K), bdtype), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), adtype)
            B_shared = T.alloc_shared((block_N, block_K), bdtype)
            C_local = T.alloc_fragment((block_M, block_N), T.int32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def int4_inputs(M, N, K, signed_a=True, signed_b=True, device="cpu", seed=1):
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-8, 8, (M, K), generator=g) if signed_a else torch.randint(0, 16, (M, K), generator=g)
    b = torch.randint(-8, 8, (N, K), generator=g) if signed_b else torch.randint(0, 16, (N, K), generator=g)
    ref = a.long() @ b.long().T
    return pack_int4(a, signed_a).to(device), pack_int4(b, signed_b).to(device), ref.to(device)


FP4_CODES = torch.arange(16, dtype=torch.uint8)
FP4_TABLE = fp4_values(FP4_CODES)  # 0, .5, 1, 1.5, 2, 3, 4, 6, -0, -.5, ... -6


# -- uint8 storage decoded by hand, the way public programs without 4-bit dtypes write it ----------
@tilelang.jit(out_idx=[-1])
def decode_u8(N, K, mode, storage="uint8", block_N=16, block_K=64, threads=128):
    """W[n, k] = the k-th 4-bit field of the packed (N, K // 2) `storage` tensor, by the
    `tilelang.quantize` converter `mode` ("unsigned", "signed" offset binary, "int" two's
    complement), as float16."""
    from tilelang.quantize import (
        _tir_packed_int_to_int_convert,
        _tir_packed_to_signed_convert,
        _tir_packed_to_unsigned_convert,
    )

    factory = {
        "unsigned": _tir_packed_to_unsigned_convert,
        "signed": _tir_packed_to_signed_convert,
        "int": _tir_packed_int_to_int_convert,
    }[mode]
    convert = factory(storage.rstrip("0123456789"), 8)

    @T.prim_func
    def main(B: T.Tensor((N, K // 2), storage), W: T.Tensor((N, K), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(K, block_K), threads=threads) as (bx, by):
            B_shared = T.alloc_shared((block_N, block_K // 2), storage)
            W_local = T.alloc_fragment((block_N, block_K), T.float16)
            T.copy(B[bx * block_N, by * block_K // 2], B_shared)
            for i, j in T.Parallel(block_N, block_K):
                W_local[i, j] = convert(4, B_shared[i, j // 2], j % 2, T.float16)
            T.copy(W_local, W[bx * block_N, by * block_K])

    return main
