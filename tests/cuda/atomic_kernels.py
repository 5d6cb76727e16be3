"""Kernels whose atomics the CUDA backend turns into vector atomics (shared by the CPU tests
in tests/cuda/test_vector_atomic.py and the GPU tests in tests/gpu/test_atomic_cuda.py)."""

import tilelang
import tilelang.language as T


@tilelang.jit
def splitk_gemm(M, N, K, split, bm=64, bn=64, bk=32, out_dtype="float16", in_dtype="float16", threads=128):
    """Split-K GEMM: block z multiplies one K slice and atomically adds its tile into C
    (the accumulator fragment gives each thread pairs of adjacent columns)."""
    k_slice = K // split

    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((K, N), in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), split, threads=threads) as (bx, by, bz):
            As = T.alloc_shared((bm, bk), in_dtype)
            Bs = T.alloc_shared((bk, bn), in_dtype)
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k_slice, bk), num_stages=2):
                T.copy(A[by * bm, bz * k_slice + ko * bk], As)
                T.copy(B[bz * k_slice + ko * bk, bx * bn], Bs)
                T.gemm(As, Bs, acc)
            T.atomic_add(C[by * bm, bx * bn], acc)

    return main


@tilelang.jit
def column_atomic_sum(M, N, dtype="float16", bm=16):
    """Every block adds its rows into out: element-form atomics from a T.Parallel loop."""

    @T.prim_func
    def main(x: T.Tensor((M, N), dtype), out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            for i, j in T.Parallel(bm, N):
                T.atomic_add(out[j], x[bx * bm + i, j])

    return main


@tilelang.jit
def tile_atomic_from_shared(M, N, dtype="bfloat16", bm=32, bn=64):
    """Region-form atomic of a shared tile into global memory."""

    @T.prim_func
    def main(x: T.Tensor((M, N), dtype), out: T.Tensor((bm, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            s = T.alloc_shared((bm, bn), dtype)
            T.copy(x[by * bm, bx * bn], s)
            T.atomic_add(out[0, bx * bn], s)

    return main
