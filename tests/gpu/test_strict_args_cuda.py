"""GPU twin of tests/reliability/test_strict_args.py: the scalar checks on the CUDA launcher.

An int32 given 2**40 or 3.7, a float32 given 1e40 raise before anything is launched; numpy
scalars of every numeric dtype launch and give torch's result; a block of 2048 threads is a
build error at the `T.Kernel` line, not a driver failure.
"""

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.errors import TileLangError

pytestmark = pytest.mark.cuda

M = 1000  # not a multiple of the 128-element tile


@tilelang.jit(out_idx=[-1], target="cuda")
def scale_shift(M, block=128, threads=128, idtype=T.int32, fdtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), n: idtype, s: fdtype, B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block), threads=threads) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * T.cast(s, T.float32) + T.cast(n, T.float32)

    return main


def ref(a: torch.Tensor, n, s) -> torch.Tensor:
    return (a.double() * float(s) + float(n)).float()


@pytest.fixture(scope="module")
def a():
    torch.manual_seed(0)
    return torch.rand(M, device="cuda") + 0.5


def paths(kernel):
    return [kernel, lambda *args: kernel.adapter.checked_call(args)]


@pytest.mark.parametrize("path", [0, 1])
def test_out_of_range_scalars_raise_before_launch(a, path):
    call = paths(scale_shift(M))[path]
    for n in (2**40, 2**31, -(2**31) - 1):
        with pytest.raises(OverflowError, match="`n`.*int32"):
            call(a, n, 1.0)
    with pytest.raises(TypeError, match="`n`.*integer"):
        call(a, 3.7, 1.0)
    for s in (1e40, -1e40, 10**40):
        with pytest.raises(OverflowError, match="`s`.*float32"):
            call(a, 1, s)
    torch.testing.assert_close(call(a, 2**31 - 1, 0.5), ref(a, 2**31 - 1, 0.5), rtol=1e-6, atol=0)
    torch.testing.assert_close(call(a, -3, 0.5), ref(a, -3, 0.5))


@pytest.mark.parametrize("path", [0, 1])
def test_numpy_scalars_launch(a, path):
    np = pytest.importorskip("numpy")
    call = paths(scale_shift(M))[path]
    for int_name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        for float_name in ("float16", "float32", "float64"):
            out = call(a, getattr(np, int_name)(5), getattr(np, float_name)(-0.75))
            torch.testing.assert_close(out, ref(a, 5, -0.75))
    with pytest.raises(OverflowError, match="`n`"):
        call(a, np.int64(2**40), 1.0)


def test_small_dtype_ranges(a):
    k8 = scale_shift(M, idtype=T.uint8, fdtype=T.float16)
    with pytest.raises(OverflowError, match="`n`.*uint8"):
        k8(a, 256, 1.0)
    with pytest.raises(OverflowError, match="`s`.*float16"):
        k8(a, 1, 70000.0)
    torch.testing.assert_close(k8(a, 255, 0.5), ref(a, 255, 0.5))


def test_2048_threads_is_a_build_error():
    with pytest.raises(TileLangError, match="2048 threads") as ei:
        scale_shift(M, block=2048, threads=2048)
    assert ei.value.span.line > 0 and "T.Kernel" in str(ei.value)
