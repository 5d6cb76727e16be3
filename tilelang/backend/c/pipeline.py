"""The pass list of the C ("c") target, declared once as data — adding a pass is adding a line.

`PASSES` runs through the one `PassRunner` (`transform/runner.py`); `ANALYSIS_STOP` is the last
pass `tilelang.analysis` runs (the whole list: it is cheap)."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.ast_print import ast_print
from ...transform.check_bounds import check_bounds
from ...transform.check_subbyte import check_subbyte
from ...transform.context import CompileContext
from ...transform.insert_bounds_checks import insert_bounds_checks
from ...transform.layout_visual import layout_visual
from ...transform.legalize_memory_access import legalize_memory_access
from ...transform.lower_rng import lower_rng
from ...transform.lower_tile_ops import lower_tile_ops
from ...transform.runner import Pass, run_pipeline
from ...transform.simplify import simplify
from ...transform.verify import verify
from ...transform.widen_indices import widen_indices
from .hopper import lower_hopper_c
from .thread_level import simulate_threads

PASSES: tuple[Pass, ...] = (
    Pass(ast_print, "tl.ast_print_enable"),
    Pass(layout_visual, "tl.layout_visualization_enable: warns, C infers no fragments"),
    Pass(verify, "structure, scopes, tile-op operands"),
    Pass(lower_rng, "T.rng_* -> Philox calls at explicit stream positions (before any folding)"),
    Pass(check_subbyte, "packed 4-bit tensors: contiguous, even last dimension"),
    Pass(simplify, "canonical arithmetic before lowering"),
    Pass(check_bounds, "accesses that certainly leave an on-chip buffer: errors at their line"),
    Pass(lower_hopper_c, "T.ws regions in program order, mbarrier state, cluster ranks"),
    Pass(simulate_threads, "thread-level code: phases of per-thread loops, private arrays"),
    Pass(lower_tile_ops, "tile ops -> loop nests + tl.* intrinsics"),
    Pass(insert_bounds_checks, "debug mode (tl.enable_bounds_check): every on-chip access checked"),
    Pass(legalize_memory_access, "guard out-of-bounds global accesses"),
    Pass(simplify, "fold what the guards and lowering left"),
    Pass(widen_indices, "index arithmetic that can reach 2^31: int64; launch limits"),
)
ANALYSIS_STOP = "widen_indices"


def lower(func: PrimFunc, ctx: CompileContext | None = None, stop_after: str | None = None) -> PrimFunc:
    """Tile-level PrimFunc → PrimFunc the C code generator accepts (with `stop_after`: the IR
    after that pass).

    `ctx`: a `CompileContext` (or a dict of its keys): `target` (default "c"), `pass_configs`, and
    an optional `trace(pass_name, func)` callback called after every pass (IR dumps,
    `tilelang.analysis.lowering_trace`; `TL_LOWER_TRACE` and `tl.enable_dump_ir` work too)."""
    ctx = CompileContext.of(ctx)
    if ctx.target is None:
        ctx = ctx.with_(target="c")
    return run_pipeline(PASSES, func, ctx, "c", stop_after)
