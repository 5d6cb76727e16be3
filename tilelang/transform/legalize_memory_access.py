"""legalize_memory_access: make every global-memory access safe.

Requires: tile ops lowered (`lower_tile_ops`); plain loads, stores and
`address_of(...)` intrinsic arguments (atomics) are the only global accesses.
Guarantees: each global access whose indices may fall outside the tensor's
shape is guarded —

- a load becomes `Select(in_bounds, load, 0)` (out-of-bounds reads give 0);
- a store, or a statement passing `address_of(A[...])` (an atomic), becomes
  `if in_bounds: ...` (out-of-bounds writes are dropped) —

where `in_bounds` keeps only the conditions `0 <= idx` / `idx < dim` that
cannot be proven. Proofs use `tilelang.arith.Analyzer` with the ranges of block
indices and loop variables, `LetStmt` values, and the conditions of
enclosing `if`s / selects / guards and `T.assume` statements (to the end of
their statement list; conditions that read memory are not assumed), plus structural matching against those conditions. Loop nests a
lowering marked `tl.in_bounds` (it tested the whole region at run time) are
left alone. Disabled by pass config `tl.disable_safe_memory_legalize`.
Never mutates its input.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import (
    And,
    Broadcast,
    BufferLoad,
    Call,
    FloatImm,
    IntImm,
    Not,
    PrimExpr,
    Ramp,
    Select,
    Var,
    binary,
    compare,
    const_int,
    logical_and,
    structural_equal,
)
from ..ir.function import PrimFunc
from ..ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from ..ir.visitor import Mutator, collect
from ..tileop.base import IN_BOUNDS
from .context import CompileContext

DISABLE_KEY = "tl.disable_safe_memory_legalize"


def legalize_memory_access(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    cfg = CompileContext.of(ctx).pass_configs
    if cfg.get(DISABLE_KEY):
        return func
    body = _Legalize().stmt(func.body)
    return func if body is func.body else func.with_body(body)


def _make_analyzer():
    try:
        from ..arith import Analyzer
    except ImportError:  # pragma: no cover - the analyzer is part of the package
        return None
    return Analyzer()


def _reads_memory(e: Any) -> bool:
    return bool(collect(e, lambda n: isinstance(n, BufferLoad)))


def _atoms(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _atoms(cond.a) + _atoms(cond.b)
    return [cond]


def _conj(atoms: list[PrimExpr]) -> PrimExpr:
    out = atoms[0]
    for a in atoms[1:]:
        out = logical_and(out, a)
    return out


def _extremes(idx: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """The smallest and largest lane of an index (itself for a scalar; the two
    ends of a Ramp with a constant stride; the value of a Broadcast)."""
    if isinstance(idx, Broadcast):
        return idx.value, idx.value
    if isinstance(idx, Ramp):
        last = idx.base + idx.stride * (idx.lanes - 1)
        stride = const_int(idx.stride)
        if stride is not None:
            return (idx.base, last) if stride >= 0 else (last, idx.base)
        return binary("min", idx.base, last), binary("max", idx.base, last)
    return idx, idx


def _zero(dtype) -> PrimExpr:
    return FloatImm(0.0, dtype) if dtype.is_float else IntImm(0, dtype)


class _Legalize:
    def __init__(self) -> None:
        self.an = _make_analyzer()
        self.known: list[PrimExpr] = []  # atoms that hold here (structural matching)
        self.in_bounds = False

    # -- knowledge -------------------------------------------------------------
    @contextlib.contextmanager
    def scope(self):
        n = len(self.known)
        try:
            if self.an is not None:
                with self.an.scope():
                    yield
            else:
                yield
        finally:
            del self.known[n:]

    def assume(self, cond: PrimExpr) -> None:
        """Record `cond` for the current scope (ignored when it reads memory)."""
        if _reads_memory(cond):
            return
        self.known.extend(_atoms(cond))
        if self.an is not None:
            try:
                self.an.assume(cond)
            except Exception:  # an unsupported condition only means less is known
                pass

    def proven(self, atom: PrimExpr) -> bool:
        if isinstance(atom, IntImm):
            return bool(atom.value)
        if any(structural_equal(atom, k) for k in self.known):
            return True
        if self.an is None:
            return False
        try:
            return self.an.can_prove(atom)
        except Exception:
            return False

    def needed(self, buf: Buffer, indices: tuple) -> list[PrimExpr]:
        """The bounds conditions of `buf[indices]` that are not proven here."""
        if buf.scope != "global" or self.in_bounds:
            return []
        out: list[PrimExpr] = []
        for idx, dim in zip(indices, buf.shape):
            lo, hi = _extremes(idx)
            for atom in (compare("ge", lo, 0), compare("lt", hi, dim)):
                if not self.proven(atom):
                    out.append(atom)
        return out

    # -- statements -----------------------------------------------------------
    def stmt(self, s: Stmt | None) -> Stmt | None:
        if s is None:
            return None
        fn = getattr(self, "s_" + type(s).__name__, None)
        if fn is not None:
            return fn(s)
        return _ExprRewriter(self).visit(s)

    def s_SeqStmt(self, s: SeqStmt) -> Stmt:
        with self.scope():
            out = tuple(self.stmt(x) for x in s.stmts)
        if all(a is b for a, b in zip(out, s.stmts)):
            return s
        return SeqStmt(out, s.span)

    def s_KernelLaunch(self, s: KernelLaunch) -> Stmt:
        with self.scope():
            if self.an is not None:
                for v, g in zip(s.block_vars, s.grid):
                    self.an.bind_range(v, 0, g)
            body = self.stmt(s.body)
        return s if body is s.body else _replace(s, body=body)

    def s_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.expr(s.value)
        if self.an is not None and value.dtype.is_integer and not _reads_memory(value):
            try:
                self.an.bind_value(s.var, value)
            except Exception:
                pass
        return s if value is s.value else _replace(s, value=value)

    def s_For(self, s: For) -> Stmt:
        start, extent = self.expr(s.start), self.expr(s.extent)
        step = self.expr(s.step) if s.step is not None else None
        outer = self.in_bounds
        with self.scope():
            if self.an is not None:
                try:
                    if step is None or (isinstance(step, IntImm) and step.value == 1):
                        self.an.bind_range(s.var, start, extent)
                    elif isinstance(step, IntImm) and step.value > 0:
                        self.an.bind_range(s.var, start, (extent - 1) * step + 1)
                except Exception:
                    pass
            self.in_bounds = outer or bool(s.annotations.get(IN_BOUNDS))
            try:
                body = self.stmt(s.body)
            finally:
                self.in_bounds = outer
        if body is s.body and start is s.start and extent is s.extent and step is s.step:
            return s
        return _replace(s, start=start, extent=extent, step=step, body=body)

    def s_While(self, s: While) -> Stmt:
        cond = self.expr(s.cond)
        with self.scope():
            body = self.stmt(s.body)
        return s if cond is s.cond and body is s.body else _replace(s, cond=cond, body=body)

    def s_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.expr(s.cond)
        with self.scope():
            self.assume(cond)
            then = self.stmt(s.then_body)
        other = s.else_body
        if other is not None:
            with self.scope():
                self.assume(Not(cond))
                other = self.stmt(other)
        if cond is s.cond and then is s.then_body and other is s.else_body:
            return s
        return IfThenElse(cond, then, other, s.span)

    def s_Allocate(self, s: Allocate) -> Stmt:
        if s.init is None:
            return s
        init = self.expr(s.init)
        return s if init is s.init else _replace(s, init=init)

    def s_BufferStore(self, s: BufferStore) -> Stmt:
        indices = tuple(self.expr(i) for i in s.indices)
        atoms = self.needed(s.buffer, indices)
        with self.scope():
            if atoms:
                self.assume(_conj(atoms))
            value = self.expr(s.value)
        if value is s.value and all(a is b for a, b in zip(indices, s.indices)):
            store: Stmt = s
        else:
            store = BufferStore(s.buffer, indices, value, s.span)
        return IfThenElse(_conj(atoms), store, None, s.span) if atoms else store

    def s_Evaluate(self, s: Evaluate) -> Stmt:
        if isinstance(s.value, Call) and s.value.op == "tl.assume":  # T.assume: known to the end of the list
            self.assume(s.value.args[0])
            return s
        # address_of(A[...]) arguments (atomics) guard the whole statement
        atoms: list[PrimExpr] = []
        for c in collect(s.value, lambda n: isinstance(n, Call) and n.op == "address_of"):
            ld = c.args[0]
            if isinstance(ld, BufferLoad):
                idx = tuple(self.expr(i) for i in ld.indices)
                atoms += [a for a in self.needed(ld.buffer, idx) if not any(structural_equal(a, b) for b in atoms)]
        with self.scope():
            if atoms:
                self.assume(_conj(atoms))
            value = self.expr(s.value)
        ev = s if value is s.value else Evaluate(value, s.span)
        return IfThenElse(_conj(atoms), ev, None, s.span) if atoms else ev

    # -- expressions ----------------------------------------------------------
    def expr(self, e: Any) -> Any:
        if e is None:
            return None
        return _ExprRewriter(self).visit(e)


class _ExprRewriter(Mutator):
    """Guards global loads inside an expression (or an unknown statement)."""

    def __init__(self, owner: _Legalize) -> None:
        super().__init__()
        self.o = owner

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in e.indices)
        load = e if all(a is b for a, b in zip(indices, e.indices)) else BufferLoad(e.buffer, indices, e.dtype, e.span)
        atoms = self.o.needed(e.buffer, indices)
        if not atoms:
            return load
        zero = _zero(e.dtype.element_of())
        if e.dtype.lanes > 1:
            zero = Broadcast(zero, e.dtype.lanes, e.dtype)
        return Select(_conj(atoms), load, zero, e.dtype, e.span)

    def visit_Call(self, e: Call) -> PrimExpr:
        if e.op == "address_of" and e.args and isinstance(e.args[0], BufferLoad):
            ld = e.args[0]
            indices = tuple(self.visit(i) for i in ld.indices)
            if all(a is b for a, b in zip(indices, ld.indices)):
                return e
            return Call(e.op, (BufferLoad(ld.buffer, indices, ld.dtype, ld.span),) + tuple(e.args[1:]), e.dtype, e.span)
        return self.generic_visit(e)

    def visit_Select(self, e: Select) -> PrimExpr:
        cond = self.visit(e.cond)
        with self.o.scope():
            self.o.assume(cond)
            t = self.visit(e.true_value)
        with self.o.scope():
            self.o.assume(Not(cond))
            f = self.visit(e.false_value)
        if cond is e.cond and t is e.true_value and f is e.false_value:
            return e
        return Select(cond, t, f, e.dtype, e.span)

    def visit_Var(self, e: Var) -> PrimExpr:
        return e


def _replace(node, **kw):
    from dataclasses import replace

    return replace(node, **kw)
