"""Quickstart: the seed's FP16 GEMM + ReLU, checked against a float32 torch reference.

Runs on the GPU when one is present (CUDA backend), otherwise on the CPU
backend; prints the verdict and the generated source.
"""

import torch

import tilelang
import tilelang.language as T


# Problem size the language server uses for hints and "compile and show":
# tilelang: M=1024, N=1024, K=1024
@tilelang.jit
def matmul(A, B, block_M: int, block_N: int, block_K: int):
    M, N, K = T.const("M, N, K")
    dtype = T.float16
    accum_dtype = T.float32
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    # grid: (blocks along N, blocks along M), 128 threads per block
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_local)

        # 3-stage software pipeline: load tile k+1 while computing tile k
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        # epilogue: ReLU
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)

        T.copy(C_local, C[by * block_M, bx * block_N])

    return C


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    M = N = K = 1024 if device == "cuda" else 256
    kernel = matmul.compile(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32)

    a = torch.randn(M, K, device=device, dtype=torch.float16)
    b = torch.randn(K, N, device=device, dtype=torch.float16)
    c = kernel(a, b)

    ref = torch.relu(a.float() @ b.float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=0.05 * (K / 1024) ** 0.5 + 0.02)
    print("Kernel output matches PyTorch reference.")
    print(f"target: {kernel.target}")
    print(kernel.get_kernel_source())


if __name__ == "__main__":
    main()
