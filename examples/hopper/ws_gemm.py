"""Warp-specialized GEMM (the seed's §5.2 sample): warpgroup 0 loads tiles with
T.tma_copy, warpgroup 1 computes; two mbarriers hand the single buffer back and
forth (`data_is_ready` / `compute_is_done`, phases flipping every iteration).

Runs on the CPU backend too: the regions execute in program order there and the
barriers are checked (a protocol that cannot complete in program order is an error).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[2])
def matmul_ws(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            data_is_ready = T.alloc_barrier(arrive_count=128)
            compute_is_done = T.alloc_barrier(arrive_count=128)

            with T.ws(1):  # consumer warpgroup
                T.clear(C_local)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):  # the barriers are the pipeline
                with T.ws(0):  # producer: wait until the last tile was consumed, load, signal
                    T.barrier_wait(compute_is_done, (ko + 1) % 2)
                    T.tma_copy(A[by * block_M, ko * block_K], A_shared, barrier=data_is_ready)
                    T.tma_copy(B[ko * block_K, bx * block_N], B_shared, barrier=data_is_ready)
                    T.barrier_arrive(data_is_ready)
                with T.ws(1):  # consumer: wait for the tile, multiply, hand the buffer back
                    T.barrier_wait(data_is_ready, ko % 2)
                    T.gemm(A_shared, B_shared, C_local)
                    T.barrier_arrive(compute_is_done)

            with T.ws(1):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main() -> None:
    dev = device()
    M, N, K = (4096, 4096, 4096) if on_gpu() else (200, 136, 160)
    kernel = matmul_ws(M, N, K, 128, 128, 64)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    check("warp-specialized gemm", kernel(a, b), a.float() @ b.float(), atol=1e-2 * K**0.5)


if __name__ == "__main__":
    main()
