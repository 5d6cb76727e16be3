"""Persistent, warp-specialized GEMM: `sm_num` resident blocks walk the output tiles
with T.Persistent (panel-swizzled for L2 reuse); in each block warpgroup 1 streams
A/B tiles into a `num_stages` ring with T.tma_copy and warpgroup 0 multiplies. The
ring's phases run on across tiles: each role counts its pipeline steps in a
`T.alloc_var`, so stage = step % num_stages and parity = (step // num_stages) & 1.
`T.set_max_nreg` moves registers from the loader to the math warpgroup.

On the CPU backend the roles run one after the other, so only configurations whose
blocks make at most `num_stages` pipeline steps run there (larger ones stop with
"this barrier protocol needs sm_90a").
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[2])
def matmul_persistent_ws(
    M, N, K, block_M, block_N, block_K, sm_num, num_stages=2, dtype="float16", accum_dtype="float32"
):
    m_blocks = (M + block_M - 1) // block_M
    n_blocks = (N + block_N - 1) // block_N
    k_iters = (K + block_K - 1) // block_K

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(sm_num, threads=256) as block_id:
            A_shared = T.alloc_shared((num_stages, block_M, block_K), dtype)
            B_shared = T.alloc_shared((num_stages, block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            full = T.alloc_barrier([128] * num_stages)  # tile landed in the stage
            empty = T.alloc_barrier([128] * num_stages)  # stage consumed

            with T.ws(1):  # loader
                T.set_max_nreg(40, 0)
                step = T.alloc_var(T.int32, init=0)
                for bx, by in T.Persistent([m_blocks, n_blocks], sm_num, block_id):
                    for ko in T.serial(k_iters):
                        s = step % num_stages
                        T.mbarrier_wait_parity(empty[s], ((step // num_stages) & 1) ^ 1)
                        T.tma_copy(A[bx * block_M, ko * block_K], A_shared[s, :, :], barrier=full[s])
                        T.tma_copy(B[ko * block_K, by * block_N], B_shared[s, :, :], barrier=full[s])
                        T.mbarrier_arrive(full[s])
                        step += 1

            with T.ws(0):  # math
                T.set_max_nreg(240, 1)
                step = T.alloc_var(T.int32, init=0)
                for bx, by in T.Persistent([m_blocks, n_blocks], sm_num, block_id):
                    T.clear(C_local)
                    for _ko in T.serial(k_iters):
                        s = step % num_stages
                        T.mbarrier_wait_parity(full[s], (step // num_stages) & 1)
                        T.gemm(A_shared[s, :, :], B_shared[s, :, :], C_local)
                        T.mbarrier_arrive(empty[s])
                        step += 1
                    T.copy(C_local, C[bx * block_M, by * block_N])

    return main


def main() -> None:
    dev = device()
    if on_gpu():
        from tilelang.carver.arch import driver

        sm_num, (M, N, K), stages = driver.get_num_sms(), (4096, 4096, 4096), 4
    else:
        sm_num, (M, N, K), stages = 4, (200, 136, 128), 2  # one tile and two steps per block
    kernel = matmul_persistent_ws(M, N, K, 128, 128, 64, sm_num, stages)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    check("persistent warp-specialized gemm", kernel(a, b), a.float() @ b.float(), atol=1e-2 * K**0.5)


if __name__ == "__main__":
    main()
