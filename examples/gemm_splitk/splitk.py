"""Split-K GEMM: the third grid dimension splits K; partial tiles are combined with T.atomic_add."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit
def matmul_splitk(
    M, N, K, block_M, block_N, block_K, split_k, dtype="float16", accum_dtype="float32", out_dtype="float32"
):
    splitK = K // split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=0):
                T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])

    return main


def main() -> None:
    dev = device()
    M, N, K = (1024, 1024, 8192) if on_gpu() else (96, 80, 256)
    kernel = matmul_splitk(M, N, K, 64, 64, 32, 4)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = torch.zeros(M, N, device=dev, dtype=torch.float32)  # split-K accumulates: C must start at zero
    kernel(a, b, c)
    check("split-K gemm", c, a.float() @ b.float(), atol=1e-2 * K**0.5)


if __name__ == "__main__":
    main()
