"""fold_gemm_clear: zeroing a gemm's accumulator just before the gemm becomes the gemm's clear.

Requires: a verified, simplified tile-level PrimFunc (before `split_rows` and `infer_layout`).

Guarantees: an equivalent PrimFunc (the input is never modified). In every statement list, a
statement that sets every element of a fragment C to zero — `T.fill(C, 0)` / `T.clear(C)` over
all of C, or a `T.Parallel` nest over exactly C's shape storing 0 to `C[i, j, ...]` — is removed
when a later statement of the same list is a `T.gemm` accumulating into all of C without
`clear_accum`, C is not one of its operands, and the statements in between neither read nor
write C (nor name it at all: `T.print(C)`, a reducer finalized into C) and contain no `break` /
`continue`. That gemm gets `clear_accum=True`. A branch `if c: ...; <zero C> else: ...` (the zeroing
the last statement of either branch) directly followed by the gemm takes the gemm into both
branches, so the zeroing one folds.

Why: on wgmma a clearing gemm's first k-step ignores the old accumulator (scale-d = 0), so
the block no longer writes the zeros itself — FlashAttention's score tile is zeroed every
iteration, 64 register moves per thread for a 64×128 fp32 tile, on the softmax's critical ALU
path. The other lowerings zero C themselves, as before.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import FloatImm, IntImm
from ..ir.function import PrimFunc
from ..ir.stmt import Break, Continue, Fill, For, Gemm, IfThenElse, SeqStmt, Stmt, seq
from ..ir.visitor import Mutator, collect
from .context import CompileContext
from .infer_layout import whole_tile_store

FRAGMENT = "local.fragment"


def fold_gemm_clear(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    body = _Fold().visit(func.body)
    return func if body is func.body else func.with_body(body)


class _Fold(Mutator):
    def visit_SeqStmt(self, s: SeqStmt) -> Any:
        stmts = list(self.visit(s.stmts))
        changed = any(a is not b for a, b in zip(stmts, s.stmts))
        i = 0
        while i < len(stmts):
            branched = _branch_clear(stmts, i)
            if branched is not None:
                stmts[i : i + 2] = [branched]
                changed = True
                continue
            c = zeroed_fragment(stmts[i])
            j = _clearing_gemm(stmts, i + 1, c) if c is not None else None
            if j is None:
                i += 1
                continue
            stmts[j] = replace(stmts[j], clear_accum=True)
            del stmts[i]
            changed = True
        if not changed:
            return s
        return replace(s, stmts=tuple(stmts)) if len(stmts) != 1 else stmts[0]


def _branch_clear(stmts: list, i: int) -> IfThenElse | None:
    """`if c: ...; zero C  else: ...` directly followed by `gemm(C)` as the gemm moved into both
    branches, where the zeroing branch folds it (hoist_uniform_select's off-diagonal mask)."""
    s = stmts[i]
    if not (isinstance(s, IfThenElse) and s.else_body is not None and i + 1 < len(stmts)):
        return None
    g = stmts[i + 1]
    if not (isinstance(g, Gemm) and not g.clear_accum and g.C.is_whole()):
        return None
    if not any(zeroed_fragment(_last(b)) is g.C.buffer for b in (s.then_body, s.else_body)):
        return None
    # each branch gets its own gemm node (passes may key analyses by node identity)
    then_body, else_body = (_Fold().visit(seq(b, replace(g))) for b in (s.then_body, s.else_body))
    return replace(s, then_body=then_body, else_body=else_body)


def _last(s: Stmt) -> Stmt:
    return s.stmts[-1] if isinstance(s, SeqStmt) else s


def zeroed_fragment(s: Stmt) -> Buffer | None:
    """The fragment `s` sets to zero everywhere, or None."""
    if isinstance(s, Fill):
        b = s.dst.buffer
        return b if b.scope == FRAGMENT and _is_zero(s.value) and s.dst.is_whole() else None
    if not (isinstance(s, For) and s.kind == "parallel"):
        return None
    store = whole_tile_store(s)
    ok = store is not None and store.buffer.scope == FRAGMENT and _is_zero(store.value)
    return store.buffer if ok else None


def _clearing_gemm(stmts: list, start: int, c: Buffer) -> int | None:
    for j in range(start, len(stmts)):
        s = stmts[j]
        if isinstance(s, Gemm) and s.C.buffer is c:
            ok = not s.clear_accum and s.C.is_whole() and c not in (s.A.buffer, s.B.buffer)
            return j if ok else None
        if _touches(s, c):
            return None
    return None


def _touches(s: Stmt, b: Buffer) -> bool:
    """`s` may read or write `b`, or leave the statement list early (then C must stay zeroed):
    any node naming `b` in a field (loads, stores, regions, `T.print(b)`, a reducer finalized
    into `b`, ...), or a `break` / `continue`."""

    def hit(n: Any) -> bool:
        if isinstance(n, (Break, Continue)):
            return True
        return any(getattr(n, f.name, None) is b for f in fields(n)) if is_dataclass(n) else False

    return bool(collect(s, hit))


def _is_zero(v: Any) -> bool:
    return isinstance(v, (IntImm, FloatImm)) and v.value == 0
