"""The public-example 2-D convolution (NHWC input, (KH, KW, C, F) weight viewed as a matrix
through `T.Tensor(shape, dtype, kernel.data)`, T.im2col or direct T.Parallel indexing, then
T.gemm in a T.Pipelined loop) and its torch reference; shared by tests/conformance/test_conv.py,
its GPU twin and benchmarks/conv2d.py. Imports only the core package and torch."""

from __future__ import annotations

import torch

import tilelang.language as T


def convolution(N, C, H, W, F, K, S, D, P, block_M, block_N, block_K, num_stages, threads, style="im2col",
                dtype="float16", accum_dtype="float"):  # fmt: skip
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(
        data: T.Tensor((N, H, W, C), dtype),
        kernel: T.Tensor((KH, KW, C, F), dtype),
        out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                if style == "im2col":
                    T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
                elif style == "c2d_im2col":
                    T.c2d_im2col(data, data_shared, by, k_iter, KH, S, D, P)
                else:
                    for i, j in T.Parallel(block_M, block_K):
                        k = k_iter * block_K + j
                        m = by * block_M + i
                        access_h = m % (OH * OW) // OW * S + k // (KW * C) * D - P
                        access_w = m % OW * S + k // C % KW * D - P
                        in_bound = (access_h >= 0) and (access_w >= 0) and (access_h < H) and (access_w < W)
                        data_shared[i, j] = T.if_then_else(in_bound, data[m // (OH * OW), access_h, access_w, k % C], 0)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main


def reference(x, w, S, D, P):
    """x: (N, H, W, C), w: (KH, KW, C, F) → (N, OH, OW, F), in float32."""
    y = torch.nn.functional.conv2d(
        x.permute(0, 3, 1, 2).float(), w.permute(3, 2, 0, 1).float(), stride=S, padding=P, dilation=D
    )
    return y.permute(0, 2, 3, 1)
