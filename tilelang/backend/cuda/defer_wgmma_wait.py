"""defer_wgmma_wait: of two wgmma gemms issued back to back, the first does not wait for itself.

Requires: a tile-level PrimFunc after `infer_layout`, `inject_pipeline` and `inject_sync` (the
layouts in `attrs["layout_map"]`; every barrier, fence and pipeline copy already placed).

Guarantees: an equivalent PrimFunc. In every statement list, a `T.gemm` planned on wgmma that
is directly followed by another wgmma gemm — nothing at all between them — gets the annotation
`wgmma_wait=False` when the second touches none of the register tiles (accumulator, register A
operand) of any gemm still in flight (a chain of several deferred gemms counts all of them) and
neither carries a `wgmma_wait` of its own: the group stays in flight, and the gemm that ends the
chain (its `wgmma_wait<0>` retires every earlier group, groups complete in order) is annotated
`wgmma_fence_after` with the chain's register tiles, which its lowering fences after the wait
so that no access to them moves above it. Nothing touches the chain's shared operands in
between, since nothing runs in between.

Why: each wgmma gemm otherwise drains the tensor pipe before the next is issued. FlashAttention
in row halves issues P0·V and then Q1·Kᵀ; deferred, the two run back to back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.function import PrimFunc
from ...ir.stmt import Gemm, SeqStmt
from ...ir.visitor import Mutator
from ...transform.context import CompileContext
from ...transform.infer_layout import wgmma_plan_of
from .overlap_gemms import registers_of

WAIT_KEY = "wgmma_wait"
FENCE_KEY = "wgmma_fence_after"  # register tiles to fence after this gemm's wait


def defer_wgmma_wait(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    layouts = func.attrs.get("layout_map") or {}
    if not any(wgmma_plan_of(lay) is not None for lay in layouts.values()):
        return func

    def on_wgmma(s: Any) -> bool:
        return isinstance(s, Gemm) and wgmma_plan_of(layouts.get(s.C.buffer)) is not None

    class _Defer(Mutator):
        def visit_SeqStmt(self, s: SeqStmt) -> Any:
            stmts = list(self.visit(s.stmts))
            changed = any(a is not b for a, b in zip(stmts, s.stmts))
            in_flight: list = []  # register tiles of the deferred gemms of the current chain
            for i, g in enumerate(stmts):
                if not (on_wgmma(g) and WAIT_KEY not in g.annotations):
                    in_flight = []
                    continue
                nxt = stmts[i + 1] if i + 1 < len(stmts) else None
                regs = registers_of(g)
                chain = in_flight + list(regs)
                if on_wgmma(nxt) and WAIT_KEY not in nxt.annotations and not set(registers_of(nxt)) & set(chain):
                    stmts[i] = replace(g, annotations=g.annotations.set(**{WAIT_KEY: False}))
                    in_flight = chain
                elif in_flight:  # g waits for the chain: fence the deferred gemms' registers after it
                    stmts[i] = replace(g, annotations=g.annotations.set(**{FENCE_KEY: tuple(in_flight)}))
                    in_flight = []
                else:
                    continue
                changed = True
            return replace(s, stmts=tuple(stmts)) if changed else s

    body = _Defer().visit(func.body)
    return func if body is func.body else func.with_body(body)
