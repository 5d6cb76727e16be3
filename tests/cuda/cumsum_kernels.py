"""Kernels for T.cumsum on register fragments and T.Parallel over a dynamic extent
(shared by tests/cuda/test_fragment_cumsum.py and tests/gpu/test_cumsum_dynamic_cuda.py)."""

import tilelang
import tilelang.language as T


@tilelang.jit
def fragment_cumsum(M, N, dim, reverse=False, bm=32, bn=64, dtype="float32", in_place=True, threads=128):
    """Per tile: global → fragment, T.cumsum on the fragment along `dim`, fragment → global."""

    @T.prim_func
    def main(x: T.Tensor((M, N), dtype), y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a = T.alloc_fragment((bm, bn), dtype)
            b = T.alloc_fragment((bm, bn), dtype)
            T.copy(x[by * bm, bx * bn], a)
            if in_place:
                T.cumsum(a, dim=dim, reverse=reverse)
                T.copy(a, y[by * bm, bx * bn])
            else:
                T.cumsum(a, b, dim=dim, reverse=reverse)
                T.copy(b, y[by * bm, bx * bn])

    return main


@tilelang.jit
def cumsum_of_gemm(M, N, K, bm=64, bn=64, bk=32):
    """Row-wise prefix sums of a GEMM accumulator (an mma fragment), written as fp32."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], As)
                T.copy(B[ko * bk, bx * bn], Bs)
                T.gemm(As, Bs, acc)
            T.cumsum(acc, dim=1)
            T.copy(acc, C[by * bm, bx * bn])

    return main


@tilelang.jit
def dynamic_parallel_scale(M, block=4, threads=128):
    """y = 2·x + 1 over rows of a dynamic length n: T.Parallel(block, n)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(x: T.Tensor((M, n), "float32"), y: T.Tensor((M, n), "float32")):
        with T.Kernel(T.ceildiv(M, block), threads=threads) as bx:
            for i, j in T.Parallel(block, n):
                y[bx * block + i, j] = x[bx * block + i, j] * 2.0 + 1.0

    return main


@tilelang.jit
def dynamic_parallel_atomic(M, threads=128):
    """Column sums into out[n] with atomics from T.Parallel over a dynamic n (1-D nest)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(x: T.Tensor((M, n), "float32"), out: T.Tensor((n,), "float32")):
        with T.Kernel(M, threads=threads) as bx:
            for j in T.Parallel(n):
                T.atomic_add(out[j], x[bx, j])

    return main
