"""2-D convolution written the way the public TileLang 0.1.x convolution example writes it:
NHWC input, (KH, KW, C, F) weight viewed as a (KH*KW*C, F) matrix through
`T.Tensor(shape, dtype, kernel.data)`, the output written through a flat view of `out`,
each A tile loaded by `T.im2col` (or by the example's direct-indexing `T.Parallel` loop),
multiplied by `T.gemm` in a `T.Pipelined` loop.

CPU backend vs `torch.nn.functional.conv2d` (float32 reference, fp16 tolerance; layouts
permuted in the test) for stride 1 and 2, pad 0 and 1, dilation 1 and 2 at sizes that are not
tile multiples; nvcc builds for sm_80 and sm_90a; the CUDA lowering run by the simulator
(vector and element-wise im2col loads); errors for im2col misuse.
"""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance.conv_kernels import convolution, reference
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError

torch.manual_seed(0)


conv_c = tilelang.jit(out_idx=[2], target="c")(convolution)


def _inputs(N, C, H, W, F, K):
    return torch.randn(N, H, W, C).half(), (torch.randn(K, K, C, F) / 4).half()


CASES = [(1, 1, 1), (2, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 0)]  # (stride, dilation, pad)


@pytest.mark.parametrize("S,D,P", CASES)
@pytest.mark.parametrize("style", ["im2col", "parallel"])
def test_conv2d_cpu(S, D, P, style):
    N, C, H, W, F, K = 2, 24, 13, 13, 40, 3
    x, w = _inputs(N, C, H, W, F, K)
    out = conv_c(N, C, H, W, F, K, S, D, P, 64, 32, 32, 2, 128, style)(x, w)
    torch.testing.assert_close(out.float(), reference(x, w, S, D, P), atol=2e-2, rtol=2e-2)


