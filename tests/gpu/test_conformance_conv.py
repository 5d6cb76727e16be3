"""GPU twin of tests/conformance/test_conv.py: the public-example convolution (T.im2col or
direct T.Parallel indexing, then T.gemm) on CUDA against torch's conv2d (cuDNN) at sizes
that are not tile multiples."""

from __future__ import annotations

import pytest
import torch
from conformance import conv_kernels as CK
from conformance import test_conv as C

import tilelang

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("S,D,P", C.CASES)
@pytest.mark.parametrize("style", ["im2col", "parallel"])
def test_conv2d_cuda(S, D, P, style):
    N, Ch, H, W, F, K = 2, 24, 13, 13, 40, 3
    x, w = (t.cuda() for t in C._inputs(N, Ch, H, W, F, K))
    func = CK.convolution(N, Ch, H, W, F, K, S, D, P, 64, 32, 32, 2, 128, style)
    out = tilelang.compile(func, out_idx=[2], target="cuda")(x, w)
    torch.testing.assert_close(out.float(), CK.reference(x.cpu(), w.cpu(), S, D, P).cuda(), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("style", ["im2col", "parallel"])
def test_conv2d_benchmark_shape_cuda(style):
    # the benchmark's layer at a smaller batch, with the benchmark's first config
    N, Ch, H, W, F, K = 2, 256, 56, 56, 256, 3
    x, w = (t.cuda() for t in C._inputs(N, Ch, H, W, F, K))
    func = CK.convolution(N, Ch, H, W, F, K, 1, 1, 1, 128, 128, 32, 3, 256, style)
    out = tilelang.compile(func, out_idx=[2], target="cuda")(x, w)
    torch.testing.assert_close(out.float(), CK.reference(x.cpu(), w.cpu(), 1, 1, 1).cuda(), atol=5e-2, rtol=2e-2)


def test_c2d_im2col_odd_channels_cuda():
    N, Ch, H, W, F, K = 1, 5, 9, 11, 7, 3
    x, w = (t.cuda() for t in C._inputs(N, Ch, H, W, F, K))
    func = CK.convolution(N, Ch, H, W, F, K, 1, 1, 1, 32, 16, 16, 2, 128, "c2d_im2col")
    out = tilelang.compile(func, out_idx=[2], target="cuda")(x, w)
    torch.testing.assert_close(out.float(), CK.reference(x.cpu(), w.cpu(), 1, 1, 1).cuda(), atol=2e-2, rtol=2e-2)
