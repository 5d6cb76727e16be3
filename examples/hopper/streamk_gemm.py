"""Stream-K GEMM: the M×N×K work (tiles × K-steps) is cut into equal contiguous
ranges, one per resident block, so every SM gets the same number of K-steps even
when the tile count is not a multiple of the SM count. A block walks its range tile
segment by tile segment; a segment that covers a whole tile stores it, a partial
one adds its partial sums into C with T.atomic_add (C starts at zero).

Rasterization: the tile order is row-major within panels of `panel` rows of tiles,
as T.use_swizzle does for ordinary grids (neighbouring blocks share A/B panels in L2).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit
def matmul_streamk(
    M, N, K, block_M, block_N, block_K, sm_num, num_stages=2, panel=4, dtype="float16", accum_dtype="float32"
):
    m_blocks = (M + block_M - 1) // block_M
    n_blocks = (N + block_N - 1) // block_N
    k_iters = (K + block_K - 1) // block_K
    total = m_blocks * n_blocks * k_iters
    per_block = (total + sm_num - 1) // sm_num

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(sm_num, threads=128) as pid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            it = T.alloc_var(T.int32, init=pid * per_block)
            end = T.min(pid * per_block + per_block, total)
            while it < end:
                tile = it // k_iters
                k_begin = it % k_iters
                k_end = T.min(k_iters, k_begin + (end - it))
                # panel rasterization: `panel` rows of tiles, column by column inside a panel
                rows = T.min(m_blocks - tile // (panel * n_blocks) * panel, panel)
                in_panel = tile % (panel * n_blocks)
                bx = tile // (panel * n_blocks) * panel + in_panel % rows
                by = in_panel // rows
                T.clear(C_local)
                for ko in T.Pipelined(k_end - k_begin, num_stages=num_stages):
                    T.copy(A[bx * block_M, (k_begin + ko) * block_K], A_shared)
                    T.copy(B[(k_begin + ko) * block_K, by * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                if k_begin == 0 and k_end == k_iters:
                    T.copy(C_local, C[bx * block_M, by * block_N])
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        T.atomic_add(C[bx * block_M + i, by * block_N + j], C_local[i, j])
                it = it + (k_end - k_begin)

    return main


def main() -> None:
    dev = device()
    if on_gpu():
        from tilelang.carver.arch import driver

        sm_num, (M, N, K) = driver.get_num_sms(), (3072, 3072, 4096)  # 576 tiles: 4.4 waves
    else:
        sm_num, (M, N, K) = 3, (200, 136, 160)  # 4 tiles × 5 K-steps over 3 blocks
    kernel = matmul_streamk(M, N, K, 128, 128, 32, sm_num)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = torch.zeros(M, N, device=dev, dtype=torch.float32)
    kernel(a, b, c)
    check("stream-K gemm", c, a.float() @ b.float(), atol=1e-2 * K**0.5)


if __name__ == "__main__":
    main()
