"""resolve_register_views: views of fragments and per-thread arrays become accesses of their bases.

Requires: tile-level IR straight from the frontend (views declared by `Allocate`s annotated
`view_of`, `language/views.py`, which already checked that a register view keeps the
element width).

Guarantees (the input is never modified): no view of a `local.fragment` or `local` buffer
is left. Each element access `V[i...]` of such a view reads or writes its base at the same
position in row-major storage order (`B[delinearize(linearize(i...))]`), through
`reinterpret` where the two dtypes differ (same width), so layout inference, the thread
lowering and the register allocation see one buffer and one layout; a `T.Parallel` nest
that walks a reshaped view exactly (its accesses of the view are the loop variables, its
extents the view's shape) is rewritten into the nest over the base's shape, so the base is
indexed by loop variables and layout inference lays the loop out from the base's fragment.
A tile-op operand that
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
from ..ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binary, const_int, structural_equal
from ..ir.function import PrimFunc
from ..ir.node import EMPTY
from ..ir.stmt import Allocate, BufferStore, For, SeqStmt, TileOp
from ..ir.visitor import Mutator, SplicingMutator, collect, substitute
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


class _Rebase(Mutator):
    """`view[loop vars]` → `base[new loop vars]` (the nest now walks the base)."""

    def __init__(self, view: Buffer, base: Buffer, us: tuple) -> None:
        super().__init__()
        self.view, self.base, self.us = view, base, us

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        if n.buffer is not self.view:
            return self.generic_visit(n)
        load = BufferLoad(self.base, self.us, self.base.dtype, n.span)
        return load if self.base.dtype is n.dtype else Call("reinterpret", (load,), n.dtype, n.span)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        if n.buffer is not self.view:
            return self.generic_visit(n)
        value = self.visit(n.value)
        if self.base.dtype is not self.view.dtype:
            value = Call("reinterpret", (value,), self.base.dtype, n.span)
        return BufferStore(self.base, self.us, value, n.span)


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

    def visit_For(self, n: For) -> Any:
        walked = self.walk(n)
        return self.generic_visit(n) if walked is None else self.visit(walked)

    def walk(self, n: For) -> For | None:
        """A `T.Parallel` nest that walks a reshaped view exactly (`for i in T.Parallel(M * N):
        V[i]` over a (M, N) base) becomes the same nest over the base's shape, so layout
        inference sees the base indexed by loop variables, as it would without the view."""
        if n.kind != "parallel" or n.annotations:
            return None
        loops, body = [n], n.body
        while isinstance(body, For) and body.kind == "parallel" and not body.annotations:
            loops.append(body)
            body = body.body
        vs = [lp.var for lp in loops]
        if any(const_int(lp.start) != 0 or (lp.step is not None and const_int(lp.step) != 1) for lp in loops):
            return None
        ext = [const_int(lp.extent) for lp in loops]
        for view in self._walked_views(body, vs):
            base = self.roots[view]
            bshape = [const_int(d) for d in base.shape]
            if None in ext or None in bshape or [const_int(d) for d in view.shape] != ext or _same_shape(view, base):
                continue
            us = [Var(f"{v.name}_b{k}", v.dtype) for k, v in enumerate(vs[:1] * len(bshape))]
            new_body = _Rebase(view, base, tuple(us)).visit(body)
            old = _delinear(view.shape, _linear(base.shape, tuple(us)))
            new_body = substitute(new_body, dict(zip(vs, old)))
            for k in reversed(range(len(bshape))):
                new_body = For(us[k], IntImm(0, us[k].dtype), IntImm(bshape[k], us[k].dtype), "parallel", new_body,
                               None, n.annotations if k == 0 else EMPTY, n.span)  # fmt: skip
            return new_body
        return None

    def _walked_views(self, body: Any, vs: list) -> list:
        found: dict = {}
        for x in collect(body, lambda e: isinstance(e, (BufferLoad, BufferStore)) and e.buffer in self.roots):
            exact = len(x.indices) == len(vs) and all(i is v for i, v in zip(x.indices, vs))
            found[x.buffer] = found.get(x.buffer, True) and exact
        return [b for b, ok in found.items() if ok]

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
