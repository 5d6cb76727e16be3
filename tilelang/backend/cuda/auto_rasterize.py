"""auto_rasterize: give large GEMM grids an L2-friendly block order when the author did not choose one.

Requires: a tile-level PrimFunc (before `lower_threads`). Guarantees: a kernel that

* has no `T.use_swizzle` of its own (`T.use_swizzle(enable=False)` counts as a choice),
* runs a `T.gemm` (its blocks read operand panels that neighbouring blocks share),
* has a static two-dimensional grid of at least `MIN_BLOCKS` blocks, both sides >= `PANEL`,
* and cannot depend on the order blocks are scheduled in — no atomics, no `while` loops
  (spin-waits on other blocks), no explicit warp-specialised or cluster code,

gets `T.use_swizzle(PANEL, "row")` as its first statement; every other function is returned
unchanged. Rasterization is a bijection of block indices (tl/rasterize.h), so results are
unchanged; only the order in which blocks run differs. `tl.disable_rasterization` turns it off.

Why: launched in plain order, the blocks resident at one time span a few rows of the output
and every column, so the whole B operand streams from DRAM once per few rows. Panels of 8
rows keep the resident blocks' A and B panels in L2 (H200, 2026-11-29: seed GEMM 8192³
455 -> 515 TFLOP/s, 128×256×64 589 -> 604; no gain at 4096³, hence `MIN_BLOCKS`).
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.decisions import ScheduleDecision, record
from ...ir.expr import const_int
from ...ir.function import PrimFunc
from ...ir.node import FrozenDict
from ...ir.stmt import Atomic, Gemm, Hint, KernelLaunch, SyncOp, TmaCopy, WarpSpecialize, While, seq
from ...ir.visitor import Mutator, collect
from ...pass_config import in_force
from ...transform.context import CompileContext

PANEL = 8
MIN_BLOCKS = 1024
DISABLE_KEY = "tl.disable_rasterization"


def auto_rasterize(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if in_force(func, ctx).get(DISABLE_KEY):
        return func

    made: list = []

    class _Kernels(Mutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> KernelLaunch:
            if not wants_rasterization(k):
                return k
            made.append(ScheduleDecision(k.span, "rasterize", panel=PANEL))
            hint = Hint("use_swizzle", FrozenDict(panel_size=PANEL, order="row"), k.span)
            return replace(k, body=seq(hint, k.body))

    body = _Kernels().visit(func.body)
    return func if body is func.body else record(func.with_body(body), *made)


# statements through which a block may depend on the order (or number) of blocks: atomics
# (e.g. a stream-K fix-up), while loops (spin-waits on other blocks), explicit Hopper code
ORDER_SENSITIVE = (Atomic, While, WarpSpecialize, SyncOp, TmaCopy)


def order_free(k: KernelLaunch) -> bool:
    """Kernel `k` has no cluster and no ORDER_SENSITIVE statement: any bijection of its block
    indices computes the same."""
    return not k.attrs.get("cluster_dims") and not collect(k.body, lambda n: isinstance(n, ORDER_SENSITIVE))


def reorderable_grid(k: KernelLaunch) -> tuple[int, int] | None:
    """(gx, gy) when kernel `k` has a static 2-D grid (a z extent of 1 allowed) and is
    `order_free`; else None."""
    if len(k.block_vars) < 2:
        return None
    dims = [const_int(g) for g in k.grid]
    if None in dims or any(d != 1 for d in dims[2:]) or not order_free(k):
        return None
    return dims[0], dims[1]


def wants_rasterization(k: KernelLaunch) -> bool:
    """Whether kernel `k` meets every condition in the module docstring."""
    grid = reorderable_grid(k)
    if grid is None:
        return False
    gx, gy = grid
    if gx < PANEL or gy < PANEL or gx * gy < MIN_BLOCKS:
        return False
    found = collect(k.body, lambda n: isinstance(n, (Gemm, Hint)))
    if any(isinstance(n, Hint) and n.name == "use_swizzle" for n in found):
        return False
    return any(isinstance(n, Gemm) for n in found)
