"""Persistent GEMM (the seed's T.Persistent example): a fixed grid of resident
blocks walks all output tiles, eliminating the tail wave."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul_persistent(
    M, N, K, block_M, block_N, block_K, threads, num_stages, sm_num, dtype="float16", accum_dtype="float32"
):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        m_blocks = T.ceildiv(M, block_M)
        n_blocks = T.ceildiv(N, block_N)

        with T.Kernel(sm_num, threads=threads) as (block_id):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            for bx, by in T.Persistent([m_blocks, n_blocks], sm_num, block_id):
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[bx * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, by * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[bx * block_M, by * block_N])

    return main


def main() -> None:
    dev = device()
    if on_gpu():
        from tilelang.carver.arch import driver

        sm_num = driver.get_num_sms()
        M, N, K = 4096, 4096, 1024
    else:
        sm_num, (M, N, K) = 3, (300, 200, 96)
    kernel = matmul_persistent(M, N, K, 64, 64, 32, 128, 2, sm_num)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    check("persistent gemm", kernel(a, b), a.float() @ b.float(), atol=1e-2 * K**0.5)


if __name__ == "__main__":
    main()
