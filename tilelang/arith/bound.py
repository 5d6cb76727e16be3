"""Constant integer bounds of expressions (part of `Analyzer`).

`BoundMixin._bound(e)` evaluates `e` over intervals, bottom-up: variables take
the range the analyzer knows for them (else their dtype's range), loads and
opaque calls their dtype's range, and each operator the sound interval image
of its operands (see `interval`). `_poly_bound(p)` bounds a canonical `Poly`
term by term. Results are memoised per scope (the analyzer swaps the memo
dicts when it enters and leaves a scope).

State used (owned by `Analyzer`): `_bmemo`, `_vbounds`, `atoms`.
"""

from __future__ import annotations

from ..ir.expr import (
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    Compare,
    IntImm,
    Not,
    Or,
    Select,
    Var,
)
from . import interval as iv
from .atoms import warm_spine
from .interval import EVERYTHING, dtype_range

_BOOLISH = (Compare, And, Or, Not)

BINARY_INTERVALS = {  # IR binary op -> its interval rule (also widen_indices)
    "add": iv.add,
    "sub": iv.sub,
    "mul": iv.mul,
    "floordiv": iv.floordiv,
    "floormod": iv.floormod,
    "div": iv.truncdiv,
    "min": iv.minimum,
    "max": iv.maximum,
    "bitand": iv.bitand,
    "bitor": iv.bitor_xor,
    "bitxor": iv.bitor_xor,
    "shl": iv.shl,
    "shr": iv.shr,
}

_INDEX_KINDS = ("int", "uint", "bool")


class BoundMixin:
    def _var_bound(self, v: Var) -> tuple:
        b = self._vbounds.get(v)
        return b if b is not None else dtype_range(v.dtype)

    def _bound(self, e) -> tuple:
        b = self._bmemo.get(e)
        if b is None:
            if type(e) is BinaryOp:
                warm_spine(e, self._bmemo, self._bound_of)
            b = self._bound_of(e)
            self._bmemo[e] = b
        return b

    def _bound_of(self, e) -> tuple:
        t = type(e)
        if t is IntImm:
            return (e.value, e.value)
        dt = e.dtype
        if dt.lanes != 1 or dt.kind not in _INDEX_KINDS:
            return EVERYTHING
        if t is Var:
            return self._var_bound(e)
        if t is BinaryOp:
            fn = BINARY_INTERVALS.get(e.op)
            if fn is None:
                return dtype_range(dt)
            return fn(self._bound(e.a), self._bound(e.b))
        if t is Cast:
            src = e.value.dtype
            if src.lanes == 1 and src.kind in _INDEX_KINDS:
                inner = self._bound(e.value)
                full = dtype_range(dt)
                if full[0] <= inner[0] and inner[1] <= full[1]:
                    return inner  # the value fits: the cast does not change it
            return dtype_range(dt)
        if t is Select:
            c = e.cond
            if type(c) is IntImm:
                return self._bound(e.true_value if c.value else e.false_value)
            return iv.union(self._bound(e.true_value), self._bound(e.false_value))
        if t is Call:
            return self._call_bound(e)
        if t is BufferLoad:
            return dtype_range(dt)
        if isinstance(e, _BOOLISH):
            return (0, 1)
        return dtype_range(dt)

    def _call_bound(self, e: Call) -> tuple:
        args = e.args
        if e.op == "abs" and len(args) == 1:
            lo, hi = self._bound(args[0])
            if lo >= 0:
                return (lo, hi)
            if hi <= 0:
                return (-hi, -lo)
            return (0, max(-lo, hi))
        if e.op in ("min", "max") and len(args) == 2:
            fn = iv.minimum if e.op == "min" else iv.maximum
            return fn(self._bound(args[0]), self._bound(args[1]))
        if e.op == "tl.thread_index" and len(args) == 2 and type(args[1]) is IntImm:  # language/thread.py
            return (0, args[1].value - 1)
        if e.op == "ceildiv" and len(args) == 2:
            a, b = self._bound(args[0]), self._bound(args[1])
            if b[0] > 0:  # ceil(a / b) = -floor(-a / b)
                lo, hi = iv.floordiv((-a[1], -a[0]), b)
                return (-hi, -lo)
        return dtype_range(e.dtype)

    def _poly_bound(self, p) -> tuple:
        lo = hi = p.const
        exprs = self.atoms.exprs
        bound = self._bound
        for mono, c in p.terms.items():
            if len(mono) == 1:
                b = bound(exprs[mono[0]])
            else:  # a repeated atom is a power: x*x is never negative
                b = None
                for a in set(mono):
                    f = iv.power(bound(exprs[a]), mono.count(a))
                    b = f if b is None else iv.mul(b, f)
            if c != 1:
                b = iv.scale(b, c)
            lo += b[0]
            hi += b[1]
            if lo == iv.NEG_INF and hi == iv.POS_INF:
                break
        return (lo, hi)
