"""Small kernels of the explicit Hopper API shared by the CPU and GPU tests."""

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout


@tilelang.jit(out_idx=[1])
def cluster_ranks(rows, cols):
    """y[r, :] = 2 x[r, :] + (rank of block r in its cluster of 2)."""

    @T.prim_func
    def main(X: T.Tensor((rows, cols), "float32"), Y: T.Tensor((rows, cols), "float32")):
        with T.ClusterKernel(rows, threads=128, cluster_dims=(2, 1, 1)) as bx:
            T.cluster_sync()
            for i in T.Parallel(cols):
                Y[bx, i] = X[bx, i] * 2 + T.block_rank_in_cluster()
            T.cluster_arrive()
            T.cluster_wait()

    return main


@tilelang.jit(out_idx=[1])
def sync_ops(remote=False):
    """Every explicit synchronisation statement once: warpgroup 0 loads a tile with TMA
    (expect-tx + one arrival), warpgroup 1 waits and stores it with a TMA store; the
    block then meets on a second barrier and at a cluster barrier. B = A."""

    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.ClusterKernel(2, threads=256, cluster_dims=2) as bx:
            S = T.alloc_shared((64, 64), "float16")
            T.annotate_layout({S: make_swizzled_layout(S)})  # a TMA swizzle
            bars = T.alloc_barrier([1, 256, 128])
            T.cluster_arrive_relaxed()
            T.cluster_wait()
            with T.ws(0):
                T.dec_max_nreg(40)
                T.tma_copy(A[bx * 64, 0], S, barrier=bars[0])
                T.mbarrier_arrive_expect_tx(bars[0], 0)
            with T.ws(1):
                T.inc_max_nreg(232)
                T.barrier_wait(bars[0], 0)
                T.fence_proxy_async()
                T.sync_threads(1, 128)
                T.tma_copy(S, B[bx * 64, 0])
                T.tma_store_arrive()
                T.tma_store_wait(0)
            T.mbarrier_expect_tx(bars[1], 0)
            T.mbarrier_arrive(bars[1])
            T.mbarrier_wait_parity(bars[1], 0)
            T.wait_wgmma(0)
            if remote:
                T.mbarrier_arrive(bars[2], cta_id=1 - T.block_rank_in_cluster())
            T.cluster_sync()

    return main


@tilelang.jit(out_idx=[2])
def seed_ws_ring(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float16", accum_dtype="float32"):
    """The seed's second warp-specialized GEMM (seed 000, "Warp specialization"), verbatim."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        num_stages = 2
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((num_stages, block_M, block_K), dtype)
            B_shared = T.alloc_shared((num_stages, block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            mbars = T.alloc_barrier([128, 128] * num_stages)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                with T.ws(1):  # loader warps
                    T.mbarrier_wait_parity(
                        mbarrier=mbars[ko % num_stages + num_stages], parity=((ko // num_stages) % num_stages) ^ 1
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
                    T.mbarrier_wait_parity(mbarrier=mbars[ko % num_stages], parity=(ko // num_stages) % num_stages)
                    T.gemm(A_shared[ko % num_stages, :, :], B_shared[ko % num_stages, :, :], C_local)
                    T.mbarrier_arrive(mbarrier=mbars[ko % num_stages + num_stages])

            with T.ws(0):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main
