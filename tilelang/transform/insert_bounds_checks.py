"""insert_bounds_checks: the debug mode that checks every on-chip access at run time.

Requires: lowered IR in which on-chip accesses are plain `BufferLoad` / `BufferStore`
nodes with scalar indices (C: after `lower_tile_ops`; CUDA: after `lower_threads`), and
global accesses not yet guarded (`legalize_memory_access` runs after this pass).

Guarantees: unchanged unless `pass_configs["tl.enable_bounds_check"]` is set or the
environment has `TILELANG_BOUNDS_CHECK=1`. Then every load or store of a shared, fragment
or local buffer whose indices the analyzer cannot prove in range is preceded by a check
that stops the kernel with `tl.assert_fail("<file>:<line>: out-of-range access to `S`
(shared.dyn, shape [32]): index [i + 32]")` — on the CPU backend a `DeviceAssertError`
naming the block, on CUDA the device-side assertion (printed, then the launch fails). A
load that is evaluated only under a condition (a `Select` / `T.if_then_else` branch, the
right side of `and` / `or`) is checked only when that condition holds, so the checks never
fire on an access the program does not make. Global accesses keep their guards: their
out-of-range parts are defined (masked) behaviour, not errors.
"""

from __future__ import annotations

import os
from typing import Any

from ..arith import Analyzer
from ..ir.dtype import int32
from ..ir.expr import (
    And,
    BufferLoad,
    Call,
    Or,
    PrimExpr,
    Select,
    StringImm,
    as_expr,
    const_int,
    logical_and,
    logical_not,
    logical_or,
)
from ..ir.function import PrimFunc
from ..ir.stmt import BufferStore, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, Stmt, While
from ..ir.visitor import Mutator, collect
from .context import CompileContext

ENABLE_KEY = "tl.enable_bounds_check"
ON_CHIP = ("shared", "shared.dyn", "local.fragment", "local", "local.var")


def bounds_check_enabled(ctx: Any) -> bool:
    cfg = CompileContext.of(ctx).pass_configs
    env = os.environ.get("TILELANG_BOUNDS_CHECK", "").strip().lower() in ("1", "true", "yes", "on")
    return bool(cfg.get(ENABLE_KEY)) or env


