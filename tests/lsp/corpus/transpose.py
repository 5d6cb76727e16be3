# ruff: noqa
import tilelang
import tilelang.language as T


# tilelang: M=4096, N=2048
@tilelang.jit(out_idx=[1])
def transpose(M, N, block=32, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            tile = T.alloc_shared((block, block), dtype)
            T.copy(A[by * block, bx * block], tile)
            for i, j in T.Parallel(block, block):
                B[bx * block + i, by * block + j] = tile[j, i]

    return main
