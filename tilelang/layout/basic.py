"""Small fragment factories: ldmatrix 8×8 atoms, fully replicated, blocked default."""

from __future__ import annotations

from typing import Any

from ..ir.expr import Var, binary
from .fragment import Fragment
from .layout import default_var_names, normalize_shape, prod, row_major_strides
from .swizzle import shape_and_dtype


def make_gemm_fragment_8x8() -> Fragment:
    """One 8×8 b16 matrix as ldmatrix/stmatrix deliver it: lane = 4·row + col//2, register = col % 2."""
    return Fragment((8, 8), forward_fn=lambda i, j: (i * 4 + j // 2, j % 2), meta={"origin": "ldmatrix 8x8"})


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The `.trans` variant: lane = 4·col + row//2, register = row % 2."""
    return Fragment((8, 8), forward_fn=lambda i, j: (j * 4 + i // 2, i % 2), meta={"origin": "ldmatrix 8x8 .trans"})


def _shape_of(buffer: Any) -> tuple:
    if isinstance(buffer, (tuple, list, int)):
        return normalize_shape(buffer)
    return shape_and_dtype(buffer)[0]


def make_fully_replicated_fragment(buffer: Any, threads: int) -> Fragment:
    """Every one of `threads` threads holds the whole tile (row-major registers)."""
    shape = _shape_of(buffer)
    fv = tuple(Var(n) for n in default_var_names(len(shape)))
    rep = Var("rep")
    return Fragment.from_exprs(shape, fv, rep, fv, int(threads), rep, {"origin": "fully replicated"})


make_fully_replicated_layout_fragment = make_fully_replicated_fragment


def make_blocked_fragment(buffer: Any, threads: int, vector_size: int = 1) -> Fragment:
    """Row-major elements dealt to threads in runs of `vector_size`: run k goes
    to thread k % threads, register (k // threads)·vector_size + offset. The
    default for fragments nothing else constrains (vector_size chosen for
    16-byte accesses by the caller)."""
    shape = _shape_of(buffer)
    n = prod(shape)
    if n % (threads * vector_size):
        raise ValueError(
            f"a {'×'.join(map(str, shape))} tile ({n} elements) does not split evenly into "
            f"{threads} threads × runs of {vector_size}"
        )
    fv = tuple(Var(x) for x in default_var_names(len(shape)))
    flat = sum((binary("mul", v, s) for v, s in zip(fv, row_major_strides(shape))), start=binary("add", 0, 0))
    run = binary("floordiv", flat, vector_size)
    thread = binary("floormod", run, threads)
    local = binary(
        "add", binary("mul", binary("floordiv", run, threads), vector_size), binary("floormod", flat, vector_size)
    )
    return Fragment.from_exprs(shape, fv, thread, local, meta={"origin": f"blocked ×{vector_size}"})
