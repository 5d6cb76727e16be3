"""`Poly`: the canonical form of integer index arithmetic.

A Poly is `sum(coeff * product(atoms)) + const`. Atoms are the expressions
that arithmetic cannot look through (variables, loads, `x // 8`, `min(a, b)`,
...); the rewriter interns each distinct atom as a small int, so a monomial is
a sorted tuple of atom ids (repeated for powers) and structurally equal terms
collide in the `terms` dict and cancel. Polys are immutable values; every
operation returns a new one and drops zero coefficients.
"""

from __future__ import annotations

import math


class Poly:
    __slots__ = ("terms", "const", "dtype")

    def __init__(self, terms: dict, const: int, dtype) -> None:
        self.terms = terms  # {monomial (sorted tuple of atom ids): nonzero int coeff}
        self.const = const
        self.dtype = dtype

    # -- construction -------------------------------------------------------
    @staticmethod
    def constant(c: int, dtype) -> Poly:
        return Poly({}, c, dtype)

    @staticmethod
    def atom(aid: int, dtype) -> Poly:
        return Poly({(aid,): 1}, 0, dtype)

    # -- queries --------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def is_zero(self) -> bool:
        return not self.terms and self.const == 0

    def single_atom(self) -> int | None:
        """The atom id if this Poly is exactly one atom (coefficient 1, no constant)."""
        if self.const == 0 and len(self.terms) == 1:
            ((mono, c),) = self.terms.items()
            if c == 1 and len(mono) == 1:
                return mono[0]
        return None

    def coeff_gcd(self) -> int:
        """gcd of the term coefficients (0 for a constant)."""
        g = 0
        for c in self.terms.values():
            g = math.gcd(g, c)
            if g == 1:
                break
        return g

    def key(self) -> tuple:
        """A hashable value identifying this Poly (used to index div/mod atoms)."""
        return (tuple(sorted(self.terms.items())), self.const)

    # -- arithmetic -------------------------------------------------------------
    def _dt(self, o: Poly):
        return self.dtype if self.dtype.bits >= o.dtype.bits else o.dtype

    def add(self, o: Poly) -> Poly:
        if not o.terms:
            return self if o.const == 0 else Poly(self.terms, self.const + o.const, self._dt(o))
        if not self.terms:
            return Poly(o.terms, self.const + o.const, self._dt(o))
        terms = dict(self.terms)
        for m, c in o.terms.items():
            n = terms.get(m, 0) + c
            if n:
                terms[m] = n
            else:
                del terms[m]
        return Poly(terms, self.const + o.const, self._dt(o))

    def sub(self, o: Poly) -> Poly:
        return self.add(o.scale(-1))

    def add_const(self, c: int) -> Poly:
        return self if c == 0 else Poly(self.terms, self.const + c, self.dtype)

    def scale(self, k: int) -> Poly:
        if k == 1:
            return self
        if k == 0:
            return Poly({}, 0, self.dtype)
        return Poly({m: c * k for m, c in self.terms.items()}, self.const * k, self.dtype)

    def mul(self, o: Poly) -> Poly:
        """The expanded product (callers bound the size before calling)."""
        if not o.terms:
            return self.scale(o.const)
        if not self.terms:
            return o.scale(self.const)
        out = Poly({}, self.const * o.const, self._dt(o))
        acc = out.terms
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                n = acc.get(m, 0) + c1 * c2
                if n:
                    acc[m] = n
                else:
                    acc.pop(m, None)
        if self.const:
            for m, c in o.terms.items():
                n = acc.get(m, 0) + c * self.const
                if n:
                    acc[m] = n
                else:
                    acc.pop(m, None)
        if o.const:
            for m, c in self.terms.items():
                n = acc.get(m, 0) + c * o.const
                if n:
                    acc[m] = n
                else:
                    acc.pop(m, None)
        return out

    def split(self, d: int) -> tuple[Poly, Poly]:
        """`(q, r)` with `self == d * q + r`, where `q` takes every term whose
        coefficient `d` divides and the constant's multiple of `d`, and
        `r.const` is in `[0, d)` (d > 0)."""
        qt, rt = {}, {}
        for m, c in self.terms.items():
            if c % d == 0:
                qt[m] = c // d
            else:
                rt[m] = c
        qc, rc = divmod(self.const, d)
        return Poly(qt, qc, self.dtype), Poly(rt, rc, self.dtype)

    def exact_div(self, d: int) -> Poly:
        """`self / d` where d divides every coefficient and the constant."""
        return Poly({m: c // d for m, c in self.terms.items()}, self.const // d, self.dtype)

    def with_dtype(self, dtype) -> Poly:
        return self if dtype is self.dtype else Poly(self.terms, self.const, dtype)

    def __repr__(self) -> str:
        return f"Poly({self.terms}, {self.const}, {self.dtype})"