def test_c2d_im2col_alias_and_odd_channels():
    N, C, H, W, F, K = 1, 5, 9, 11, 7, 3  # C not a multiple of a vector: element loads
    x, w = _inputs(N, C, H, W, F, K)
    out = conv_c(N, C, H, W, F, K, 1, 1, 1, 32, 16, 16, 2, 128, "c2d_im2col")(x, w)
    torch.testing.assert_close(out.float(), reference(x, w, 1, 1, 1), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("style", ["im2col", "parallel"])
def test_conv2d_nvcc(arch, style):
    func = convolution(8, 64, 28, 28, 64, 3, 1, 1, 1, 128, 64, 32, 3, 128, style)
    src = cuda_build(func, arch).kernel_source
    assert "reinterpret_cast<tl::half_t*>(kernel)" in src  # kernel_flat: a pointer cast, no copy
    if style == "im2col":  # a pipeline producer: eight channels per cp.async, zero-filled off the image
        assert "tl::cp_async_zfill<16>(&data_shared[(k_iter + 2) % 3 * 4096" in src


@pytest.mark.parametrize(
    "shape,S,D,P",
    [((1, 16, 7, 7, 24), 1, 1, 1), ((1, 16, 7, 7, 24), 2, 2, 1), ((1, 6, 6, 5, 10), 1, 1, 0)],
)
def test_conv2d_cuda_lowering_simulated(shape, S, D, P):
    from sim import simulate

    N, C, H, W, F = shape
    K = 3
    x, w = _inputs(N, C, H, W, F, K)
    ref = reference(x, w, S, D, P)
    for style in ("im2col", "parallel"):
        out = torch.zeros(ref.shape).half()
        simulate(convolution(N, C, H, W, F, K, S, D, P, 64, 32, 32, 2, 128, style), [x, w, out], arch="sm_80")
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


@tilelang.jit(out_idx=[-1], target="c")
def im2col_tile(N, H, W, C, K, S, D, P, BM, BK, step_m, step_k):
    @T.prim_func
    def main(img: T.Tensor((N, H, W, C), "float32"), col: T.Tensor((BM, BK), "float32")):
        with T.Kernel(1, threads=32):
            col_s = T.alloc_shared((BM, BK), "float32")
            T.im2col(img, col_s, step_m, step_k, K, S, D, P)
            T.copy(col_s, col)

    return main


def test_im2col_tile_semantics_cpu():
    # tiles read back as they are: rows past N*OH*OW and columns past KH*KW*C are zero
    N, C, H, W, K, S, D, P = 1, 3, 4, 5, 3, 2, 1, 1
    OH, OW = (H + 2 * P - D * (K - 1) - 1) // S + 1, (W + 2 * P - D * (K - 1) - 1) // S + 1
    BM, BK = 4, 32
    img = torch.randn(N, H, W, C)
    full = torch.nn.functional.unfold(img.permute(0, 3, 1, 2), K, dilation=D, padding=P, stride=S)  # (1, C*K*K, L)
    # unfold orders columns (c, kh, kw); im2col orders them (kh, kw, c)
    mat = full[0].reshape(C, K, K, -1).permute(3, 1, 2, 0).reshape(OH * OW, K * K * C)
    padded = torch.zeros(2 * BM, BK)
    padded[: OH * OW, : K * K * C] = mat
    for sm in range(2):
        got = im2col_tile(N, H, W, C, K, S, D, P, BM, BK, sm, 0)(img)
        torch.testing.assert_close(got, padded[sm * BM : (sm + 1) * BM])


def test_im2col_errors():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(which):
        @T.prim_func
        def main(img: T.Tensor((1, 8, 8, 4), "float16"), o: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, threads=32):
                col = T.alloc_shared((16, 16), "float16")
                frag = T.alloc_fragment((16, 16), "float16")
                if which == "kernel":
                    T.im2col(img, col, 0, 0, (3, 3), 1, 1, 1)
                elif which == "col":
                    T.im2col(img, frag, 0, 0, 3, 1, 1, 1)
                elif which == "img":
                    T.im2col(col, col, 0, 0, 3, 1, 1, 1)
                else:
                    T.im2col(img, col, 0, 0, 3, 0, 1, 1)
                T.copy(col, o)

        return main

    for which, text in (("kernel", "compile-time integer"), ("col", "2-D shared tile"),
                        ("img", "4-D global tensor"), ("stride", "`stride` must be ≥ 1")):  # fmt: skip
        with pytest.raises(TileLangError) as e:
            bad(which)
        assert text in str(e.value) and "test_conv.py:" in str(e.value)


def test_analysis_sees_the_im2col_ring():
    import inspect

    from conformance import conv_kernels
    from tilelang.analysis import analyze_function

    src = inspect.getsource(conv_kernels)
    cfg = dict(N=8, C=256, H=56, W=56, F=256, K=3, S=1, D=1, P=1, block_M=128, block_N=128, block_K=32,
               num_stages=3, threads=256)  # fmt: skip
    info = analyze_function(src, conv_kernels.__file__, "convolution", target="sm_80", bindings=cfg)
    sizes = {name.split(" ")[0]: n for name, n in info.resources.shared_breakdown}  # "name (shares bytes with …)"
    assert sizes["data_shared"] == 3 * 128 * 32 * 2  # multi-buffered like B


@pytest.mark.parametrize("num_stages", [0, 1, 4])
def test_conv2d_stages_simulated(num_stages):
    # im2col is a pipeline producer only with two or more stages; every depth gives conv2d
    from sim import simulate

    N, C, H, W, F, K = 1, 16, 7, 7, 24, 3
    x, w = _inputs(N, C, H, W, F, K)
    out = torch.zeros(N, H, W, F).half()
    func = convolution(N, C, H, W, F, K, 1, 1, 1, 32, 32, 16, num_stages, 128)
    simulate(func, [x, w, out], arch="sm_80")
    torch.testing.assert_close(out.float(), reference(x, w, 1, 1, 1), atol=2e-2, rtol=2e-2)
    for arch in CUDA_ARCHS:
        cuda_build(func, arch)


@pytest.mark.parametrize("shape,S,D,P", [((1, 16, 7, 7, 24), 2, 1, 1), ((1, 6, 6, 5, 10), 1, 1, 0)])
def test_conv2d_hip_lowering_simulated(shape, S, D, P):
    """The HIP lowering (MFMA gemm, `T.im2col` element by element — no cp.async on AMD) run in
    the wave-64 simulator (tests/simt) against conv2d."""
    from simt.hip import simulate

    N, C, H, W, F = shape
    K = 3
    x, w = _inputs(N, C, H, W, F, K)
    ref = reference(x, w, S, D, P)
    for style in ("im2col", "parallel"):
        out = torch.zeros(ref.shape).half()
        simulate(convolution(N, C, H, W, F, K, S, D, P, 64, 32, 32, 2, 128, style), [x, w, out])
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
