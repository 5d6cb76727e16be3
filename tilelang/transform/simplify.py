"""Pass `simplify`: canonicalise every expression and drop provably dead code.

Requires: a PrimFunc (any stage). Guarantees: an equivalent PrimFunc (the
input is never modified; unchanged subtrees keep their identity) in which

* every expression (indices, stored values, loop bounds, conditions, grid
  extents, tile-op region begins/extents and values) is `Analyzer.simplify`d
  with what is known at that point: block variables are in
  `[0, grid extent)`, loop variables in `[start, start + extent)` (or the
  range their step walks), dynamic shape variables (free Vars in parameter
  buffer shapes) in `[1, 2^31)`, and the condition of each enclosing `if`
  (the negation in `else`) holds, unless it reads memory or calls a function;
* `if` with a provable condition is replaced by the branch taken, an `if`
  with two empty branches disappears, and one with only an `else` is
  inverted; `while False` and loops that run zero times, or whose body
  became empty, are removed;
* a `LetStmt` binding an integer expression without loads or calls is
  inlined into the statements after it (pass config
  `{"tl.Simplify": {"enable_simplify_let_inline": False}}` keeps it), unless
  its variable appears where the pass does not rewrite (buffer shapes,
  annotations). Other LetStmts stay, and their range is used.

Buffer shapes and annotations are left as they are: buffers are definitions
shared by identity with the rest of the compiler.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..arith import Analyzer, is_index_dtype
from ..ir.expr import (
    And,
    BinaryOp,
    Call,
    Cast,
    Compare,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Select,
    Var,
    logical_not,
)
from ..ir.function import PrimFunc
from ..ir.node import FrozenDict, Node, child_fields
from ..ir.stmt import Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, While
from ..ir.visitor import Mutator, Visitor, free_vars_of
from ..pass_config import normalize
from .context import CompileContext

DYNAMIC_DIM_MAX = 2**31 - 1


def simplify(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    cfg = normalize(dict(CompileContext.of(ctx).pass_configs)).get("tl.Simplify") or {}
    an = Analyzer()
    with an.scope():
        for v in func.dynamic_vars():
            an.bind(v, 1, DYNAMIC_DIM_MAX)
        body = _Simplifier(an, func, bool(cfg.get("enable_simplify_let_inline", True))).visit(func.body)
    return func if body is func.body else func.with_body(body)


def simplify_expr(expr: Any, analyzer: Analyzer | None = None) -> PrimExpr:
    """Simplify one expression (with what `analyzer` knows, if given)."""
    return (analyzer if analyzer is not None else Analyzer()).simplify(expr)


def _empty(span) -> SeqStmt:
    return SeqStmt((), span)


def _is_empty(s) -> bool:
    return s is None or (type(s) is SeqStmt and not s.stmts)


_PLAIN = (Var, IntImm, BinaryOp, Compare, And, Or, Not, Cast, Select)


def _plain(e) -> bool:
    """True if `e` reads no memory and calls nothing, so its value cannot
    change between two points of the same scope."""
    if type(e) not in _PLAIN:
        return False
    return all(_plain(getattr(e, f)) for f in child_fields(type(e)) if isinstance(getattr(e, f), PrimExpr))


def _assumed(s: Any) -> Any:
    """The condition of a `T.assume(cond)` statement (language/extern.py), else None."""
    if isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == "tl.assume":
        return s.value.args[0]
    return None


class _PinnedVars(Visitor):
    """Vars used where the pass does not rewrite: buffer shapes and strides,
    and IR values stored in annotation dicts."""

    def __init__(self) -> None:
        self.vars: set[Var] = set()
        self.buffers: set[int] = set()

    def visit_Buffer(self, b) -> None:
        if id(b) not in self.buffers:
            self.buffers.add(id(b))
            for d in tuple(b.shape) + tuple(b.strides or ()):
                self._value(d)

    def generic_visit(self, node) -> None:
        super().generic_visit(node)
        for f in child_fields(type(node)):
            v = getattr(node, f)
            if isinstance(v, FrozenDict):
                self._value(v)

    def _value(self, v: Any) -> None:
        if isinstance(v, PrimExpr):
            self.vars.update(free_vars_of(v))
        elif isinstance(v, (tuple, list)):
            for x in v:
                self._value(x)
        elif isinstance(v, dict):
            for x in v.values():
                self._value(x)


class _Simplifier(Mutator):
    def __init__(self, an: Analyzer, func: PrimFunc, inline_let: bool) -> None:
        super().__init__()
        self.an = an
        self.func = func
        self.inline_let = inline_let
        self._pinned: set[Var] | None = None
        self._dispatch: dict[type, Any] = {}

    def pinned(self) -> set[Var]:
        if self._pinned is None:  # computed only once a LetStmt could be inlined
            p = _PinnedVars()
            p.visit(self.func.params)
            p.visit(self.func.body)
            self._pinned = p.vars
        return self._pinned

    def visit(self, node: Any) -> Any:
        fn = self._dispatch.get(type(node))
        if fn is None:
            fn = self._dispatch[type(node)] = self._handler(type(node))
        return fn(node)

    def _handler(self, cls: type):
        """The method that rewrites nodes of class `cls` (cached per class)."""
        if issubclass(cls, PrimExpr):
            return self.an.simplify
        if issubclass(cls, Node):
            return getattr(self, "visit_" + cls.__name__, self.generic_visit)
        return super().visit

    # -- statement lists and bindings --------------------------------------
    def visit_SeqStmt(self, s: SeqStmt):
        if any(_assumed(x) is not None for x in s.stmts):
            with self.an.scope():  # a T.assume holds to the end of its statement list
                return self._seq(s)
        return self._seq(s)

    def visit_Evaluate(self, s: Evaluate):
        cond = _assumed(s)
        if cond is None:
            return self.generic_visit(s)
        cond = self.an.simplify(cond)
        if _plain(cond):
            self.an.assume(cond, simplified=True)
        return s  # kept: later passes (bounds guards, checks) read it too

    def _seq(self, s: SeqStmt):
        out, changed = [], False
        for x in s.stmts:
            y = self.visit(x)
            if y is x:
                out.append(x)
                continue
            changed = True
            if type(y) is SeqStmt:
                out.extend(y.stmts)
            else:
                out.append(y)
        if not changed:
            return s
        return out[0] if len(out) == 1 else SeqStmt(tuple(out), s.span)

    def visit_LetStmt(self, s: LetStmt):
        an, var = self.an, s.var
        value = an.simplify(s.value)
        if is_index_dtype(var.dtype) and value.dtype is var.dtype:
            if self.inline_let and _plain(value) and var not in self.pinned():
                an.bind_value(var, value)
                return _empty(s.span)
            lo, hi = an.const_int_bound(value)
            an.bind(var, lo, hi)
        return s if value is s.value else replace(s, value=value)

    def visit_KernelLaunch(self, s: KernelLaunch):
        an = self.an
        grid = tuple(an.simplify(g) for g in s.grid)
        with an.scope():
            for v, g in zip(s.block_vars, grid):
                an.bind_range(v, 0, g)
            body = self.visit(s.body)
        if body is s.body and all(a is b for a, b in zip(grid, s.grid)):
            return s
        return replace(s, grid=grid, body=body)

    # -- loops -----------------------------------------------------------------
    def visit_For(self, s: For):
        an = self.an
        start, extent = an.simplify(s.start), an.simplify(s.extent)
        step = None if s.step is None else an.simplify(s.step)
        if an.can_prove(extent <= 0):
            return _empty(s.span)
        with an.scope():
            self._bind_loop_var(s.var, start, extent, step)
            body = self.visit(s.body)
        if _is_empty(body):
            return _empty(s.span)
        if start is s.start and extent is s.extent and step is s.step and body is s.body:
            return s
        return replace(s, start=start, extent=extent, step=step, body=body)

    def _bind_loop_var(self, var: Var, start, extent, step) -> None:
        an = self.an
        if step is None or (type(step) is IntImm and step.value == 1):
            an.bind_range(var, start, extent)
            return
        last = start + (extent - 1) * step
        lo, hi = an.const_int_bound(step)
        if lo >= 0:
            an.bind(var, start, last)
        elif hi <= 0:
            an.bind(var, last, start)

    def visit_While(self, s: While):
        cond = self.an.simplify(s.cond)
        if type(cond) is IntImm and not cond.value:
            return _empty(s.span)
        with self.an.scope():  # the condition may read memory the body writes: assume nothing
            body = self.visit(s.body)
        if cond is s.cond and body is s.body:
            return s
        return replace(s, cond=cond, body=body)

    # -- branches ----------------------------------------------------------------
    def visit_IfThenElse(self, s: IfThenElse):
        an = self.an
        cond = an.simplify(s.cond)
        if type(cond) is IntImm:
            if cond.value:
                return self.visit(s.then_body)
            return _empty(s.span) if s.else_body is None else self.visit(s.else_body)
        usable = _plain(cond)
        with an.constraint(cond, simplified=True) if usable else an.scope():
            then = self.visit(s.then_body)
        els = None
        if s.else_body is not None:
            with an.constraint(Not(cond), simplified=True) if usable else an.scope():
                els = self.visit(s.else_body)
            if _is_empty(els):
                els = None
        if _is_empty(then):
            if els is None:
                return _empty(s.span)
            return IfThenElse(an.simplify(logical_not(cond)), els, None, s.span)
        if cond is s.cond and then is s.then_body and els is s.else_body:
            return s
        return IfThenElse(cond, then, els, s.span)
