"""A program with a planted bug for `python -m tilelang.autodd` (see docs/debugging.md):

    python -m tilelang.autodd docs/debugging/autodd_buggy.py \
        --err-msg "gemm operand shapes" -o minimized.py -j 2

B_shared is declared (block_M, block_N) where (block_K, block_N) was meant; everything else —
the argument parsing, the reference, the reporting — is irrelevant to the error.
"""

import argparse
import math

import tilelang
import tilelang.language as T


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--k", type=int, default=512)
    parser.add_argument("--verbose", action="store_true")
    return parser.parse_args()


def describe(M, N, K):
    flops = 2 * M * N * K
    print(f"GEMM {M}x{N}x{K}: {flops / 1e9:.3f} GFLOP, log2 K = {math.log2(K):.1f}")
    return flops


@tilelang.jit(out_idx=[-1], target="c")
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_M, block_N), dtype)  # the bug: should be (block_K, block_N)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def reference(a, b):
    return (a.float() @ b.float()).half()


def main():
    args = parse_args()
    describe(args.m, args.n, args.k)
    import torch

    a = torch.randn(args.m, args.k, dtype=torch.float16)
    b = torch.randn(args.k, args.n, dtype=torch.float16)
    kernel = matmul(args.m, args.n, args.k)
    c = kernel(a, b)
    err = (c.float() - reference(a, b).float()).abs().max().item()
    if args.verbose:
        print(kernel.get_kernel_source())
    print(f"max error {err:.3e}")


if __name__ == "__main__":
    main()
