"""Shared-memory layouts of packed 4-bit tiles (int4 / uint4 / float4_e2m1fn) used as
tensor-core operands.

A 4-bit tile of shape (..., R, C) is stored as the byte tile (..., R, C/2) whose byte
(r, c) holds elements (r, 2c) (low nibble) and (r, 2c + 1) (high nibble). Its layout is the
byte tile's own default gemm layout (`make_swizzled_layout` of the uint8 tile: 128/64/32-byte
swizzle, padding or row-major) lifted to elements: element (r, j) goes to nibble
2·L(r, j // 2) + j % 2. That keeps every pair in one byte, so `mma.sync m16n8k64` reads the
tile with the same ldmatrix addressing as an int8 tile of K/2 bytes (tl/gemm.h).

`meta`: `swizzle` and `padded` of the byte layout, `dtype` the 4-bit dtype, `packed`: True.
"""

from __future__ import annotations

from typing import Any

from ..ir.dtype import DataType
from ..ir.expr import Var, binary
from ._expr import substitute
from .layout import Layout, default_var_names
from .swizzle import make_swizzled_layout


def make_packed_operand_layout(shape: tuple, dtype: Any) -> Layout:
    """The gemm-operand layout of a packed 4-bit tile (see the module docstring)."""
    dt = DataType(dtype)
    shape = tuple(shape)
    if len(shape) < 2 or not isinstance(shape[-1], int) or shape[-1] % 2:
        raise ValueError(f"a packed {dt} operand tile needs an even last dimension, got {list(shape)}")
    byte = make_swizzled_layout(shape[:-1] + (shape[-1] // 2,), dtype="uint8")
    fv = tuple(Var(x) for x in default_var_names(len(shape)))
    bvars = byte.get_forward_vars()
    j = fv[-1]
    sub = dict(zip(bvars, list(fv[:-1]) + [binary("floordiv", j, 2)]))
    idx = [substitute(e, sub) for e in byte.get_forward_index()]
    idx[-1] = binary("add", binary("mul", idx[-1], 2), binary("floormod", j, 2))
    out = tuple(byte.output_shape[:-1]) + (byte.output_shape[-1] * 2,)
    meta = {**byte.meta, "dtype": str(dt), "packed": True}
    return Layout.from_exprs(shape, fv, tuple(idx), out, meta)


def gemm_operand_layout(shape: tuple, dtype: Any) -> Layout:
    """The default shared layout of a gemm operand tile of any dtype."""
    if DataType(dtype).bits < 8:
        return make_packed_operand_layout(shape, dtype)
    return make_swizzled_layout(shape, dtype=dtype)
