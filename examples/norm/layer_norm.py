"""LayerNorm (no affine) — the reduction pattern of the CUDA-patterns seed: one row per block."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, block_size):
    @T.prim_func
    def main(x: T.Tensor((M, N), "float32"), y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=block_size) as bx:
            A_local = T.alloc_fragment((N,), "float32")
            A_pow_local = T.alloc_fragment((N,), "float32")
            A_sum = T.alloc_fragment((1,), "float32")
            A_powsum = T.alloc_fragment((1,), "float32")

            for tid in T.Parallel(N):
                A_local[tid] = x[bx, tid]
                A_pow_local[tid] = x[bx, tid] * x[bx, tid]

            T.reduce_sum(A_local, A_sum, dim=0)
            T.reduce_sum(A_pow_local, A_powsum, dim=0)

            for tid in T.Parallel(N):
                mean_val = A_sum[0] / N
                var_val = A_powsum[0] / N - mean_val * mean_val
                y[bx, tid] = (A_local[tid] - mean_val) / T.sqrt(var_val + 1e-5)

    return main


def main() -> None:
    dev = device()
    M, N = (4096, 1024) if on_gpu() else (100, 384)
    x = torch.randn(M, N, device=dev)
    ref = torch.nn.functional.layer_norm(x, (N,), eps=1e-5)
    check("layer_norm", layer_norm(M, N, 128)(x), ref, atol=1e-4, rtol=1e-4)


if __name__ == "__main__":
    main()
