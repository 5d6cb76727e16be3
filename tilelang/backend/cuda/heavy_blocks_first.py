"""heavy_blocks_first: a grid whose blocks do more work the larger their x index runs them largest first.

Requires: a tile-level PrimFunc (before `lower_threads`). Guarantees: a kernel that

* can run its blocks in any order (a static x extent, `auto_rasterize.order_free`: no cluster,
  no atomics, spin-waits or explicit warp-specialised code) and has no `T.use_swizzle` of its own,
* has a top-level serial or pipelined loop whose trip count depends on the x block index and
  provably never decreases as it grows (FlashAttention's causal loop,
  `min(ceildiv(seq, N), ceildiv((bx + 1) * M, N))`),

has its x block index reversed (`bx` becomes `gx - 1 - bx`); every other function is returned
unchanged. The reversal is a bijection of block indices, so results are unchanged; only the
order in which the hardware starts blocks differs. `tl.disable_rasterization` turns it off too.

Why: blocks start in index order. With the longest blocks last, the grid's tail is a few long
blocks running on an otherwise idle GPU; started first, they overlap the short ones and the
tail is short blocks (the longest-processing-time-first rule).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...arith.analyzer import Analyzer
from ...ir.decisions import ScheduleDecision, record
from ...ir.expr import IntImm, binary, compare, const_int
from ...ir.function import PrimFunc
from ...ir.stmt import For, Hint, KernelLaunch, SeqStmt
from ...ir.visitor import Mutator, collect, substitute, uses_var
from ...pass_config import in_force
from ...transform.context import CompileContext
from .auto_rasterize import DISABLE_KEY, order_free


def heavy_blocks_first(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if in_force(func, ctx).get(DISABLE_KEY):
        return func

    made: list = []

    class _Kernels(Mutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> KernelLaunch:
            gx = growing_x_extent(k)
            if gx is None:
                return k
            made.append(ScheduleDecision(k.span, "heavy_first", tiles=gx))
            bx = k.block_vars[0]
            return replace(k, body=substitute(k.body, {bx: binary("sub", IntImm(gx - 1, bx.dtype), bx)}))

    body = _Kernels().visit(func.body)
    return func if body is func.body else record(func.with_body(body), *made)


def growing_x_extent(k: KernelLaunch) -> int | None:
    """The static x extent of `k`'s grid when `k` meets the module docstring's conditions."""
    gx = const_int(k.grid[0]) if k.block_vars else None
    if gx is None or gx < 2 or not order_free(k):
        return None
    if collect(k.body, lambda n: isinstance(n, Hint) and n.name == "use_swizzle"):
        return None
    bx = k.block_vars[0]
    an = Analyzer()
    an.bind(bx, 0, gx - 2)  # compares block bx with block bx + 1
    for f in _top_level_loops(k.body):
        if f.kind not in ("serial", "pipelined") or not uses_var(f.extent, bx):
            continue
        nxt = substitute(f.extent, {bx: binary("add", bx, IntImm(1, bx.dtype))})
        if an.can_prove(compare("ge", nxt, f.extent)) and not an.can_prove(compare("eq", nxt, f.extent)):
            return gx
    return None


def _top_level_loops(s: Any) -> list:
    """The loops of the kernel body's statement list (not nested in another loop)."""
    stmts = s.stmts if isinstance(s, SeqStmt) else (s,)
    return [x for x in stmts if isinstance(x, For)]
