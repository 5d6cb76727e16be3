# ruff: noqa
import itertools

import torch
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune


def get_configs():
    block_M = [64, 128]
    block_N = [64, 128]
    block_K = [32, 64]
    num_stages = [2, 3]
    threads = [128, 256]
    _configs = list(itertools.product(block_M, block_N, block_K, num_stages, threads))
    configs = [
        {"block_M": c[0], "block_N": c[1], "block_K": c[2], "num_stages": c[3], "threads": c[4]} for c in _configs
    ]
    return configs


@autotune(configs=get_configs(), warmup=3, rep=20)
@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, num_stages, threads):
    dtype = "float16"
    accum_dtype = "float"

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


if __name__ == "__main__":
    kernel = matmul(4096, 4096, 4096)
    print(kernel.config)
