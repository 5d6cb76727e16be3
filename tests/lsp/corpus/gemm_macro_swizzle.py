# ruff: noqa
import argparse

import tilelang
import tilelang.language as T
from tilelang.intrinsics import make_mma_swizzle_layout as make_swizzle_layout


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float", num_stages=2, threads=128):
    @T.macro
    def load_tiles(A, B, A_shared, B_shared, by, bx, ko):
        T.copy(A[by * block_M, ko * block_K], A_shared)
        T.copy(B[ko * block_K, bx * block_N], B_shared)

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.annotate_layout({A_shared: make_swizzle_layout(A_shared), B_shared: make_swizzle_layout(B_shared)})
            T.use_swizzle(panel_size=10, enable=True)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                load_tiles(A, B, A_shared, B_shared, by, bx, ko)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    args = parser.parse_args()
    func = matmul(args.m, args.n, args.k, 128, 128, 32)
    kernel = tilelang.compile(func, out_idx=-1)
    print(kernel.get_kernel_source())


if __name__ == "__main__":
    main()
