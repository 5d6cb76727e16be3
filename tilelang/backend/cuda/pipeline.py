"""The pass list of the CUDA target, declared once as data — adding a pass is adding a line.

`PASSES` is what every CUDA compile runs, in order, through the one `PassRunner`
(`transform/runner.py`); `lower(func, ctx, stop_after=...)` runs it, whole or up to a pass.
`ANALYSIS_STOP` is the last pass `tilelang.analysis` runs per keystroke: every decision the editor
shows (copy modes, gemm instructions, pipeline forms, block schedules, the register arrays of the
per-thread code, the shared-memory plan with reuse) is recorded by a pass up to it; only the
final checks and index widening (and code generation, nvcc) are left out."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.ast_print import ast_print
from ...transform.check_bounds import check_bounds
from ...transform.check_subbyte import check_subbyte
from ...transform.context import CompileContext
from ...transform.fold_gemm_clear import fold_gemm_clear
from ...transform.hoist_uniform_select import hoist_uniform_select
from ...transform.infer_layout import infer_layout
from ...transform.inject_pipeline import inject_pipeline
from ...transform.inject_sync import inject_sync
from ...transform.insert_bounds_checks import insert_bounds_checks
from ...transform.layout_visual import layout_visual
from ...transform.legalize_memory_access import legalize_memory_access
from ...transform.lower_rng import lower_rng
from ...transform.plan_shared_memory import plan_shared_memory
from ...transform.resolve_register_views import resolve_register_views
from ...transform.runner import Pass, run_pipeline  # noqa: F401 - run_pipeline: also for callers
from ...transform.simplify import simplify
from ...transform.verify import verify
from ...transform.view_layouts import view_layouts
from ...transform.widen_indices import widen_indices
from .auto_persistent import auto_persistent
from .auto_rasterize import auto_rasterize
from .check_launch_limits import check_launch_limits
from .defer_wgmma_wait import defer_wgmma_wait
from .flatten_shared import flatten_shared
from .heavy_blocks_first import heavy_blocks_first
from .lower_threads import lower_threads
from .pair_nibble_stores import pair_nibble_stores
from .split_rows import split_rows
from .tma_store import plan_tma_stores
from .vectorize import vectorize
from .warp_specialize import warp_specialize

PASSES: tuple[Pass, ...] = (
    Pass(ast_print, "tl.ast_print_enable"),
    Pass(verify, "structure, scopes, tile-op operands"),
    Pass(lower_rng, "T.rng_* -> Philox calls at explicit stream positions (before any folding)"),
    Pass(check_subbyte, "packed 4-bit tensors: contiguous, even last dimension"),
    Pass(resolve_register_views, "fragment / per-thread views: accesses of their bases"),
    Pass(check_launch_limits, "the block asked for fits the target (again at the end)"),
    Pass(simplify, "canonical arithmetic before the tile passes"),
    Pass(check_bounds, "accesses that certainly leave an on-chip buffer: errors at their line"),
    Pass(hoist_uniform_select, "a mask constant over the tile (causal off-diagonal): decided once"),
    Pass(fold_gemm_clear, "zeroing an accumulator right before its gemm: the gemm's clear"),
    Pass(split_rows, "register-bound attention kernels: rows in two halves (wgmma fits)"),
    Pass(auto_persistent, "sm_90a warp-specialized GEMMs: one resident block per SM"),
    Pass(auto_rasterize, "large GEMM grids: L2-friendly block order"),
    Pass(heavy_blocks_first, "blocks whose loops grow with bx (causal attention): longest first"),
    Pass(infer_layout, "fragments, swizzled gemm operands, loop layouts"),
    Pass(view_layouts, "a shared tile and its views: one layout"),
    Pass(layout_visual, "tl.layout_visualization_enable: every fragment drawn"),
    Pass(inject_pipeline, "T.Pipelined -> cp.async multi-stage ring (sm_90: TMA + mbarriers)"),
    Pass(plan_tma_stores, "sm_90: shared -> global tile copies as TMA stores"),
    Pass(inject_sync, "barriers between shared writes and reads"),
    Pass(defer_wgmma_wait, "back-to-back wgmma gemms: one wait for both"),
    Pass(lower_threads, "tile ops + T.Parallel -> per-thread code, fragments -> registers"),
    Pass(warp_specialize, "sm_90a TMA pipelines: a producer warpgroup, setmaxnreg"),
    Pass(insert_bounds_checks, "debug mode (tl.enable_bounds_check): every on-chip access checked"),
    Pass(legalize_memory_access, "guard out-of-bounds global accesses"),
    Pass(vectorize, "lane loops -> 2..16-byte vector loads / stores"),
    Pass(flatten_shared, "shared tiles -> 1-D storage through their layouts"),
    Pass(pair_nibble_stores, "a thread's two neighbouring 4-bit stores: one byte store"),
    Pass(simplify, "fold index arithmetic and guards"),
    Pass(plan_shared_memory, "one dynamic shared-memory block"),
    Pass(check_launch_limits, "threads and shared memory per block within the target's limits"),
    Pass(widen_indices, "index arithmetic that can reach 2^31: int64; launch limits"),
)
ANALYSIS_STOP = "plan_shared_memory"


def lower(func: PrimFunc, ctx: CompileContext | None = None, stop_after: str | None = None) -> PrimFunc:
    """Tile-level PrimFunc → per-thread PrimFunc the CUDA code generator accepts (with
    `stop_after`: the IR after that pass).

    `ctx`: a `CompileContext` (or a dict of its keys): `target` (a CUDA `Target`), `pass_configs`,
    and an optional `trace(pass_name, func)` callback called after every pass
    (`tilelang.analysis`; `TL_LOWER_TRACE`, `tl.enable_dump_ir` and `tl.pass_profile` work too)."""
    return run_pipeline(PASSES, func, ctx, "cuda", stop_after)
