"""T.dynamic: one compiled GEMM serves every M, N, K (the seed's matmul_dynamic_mnk)."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device

import tilelang
import tilelang.language as T


@tilelang.jit
def matmul_dynamic_mnk(
    A, B, block_M, block_N, block_K, trans_A, trans_B, in_dtype, out_dtype, accum_dtype, num_stages, threads
):
    M = T.dynamic("m")
    N = T.dynamic("n")
    K = T.dynamic("k")

    A: T.Tensor((M, K), in_dtype)
    B: T.Tensor((K, N), in_dtype)
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), in_dtype)
        B_shared = T.alloc_shared((block_K, block_N), in_dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])

    return C


def main() -> None:
    dev = device()
    cfg = dict(
        block_M=64,
        block_N=64,
        block_K=32,
        trans_A=False,
        trans_B=False,
        in_dtype=T.float16,
        out_dtype=T.float16,
        accum_dtype=T.float32,
        num_stages=2,
        threads=128,
    )
    for m, n, k in ((128, 96, 64), (200, 72, 100)):
        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        b = torch.randn(k, n, device=dev, dtype=torch.float16)
        check(f"matmul_dynamic {m}x{n}x{k}", matmul_dynamic_mnk(a, b, **cfg), a.float() @ b.float(), atol=1e-2 * k**0.5)
    print(f"compiled kernels: {len(matmul_dynamic_mnk._kernels)} (one serves every shape)")


if __name__ == "__main__":
    main()
