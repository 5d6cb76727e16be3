"""The seed's TMA double-buffer snippet wrapped into a kernel: attention scores
S = Q · Kᵀ per (batch, head, query block). Warpgroup 0 streams K blocks into a
two-slot ring with T.tma_copy (full barrier: data arrived; empty barrier: slot
consumed), warpgroup 1 multiplies each block as soon as it lands.

On the CPU backend the two regions run one after the other, so the producer can
run at most two blocks ahead: sequences of up to 2 × block_N keys work there; a
longer one stops with "this barrier protocol needs sm_90a".
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[2])
def qk_scores(batch, heads, seq_len, dim, block_M, block_N, dtype="float16", accum_dtype="float32"):
    block_count = (seq_len + block_N - 1) // block_N
    shape = (batch, heads, seq_len, dim)

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        S: T.Tensor((batch, heads, seq_len, seq_len), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=256) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((2, block_N, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum_dtype)
            mbars = T.alloc_barrier([128] * 4)  # two full + two empty
            q_ready = T.alloc_barrier(arrive_count=128)

            with T.ws(0):  # producer role (loader warps)
                T.tma_copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared, barrier=q_ready)
                T.mbarrier_arrive(q_ready)
                for bi in T.serial(block_count):
                    k = bi * block_N
                    T.mbarrier_wait_parity(mbarrier=mbars[bi % 2 + 2], parity=(((bi & 3) >> 1) ^ 1))
                    T.tma_copy(K[bz, by, k : k + block_N, :], K_shared[bi % 2, :, :], barrier=mbars[bi % 2])
                    T.mbarrier_arrive(mbarrier=mbars[bi % 2])

            with T.ws(1):  # consumer role (compute warps)
                T.mbarrier_wait_parity(q_ready, 0)
                for bi in T.serial(block_count):
                    T.mbarrier_wait_parity(mbarrier=mbars[bi % 2], parity=((bi & 3) >> 1))
                    T.gemm(
                        Q_shared,
                        K_shared[bi % 2, :, :],
                        acc_s,
                        transpose_B=True,
                        policy=T.GemmWarpPolicy.FullRow,
                        clear_accum=True,
                    )
                    T.mbarrier_arrive(mbarrier=mbars[bi % 2 + 2])
                    T.copy(acc_s, S[bz, by, bx * block_M, bi * block_N])

    return main


def main() -> None:
    dev = device()
    if on_gpu():
        batch, heads, seq_len, dim, bm, bn = 4, 8, 1024, 128, 128, 128
    else:
        batch, heads, seq_len, dim, bm, bn = 2, 2, 100, 64, 64, 64  # two K blocks: fits program order
    kernel = qk_scores(batch, heads, seq_len, dim, bm, bn)
    q = torch.randn(batch, heads, seq_len, dim, device=dev, dtype=torch.float16)
    k = torch.randn(batch, heads, seq_len, dim, device=dev, dtype=torch.float16)
    check("TMA double-buffered Q·Kᵀ", kernel(q, k), q.float() @ k.float().transpose(-1, -2), atol=1e-2 * dim**0.5)


if __name__ == "__main__":
    main()
