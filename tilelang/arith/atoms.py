"""Structural keys and the atom table.

`AtomTable.key(e)` is a structural identity for an expression: an int,
equal for structurally equal expressions (Vars and Buffers count by object
identity), built by hash-consing flat tuples of plain values, so keys never
compare IR nodes (which overload `==`) and cost O(1) to compare at any depth.
Keys are memoised per expression object and never depend on what is known
about variables, so an analyzer keeps them for its whole life. `order_key(e)`
is a sortable key built from names and structure, used to print canonical
forms in a stable order that does not depend on object ids.

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
        self.ids: dict[int, int] = {}  # structural key -> atom id
        # atom id -> (op, dividend Poly, divisor, dividend key) for atoms built by the rewriter
        self.info: dict[int, tuple] = {}
        self.divmod_ids: dict = {}  # (op, dividend key, divisor, dtype) -> atom id
        self._keys: dict = {}  # expression -> structural key
        self._cons: dict[tuple, int] = {}  # flat description -> structural key

    def intern(self, e: PrimExpr) -> int:
        k = self.key(e)
        aid = self.ids.get(k)
        if aid is None:
            aid = len(self.exprs)
            self.ids[k] = aid
            self.exprs.append(e)
            self.orders.append(order_key(e))
        return aid

    # -- structural identity ----------------------------------------------
    def key(self, e) -> int:
        """An int equal for structurally equal expressions (hash-consing: each
        node is described by a flat tuple of its own fields and its children's
        keys, so keys compare and hash in constant time at any depth)."""
        k = self._keys.get(e)
        if k is None:
            if type(e) is BinaryOp:
                warm_spine(e, self._keys, self._cons_key)
            k = self._keys[e] = self._cons_key(e)
        return k

    def _cons_key(self, e) -> int:
        flat = self._describe(e)
        k = self._cons.get(flat)
        if k is None:
            k = self._cons[flat] = len(self._cons)
        return k

    def _describe(self, e) -> tuple:
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
            return ("L", id(e.buffer), e.dtype) + tuple(key(i) for i in e.indices)
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
                return ("K", e.op, e.dtype) + tuple(key(a) for a in e.args)
            return ("K!", id(e))
        if t is Ramp:
            return ("R", key(e.base), key(e.stride), e.lanes, e.dtype)
        if t is Broadcast:
            return ("X", key(e.value), e.lanes, e.dtype)
        if t is StringImm:
            return ("s", e.value)
        return ("?", id(e))


_ORDER_DEPTH = 6  # order keys look this deep; deeper differences fall back to first appearance


def order_key(e, depth: int = _ORDER_DEPTH) -> tuple:
    """A sortable key from names and structure (never from object ids)."""
    t = type(e)
    if t is Var:
        return (1, e.name)
    if t is IntImm or t is FloatImm:
        return (0, e.value)
    if depth == 0:
        return (8,)
    d = depth - 1
    if t is BufferLoad:
        return (2, e.buffer.name, tuple(order_key(i, d) for i in e.indices))
    if t is BinaryOp or t is Compare:
        return (3, e.op, order_key(e.a, d), order_key(e.b, d))
    if t is Call:
        return (4, e.op, tuple(order_key(a, d) for a in e.args))
    if t is Cast:
        return (5, str(e.dtype), order_key(e.value, d))
    if t is Select:
        return (6, order_key(e.cond, d), order_key(e.true_value, d), order_key(e.false_value, d))
    if t is And or t is Or:
        return (7, t.__name__, order_key(e.a, d), order_key(e.b, d))
    if t is Not:
        return (7, "Not", order_key(e.a, d))
    return (9, t.__name__)


def warm_spine(e, memo: dict, fn) -> None:
    """Fill `memo` bottom-up along the left operands of a chain of BinaryOps, so
    that the recursive `fn` never goes deeper than one level of that chain
    (left-deep sums built by Python loops can exceed the recursion limit)."""
    spine = []
    x = e.a
    while type(x) is BinaryOp and x not in memo:
        spine.append(x)
        x = x.a
    for x in reversed(spine):
        memo[x] = fn(x)
