"""The simplifier's core (part of `Analyzer`): parsing and rebuilding.

Scalar integer expressions are parsed bottom-up into a canonical `Poly`
(`_poly`): `+ - *` by constants are exact polynomial arithmetic, so constants
fold and equal terms cancel; products of sums expand while small; everything
else becomes an *atom* once its own operands are simplified (division and
modulo: `divmod`; comparisons, min/max and logic: `compare`). Integer casts
that widen are transparent, `x << k` is `x * 2^k`, `ceildiv(a, c)` is
`(a + c - 1) // c`, and `Select` collapses when its condition folds (its
arms are simplified under the condition, resp. its negation).

`_rebuild` turns a Poly back into IR, ordering terms by degree, then
|coefficient|, then names (`atoms.order_key`), so printing is stable and
independent of object ids: `bx * 128 + i`, `n - i`, `x * -1 - 1`.

Integers are treated as mathematical integers (no wrap-around). Floats only
get constant folding and identities that are exact in IEEE arithmetic:
`x * 1.0`, `x / 1.0`, `x - 0.0`, `x + (-0.0)`; never `x + 0.0` or `x * 0.0`.

State used (owned by `Analyzer`): `atoms`, `_pmemo`, `_smemo`, `_values`,
`_span`, and the bound, proof and scope methods of the analyzer.
"""

from __future__ import annotations

import math

from ..ir.dtype import bool_
from ..ir.expr import (
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
    Ramp,
    Select,
    Var,
)
from .interval import dtype_range
from .interval import is_index_dtype as _is_index
from .poly import Poly

_MAX_EXPANDED_TERMS = 16  # larger products stay unexpanded atoms


def _widening(src, dst) -> bool:
    """True if every value of integer dtype `src` is a value of `dst`."""
    if src.lanes != 1 or not (src.kind == "int" or src.kind == "uint"):
        return False
    if dst.kind == "int":
        return dst.bits >= src.bits if src.kind == "int" else dst.bits > src.bits
    return src.kind == "uint" and dst.bits >= src.bits


