# ruff: noqa
import torch
import tilelang
import tilelang.language as T

N = 4096
K = 4096


@tilelang.jit(out_idx=[-1])
def naive_gemv(N: int, K: int, BLOCK_N: int, BLOCK_K: int, dtype: str = "float16", accum_dtype: str = "float"):
    @T.prim_func
    def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N)) as bn:
            A_shared = T.alloc_shared((BLOCK_K,), dtype)
            B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), dtype)
            for tn in T.Parallel(BLOCK_N):
                C_reg = T.alloc_local((1,), accum_dtype)
                T.clear(C_reg)
                for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                    for tk in T.serial(BLOCK_K):
                        A_shared[tk] = A[bk * BLOCK_K + tk]
                        B_shared[tn, tk] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]
                    for tk in T.serial(BLOCK_K):
                        C_reg[0] += A_shared[tk].astype(accum_dtype) * B_shared[tn, tk].astype(accum_dtype)
                C[bn * BLOCK_N + tn] = C_reg[0]

    return main


if __name__ == "__main__":
    kernel = naive_gemv(N, K, 128, 32)
    a = torch.randn(K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    print((kernel(a, b) - b @ a).abs().max())
