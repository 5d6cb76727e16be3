"""hoist_uniform_select: a `T.Parallel` select that is the same for the whole tile is decided once.

Requires: a verified, simplified tile-level PrimFunc (before `split_rows` and `infer_layout`).
`pass_configs["tl.disable_loop_unswitching"]` turns the pass off.

Guarantees: an equivalent PrimFunc (the input is never modified). A perfect `T.Parallel` nest
(loops from 0 with constant extents) whose body is one store

    X[...] = T.if_then_else(lhs OP rhs, a, b)      OP in <, <=, >, >=

where `a` and `b` do not depend on the nest's loop variables and `lhs - rhs` is an affine
integer function of them (constant coefficients), becomes

    if <the comparison holds at every point of the nest>:  the nest storing a
    elif <it holds at none>:                               the nest storing b
    else:                                                  the nest as it was

Both tests are the comparison at one corner of the nest's box (the corner where `lhs - rhs` is
least, or greatest), so each costs one comparison per block instead of one per element. A
branch whose test the simplifier decides is dropped.

Why: FlashAttention's causal mask `bx*M + i >= k*N + j` only mixes values on the diagonal
blocks; on every other iteration the block now fills its score tile with the constant instead
of comparing and selecting element by element (and the padding mask of a sequence that is not
a multiple of the tile is constant on every block but the last).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..arith.analyzer import Analyzer
from ..ir.expr import Compare, IntImm, Select, Var, binary, logical_not
from ..ir.function import PrimFunc
from ..ir.stmt import BufferStore, For, IfThenElse
from ..ir.visitor import Mutator, free_vars_of, substitute
from ..pass_config import in_force
from .context import CompileContext
from .infer_layout import perfect_nest

DISABLE_KEY = "tl.disable_loop_unswitching"

ORDERINGS = ("lt", "le", "gt", "ge")


def hoist_uniform_select(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if in_force(func, ctx).get(DISABLE_KEY):  # this is loop unswitching: the public switch turns it off
        return func
    body = _Hoist().visit(func.body)
    return func if body is func.body else func.with_body(body)


class _Hoist(Mutator):
    def visit_For(self, s: For) -> Any:
        if s.kind != "parallel":
            return self.generic_visit(s)
        return _hoisted(s) or s


def _hoisted(nest: For) -> IfThenElse | For | None:
    loops, body = perfect_nest(nest)
    if not (isinstance(body, BufferStore) and isinstance(body.value, Select)):
        return None
    sel, extents = body.value, {}
    for f in loops:
        if not (isinstance(f.start, IntImm) and f.start.value == 0 and isinstance(f.extent, IntImm)):
            return None
        extents[f.var] = f.extent.value
    cond = sel.cond
    if not (isinstance(cond, Compare) and cond.op in ORDERINGS and cond.a.dtype.is_integer and cond.b.dtype.is_integer):
        return None
    if any(v in extents for v in free_vars_of((sel.true_value, sel.false_value))):
        return None
    an = Analyzer()
    coeffs = _affine_coefficients(an, binary("sub", cond.a, cond.b), extents)
    if coeffs is None:
        return None
    # lhs - rhs is least at `low`, greatest at `high`
    low = {v: (0 if c >= 0 else extents[v] - 1) for v, c in coeffs.items()}
    high = {v: (extents[v] - 1 if c >= 0 else 0) for v, c in coeffs.items()}
    worst, best = (low, high) if cond.op in ("gt", "ge") else (high, low)
    always = an.simplify(substitute(cond, worst))
    never = an.simplify(logical_not(substitute(cond, best)))

    def storing(value: Any) -> For:
        """The nest storing `value`, on fresh loop variables (each loop owns its variable)."""
        fresh = {f.var: Var(f.var.name, f.var.dtype) for f in loops}
        out: Any = substitute(replace(body, value=value), fresh)
        for f in reversed(loops):
            out = replace(f, var=fresh[f.var], body=out)
        return out

    out: Any = nest
    for test, value in ((never, sel.false_value), (always, sel.true_value)):
        if isinstance(test, IntImm):
            if test.value:
                return storing(value)
            continue
        out = IfThenElse(test, storing(value), out, span=nest.span)
    return out if out is not nest else None


def _affine_coefficients(an: Analyzer, d: Any, extents: dict) -> dict[Var, int] | None:
    """{loop var: integer coefficient} when `d` is affine in the loop variables, else None."""
    zero = {v: 0 for v in extents}
    base = substitute(d, zero)
    coeffs: dict[Var, int] = {}
    rebuilt: Any = base
    for v in extents:
        c = an.simplify(binary("sub", substitute(d, {**zero, v: 1}), base))
        if not isinstance(c, IntImm):
            return None
        coeffs[v] = c.value
        rebuilt = binary("add", rebuilt, binary("mul", IntImm(c.value, v.dtype), v))
    rest = an.simplify(binary("sub", d, rebuilt))
    return coeffs if isinstance(rest, IntImm) and rest.value == 0 else None
