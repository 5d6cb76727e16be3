# ruff: noqa
import tilelang
import tilelang.language as T

M, N = 2048, 2048
BLOCK = 128
dtype = "float16"


@T.prim_func
def add_one(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
    with T.Kernel(T.ceildiv(N, BLOCK), T.ceildiv(M, BLOCK), threads=256) as (bx, by):
        tile = T.alloc_shared((BLOCK, BLOCK), dtype)
        frag = T.alloc_fragment((BLOCK, BLOCK), dtype)
        T.copy(A[by * BLOCK, bx * BLOCK], tile)
        T.copy(tile, frag)
        for i, j in T.Parallel(BLOCK, BLOCK):
            frag[i, j] = frag[i, j] + 1
        T.copy(frag, B[by * BLOCK, bx * BLOCK])


kernel = tilelang.compile(add_one, out_idx=[1])
