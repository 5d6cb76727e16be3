"""resolve_register_views: views of fragments and per-thread arrays become accesses of their bases.

Requires: tile-level IR straight from the frontend (views declared by `Allocate`s annotated
`view_of`, `language/views.py`, which already checked that a register view keeps the
element width).

Guarantees (the input is never modified): no view of a `local.fragment` or `local` buffer
is left. Each element access `V[i...]` of such a view reads or writes its base at the same
position in row-major storage order (`B[delinearize(linearize(i...))]`), through
`reinterpret` where the two dtypes differ (same width), so layout inference, the thread
lowering and the register allocation see one buffer and one layout. A tile-op operand that
is such a view is kept only where the view is its base under another name (same shape and
dtype); otherwise the pass stops with an `unsupported` error at the op: a tile op over a
reshaped fragment would need the base's layout re-expressed over the view's shape.
Global and shared views are left alone (they alias real memory; codegen casts pointers).

Used by the CUDA pipeline; the C backend declares register views as pointer casts instead.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..ir.buffer import Buffer, BufferRegion
from ..ir.expr import BufferLoad, Call, IntImm, PrimExpr, binary, structural_equal
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate, BufferStore, SeqStmt, TileOp
from ..ir.visitor import SplicingMutator
from .view_alias import alias_roots

REGISTER_SCOPES = ("local.fragment", "local")


def resolve_register_views(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    roots = {v: r for v, r in alias_roots(func.body, func.params).items() if v.scope in REGISTER_SCOPES}
    if not roots:
        return func
    body = _Resolve(roots).visit(func.body)
    return func if body is func.body else func.with_body(body)


def _linear(shape: tuple, idx: tuple) -> PrimExpr:
    flat: Any = IntImm(0)
    for d, i in zip(shape, idx):
        flat = binary("add", binary("mul", flat, d), i)
    return flat


def _delinear(shape: tuple, flat: PrimExpr) -> tuple:
    out: list = []
    stride: Any = None  # product of the dimensions after k (None: 1)
    for k in reversed(range(len(shape))):
        q = flat if stride is None else binary("floordiv", flat, stride)
        out.append(q if k == 0 else binary("floormod", q, shape[k]))
        stride = shape[k] if stride is None else binary("mul", stride, shape[k])
    return tuple(reversed(out))


def _same_shape(a: Buffer, b: Buffer) -> bool:
    return len(a.shape) == len(b.shape) and all(structural_equal(x, y) for x, y in zip(a.shape, b.shape))


class _Resolve(SplicingMutator):
    def __init__(self, roots: dict) -> None:
        super().__init__()
        self.roots = roots
        self.op: Any = None

    def index(self, view: Buffer, idx: tuple) -> tuple:
        base = self.roots[view]
        if _same_shape(view, base):
            return idx
        return _delinear(base.shape, _linear(view.shape, idx))

    def visit_Allocate(self, n: Allocate) -> Any:
        if n.buffer in self.roots:
            return SeqStmt((), n.span)  # the view owns no storage: its base's Allocate declares it
        return self.generic_visit(n)

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        idx = tuple(self.visit(i) for i in n.indices)
        if n.buffer not in self.roots:
            return n if all(a is b for a, b in zip(idx, n.indices)) else BufferLoad(n.buffer, idx, n.dtype, n.span)
        base = self.roots[n.buffer]
        load = BufferLoad(base, self.index(n.buffer, idx), base.dtype, n.span)
        if base.dtype is n.buffer.dtype:
            return load
        return Call("reinterpret", (load,), n.dtype, n.span)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        idx = tuple(self.visit(i) for i in n.indices)
        value = self.visit(n.value)
        if n.buffer not in self.roots:
            if value is n.value and all(a is b for a, b in zip(idx, n.indices)):
                return n
            return BufferStore(n.buffer, idx, value, n.span)
        base = self.roots[n.buffer]
        if base.dtype is not n.buffer.dtype:
            value = Call("reinterpret", (value,), base.dtype, n.span)
        return BufferStore(base, self.index(n.buffer, idx), value, n.span)

    def visit(self, node: Any) -> Any:
        if isinstance(node, TileOp):
            outer, self.op = self.op, node
            try:
                return super().visit(node)
            finally:
                self.op = outer
        return super().visit(node)

    def visit_BufferRegion(self, n: BufferRegion) -> Any:
        if n.buffer in self.roots:
            return BufferRegion(self.operand(n.buffer), tuple(self.visit(r) for r in n.region), n.span)
        return self.generic_visit(n)

    def visit_Buffer(self, b: Buffer) -> Buffer:
        return self.operand(b) if b in self.roots else b

    def operand(self, view: Buffer) -> Buffer:
        base = self.roots[view]
        if _same_shape(view, base) and view.dtype is base.dtype:
            return base
        span = getattr(self.op, "span", None) or view.span
        raise UnsupportedError(
            f"`{view.name}`, a {view.scope} view of `{base.name}` with another shape or dtype, is an operand of a "
            "tile op: the CUDA backend cannot lay a reshaped register tile out for it",
            span,
            f"use the view in element accesses (T.Parallel loops), or pass `{base.name}` itself to the tile op",
        )
