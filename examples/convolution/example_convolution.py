"""2-D convolution as an implicit GEMM, the way the public TileLang convolution example writes
it: NHWC input, (KH, KW, C, F) weight viewed as a (KH*KW*C, F) matrix with
`T.Tensor(shape, dtype, kernel.data)`, the output written through a flat view of `out`; each
A tile is loaded with `T.c2d_im2col` on Hopper and with a direct-indexing `T.Parallel` loop
elsewhere (on the CPU both run, and both are checked against torch's conv2d)."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import check, device, on_gpu

import tilelang
import tilelang.language as T


def check_hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@tilelang.jit(out_idx=[2])
def convolution(N, C, H, W, F, K, S, D, P, block_M, block_N, block_K, num_stages, threads, use_im2col=None,
                dtype="float16", accum_dtype="float"):  # fmt: skip
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    is_hopper = check_hopper() if use_im2col is None else use_im2col

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

            T.annotate_layout(
                {
                    out_shared: tilelang.layout.make_swizzled_layout(out_shared),
                    data_shared: tilelang.layout.make_swizzled_layout(data_shared),
                    kernel_shared: tilelang.layout.make_swizzled_layout(kernel_shared),
                }
            )

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                if is_hopper:
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


def ref_program(x, w, S, D, P):
    y = torch.nn.functional.conv2d(
        x.permute(0, 3, 1, 2).float(), w.permute(3, 2, 0, 1).float(), stride=S, padding=P, dilation=D
    )
    return y.permute(0, 2, 3, 1)


def main() -> None:
    dev = device()
    N, C, H, W, F, K, S, D, P = (8, 256, 56, 56, 256, 3, 1, 1, 1) if on_gpu() else (2, 32, 14, 14, 48, 3, 2, 1, 1)
    x = torch.randn(N, H, W, C, device=dev).half()
    w = (torch.randn(K, K, C, F, device=dev) / 16).half()
    ref = ref_program(x.cpu(), w.cpu(), S, D, P).to(dev)
    variants = [None] if on_gpu() else [True, False]
    for v in variants:
        kern = convolution(N, C, H, W, F, K, S, D, P, 128 if on_gpu() else 64, 128 if on_gpu() else 32, 32, 3,
                           256 if on_gpu() else 128, v)  # fmt: skip
        out = kern(x, w)
        check(f"conv2d ({'im2col' if v else 'T.Parallel'} loads)" if v is not None else "conv2d", out, ref, atol=5e-2)


if __name__ == "__main__":
    main()
