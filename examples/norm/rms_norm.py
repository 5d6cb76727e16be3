"""RMSNorm, one row per block: load the row into a fragment, reduce the sum of
squares, scale. Also the seed's row reduction pattern (reduce_sum to (1,))."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def rms_norm(M, N, threads=256, eps=1e-6):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=threads) as bx:
            A_local = T.alloc_fragment((N,), "float32")
            A_sq = T.alloc_fragment((N,), "float32")
            A_sum = T.alloc_fragment((1,), "float32")
            T.copy(A[bx, 0:N], A_local)
            for i in T.Parallel(N):
                A_sq[i] = A_local[i] * A_local[i]
            T.reduce_sum(A_sq, A_sum, dim=0)
            for i in T.Parallel(N):
                B[bx, i] = A_local[i] * T.rsqrt(A_sum[0] / N + eps)

    return main


@tilelang.jit(out_idx=[-1])
def row_sum(M, N, block_size):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=block_size) as bx:
            A_local = T.alloc_fragment((N,), "float32")
            C_local = T.alloc_fragment((1,), "float32")
            T.copy(A[bx, 0:N], A_local)
            T.reduce_sum(A_local, C_local, dim=0)
            C[bx] = C_local[0]

    return main


def main() -> None:
    dev = device()
    M, N = (8192, 8192) if on_gpu() else (64, 1000)
    a = torch.randn(M, N, device=dev)
    ref = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6)
    check("rms_norm", rms_norm(M, N)(a), ref, atol=1e-4, rtol=1e-4)
    check("row_sum", row_sum(M, N, 128)(a), a.sum(-1), atol=1e-3, rtol=1e-4)


if __name__ == "__main__":
    main()
