"""Structural keys and the atom table.

`AtomTable.key(e)` is a hashable structural identity for an expression
(Vars and Buffers by object identity, everything else by structure) made of
plain tuples, strings and ints only: IR nodes overload `==`, so they must
never be compared inside a key. `AtomTable.order(e)` is a sortable key built
from names and structure, used to print canonical forms in a stable order
that does not depend on object ids.
Both are memoised per expression object and never depend on what is known
about variables, so an analyzer keeps them for its whole life.

The table interns atoms (the leaves of `Poly`) as small ints and remembers,
for the `x // c` and `x % c` atoms the rewriter builds, the dividend as a
Poly (`info`), so later rules can look inside without re-parsing.

Calls are only merged with structurally equal calls when the callee is known
to be pure; any other call (atomics, shuffles, clocks, barriers...) is keyed
by identity, so `f() - f()` never cancels.
"""

from __future__ import annotations

from ..ir.expr import (
    FLOAT_UNARY,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Compare,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Var,
)

PURE_CALLS = frozenset(FLOAT_UNARY) | {
    "pow",
    "atan2",
    "fmod",
    "hypot",
    "copysign",
    "nextafter",
    "abs",
    "ceildiv",
    "min",
    "max",
    "truncdiv",
    "truncmod",
    "floordiv",
    "floormod",
    "isnan",
    "isinf",
    "isfinite",
    "popcount",
    "clz",
    "if_then_else",
    "likely",
}


class AtomTable:
    def __init__(self) -> None:
        self.exprs: list[PrimExpr] = []  # atom id -> representative expression
        self.orders: list[tuple] = []  # atom id -> order key
        self.ids: dict = {}  # structural key -> atom id
        # atom id -> (op, dividend Poly, divisor, dividend key) for atoms built by the rewriter
        self.info: dict[int, tuple] = {}
        self.divmod_ids: dict = {}  # (op, dividend key, divisor) -> atom id
        self._keys: dict = {}
        self._orders: dict = {}

    def intern(self, e: PrimExpr) -> int:
        k = self.key(e)
        aid = self.ids.get(k)
        if aid is None:
            aid = len(self.exprs)
            self.ids[k] = aid
            self.exprs.append(e)
            self.orders.append(self.order(e))
        return aid

    # -- structural identity ----------------------------------------------
    def key(self, e):
        k = self._keys.get(e)
        if k is None:
            k = self._key(e)
            self._keys[e] = k
        return k

    def _key(self, e):
        t = type(e)
        if t is Var:
            return ("V", id(e))  # ids are stable: `_keys` keeps every keyed node alive
        if t is IntImm:
            return ("I", e.value, e.dtype)
        if t is FloatImm:
            return ("F", repr(e.value), e.dtype)  # repr tells -0.0 from 0.0
        key = self.key
        if t is BinaryOp:
            return ("B", e.op, key(e.a), key(e.b), e.dtype)
        if t is BufferLoad:
            return ("L", id(e.buffer), tuple(key(i) for i in e.indices), e.dtype)
        if t is Compare:
            return ("C", e.op, key(e.a), key(e.b))
        if t is Cast:
            return ("T", e.dtype, key(e.value))
        if t is Select:
            return ("S", key(e.cond), key(e.true_value), key(e.false_value), e.dtype)
        if t is And:
            return ("&", key(e.a), key(e.b))
        if t is Or:
            return ("|", key(e.a), key(e.b))
        if t is Not:
            return ("!", key(e.a))
        if t is Call:
            if e.op in PURE_CALLS:
                return ("K", e.op, tuple(key(a) for a in e.args), e.dtype)
            return ("K!", id(e))
        if t is Ramp:
            return ("R", key(e.base), key(e.stride), e.lanes, e.dtype)
        if t is Broadcast:
            return ("X", key(e.value), e.lanes, e.dtype)
        if t is StringImm:
            return ("s", e.value)
        return ("?", id(e))

    # -- deterministic order ------------------------------------------------
    def order(self, e) -> tuple:
        k = self._orders.get(e)
        if k is None:
            k = self._order(e)
            self._orders[e] = k
        return k

    def _order(self, e) -> tuple:
        t = type(e)
        if t is Var:
            return (1, e.name)
        if t is IntImm or t is FloatImm:
            return (0, e.value)
        order = self.order
        if t is BufferLoad:
            return (2, e.buffer.name, tuple(order(i) for i in e.indices))
        if t is BinaryOp or t is Compare:
            return (3, e.op, order(e.a), order(e.b))
        if t is Call:
            return (4, e.op, tuple(order(a) for a in e.args))
        if t is Cast:
            return (5, str(e.dtype), order(e.value))
        if t is Select:
            return (6, order(e.cond), order(e.true_value), order(e.false_value))
        if t is And or t is Or:
            return (7, t.__name__, order(e.a), order(e.b))
        if t is Not:
            return (7, "Not", order(e.a))
        return (9, t.__name__)
