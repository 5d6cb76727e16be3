"""check_subbyte: uses of the packed 4-bit dtypes (int4, uint4, float4_e2m1fn) that no
target can honour are errors at their line.

Requires: tile-level IR after `verify`.

Guarantees: returns `func` unchanged, or raises at the span of the first offending buffer:
- a 4-bit tensor parameter must be contiguous with an even last dimension (the runtime
  passes a byte tensor whose last dimension is half the logical one — docs/subbyte.md);
  an odd constant last dimension is an error, a strided one `unsupported`;
- 4-bit scalar parameters and 4-bit vector dtypes (`int4x8`...) are `unsupported`.

Element loads and stores of packed buffers are lowered by each backend (nibble extraction;
a store updates its byte without losing the neighbouring nibble, atomically wherever
another thread may write that byte at the same time).
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError, VerifyError
from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate
from ..ir.visitor import collect


def check_subbyte(func: PrimFunc, ctx: Any = None) -> PrimFunc:
    for p in func.params:
        if isinstance(p, Buffer):
            _check_param(p, func)
        elif p.dtype.bits < 8:
            raise UnsupportedError(
                f"scalar parameter `{p.name}` of {p.dtype}: 4-bit scalars cannot be passed — use an int32 / float32 "
                "parameter and cast it in the kernel",
                _span(getattr(p, "span", None), func),
            )
    for a in collect(func.body, lambda n: isinstance(n, Allocate)):
        dt = a.buffer.dtype
        if dt.bits < 8 and dt.lanes > 1:
            raise UnsupportedError(
                f"buffer `{a.buffer.name}` of {dt}: vectors of a 4-bit dtype are not supported — use the scalar dtype "
                f"{dt.element_of()} (elements are packed two per byte anyway)",
                _span(a.span, func),
            )
    return func


def _check_param(p: Buffer, func: PrimFunc) -> None:
    dt = p.dtype
    if dt.bits >= 8:
        return
    span = _span(p.span, func)
    if dt.lanes > 1:
        raise UnsupportedError(
            f"tensor `{p.name}` of {dt}: vectors of a 4-bit dtype are not supported — use {dt.element_of()}", span
        )
    if not p.shape:
        raise UnsupportedError(f"tensor `{p.name}` of {dt} needs at least one dimension (two elements per byte)", span)
    if p.strides is not None:
        raise UnsupportedError(
            f"strided tensor `{p.name}` of packed {dt}: a 4-bit tensor must be contiguous (two elements share a "
            "byte) — declare it with T.Tensor",
            span,
        )
    last = const_int(p.shape[-1])
    if last is not None and last % 2:
        raise VerifyError(
            f"tensor `{p.name}` of {dt} has an odd last dimension {last}: it is passed as a byte tensor whose last "
            f"dimension is half the logical one, two elements per byte",
            span,
            "pad the last dimension to an even size",
        )


def _span(span: Any, func: PrimFunc) -> Any:
    return span if span is not None and span.line else func.span
