"""Kernels with deliberate DSL mistakes; the tests check the reported positions."""

import tilelang
import tilelang.language as T


@tilelang.jit
def unknown_name(A, block: int = 128):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block)) as bx:
        for i in T.Parallel(block):
            A[bx * block + i] = T.exp3(A[bx * block + i])


@tilelang.jit
def bad_reduce(A):
    A: T.Tensor((64, 32), T.float32)
    out = T.empty((64,), T.float32)
    with T.Kernel(1):
        frag = T.alloc_fragment((64, 32), T.float32)
        s = T.alloc_fragment((32,), T.float32)
        T.copy(A, frag)
        T.reduce_sum(frag, s, dim=1)
        T.copy(s, out)
    return out


@tilelang.jit
def bad_copy(A):
    A: T.Tensor((64, 32), T.float32)
    with T.Kernel(1):
        sh = T.alloc_shared((32, 32), T.float32)
        T.copy(A[0:16, 0:32], sh)


@tilelang.jit
def bad_gemm(A, B):
    A: T.Tensor((64, 32), T.float16)
    B: T.Tensor((16, 64), T.float16)
    with T.Kernel(1):
        a = T.alloc_shared((64, 32), T.float16)
        b = T.alloc_shared((16, 64), T.float16)
        c = T.alloc_fragment((64, 64), T.float32)
        T.gemm(a, b, c)


@tilelang.jit
def twice(A):
    A: T.Tensor((64,), T.float32)
    A: T.Tensor((32,), T.float32)
    with T.Kernel(1):
        T.fill(A, 0)


@tilelang.jit
def too_many_grid_dims(A):
    A: T.Tensor((64,), T.float32)
    with T.Kernel(1, 1, 1, 1):
        T.fill(A, 0)


@tilelang.jit
def no_kernel(A):
    A: T.Tensor((64,), T.float32)
    return None
