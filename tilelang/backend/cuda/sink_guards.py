"""sink_guards: move a per-thread guard from around a loop nest to around its statements.

Used by `lower_threads` for a `T.Parallel` nest whose serial loops store shared memory at
the same place in every thread (a vector every iteration reads): each trip of such a loop
needs a barrier (`_uniform_syncs`), which every thread of the block must reach. When the
nest runs in fewer threads than the block (`tx < T_L`) or has layout padding, its body sits
behind a guard — a barrier inside it would be reached by some threads only, and without one
a fast thread's next trip overwrites what a slow one still reads. So the guard moves
inward: loops whose bounds do not depend on the thread run in every thread, and each
statement inside them is guarded on its own.

Requires: per-thread IR of one nest body (iteration variables substituted). Guarantees: an
equivalent statement (the guarded threads do the same work; the others only run the loops'
trips), or None where the guard cannot move (a loop whose trip count depends on the thread,
or a LetStmt, whose scope a guard would cut).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.expr import PrimExpr, Var
from ...ir.stmt import Allocate, For, IfThenElse, LetStmt, SeqStmt, Stmt, seq
from ...ir.visitor import free_vars_of


def sink_guards(s: Stmt, cond: PrimExpr, tx: Var) -> Stmt | None:
    """`s` with `cond` guarding its leaf statements instead of all of it (None if impossible)."""
    if isinstance(s, SeqStmt):
        parts = [sink_guards(x, cond, tx) for x in s.stmts]
        return None if any(p is None for p in parts) else seq(*parts)
    if isinstance(s, For) and s.kind in ("serial", "unrolled"):
        if _uses(tx, (s.start, s.extent, s.step)):
            return None
        body = sink_guards(s.body, cond, tx)
        return None if body is None else replace(s, body=body)
    if isinstance(s, LetStmt):
        return None
    if isinstance(s, Allocate):
        return s  # a register array: declared in every thread, used only under the guard
    return IfThenElse(cond, s, None, s.span)


def _uses(v: Var, e: Any) -> bool:
    return any(x is v for x in free_vars_of(e))


__all__ = ["sink_guards"]