class RewriteMixin:
    # ------------------------------------------------------------------
    # entry points
    # ------------------------------------------------------------------
    def _simplify(self, e):
        r = self._smemo.get(e)
        if r is not None:
            return r
        dt = e.dtype
        if _is_index(dt) and type(e) is not IntImm:
            r = self._rebuild(self._poly(e))
        else:
            r = self._simplify_other(e)
        if r is not e and self.atoms.key(r) == self.atoms.key(e):
            r = e  # unchanged: keep the original node (and its span)
        self._smemo[e] = r
        return r

    def _poly(self, e) -> Poly:
        p = self._pmemo.get(e)
        if p is None:
            p = self._poly_of(e)
            self._pmemo[e] = p
        return p

    # ------------------------------------------------------------------
    # integer expressions -> Poly
    # ------------------------------------------------------------------
    def _atom(self, e) -> Poly:
        return Poly({(self.atoms.intern(e),): 1}, 0, e.dtype)

    def _poly_of(self, e) -> Poly:
        t = type(e)
        dt = e.dtype
        if t is IntImm:
            return Poly({}, e.value, dt)
        if not _is_index(dt):
            return self._atom(self._simplify(e))
        if t is Var:
            v = self._values.get(e)
            if v is not None:
                return self._poly(v)
            lo, hi = self._var_bound(e)
            if lo == hi:
                return Poly({}, lo, dt)
            return self._atom(e)
        if t is BinaryOp:
            return self._poly_binary(e)
        if t is Cast:
            return self._poly_cast(e)
        if t is Select:
            return self._poly_select(e)
        if t is Call:
            return self._poly_call(e)
        if t is BufferLoad:
            idx = tuple(self._simplify(i) for i in e.indices)
            if any(a is not b for a, b in zip(idx, e.indices)):
                e = BufferLoad(e.buffer, idx, dt, e.span)
            return self._atom(e)
        return self._atom(e)

    def _poly_binary(self, e) -> Poly:
        op, dt = e.op, e.dtype
        if op == "add" or op == "sub":
            p = self._sum(e)
            if len(p.terms) > 1 and self.atoms.info:
                p = self._recombine(p)
            return p.with_dtype(dt)
        if op == "mul":
            pa, pb = self._poly(e.a), self._poly(e.b)
            if pb.is_const:
                return pa.scale(pb.const).with_dtype(dt)
            if pa.is_const:
                return pb.scale(pa.const).with_dtype(dt)
            na = len(pa.terms) + (pa.const != 0)
            nb = len(pb.terms) + (pb.const != 0)
            if na * nb <= _MAX_EXPANDED_TERMS:
                return pa.mul(pb).with_dtype(dt)
            return self._atom(BinaryOp("mul", self._rebuild(pa), self._rebuild(pb), dt, self._span))
        if op == "floordiv" or op == "floormod" or op == "div":
            pa, pb = self._poly(e.a), self._poly(e.b)
            if pb.is_const and pb.const != 0:
                c = pb.const
                if op == "floordiv":
                    return self._floordiv_const(pa, c).with_dtype(dt)
                if op == "floormod":
                    return self._floormod_const(pa, c).with_dtype(dt)
                if pa.is_const:  # C division truncates toward zero
                    q = abs(pa.const) // abs(c)
                    return Poly({}, q if (pa.const >= 0) == (c > 0) else -q, dt)
                if c > 0 and self._poly_bound(pa)[0] >= 0:
                    return self._floordiv_const(pa, c).with_dtype(dt)
            elif not pb.is_const:
                return self._divmod_symbolic(op, pa, pb, dt)
            return self._atom(BinaryOp(op, self._rebuild(pa), self._rebuild(pb), dt, self._span))
        if op == "min" or op == "max":
            return self._minmax(op, self._poly(e.a), self._poly(e.b), dt)
        return self._poly_bitwise(e)

    def _sum(self, e) -> Poly:
        """The Poly of a tree of `+`/`-`, walked left to right with a stack: sums
        built by Python loops (`acc = acc + x`) can be deeper than the recursion
        limit allows, and are accumulated in place (linear in their length)."""
        dt, memo = e.dtype, self._pmemo
        terms: dict = {}
        const = 0
        stack = [(e.b, 1 if e.op == "add" else -1), (e.a, 1)]
        while stack:
            x, sign = stack.pop()
            if type(x) is BinaryOp and (x.op == "add" or x.op == "sub") and x.dtype is dt and x not in memo:
                stack.append((x.b, sign if x.op == "add" else -sign))
                stack.append((x.a, sign))
                continue
            p = self._poly(x)
            const += sign * p.const
            for m, c in p.terms.items():
                n = terms.get(m, 0) + sign * c
                if n:
                    terms[m] = n
                else:
                    del terms[m]
        return Poly(terms, const, dt)

    def _poly_bitwise(self, e) -> Poly:
        op, dt = e.op, e.dtype
        a, b = self._simplify(e.a), self._simplify(e.b)
        if type(b) is IntImm:
            k = b.value
            if type(a) is IntImm:
                x = a.value
                if op == "bitand":
                    return Poly({}, x & k, dt)
                if op == "bitor":
                    return Poly({}, x | k, dt)
                if op == "bitxor":
                    return Poly({}, x ^ k, dt)
                if op == "shr" and 0 <= k:
                    return Poly({}, x >> k, dt)
            if op == "shl" and 0 <= k < dt.bits:
                return self._poly(e.a).scale(1 << k).with_dtype(dt)
        if a is not e.a or b is not e.b:
            e = BinaryOp(op, a, b, dt, e.span)
        return self._atom(e)

    def _poly_cast(self, e) -> Poly:
        dt, src = e.dtype, e.value.dtype
        if _widening(src, dt):
            return self._poly(e.value).with_dtype(dt)
        v = self._simplify(e.value)
        t = type(v)
        if t is IntImm or t is FloatImm:
            x = v.value
            if t is FloatImm:
                x = int(x) if not (math.isnan(x) or math.isinf(x)) else None
            lo, hi = dtype_range(dt)
            if x is not None and lo <= x <= hi:
                return Poly({}, x, dt)
        return self._atom(e if v is e.value else Cast(v, dt, e.span))

    def _poly_select(self, e) -> Poly:
        cond = self._simplify(e.cond)
        if type(cond) is IntImm:
            return self._poly(e.true_value if cond.value else e.false_value)
        tv, fv = self._arms(cond, e.true_value, e.false_value)
        if self.atoms.key(tv) == self.atoms.key(fv):
            return self._poly(tv)
        return self._atom(Select(cond, tv, fv, e.dtype, e.span))

    def _arms(self, cond, t, f):
        """Simplify the arms of `cond ? t : f`, each under what it may assume."""
        return (
            self._simplify_assuming(self._facts_of(cond), t),
            self._simplify_assuming(self._facts_of(Not(cond, bool_, self._span)), f),
        )

    def _simplify_assuming(self, facts: list, e):
        if not facts:
            return self._simplify(e)
        with self.scope():
            for f in facts:
                self._add_fact(f)
            return self._simplify(e)

    def _poly_call(self, e) -> Poly:
        args = tuple(self._simplify(a) for a in e.args)
        op, dt = e.op, e.dtype
        if len(args) == 2 and _is_index(args[0].dtype) and _is_index(args[1].dtype):
            if op == "ceildiv":
                pa, pb = self._poly(args[0]), self._poly(args[1])
                if pb.is_const and pb.const > 0:  # ceil(a/b) = floor((a + b - 1) / b)
                    return self._floordiv_const(pa.add_const(pb.const - 1), pb.const).with_dtype(dt)
            elif op == "min" or op == "max":
                return self._minmax(op, self._poly(args[0]), self._poly(args[1]), dt)
        if op == "abs" and len(args) == 1 and _is_index(args[0].dtype):
            p = self._poly(args[0])
            lo, hi = self._poly_bound(p)
            if lo >= 0:
                return p.with_dtype(dt)
            if hi <= 0:
                return p.scale(-1).with_dtype(dt)
        if any(a is not b for a, b in zip(args, e.args)):
            e = Call(op, args, dt, e.span)
        return self._atom(e)

    # ------------------------------------------------------------------
    # everything that is not a scalar integer
    # ------------------------------------------------------------------
    def _simplify_other(self, e):
        t = type(e)
        if t is Compare:
            if _is_index(e.a.dtype):
                return self._compare_int(e)
            a, b = self._simplify(e.a), self._simplify(e.b)
            ta, tb = type(a), type(b)
            if (ta is IntImm or ta is FloatImm) and (tb is IntImm or tb is FloatImm):
                x, y = a.value, b.value
                r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[e.op]
                return IntImm(int(r), bool_, self._span)
            return e if a is e.a and b is e.b else Compare(e.op, a, b, e.dtype, e.span)
        if t is And or t is Or:
            return self._logic(e)
        if t is Not:
            a = self._simplify(e.a)
            n = self._negate(a)
            if n is not None:
                return self._simplify(n) if type(n) is not IntImm else n
            return e if a is e.a else Not(a, e.dtype, e.span)
        if t is BinaryOp:
            return self._float_binary(e)
        if t is Select:
            cond = self._simplify(e.cond)
            if type(cond) is IntImm:
                return self._simplify(e.true_value if cond.value else e.false_value)
            tv, fv = self._arms(cond, e.true_value, e.false_value)
            if self.atoms.key(tv) == self.atoms.key(fv):
                return tv
            return Select(cond, tv, fv, e.dtype, e.span)
        if t is Var:
            v = self._values.get(e)
            return e if v is None else self._simplify(v)
        if t is Cast:
            return self._cast_other(e)
        if t is BufferLoad:
            idx = tuple(self._simplify(i) for i in e.indices)
            return e if all(a is b for a, b in zip(idx, e.indices)) else BufferLoad(e.buffer, idx, e.dtype, e.span)
        if t is Call:
            args = tuple(self._simplify(a) for a in e.args)
            return e if all(a is b for a, b in zip(args, e.args)) else Call(e.op, args, e.dtype, e.span)
        if t is Ramp:
            base, stride = self._simplify(e.base), self._simplify(e.stride)
            if base is e.base and stride is e.stride:
                return e
            return Ramp(base, stride, e.lanes, e.dtype, e.span)
        if t is Broadcast:
            v = self._simplify(e.value)
            return e if v is e.value else Broadcast(v, e.lanes, e.dtype, e.span)
        return e

    def _cast_other(self, e):
        v = self._simplify(e.value)
        dt, t = e.dtype, type(v)
        if dt.lanes == 1 and (t is IntImm or t is FloatImm):
            if dt.kind == "float":
                return FloatImm(float(v.value), dt, self._span)
            if dt.kind == "bool":
                return IntImm(int(v.value != 0), bool_, self._span)
        if v.dtype is dt:
            return v
        return e if v is e.value else Cast(v, dt, e.span)

    def _float_binary(self, e):
        op, dt = e.op, e.dtype
        a, b = self._simplify(e.a), self._simplify(e.b)
        if dt.lanes == 1 and dt.kind == "float":
            ta, tb = type(a), type(b)
            if ta is FloatImm and tb is FloatImm:
                r = _fold_float(op, a.value, b.value)
                if r is not None:
                    return FloatImm(r, dt, self._span)
            if tb is FloatImm:
                y = b.value
                if (op == "mul" or op == "div") and y == 1.0:
                    return a
                if y == 0.0 and (math.copysign(1.0, y) > 0) == (op == "sub") and op in ("add", "sub"):
                    return a  # x - 0.0 and x + (-0.0) are exactly x
            if ta is FloatImm and op == "mul" and a.value == 1.0:
                return b
        if a is e.a and b is e.b:
            return e
        return BinaryOp(op, a, b, dt, e.span)

    # ------------------------------------------------------------------
    # Poly -> expression
    # ------------------------------------------------------------------
    def _atom_expr(self, aid: int, dt):
        e = self.atoms.exprs[aid]
        return e if e.dtype is dt else Cast(e, dt, self._span)

    def _term(self, mono: tuple, coef: int, dt):
        span = self._span
        if len(mono) == 1:
            e = self._atom_expr(mono[0], dt)
        else:
            orders = self.atoms.orders
            ids = sorted(mono, key=orders.__getitem__)
            e = self._atom_expr(ids[0], dt)
            for aid in ids[1:]:
                e = BinaryOp("mul", e, self._atom_expr(aid, dt), dt, span)
        if coef != 1:
            e = BinaryOp("mul", e, IntImm(coef, dt, span), dt, span)
        return e

    def _rebuild(self, p: Poly):
        dt, span, terms = p.dtype, self._span, p.terms
        if not terms:
            return IntImm(p.const, dt, span)
        if len(terms) == 1 and p.const == 0:
            ((mono, coef),) = terms.items()
            if coef == 1 and len(mono) == 1:
                return self._atom_expr(mono[0], dt)
        orders = self.atoms.orders
        items = sorted(
            terms.items(),
            key=lambda mc: (-len(mc[0]), -abs(mc[1]), sorted(orders[a] for a in mc[0])),
        )
        acc = None
        for mono, coef in items:
            if coef > 0:
                t = self._term(mono, coef, dt)
                acc = t if acc is None else BinaryOp("add", acc, t, dt, span)
        const = p.const
        if acc is None and const > 0:
            acc, const = IntImm(const, dt, span), 0
        for mono, coef in items:
            if coef < 0:
                if acc is None:
                    acc = self._term(mono, coef, dt)
                else:
                    acc = BinaryOp("sub", acc, self._term(mono, -coef, dt), dt, span)
        if const > 0:
            acc = BinaryOp("add", acc, IntImm(const, dt, span), dt, span)
        elif const < 0:
            acc = BinaryOp("sub", acc, IntImm(-const, dt, span), dt, span)
        return acc


def _fold_float(op: str, x: float, y: float) -> float | None:
    if math.isnan(x) or math.isnan(y):
        return None
    try:
        if op == "add":
            return x + y
        if op == "sub":
            return x - y
        if op == "mul":
            return x * y
        if op == "div":
            return x / y
        if op == "min":
            return min(x, y)
        if op == "max":
            return max(x, y)
    except (ZeroDivisionError, OverflowError):
        return None
    return None
