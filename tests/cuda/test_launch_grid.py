"""The CUDA launcher's grid: Python expressions over scalar parameters and dynamic dimensions
(`backend/cuda/backend.py::grid_exprs`, built on `ir.py_source`)."""

from __future__ import annotations

import pytest

import tilelang.language as T
from tilelang.backend.cuda.backend import grid_exprs
from tilelang.errors import UnsupportedError


@T.prim_func
def scaled_grid(x: T.Tensor((1024,), "float32"), n: T.int32, s: T.float32):
    with T.Kernel(T.ceildiv(n, 64), T.cast(s, "int32"), threads=64) as (bx, by):
        x[bx] = 1.0


def test_grid_over_scalar_parameters():
    gx, gy = grid_exprs(scaled_grid)
    assert eval(gx, {"p1": 130}) == 3  # ceildiv(130, 64)
    # a float parameter cast to int truncates toward zero, as C does
    assert eval(gy, {"p2": 2.9}) == 2 and eval(gy, {"p2": -2.9}) == -2


def test_grid_expression_that_is_not_integer_arithmetic_is_rejected():
    @T.prim_func
    def float_grid(x: T.Tensor((1024,), "float32"), s: T.float32):
        with T.Kernel(T.cast(s * 2.0, "int32"), threads=64) as bx:
            x[bx] = 1.0

    with pytest.raises(UnsupportedError, match="cannot evaluate the launch grid expression"):
        grid_exprs(float_grid)
