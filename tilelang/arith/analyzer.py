"""`Analyzer`: what is known about integer variables, and what follows from it.

Knowledge comes in three forms, all scoped:

* constant ranges of variables: `bind(var, lo, hi)` (both inclusive) and
  `bind_range(var, begin, extent)` (`begin <= var < begin + extent`);
  symbolic bounds also add facts;
* facts: integer `Poly`s known to be `<= 0`, added by `assume(cond)` for the
  comparisons in `cond` (through `and` and `not`); adding one also tightens
  the range of every variable it constrains linearly;
* values: `bind_value(var, expr)` makes the simplifier substitute `expr`.

`with analyzer.scope():` undoes everything bound or assumed inside it on
exit; `with analyzer.constraint(cond):` is a scope that assumes `cond` (e.g.
inside `if i < n:`). Memo tables belong to the scope that filled them, so an
inner scope never sees (or spoils) results computed with less knowledge.

Unbound variables range over their dtype. Integers are mathematical: the
analyzer does not model wrap-around, so a proof holds for programs whose
index arithmetic does not overflow. Expressions are assumed free of side
effects, except that calls not known to be pure never merge with each other.
Facts about loads are the caller's responsibility: a fact stays true for
the whole scope, so do not assume a condition that reads memory a store in
the same scope may change.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any

from ..ir.expr import And, Compare, IntImm, Not, PrimExpr, Var, as_expr
from . import interval as iv
from .atoms import AtomTable
from .bound import BoundMixin
from .compare import ProofMixin
from .divmod import DivModMixin
from .interval import NEG_INF, dtype_range
from .interval import is_index_dtype as _is_index
from .poly import Poly
from .rewrite import RewriteMixin

_MISSING = object()


def _bound_arg(x: Any) -> PrimExpr | None:
    if x is None or (isinstance(x, float) and math.isinf(x)):
        return None
    return as_expr(x)


class _Scope:
    __slots__ = ("an", "saved")

    def __init__(self, an: Analyzer) -> None:
        self.an = an

    def __enter__(self) -> Analyzer:
        an = self.an
        self.saved = (an._pmemo, an._bmemo, an._smemo, len(an._facts), len(an._undo))
        an._pmemo, an._bmemo, an._smemo = {}, {}, {}
        return an

    def __exit__(self, *exc) -> None:
        an = self.an
        an._pmemo, an._bmemo, an._smemo, nfacts, nundo = self.saved
        del an._facts[nfacts:]
        undo = an._undo
        while len(undo) > nundo:
            table, key, old = undo.pop()
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old


class Analyzer(RewriteMixin, DivModMixin, ProofMixin, BoundMixin):
    """Integer bounds, proofs and simplification under scoped assumptions."""

    def __init__(self) -> None:
        self.atoms = AtomTable()
        self._vbounds: dict[Var, tuple] = {}
        self._values: dict[Var, PrimExpr] = {}
        self._facts: list[Poly] = []
        self._undo: list[tuple] = []  # (dict, key, old value or _MISSING)
        self._pmemo: dict = {}
        self._bmemo: dict = {}
        self._smemo: dict = {}
        self._span = None

    # ------------------------------------------------------------------
    # scopes
    # ------------------------------------------------------------------
    def scope(self) -> _Scope:
        """Everything bound or assumed inside the `with` block is undone on exit."""
        return _Scope(self)

    @contextmanager
    def constraint(self, cond: Any, simplified: bool = False):
        """A scope in which `cond` is assumed to hold (see `assume`)."""
        cond = as_expr(cond)
        facts = self._facts_of(cond if simplified else self.simplify(cond))
        with self.scope():
            for f in facts:
                self._add_fact(f)
            yield self

    def _set(self, table: dict, key: Any, value: Any) -> None:
        self._undo.append((table, key, table.get(key, _MISSING)))
        table[key] = value

    def _changed(self) -> None:
        self._pmemo.clear()
        self._bmemo.clear()
        self._smemo.clear()

    # ------------------------------------------------------------------
    # knowledge
    # ------------------------------------------------------------------
    def bind(self, var: Var, lo: Any = None, hi: Any = None) -> None:
        """Declare `lo <= var <= hi` (both inclusive; None or an infinity marker
        = unbounded).

        Replaces any constant range `var` had in this scope. `lo`/`hi` may be
        ints or integer expressions; a symbolic bound contributes its
        constant bound and is also kept as a fact (facts accumulate until
        the scope ends, so rebind a variable in a fresh `scope()`)."""
        self._bind(var, self._limit(lo), self._limit(hi))

    def bind_range(self, var: Var, begin: Any, extent: Any) -> None:
        """Declare `begin <= var < begin + extent` (half-open, like `range`)."""
        begin, extent = as_expr(begin), as_expr(extent)
        if type(begin) is IntImm and type(extent) is IntImm:
            self._bind(var, begin.value, begin.value + extent.value - 1)
        else:
            lo = self._limit(begin)
            last = self._poly(begin).add(self._poly(extent)).add_const(-1)
            self._bind(var, lo, last.const if last.is_const else last)

    def _limit(self, x: Any) -> int | Poly | None:
        """A bound argument as an int, a Poly (symbolic) or None (none)."""
        e = _bound_arg(x)
        if e is None:
            return None
        if type(e) is IntImm:
            return e.value
        if not _is_index(e.dtype):
            return None
        p = self._poly(e)
        return p.const if p.is_const else p

    def _bind(self, var: Var, lo: int | Poly | None, hi: int | Poly | None) -> None:
        lo_c, hi_c = dtype_range(var.dtype)
        if lo is not None:
            lo_c = max(lo_c, lo if type(lo) is int else self._poly_bound(lo)[0])
        if hi is not None:
            hi_c = min(hi_c, hi if type(hi) is int else self._poly_bound(hi)[1])
        self._set(self._vbounds, var, (lo_c, hi_c))
        self._changed()
        if isinstance(lo, Poly):
            self._add_fact(lo.sub(self._var_atom(var)))
        if isinstance(hi, Poly):
            self._add_fact(self._var_atom(var).sub(hi))

    def bind_value(self, var: Var, value: Any) -> None:
        """Declare `var == value`; the simplifier substitutes `value` for `var`."""
        value = as_expr(value, var.dtype)
        if value.dtype is not var.dtype:
            raise TypeError(f"bind_value: {var.name} is {var.dtype} but the value is {value.dtype}")
        value = self.simplify(value)
        if _is_index(var.dtype):
            self._set(self._vbounds, var, self.const_int_bound(value))
        self._set(self._values, var, value)
        self._changed()

    def assume(self, cond: Any, simplified: bool = False) -> None:
        """Add the integer comparisons of `cond` (through `and`/`not`) as facts
        of the current scope. Parts it cannot use (`or`, float comparisons)
        are ignored, which is sound: knowing less never proves more. Pass
        `simplified=True` if `cond` is already a result of `simplify` here."""
        cond = as_expr(cond)
        for f in self._facts_of(cond if simplified else self.simplify(cond)):
            self._add_fact(f)

    def _facts_of(self, c) -> list[Poly]:
        """The facts (Polys <= 0) that condition `c` implies, computed with what
        is known now (callers compute them before entering the scope they are
        for, so the Polys come from the current memo)."""
        t = type(c)
        if t is And:
            return self._facts_of(c.a) + self._facts_of(c.b)
        if t is Not:
            n = self._negate(c.a)
            return [] if n is None or type(n) is Not else self._facts_of(n)
        if t is not Compare or not _is_index(c.a.dtype):
            return []
        d = self._poly(c.a).sub(self._poly(c.b))
        op = c.op
        if op == "lt":
            return [d.add_const(1)]
        if op == "le":
            return [d]
        if op == "gt":
            return [d.scale(-1).add_const(1)]
        if op == "ge":
            return [d.scale(-1)]
        if op == "eq":
            return [d, d.scale(-1)]
        return []

    def _var_atom(self, var: Var) -> Poly:
        return Poly({(self.atoms.intern(var),): 1}, 0, var.dtype)

    def _add_fact(self, f: Poly) -> None:
        """Record `f <= 0` and tighten the range of each variable in a linear term."""
        if not f.terms:
            return  # a constant fact is either vacuous or a contradiction; neither helps
        self._facts.append(f)
        exprs = self.atoms.exprs
        for mono, k in f.terms.items():
            if len(mono) != 1 or type(exprs[mono[0]]) is not Var:
                continue
            var = exprs[mono[0]]
            rest = Poly({m: c for m, c in f.terms.items() if m != mono}, f.const, f.dtype)
            rlo = self._poly_bound(rest)[0]
            if rlo == NEG_INF:
                continue
            lo, hi = self._var_bound(var)
            if k > 0:  # k*var <= -rest <= -rlo
                hi = min(hi, (-rlo) // k)
            else:  # |k|*var >= rest >= rlo
                lo = max(lo, -((-rlo) // -k))
            if (lo, hi) != self._var_bound(var) and lo <= hi:
                self._set(self._vbounds, var, (lo, hi))
                self._changed()
        self._changed()

    # ------------------------------------------------------------------
    # questions
    # ------------------------------------------------------------------
    def const_int_bound(self, expr: Any) -> tuple:
        """Inclusive `(lo, hi)` bounds of an integer expression: ints, or
        `NEG_INF`/`POS_INF` where unbounded. Loads range over their dtype."""
        expr = as_expr(expr)
        b = self._bound(expr)
        if _is_index(expr.dtype) and type(expr) is not IntImm:
            b = iv.intersect(b, self._poly_bound(self._poly(expr)))
        return b

    def can_prove(self, cond: Any) -> bool:
        """True only if `cond` holds for every value the context allows.
        False means "not proven", not "false"."""
        r = self.simplify(as_expr(cond))
        return type(r) is IntImm and bool(r.value)

    def can_prove_equal(self, a: Any, b: Any) -> bool:
        a, b = as_expr(a), as_expr(b)
        if _is_index(a.dtype) and _is_index(b.dtype):
            return self._poly(a).sub(self._poly(b)).is_zero or self.can_prove(a == b)
        return self.atoms.key(self.simplify(a)) == self.atoms.key(self.simplify(b))

    def simplify(self, expr: Any) -> PrimExpr:
        """An expression equal to `expr` in this context, in canonical form.
        Returns `expr` itself (same object) when nothing changes."""
        if not isinstance(expr, PrimExpr):
            expr = as_expr(expr)
        if self._span is not None:  # nested call: keep the outer expression's span
            return self._simplify(expr)
        self._span = expr.span  # the span of every node this call creates
        try:
            return self._simplify(expr)
        finally:
            self._span = None
