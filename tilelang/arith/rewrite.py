"""The simplifier (part of `Analyzer`).

Scalar integer expressions are parsed bottom-up into a canonical `Poly`
(`_poly`): `+ - *` by constants are exact polynomial arithmetic, so constants
fold and equal terms cancel; everything else becomes an *atom* after its own
operands are simplified. Division and modulo by a positive constant `c` use
exact identities, plus bounds where an identity needs a range:

    (c*q + r) // c  ->  q + r // c          (c*q + r) % c  ->  r % c
    r // c -> k,  r % c -> r - k*c           when r is proven in [k*c, (k+1)*c)
    (d*s + t) // c  ->  s // (c/d)           when d | c and t in [0, d)
    (d*s + t) % c   ->  (s % (c/d))*d + t    when d | c and t in [0, d)
    (x // a + k) // c  ->  (x + k*a) // (a*c)
    (x % m) // c  ->  (x // c) % (m/c)       (x % m) % c -> x % c    when c | m
    (x // c)*c*k + (x % c)*k  ->  x*k

`min`/`max` resolve when the sign of `a - b` is known, comparisons fold when
the analyzer proves them (bounds, then the facts of enclosing conditions)
and otherwise print as `positive terms <op> negative terms`, and `Select`
collapses when its condition folds (its arms are simplified under the
condition). Rebuilding a Poly orders terms by degree, then |coefficient|,
then names, so printing is stable and independent of object ids.

Integers are treated as mathematical integers (no wrap-around). Floats only
get constant folding and identities that are exact in IEEE arithmetic:
`x * 1.0`, `x / 1.0`, `x - 0.0`, `x + (-0.0)`; never `x + 0.0` or `x * 0.0`.

State used (owned by `Analyzer`): `atoms`, `_pmemo`, `_smemo`, `_values`,
`_facts`, `_span`, and the bound/scope methods of the analyzer.
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
from .interval import dtype_range, is_inf
from .poly import Poly

_MAX_EXPANDED_TERMS = 16  # larger products stay unexpanded atoms
_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


def _is_index(dt) -> bool:
    return dt.lanes == 1 and (dt.kind == "int" or dt.kind == "uint")


def _widening(src, dst) -> bool:
    """True if every value of integer dtype `src` is a value of `dst`."""
    if src.lanes != 1 or not (src.kind == "int" or src.kind == "uint"):
        return False
    if dst.kind == "int":
        return dst.bits >= src.bits if src.kind == "int" else dst.bits > src.bits
    return src.kind == "uint" and dst.bits >= src.bits


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


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
        """The Poly of a tree of `+`/`-`, walked with a stack: sums built by Python
        loops (`acc = acc + x`) can be deeper than the recursion limit allows."""
        dt, memo = e.dtype, self._pmemo
        acc = Poly({}, 0, dt)
        stack = [(e.a, 1), (e.b, 1 if e.op == "add" else -1)]
        while stack:
            x, sign = stack.pop()
            if type(x) is BinaryOp and (x.op == "add" or x.op == "sub") and x.dtype is dt and x not in memo:
                stack.append((x.a, sign))
                stack.append((x.b, sign if x.op == "add" else -sign))
            else:
                p = self._poly(x)
                acc = acc.add(p if sign == 1 else p.scale(-1))
        return acc

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
        with self.scope():
            self._assume(cond)
            t = self._simplify(t)
        with self.scope():
            self._assume(Not(cond, bool_, self._span))
            f = self._simplify(f)
        return t, f

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
    # division and modulo
    # ------------------------------------------------------------------
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
        key = (op, rkey, c)
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
            did = self.atoms.divmod_ids.get(("floordiv", xkey, c))
            if did is not None and p.terms.get((did,)) == k * c:
                terms = dict(p.terms)
                del terms[mono], terms[(did,)]
                p = Poly(terms, p.const, p.dtype).add(x.scale(k))
        return p

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

    def _logic(self, e):
        is_and = type(e) is And
        a = self._simplify(e.a)
        if type(a) is IntImm:
            if bool(a.value) != is_and:  # False and _ / True or _
                return a
            return self._simplify(e.b)
        with self.scope():  # `b` only matters where `a` is true (and) / false (or)
            self._assume(a if is_and else Not(a, bool_, self._span))
            b = self._simplify(e.b)
        if type(b) is IntImm:
            return a if bool(b.value) == is_and else b
        if self.atoms.key(a) == self.atoms.key(b):
            return a
        if a is e.a and b is e.b:
            return e
        return (And if is_and else Or)(a, b, bool_, e.span)

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
