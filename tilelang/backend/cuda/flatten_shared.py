"""flatten_shared: shared buffers become 1-D storage indexed through their layouts.

Requires: per-thread IR (after `lower_threads` and `vectorize`); every shared
buffer's layout in `attrs["layout_map"]` (a buffer without one is row-major).

Guarantees: an equivalent PrimFunc (the input is never modified) in which each
shared buffer `X` (any shape, possibly multi-buffered) is replaced by a 1-D
buffer of the same name, dtype and scope whose length is the layout's storage
size (`prod(output_shape)`, padding included), and every access `X[i, j, ...]`
(loads, stores, `address_of`) reads `X'[L(i, j, ...)]` with `L` the layout's
row-major linearised physical index (an XOR swizzle for gemm operands). The
layout map keeps the original layout under the new buffer (alignment
decisions of `plan_shared_memory` read it) and records
`attrs["smem_logical_shape"]`: name → logical shape, for readable comments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.buffer import Buffer
from ...ir.expr import BufferLoad, IntImm, PrimExpr, binary, const_int
from ...ir.function import PrimFunc
from ...ir.stmt import Allocate, BufferStore
from ...ir.visitor import Mutator, collect
from ...layout import Layout
from ...layout._expr import substitute as lsub
from ...transform.context import CompileContext

SHARED_SCOPES = ("shared", "shared.dyn")


def flatten_shared(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    layouts = dict(func.attrs.get("layout_map", {}) or {})
    allocs = collect(func.body, lambda n: isinstance(n, Allocate) and n.buffer.scope in SHARED_SCOPES)
    if not allocs:
        return func
    plan: dict = {}
    logical: dict = {}
    for a in allocs:
        b = a.buffer
        shape = tuple(const_int(d) for d in b.shape)
        lay = layouts.get(b)
        if not isinstance(lay, Layout) or tuple(lay.shape) != shape:
            lay = Layout(shape)
        size = 1
        for d in lay.output_shape:
            size *= d
        nb = Buffer(b.name, (IntImm(size),), b.dtype, b.scope, None, b.span)
        plan[b] = (nb, lay)
        layouts[nb] = lay
        logical[b.name] = shape
    body = _Flatten(plan).visit(func.body)
    return func.with_body(body).with_attrs(layout_map=layouts, smem_logical_shape=logical)


def linear_index(lay: Layout, idx: tuple) -> PrimExpr:
    m = dict(zip(lay.get_forward_vars(), idx))
    flat: PrimExpr = IntImm(0)
    strides = []
    acc = 1
    for d in reversed(lay.output_shape):
        strides.append(acc)
        acc *= d
    strides.reverse()
    for e, st in zip(lay.index, strides):
        flat = binary("add", flat, binary("mul", lsub(e, m), st))
    return flat


class _Flatten(Mutator):
    def __init__(self, plan: dict) -> None:
        super().__init__()
        self.plan = plan

    def visit_Allocate(self, n: Allocate) -> Any:
        hit = self.plan.get(n.buffer)
        return n if hit is None else replace(n, buffer=hit[0])

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        idx = tuple(self.visit(i) for i in n.indices)
        hit = self.plan.get(n.buffer)
        if hit is None:
            return n if all(a is b for a, b in zip(idx, n.indices)) else replace(n, indices=idx)
        nb, lay = hit
        return BufferLoad(nb, (linear_index(lay, idx),), n.dtype, n.span)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        idx = tuple(self.visit(i) for i in n.indices)
        value = self.visit(n.value)
        hit = self.plan.get(n.buffer)
        if hit is None:
            if value is n.value and all(a is b for a, b in zip(idx, n.indices)):
                return n
            return replace(n, indices=idx, value=value)
        nb, lay = hit
        return BufferStore(nb, (linear_index(lay, idx),), value, n.span)


__all__ = ["flatten_shared", "linear_index"]
