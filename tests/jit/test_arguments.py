"""Bad run-time arguments raise a one-line error naming the parameter; nothing is launched."""

import pytest
import torch

import tilelang
import tilelang.language as T


@tilelang.jit
def axpy(A, B, block: int = 64):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block)) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = 2 * A[bx * block + i] + B[bx * block + i]
    return C


@tilelang.jit
def rowsum(X, Y):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float32)
    Y: T.Tensor((M, N), T.float32)
    out = T.empty((M,), T.float32)
    with T.Kernel(M) as bx:
        for j in T.serial(N):
            out[bx] = out[bx] + X[bx, j] + Y[bx, j]
    return out


def one_line(err: Exception) -> str:
    text = str(err)
    assert "\n" not in text
    return text


def test_wrong_dtype_names_parameter():
    kernel = axpy.compile(M=128)
    with pytest.raises(TypeError) as ei:
        kernel(torch.zeros(128, dtype=torch.float64), torch.zeros(128))
    msg = one_line(ei.value)
    assert "`A`" in msg and "float32" in msg and "float64" in msg


def test_mismatched_dimension_between_tensors():
    kernel = rowsum.compile(M=8, N=16)
    with pytest.raises(ValueError) as ei:
        kernel(torch.zeros(8, 16), torch.zeros(9, 16))
    msg = one_line(ei.value)
    assert "`Y`" in msg and "M=8" in msg and "9" in msg


def test_eager_call_with_inconsistent_shapes():
    with pytest.raises(ValueError) as ei:
        axpy(torch.zeros(128), torch.zeros(100))
    assert "`B`" in one_line(ei.value)


def test_tensor_on_another_device():
    kernel = axpy.compile(M=16)
    with pytest.raises(ValueError) as ei:
        kernel(torch.empty(16, device="meta"), torch.zeros(16))
    msg = one_line(ei.value)
    assert "`A`" in msg and "meta" in msg and "CPU" in msg


def test_non_contiguous():
    kernel = rowsum.compile(M=8, N=16)
    x = torch.zeros(16, 8).t()
    with pytest.raises(ValueError) as ei:
        kernel(x, torch.zeros(8, 16))
    msg = one_line(ei.value)
    assert "`X`" in msg and "contiguous" in msg


def test_wrong_argument_count():
    kernel = axpy.compile(M=16)
    with pytest.raises(TypeError, match="2 input"):
        kernel(torch.zeros(16))


def test_not_a_tensor():
    kernel = axpy.compile(M=16)
    with pytest.raises(TypeError, match="`B`"):
        kernel(torch.zeros(16), [0.0] * 16)


def test_good_call_still_works():
    a, b = torch.randn(100), torch.randn(100)
    torch.testing.assert_close(axpy(a, b), 2 * a + b)
