# ruff: noqa
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def elementwise_add(M, N, block_M=64, block_N=256, in_dtype="float16", out_dtype="float32", threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_local = T.alloc_fragment((block_M, block_N), in_dtype)
            B_local = T.alloc_fragment((block_M, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), out_dtype)
            T.copy(A[by * block_M, bx * block_N], A_local)
            T.copy(B[by * block_M, bx * block_N], B_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.cast(A_local[i, j], out_dtype) + T.cast(B_local[i, j], out_dtype)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def run(M=1000, N=3000):
    kernel = elementwise_add(M, N)
    a = torch.randn(M, N, dtype=torch.float16, device="cuda")
    b = torch.randn(M, N, dtype=torch.float16, device="cuda")
    c = kernel(a, b)
    torch.testing.assert_close(c, a.float() + b.float())


if __name__ == "__main__":
    run()
