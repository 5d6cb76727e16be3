"""Proofs, comparisons, min/max and boolean logic (part of `Analyzer`).

Everything here reduces to one question, `_prove_le0(p)`: is the integer
Poly `p` at most 0 in the current context? It is, if the constant bounds of
`p` say so, or if `p - k*f` is bounded by 0 for a fact `f <= 0` of an
enclosing scope (`k >= 0` matched on a common term). Comparisons then fold
when decided, and otherwise print as `lhs <op> rhs` with every term on the
side where it is positive and the common factor divided out; `min`/`max`
resolve when the sign of `a - b` is decided; `and`/`or` simplify their
second operand assuming the first (true, resp. false). Float comparisons
only fold constants (NaN defeats every identity).

State used (owned by `Analyzer`): `atoms`, `_facts`, `_span`, and its
`_poly`, `_poly_bound`, `_rebuild`, `_simplify` and scope methods.
"""

from __future__ import annotations

from ..ir.dtype import bool_
from ..ir.expr import And, BinaryOp, Compare, IntImm, Not, Or
from .interval import is_index_dtype as _is_index
from .poly import Poly

_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


class ProofMixin:
    # ------------------------------------------------------------------
    # min / max
    # ------------------------------------------------------------------
    def _minmax(self, op: str, pa: Poly, pb: Poly, dt) -> Poly:
        d = pa.sub(pb)
        if self._prove_le0(d):  # a <= b
            return (pa if op == "min" else pb).with_dtype(dt)
        if self._prove_le0(d.scale(-1)):  # a >= b
            return (pb if op == "min" else pa).with_dtype(dt)
        if pa.is_const:
            pa, pb = pb, pa
        a, b = self._rebuild(pa), self._rebuild(pb)
        if type(b) is IntImm and type(a) is BinaryOp and a.op == op and type(a.b) is IntImm:
            # min(min(x, c1), c2) -> min(x, min(c1, c2))
            c = min(a.b.value, b.value) if op == "min" else max(a.b.value, b.value)
            a, b = a.a, IntImm(c, dt, self._span)
        return self._atom(BinaryOp(op, a, b, dt, self._span))

    # ------------------------------------------------------------------
    # proofs and comparisons
    # ------------------------------------------------------------------
    def _prove_le0(self, p: Poly) -> bool:
        """True only if p <= 0 holds in the current context."""
        if not p.terms:
            return p.const <= 0
        if self._poly_bound(p)[1] <= 0:
            return True
        terms = p.terms
        for f in self._facts:  # f <= 0, so p <= 0 if p - k*f <= 0 for some k >= 0
            # A fact sharing no term with p could only help if it contradicted its own
            # bounds (an unreachable context), so only facts with a common term are tried.
            k = 0
            for mono, cf in f.terms.items():
                cp = terms.get(mono)
                if cp is not None:
                    k = cp // cf if cp % cf == 0 and cp // cf > 0 else 1
                    break
            if k == 0:
                continue
            if self._poly_bound(p.sub(f))[1] <= 0:
                return True
            if k > 1 and self._poly_bound(p.sub(f.scale(k)))[1] <= 0:
                return True
        return False

    def _decide(self, op: str, d: Poly) -> bool | None:
        """Truth of `d <op> 0` if provable, else None (op in lt, le, eq, ne)."""
        if op == "lt":
            d, op = d.add_const(1), "le"
        if op == "le":
            if self._prove_le0(d):
                return True
            if self._prove_le0(d.scale(-1).add_const(1)):
                return False
            return None
        if d.is_zero:
            eq = True
        elif not d.terms:
            eq = False
        else:
            g = d.coeff_gcd()
            if d.const % g != 0 or self._prove_le0(d.add_const(1)) or self._prove_le0(d.scale(-1).add_const(1)):
                eq = False
            elif self._prove_le0(d) and self._prove_le0(d.scale(-1)):
                eq = True
            else:
                return None
        return eq if op == "eq" else not eq

    def _compare_int(self, e):
        """Fold `a <op> b` if provable; else print it as `lhs <op> rhs` with the
        terms of `a - b` moved to the side where they are positive (keeping the
        direction of `>`/`>=` as written) and the common factor divided out."""
        op = e.op
        d = self._poly(e.a).sub(self._poly(e.b))
        flip = op == "gt" or op == "ge"
        if flip:  # decide and normalise b - a < 0 (<= 0), print a - b > 0 (>= 0)
            d, op = d.scale(-1), ("lt" if op == "gt" else "le")
        truth = self._decide(op, d)
        if truth is not None:
            return IntImm(int(truth), bool_, self._span)
        g = d.coeff_gcd()
        if g > 1:  # divide through: g*x + c < 0  <=>  x + floor(c/g) < 0, etc.
            c = d.const
            if op == "lt":
                c = c // g
            elif op == "le":
                c = _ceil_div(c, g)
            else:
                c = c // g  # g divides c, or _decide would have answered
            d = Poly({m: k // g for m, k in d.terms.items()}, c, d.dtype)
        if flip:
            d, op = d.scale(-1), e.op
        pos = {m: k for m, k in d.terms.items() if k > 0}
        neg = {m: -k for m, k in d.terms.items() if k < 0}
        lhs = Poly(pos, max(d.const, 0), d.dtype)
        rhs = Poly(neg, max(-d.const, 0), d.dtype)
        if lhs.is_const and not rhs.is_const:
            lhs, rhs, op = rhs, lhs, _SWAP[op]
        return Compare(op, self._rebuild(lhs), self._rebuild(rhs), bool_, e.span)

    def _negate(self, c):
        """An expression equal to `not c`, or None if there is no simpler one.
        Float comparisons are not negated (NaN makes `not a < b` differ from `a >= b`)."""
        t = type(c)
        if t is IntImm:
            return IntImm(int(not c.value), bool_, self._span)
        if t is Not:
            return c.a
        if t is Compare and _is_index(c.a.dtype):
            return Compare(_NEGATE[c.op], c.a, c.b, bool_, c.span)
        if t is And or t is Or:
            a, b = self._negate(c.a), self._negate(c.b)
            if a is not None and b is not None:
                return Or(a, b, bool_, c.span) if t is And else And(a, b, bool_, c.span)
        return None

    # ------------------------------------------------------------------
    # and / or
    # ------------------------------------------------------------------
    def _logic(self, e):
        is_and = type(e) is And
        a = self._simplify(e.a)
        if type(a) is IntImm:
            if bool(a.value) != is_and:  # False and _ / True or _
                return a
            return self._simplify(e.b)
        # `b` only matters where `a` is true (and) / false (or)
        b = self._simplify_assuming(self._facts_of(a if is_and else Not(a, bool_, self._span)), e.b)
        if type(b) is IntImm:
            return a if bool(b.value) == is_and else b
        if self.atoms.key(a) == self.atoms.key(b):
            return a
        if a is e.a and b is e.b:
            return e
        return (And if is_and else Or)(a, b, bool_, e.span)
