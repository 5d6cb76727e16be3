# ruff: noqa
import tilelang
import tilelang.language as T

dtype = T.float16
accum_dtype = T.float32
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 32
NUM_STAGES = 2


@tilelang.jit(out_idx=[-1])
def matmul_nt(M, N, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
            B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), dtype)
            C_local = T.alloc_fragment((BLOCK_M, BLOCK_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=NUM_STAGES):
                T.copy(A[by * BLOCK_M, k * BLOCK_K], A_shared)
                T.copy(B[bx * BLOCK_N, k * BLOCK_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * BLOCK_M, bx * BLOCK_N])

    return main
