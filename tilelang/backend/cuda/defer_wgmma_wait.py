"""defer_wgmma_wait: of two wgmma gemms issued back to back, the first does not wait for itself.

Requires: a tile-level PrimFunc after `infer_layout`, `inject_pipeline` and `inject_sync` (the
layouts in `attrs["layout_map"]`; every barrier, fence and pipeline copy already placed).

Guarantees: an equivalent PrimFunc. In every statement list, a `T.gemm` planned on wgmma that
is directly followed by another wgmma gemm — nothing at all between them — gets the annotation
`wgmma_wait=False` when the second neither reads nor writes the first's accumulator or register
A operand (and does not itself carry `wgmma_wait`): its group stays in flight and the second
gemm's `wgmma_wait<0>` (groups complete in order) retires both. Nothing touches the first
gemm's registers or shared operands in between, since nothing runs in between.

Why: each wgmma gemm otherwise drains the tensor pipe before the next is issued. FlashAttention
in row halves issues P0·V and then Q1·Kᵀ; deferred, the two run back to back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.function import PrimFunc
from ...ir.stmt import Gemm, SeqStmt
from ...ir.visitor import Mutator
from ...transform.infer_layout import wgmma_plan_of

WAIT_KEY = "wgmma_wait"


def defer_wgmma_wait(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    layouts = func.attrs.get("layout_map") or {}
    if not any(wgmma_plan_of(lay) is not None for lay in layouts.values()):
        return func

    def on_wgmma(s: Any) -> bool:
        return isinstance(s, Gemm) and wgmma_plan_of(layouts.get(s.C.buffer)) is not None

    class _Defer(Mutator):
        def visit_SeqStmt(self, s: SeqStmt) -> Any:
            stmts = list(self.visit(s.stmts))
            changed = any(a is not b for a, b in zip(stmts, s.stmts))
            for i in range(len(stmts) - 1):
                first, second = stmts[i], stmts[i + 1]
                if on_wgmma(first) and on_wgmma(second) and _independent(first, second):
                    if WAIT_KEY not in first.annotations and WAIT_KEY not in second.annotations:
                        ann = first.annotations.set(**{WAIT_KEY: False})
                        stmts[i] = replace(first, annotations=ann)
                        changed = True
            return replace(s, stmts=tuple(stmts)) if changed else s

    body = _Defer().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _independent(first: Gemm, second: Gemm) -> bool:
    """`second` leaves `first`'s registers alone while both are in flight."""
    in_flight = {first.C.buffer} | ({first.A.buffer} if first.A.buffer.scope == "local.fragment" else set())
    return not ({second.A.buffer, second.C.buffer} & in_flight)
