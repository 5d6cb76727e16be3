"""Vector add (the seed's first kernel), its ReLU variant, and the lazy 2-D elementwise pattern."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device

import tilelang
import tilelang.language as T


@tilelang.jit
def vector_add(A, B, block_M: int = 128):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)

    with T.Kernel(T.ceildiv(M, block_M), threads=128) as (bx,):
        for i in T.Parallel(block_M):
            C[bx * block_M + i] = A[bx * block_M + i] + B[bx * block_M + i]

    return C


@tilelang.jit
def vector_add_relu(A, B, block_M: int = 128):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)

    with T.Kernel(T.ceildiv(M, block_M), threads=128) as (bx,):
        for i in T.Parallel(block_M):
            C[bx * block_M + i] = T.max(A[bx * block_M + i] + B[bx * block_M + i], 0)

    return C


@tilelang.jit(out_idx=[-1])
def elementwise_add(M, N, block_M, block_N, threads):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for local_y, local_x in T.Parallel(block_M, block_N):
                y = by * block_M + local_y
                x = bx * block_N + local_x
                C[y, x] = A[y, x] + B[y, x]

    return main


@tilelang.jit(out_idx=[-1])
def conditional_elementwise(N, threads):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, threads), threads=threads) as bx:
            for i in T.Parallel(threads):
                idx = bx * threads + i
                if idx < N:
                    C[idx] = T.if_then_else(A[idx] > 0, A[idx] + B[idx], A[idx] - B[idx])

    return main


def main() -> None:
    dev = device()
    for M in (1024, 1000):
        a = torch.randn(M, device=dev)
        b = torch.randn(M, device=dev)
        check(f"vector_add M={M}", vector_add(a, b), a + b, rtol=0, atol=0)
        check(f"vector_add_relu M={M}", vector_add_relu(a, b, block_M=64), torch.relu(a + b), rtol=0, atol=0)
    a = torch.randn(200, 300, device=dev)
    b = torch.randn(200, 300, device=dev)
    check("elementwise_add 200x300", elementwise_add(200, 300, 32, 64, 128)(a, b), a + b, rtol=0, atol=0)
    x = torch.randn(1000, device=dev)
    y = torch.randn(1000, device=dev)
    check(
        "conditional_elementwise",
        conditional_elementwise(1000, 128)(x, y),
        torch.where(x > 0, x + y, x - y),
        rtol=0,
        atol=0,
    )


if __name__ == "__main__":
    main()
