# ruff: noqa
"""Several small kernels in one file, sharing helpers and module constants."""

import functools

import tilelang
import tilelang.language as T

FP16 = T.float16
FP32 = T.float32
TILE = 64
THREADS = 128


def ceil_div(a, b):
    return (a + b - 1) // b


def round_up(x, m):
    return ceil_div(x, m) * m


@T.macro
def load_tile(src, dst, row, col):
    T.copy(src[row, col], dst)


@tilelang.jit(out_idx=[-1])
def scale_rows(M, N, alpha=2.0):
    padded = round_up(N, TILE)

    @T.prim_func
    def main(A: T.Tensor((M, N), FP32), B: T.Tensor((M, N), FP32)):
        with T.Kernel(ceil_div(M, TILE), threads=THREADS) as bx:
            tile = T.alloc_shared((TILE, padded), FP32)
            load_tile(A, tile, bx * TILE, 0)
            for i, j in T.Parallel(TILE, N):
                B[bx * TILE + i, j] = tile[i, j] * alpha

    return main


@tilelang.jit(out_idx=[-1])
def cast_fp32_to_fp16(shape):
    numel = functools.reduce(lambda a, b: a * b, shape)
    block = 1024

    @T.prim_func
    def main(X: T.Tensor((numel,), FP32), Y: T.Tensor((numel,), FP16)):
        with T.Kernel(ceil_div(numel, block), threads=THREADS) as bx:
            buf = T.alloc_fragment((block,), FP32)
            T.copy(X[bx * block], buf)
            T.copy(buf, Y[bx * block])

    return main


@tilelang.jit(out_idx=[-1])
def relu_gemm(M, N, K, block_M=TILE * 2, block_N=TILE * 2, block_K=TILE // 2):
    @T.prim_func
    def main(A: T.Tensor((M, K), FP16), B: T.Tensor((K, N), FP16), C: T.Tensor((M, N), FP16)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=THREADS) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), FP16)
            B_shared = T.alloc_shared((block_K, block_N), FP16)
            C_local = T.alloc_fragment((block_M, block_N), FP32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                load_tile(A, A_shared, by * block_M, k * block_K)
                load_tile(B, B_shared, k * block_K, bx * block_N)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


if __name__ == "__main__":
    scale_rows(1000, 200)
    cast_fp32_to_fp16((64, 4096))
    relu_gemm(2048, 2048, 2048)
