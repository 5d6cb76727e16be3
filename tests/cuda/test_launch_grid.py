"""The CUDA launcher's grid: expression trees over scalar parameters and dynamic dimensions
(`backend/cuda/backend.py::grid_exprs`, data in the `ir.int_tree` format, never `eval`'d)."""

from __future__ import annotations

import pytest

import tilelang.language as T
from tilelang.backend.cuda.backend import grid_exprs, grid_function
from tilelang.errors import UnsupportedError
from tilelang.ir.int_tree import compile_tree


@T.prim_func
def scaled_grid(x: T.Tensor((1024,), "float32"), n: T.int32, s: T.float32):
    with T.Kernel(T.ceildiv(n, 64), T.cast(s, "int32"), threads=64) as (bx, by):
        x[bx] = 1.0


def test_grid_over_scalar_parameters():
    gx, gy = (compile_tree(t, 3, 0) for t in grid_exprs(scaled_grid))
    assert gx([None, 130, 0.0], []) == 3  # ceildiv(130, 64)
    # a float parameter cast to int truncates toward zero, as C does
    assert gy([None, 0, 2.9], []) == 2 and gy([None, 0, -2.9], []) == -2
    grid = grid_function(grid_exprs(scaled_grid), 3, 0)
    assert grid.fixed is None and grid([None, 129, 3.5], []) == (3, 3, 1)


def test_grid_expression_that_is_not_integer_arithmetic_is_rejected():
    @T.prim_func
    def float_grid(x: T.Tensor((1024,), "float32"), s: T.float32):
        with T.Kernel(T.cast(s * 2.0, "int32"), threads=64) as bx:
            x[bx] = 1.0

    with pytest.raises(UnsupportedError, match="cannot evaluate the launch grid expression"):
        grid_exprs(float_grid)
