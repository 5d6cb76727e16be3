"""The pass list of the C ("c") target — adding a pass is adding a line."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.ast_print import ast_print
from ...transform.check_bounds import check_bounds
from ...transform.context import CompileContext
from ...transform.insert_bounds_checks import insert_bounds_checks
from ...transform.layout_visual import layout_visual
from ...transform.legalize_memory_access import legalize_memory_access
from ...transform.lower_tile_ops import lower_tile_ops
from ...transform.runner import PassRunner
from ...transform.simplify import simplify
from ...transform.verify import verify
from ...transform.widen_indices import widen_indices
from .hopper import lower_hopper_c


def lower(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Tile-level PrimFunc → PrimFunc the C code generator accepts.

    `ctx`: `target` (default "c"), `pass_configs`, and an optional
    `trace(pass_name, func)` callback called after every pass (IR dumps,
    `tilelang.analysis.lowering_trace`; `TL_LOWER_TRACE` and `tl.enable_dump_ir` work too)."""
    ctx = CompileContext.of(ctx)
    if ctx.target is None:
        ctx = ctx.with_(target="c")
    run = PassRunner(ctx, "c")
    func = run(ast_print, func)  # tl.ast_print_enable
    func = run(layout_visual, func)  # tl.layout_visualization_enable: warns, C infers no fragments
    func = run(verify, func)  # structure, scopes, tile-op operands
    func = run(simplify, func)
    func = run(check_bounds, func)  # accesses that certainly leave an on-chip buffer: errors at their line
    func = run(lower_hopper_c, func)  # T.ws regions in program order, mbarrier state, cluster ranks
    func = run(lower_tile_ops, func)  # tile ops -> loop nests + tl.* intrinsics
    func = run(insert_bounds_checks, func)  # debug mode (tl.enable_bounds_check): every on-chip access checked
    func = run(legalize_memory_access, func)  # guard out-of-bounds global accesses
    func = run(simplify, func)  # fold what the guards and lowering left
    func = run(widen_indices, func)  # index arithmetic that can reach 2^31: int64; launch limits
    run.finish()
    return func