def insert_bounds_checks(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if not bounds_check_enabled(ctx):
        return func
    body = _Checks().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _reads_memory(e: Any) -> bool:
    return bool(collect(e, lambda n: isinstance(n, BufferLoad)))


def _loads(e: Any, cond: PrimExpr | None, out: list) -> None:
    """(load, condition under which it is evaluated or None) for every on-chip load in `e`."""
    if isinstance(e, Select):
        _loads(e.cond, cond, out)
        _loads(e.true_value, _and(cond, e.cond), out)
        _loads(e.false_value, _and(cond, logical_not(e.cond)), out)
    elif isinstance(e, Call) and e.op == "if_then_else" and len(e.args) == 3:
        c, t, f = e.args
        _loads(c, cond, out)
        _loads(t, _and(cond, c), out)
        _loads(f, _and(cond, logical_not(c)), out)
    elif isinstance(e, And):
        _loads(e.a, cond, out)
        _loads(e.b, _and(cond, e.a), out)
    elif isinstance(e, Or):
        _loads(e.a, cond, out)
        _loads(e.b, _and(cond, logical_not(e.a)), out)
    elif isinstance(e, BufferLoad):
        for i in e.indices:
            _loads(i, cond, out)
        if e.buffer.scope in ON_CHIP:
            out.append((e, cond))
    elif isinstance(e, PrimExpr):
        from ..ir.node import child_fields

        for name in child_fields(type(e)):
            v = getattr(e, name)
            for x in v if isinstance(v, tuple) else (v,):
                if isinstance(x, PrimExpr):
                    _loads(x, cond, out)


def _and(a: PrimExpr | None, b: PrimExpr) -> PrimExpr:
    return b if a is None else logical_and(a, b)


class _Checks(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.an = Analyzer()
        self.made: set[int] = set()  # ids of the SeqStmts `prepend` made: (checks..., statement)

    # -- what is known where -------------------------------------------------------------
    def visit_KernelLaunch(self, s: KernelLaunch) -> Stmt:
        with self.an.scope():
            for v, g in zip(s.block_vars, s.grid):
                self.an.bind_range(v, 0, g)
            return self.generic_visit(s)

    def visit_For(self, s: For) -> Stmt:
        with self.an.scope():
            if s.step is None or const_int(s.step) == 1:
                self.an.bind_range(s.var, s.start, s.extent)
            return self.generic_visit(s)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        out: list = []
        with self.an.scope():  # a LetStmt binds for the rest of its statement list
            for x in s.stmts:
                y = self.visit(x)
                # checks placed before a statement join this list (a LetStmt must stay in it)
                out.extend(y.stmts if id(y) in self.made else (y,))
        if len(out) == len(s.stmts) and all(a is b for a, b in zip(out, s.stmts)):
            return s
        return SeqStmt(tuple(out), s.span)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        new = self.prepend(self.checks(self.loads_of(s.value), s), s)
        if not _reads_memory(s.value):
            self.an.bind_value(s.var, s.value)
        return new

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        checks = self.checks([(a, c) for a, c in self.loads_of(s.cond)], s)
        known = not _reads_memory(s.cond)
        with self.an.scope():
            if known:
                self.an.assume(s.cond)
            then = self.visit(s.then_body)
        els = s.else_body
        if els is not None:
            with self.an.scope():
                if known:
                    self.an.assume(logical_not(s.cond))
                els = self.visit(els)
        new = s if then is s.then_body and els is s.else_body else IfThenElse(s.cond, then, els, s.span)
        return self.prepend(checks, new)

    def visit_While(self, s: While) -> Stmt:
        new = self.generic_visit(s)
        checks = self.checks(self.loads_of(s.cond), s)
        if not checks:
            return new
        # the condition is evaluated before every trip: check it before the loop and at its end
        return self.prepend(checks, While(new.cond, SeqStmt((new.body, *checks)), new.span))

    # -- accesses ------------------------------------------------------------------------------
    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        found = self.loads_of(s.value) + [x for i in s.indices for x in self.loads_of(i)]
        if s.buffer.scope in ON_CHIP:
            found.append((s, None))
        return self.prepend(self.checks(found, s), s)

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        if isinstance(s.value, Call) and s.value.op == "tl.assume":  # T.assume: known to the end of the list
            if not _reads_memory(s.value.args[0]):
                self.an.assume(s.value.args[0])
            return s
        return self.prepend(self.checks(self.loads_of(s.value), s), s)

    def prepend(self, checks: list, s: Stmt) -> Stmt:
        if not checks:
            return s
        out = SeqStmt((*checks, s), s.span)
        self.made.add(id(out))
        return out

    def loads_of(self, e: Any) -> list:
        out: list = []
        _loads(as_expr(e) if not isinstance(e, PrimExpr) else e, None, out)
        return out

    def checks(self, accesses: list, stmt: Stmt) -> list:
        out = []
        for node, cond in accesses:
            buf = node.buffer
            if len(node.indices) != len(buf.shape):
                continue  # a scalar read of a local.var
            atoms = []
            for i, d in zip(node.indices, buf.shape):
                if i.dtype.lanes != 1:
                    continue  # vector indices: not produced before this pass
                for atom in (i >= 0, i < d):
                    if not self.an.can_prove(atom if cond is None else logical_or(logical_not(cond), atom)):
                        atoms.append(atom)
            if not atoms:
                continue
            ok = atoms[0]
            for a in atoms[1:]:
                ok = logical_and(ok, a)
            if cond is not None:
                ok = logical_or(logical_not(cond), ok)
            span = node.span if node.span.line else stmt.span
            where = f"{span.file}:{span.line}" if span.line else "<unknown>"
            shape = [const_int(x) if const_int(x) is not None else str(x) for x in buf.shape]
            index = ", ".join(str(i) for i in node.indices)
            text = f"{where}: out-of-range access to `{buf.name}` ({buf.scope}, shape {shape}): index [{index}]"
            fail = Evaluate(Call("tl.assert_fail", (StringImm(text),), int32), span)
            out.append(IfThenElse(logical_not(ok), fail, None, span))
        return out
