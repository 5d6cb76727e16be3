"""DSL mistakes raise errors pointing at the right line and column, with a hint."""

import linecache
import os

import pytest

from tilelang.errors import DSLError

from . import kernels_bad as kb

FILE = os.path.abspath(kb.__file__)


def line_of(text: str) -> int:
    for n, line in enumerate(linecache.getlines(FILE), 1):
        if text in line:
            return n
    raise AssertionError(text)


def err_of(fn, **kw) -> DSLError:
    with pytest.raises(DSLError) as ei:
        fn.get_tir(**kw)
    return ei.value


def test_unknown_T_name_points_at_the_call():
    e = err_of(kb.unknown_name, M=1024)
    assert e.span.file == FILE and e.span.line == line_of("T.exp3")
    src = linecache.getline(FILE, e.span.line)
    assert src[e.span.col :].startswith("T.exp3")
    assert "exp3" in str(e) and f"{os.path.basename(FILE)}:{e.span.line}:" in str(e)
    assert "^" in str(e)  # the underlined source line


def test_reduce_output_shape():
    e = err_of(kb.bad_reduce)
    assert e.span.line == line_of("T.reduce_sum(frag, s")
    assert "[64]" in str(e) and "dim 1" in str(e)
    assert isinstance(e, ValueError)


def test_copy_extents_mismatch():
    e = err_of(kb.bad_copy)
    assert e.span.line == line_of("T.copy(A[0:16")
    assert "do not match" in str(e)


def test_gemm_shapes():
    e = err_of(kb.bad_gemm)
    assert e.span.line == line_of("T.gemm(a, b, c)")
    assert "K of A is 32 but K of B is 16" in str(e)


def test_param_annotated_twice():
    e = err_of(kb.twice)
    assert e.span.line == line_of("A: T.Tensor((32,)")


def test_wrong_argument_count():
    e = err_of(kb.too_many_grid_dims)
    assert e.span.line == line_of("T.Kernel(1, 1, 1, 1)")
    assert "1 to 3 grid dimensions" in str(e)


def test_missing_kernel():
    e = err_of(kb.no_kernel)
    assert "T.Kernel" in str(e)


def test_prim_func_in_a_file_with_postponed_annotations():
    import torch

    from .kernels_future import add

    a = torch.randn(100)
    torch.testing.assert_close(add(100)(a), a + 1)
