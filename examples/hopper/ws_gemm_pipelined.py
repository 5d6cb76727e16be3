"""Warp-specialized GEMM with a ring of `num_stages` shared buffers (the seed's second
variant): warpgroup 1 loads with T.tma_copy, warpgroup 0 computes; a full and an
empty mbarrier per stage; the phase of round `ko // num_stages` has parity
`(ko // num_stages) % 2` (the seed writes `% num_stages`, the same for its 2 stages). Blocks are
rasterized in panels of 8 (T.use_swizzle) for L2 reuse.

Runs on the CPU backend too (regions in program order, barriers checked).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[2])
def matmul_ws_ring(M, N, K, block_M, block_N, block_K, num_stages=2, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((num_stages, block_M, block_K), dtype)
            B_shared = T.alloc_shared((num_stages, block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            mbars = T.alloc_barrier([128, 128] * num_stages)  # [full stages..., empty stages...]
            T.use_swizzle(panel_size=8)  # neighbouring blocks share A / B panels in L2

            with T.ws(0):
                T.clear(C_local)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                with T.ws(1):  # loader warps
                    T.mbarrier_wait_parity(
                        mbarrier=mbars[ko % num_stages + num_stages], parity=((ko // num_stages) % 2) ^ 1
                    )
                    T.tma_copy(
                        A[by * block_M : (by + 1) * block_M, ko * block_K : (ko + 1) * block_K],
                        A_shared[ko % num_stages, :, :],
                        barrier=mbars[ko % num_stages],
                    )
                    T.tma_copy(
                        B[ko * block_K : (ko + 1) * block_K, bx * block_N : (bx + 1) * block_N],
                        B_shared[ko % num_stages, :, :],
                        barrier=mbars[ko % num_stages],
                    )
                    T.mbarrier_arrive(mbarrier=mbars[ko % num_stages])
                with T.ws(0):  # compute warps
                    T.mbarrier_wait_parity(mbarrier=mbars[ko % num_stages], parity=(ko // num_stages) % 2)
                    T.gemm(A_shared[ko % num_stages, :, :], B_shared[ko % num_stages, :, :], C_local)
                    T.mbarrier_arrive(mbarrier=mbars[ko % num_stages + num_stages])

            with T.ws(0):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def main() -> None:
    dev = device()
    M, N, K = (4096, 4096, 4096) if on_gpu() else (200, 136, 224)
    kernel = matmul_ws_ring(M, N, K, 128, 128, 64)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    check("warp-specialized gemm (2-stage ring)", kernel(a, b), a.float() @ b.float(), atol=1e-2 * K**0.5)


if __name__ == "__main__":
    main()
