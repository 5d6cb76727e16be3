"""pair_nibble_stores: a thread's stores of two neighbouring 4-bit elements become one byte store.

Requires: per-thread IR after `flatten_shared` (shared tiles are 1-D, indexed by their storage
offset); packed 4-bit buffers (int4 / uint4 / float4_e2m1fn) addressed by element.

Guarantees: an equivalent PrimFunc (the input is never modified). A loop with a constant even
trip count `2m` whose body is one store `X[..., b + v] = f(v)` — `X` a packed shared or global
buffer, `v` the loop variable with stride 1, `b` free of `v` and provably even, the other
indices free of `v`, any guard around the store free of `v`, and (global) the last dimension
provably even — becomes `m` trips, each storing the byte of elements `b + 2p` and `b + 2p + 1`
at once (`tl.store_nibble_pair`). That byte belongs to this thread alone, so the store needs no
atomic update (`subbyte.py`); without the proof every nibble stays an atomic byte update.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...arith import Analyzer
from ...ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binary, compare, const_int
from ...ir.function import PrimFunc
from ...ir.stmt import BufferStore, Evaluate, For, IfThenElse, Stmt
from ...ir.visitor import Mutator, collect, substitute, uses_var

PAIR_OP = "tl.store_nibble_pair"  # (BufferLoad of the even element, value of it, value of the next)
SCOPES = ("global", "shared", "shared.dyn")


def pair_nibble_stores(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    body = _Pair().visit(func.body)
    return func if body is func.body else func.with_body(body)


class _Pair(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.an = Analyzer()

    def visit_For(self, n: For) -> Any:
        with self.an.scope():
            if n.step is None or const_int(n.step) == 1:
                self.an.bind_range(n.var, n.start, n.extent)
            body = self.visit(n.body)
        loop = n if body is n.body else replace(n, body=body)
        return self.pair(loop) or loop

    def pair(self, n: For) -> Stmt | None:
        ext = const_int(n.extent)
        if (
            ext is None
            or ext < 2
            or ext % 2
            or const_int(n.start) != 0
            or (n.step is not None and const_int(n.step) != 1)
        ):
            return None
        v = n.var
        store, guard = n.body, None
        if isinstance(store, IfThenElse) and store.else_body is None and not uses_var(store.cond, v):
            guard, store = store, store.then_body
        if not isinstance(store, BufferStore):
            return None
        buf = store.buffer
        if buf.dtype.bits >= 8 or buf.scope not in SCOPES or buf.strides is not None or not store.indices:
            return None
        if collect(store.value, lambda x: isinstance(x, BufferLoad) and x.buffer is buf):
            return None  # the value reads the buffer it writes: keep the element order
        *lead, last = store.indices
        if any(uses_var(i, v) for i in lead):
            return None
        base = substitute(last, {v: IntImm(0, v.dtype)})
        if not _is(self.an, binary("sub", last, base), v):
            return None
        if not self.an.can_prove(compare("eq", binary("floormod", base, 2), 0)):
            return None
        if buf.scope == "global" and len(buf.shape) > 1:
            d = const_int(buf.shape[-1])
            if d is None or d % 2:
                return None
        p = Var(f"{v.name}_pair", v.dtype)
        even = binary("mul", p, IntImm(2, v.dtype))
        odd = binary("add", even, IntImm(1, v.dtype))
        at = BufferLoad(buf, tuple(lead) + (substitute(last, {v: even}),), buf.dtype)
        call = Call(PAIR_OP, (at, substitute(store.value, {v: even}), substitute(store.value, {v: odd})), buf.dtype)
        new: Stmt = Evaluate(call, store.span)
        if guard is not None:
            new = replace(guard, then_body=new)
        return replace(n, var=p, extent=IntImm(ext // 2, n.extent.dtype), body=new)


def _is(an: Analyzer, e: PrimExpr, v: Var) -> bool:
    e = an.simplify(e)
    return isinstance(e, Var) and e is v


def is_pair(e: Any) -> bool:
    return isinstance(e, Call) and e.op == PAIR_OP


__all__ = ["PAIR_OP", "is_pair", "pair_nibble_stores"]
