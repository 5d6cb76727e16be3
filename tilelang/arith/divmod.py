"""Division and modulo (part of `Analyzer`).

By a positive constant `c`, with exact identities plus bounds where an
identity needs a range:

    (c*q + r) // c  ->  q + r // c          (c*q + r) % c  ->  r % c
    r // c -> k,  r % c -> r - k*c           when r is proven in [k*c, (k+1)*c)
    (d*s + t) // c  ->  s // (c/d)           when d | c and t in [0, d)
    (d*s + t) % c   ->  (s % (c/d))*d + t    when d | c and t in [0, d)
    (x // a + k) // c  ->  (x + k*a) // (a*c)
    (x % m) // c  ->  (x // c) % (m/c)       (x % m) % c -> x % c    when c | m
    (x // c)*c*k + (x % c)*k  ->  x*k        (`_recombine`, applied to sums)

A negative constant divisor is turned positive ((x // -c) == (-x) // c).
By a symbolic divisor b proven >= 1: `(b*q + r) // b -> q` and
`(b*q + r) % b -> r` when `0 <= r < b` is proven. Results that stay
divisions become atoms that remember their dividend (`AtomTable.info`).

State used (owned by `Analyzer`): `atoms`, and its `_poly_bound`,
`_prove_le0` and `_rebuild`.
"""

from __future__ import annotations

import math

from ..ir.expr import BinaryOp, IntImm
from .interval import is_inf
from .poly import Poly


class DivModMixin:
    def _divisor_candidates(self, r: Poly, c: int) -> list[int]:
        ds = set()
        for coef in r.terms.values():
            g = math.gcd(coef, c)
            if 1 < g < c:
                ds.add(g)
        return sorted(ds, reverse=True)

    def _within_period(self, p: Poly, d: int) -> int | None:
        """k if p is proven to lie in [k*d, (k+1)*d), else None."""
        lo, hi = self._poly_bound(p)
        if is_inf(lo) or is_inf(hi):
            return None
        k = lo // d
        return k if hi < (k + 1) * d else None

    def _single_term(self, r: Poly):
        """(atom id, info) if r is `atom + const` with atom built as a div/mod."""
        if len(r.terms) == 1:
            ((mono, coef),) = r.terms.items()
            if coef == 1 and len(mono) == 1:
                return mono[0], self.atoms.info.get(mono[0])
        return None, None

    def _floordiv_const(self, p: Poly, c: int) -> Poly:
        if c < 0:  # floor(x / -c) == floor(-x / c)
            return self._floordiv_const(p.scale(-1), -c)
        if c == 1:
            return p
        q, r = p.split(c)
        if r.is_zero:
            return q
        return q.add(self._floordiv_rest(r, c))

    def _floordiv_rest(self, r: Poly, c: int) -> Poly:
        """floor(r / c), for r whose terms c does not divide and r.const in [0, c)."""
        k = self._within_period(r, c)
        if k is not None:
            return Poly({}, k, r.dtype)
        for d in self._divisor_candidates(r, c):
            s, t = r.split(d)
            k = self._within_period(t, d)
            if k is not None:  # floor(r / c) == floor(floor(r / d) / (c/d)), floor(r / d) == s + k
                return self._floordiv_const(s.add_const(k), c // d)
        aid, info = self._single_term(r)
        if info is not None:
            op, x, a, _ = info
            if op == "floordiv":
                return self._floordiv_const(x.add_const(r.const * a), a * c)
            if op == "floormod" and r.const == 0 and a % c == 0:
                return self._floormod_const(self._floordiv_const(x, c), a // c)
        return self._divmod_atom("floordiv", r, c)

    def _floormod_const(self, p: Poly, c: int) -> Poly:
        if c < 0:  # x % -c == -((-x) % c)
            return self._floormod_const(p.scale(-1), -c).scale(-1)
        if c == 1:
            return Poly({}, 0, p.dtype)
        _, r = p.split(c)
        if r.is_zero:
            return r
        k = self._within_period(r, c)
        if k is not None:
            return r.add_const(-k * c)
        for d in self._divisor_candidates(r, c):
            s, t = r.split(d)
            k = self._within_period(t, d)
            if k is not None:  # r == d*(s + k) + (t - k*d) with t - k*d in [0, d)
                return self._floormod_const(s.add_const(k), c // d).scale(d).add(t.add_const(-k * d))
        aid, info = self._single_term(r)
        if info is not None and info[0] == "floormod" and r.const == 0 and info[2] % c == 0:
            return self._floormod_const(info[1], c)
        return self._divmod_atom("floormod", r, c)

    def _divmod_atom(self, op: str, r: Poly, c: int) -> Poly:
        rkey = r.key()
        key = (op, rkey, c, r.dtype)
        aid = self.atoms.divmod_ids.get(key)
        if aid is None:
            dt = r.dtype
            e = BinaryOp(op, self._rebuild(r), IntImm(c, dt, self._span), dt, self._span)
            aid = self.atoms.intern(e)
            self.atoms.info[aid] = (op, r, c, rkey)
            self.atoms.divmod_ids[key] = aid
        return Poly({(aid,): 1}, 0, r.dtype)

    def _divmod_symbolic(self, op: str, pa: Poly, pb: Poly, dt) -> Poly:
        """a // b, a % b, a / b for a non-constant divisor b >= 1: split off
        the multiples of b and drop the division when the rest is in [0, b)."""
        if self._poly_bound(pb)[0] >= 1:
            aid = pb.single_atom()
            q, r = Poly({}, 0, dt), pa
            if aid is not None:
                qt, rt, qc = {}, {}, 0
                for mono, coef in pa.terms.items():
                    if aid in mono:
                        rest = list(mono)
                        rest.remove(aid)
                        if rest:
                            qt[tuple(rest)] = coef
                        else:
                            qc = coef
                    else:
                        rt[mono] = coef
                q, r = Poly(qt, qc, dt), Poly(rt, pa.const, dt)
            if op == "div" and not self._prove_le0(pa.scale(-1)):
                pass  # truncating division of a possibly negative value: leave it
            elif self._prove_le0(r.scale(-1)) and self._prove_le0(r.sub(pb).add_const(1)):
                return r if op == "floormod" else q
        return self._atom(BinaryOp(op, self._rebuild(pa), self._rebuild(pb), dt, self._span))

    def _recombine(self, p: Poly) -> Poly:
        """(x // c)*c*k + (x % c)*k -> x*k."""
        info = self.atoms.info
        for mono, k in list(p.terms.items()):
            if len(mono) != 1 or p.terms.get(mono) != k:
                continue
            inf = info.get(mono[0])
            if inf is None or inf[0] != "floormod":
                continue
            _, x, c, xkey = inf
            did = self.atoms.divmod_ids.get(("floordiv", xkey, c, x.dtype))
            if did is not None and p.terms.get((did,)) == k * c:
                terms = dict(p.terms)
                del terms[mono], terms[(did,)]
                p = Poly(terms, p.const, p.dtype).add(x.scale(k))
        return p
