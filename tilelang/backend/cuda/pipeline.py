"""The pass list of the CUDA target (Ampere mma.sync path) — adding a pass is adding a line."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.ast_print import ast_print
from ...transform.check_bounds import check_bounds
from ...transform.context import CompileContext
from ...transform.fold_gemm_clear import fold_gemm_clear
from ...transform.hoist_uniform_select import hoist_uniform_select
from ...transform.infer_layout import infer_layout
from ...transform.inject_pipeline import inject_pipeline
from ...transform.inject_sync import inject_sync
from ...transform.insert_bounds_checks import insert_bounds_checks
from ...transform.layout_visual import layout_visual
from ...transform.legalize_memory_access import legalize_memory_access
from ...transform.plan_shared_memory import plan_shared_memory
from ...transform.runner import PassRunner
from ...transform.simplify import simplify
from ...transform.split_rows import split_rows
from ...transform.verify import verify
from ...transform.warp_specialize import warp_specialize
from ...transform.widen_indices import widen_indices
from .auto_persistent import auto_persistent
from .auto_rasterize import auto_rasterize
from .check_launch_limits import check_launch_limits
from .defer_wgmma_wait import defer_wgmma_wait
from .flatten_shared import flatten_shared
from .heavy_blocks_first import heavy_blocks_first
from .lower_threads import lower_threads
from .tma_store import plan_tma_stores
from .vectorize import vectorize


def lower(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Tile-level PrimFunc → per-thread PrimFunc the CUDA code generator accepts.

    `ctx`: `target` (a CUDA `Target`), `pass_configs`, and an optional
    `trace(pass_name, func)` callback called after every pass (`tilelang.analysis`;
    `TL_LOWER_TRACE`, `tl.enable_dump_ir` and `tl.pass_profile` work too)."""
    run = PassRunner(ctx, "cuda")  # IR dumps, TL_LOWER_TRACE, pass profile, the trace callback
    func = run(ast_print, func)  # tl.ast_print_enable
    func = run(verify, func)  # structure, scopes, tile-op operands
    func = run(check_launch_limits, func)  # the block asked for fits the target (again at the end)
    func = run(simplify, func)
    func = run(check_bounds, func)  # accesses that certainly leave an on-chip buffer: errors at their line
    func = run(hoist_uniform_select, func)  # a mask constant over the tile (causal off-diagonal): decided once
    func = run(fold_gemm_clear, func)  # zeroing an accumulator right before its gemm: the gemm's clear
    func = run(split_rows, func)  # register-bound attention kernels: rows in two halves (wgmma fits)
    func = run(auto_persistent, func)  # sm_90a warp-specialized GEMMs: one resident block per SM
    func = run(auto_rasterize, func)  # large GEMM grids: L2-friendly block order
    func = run(heavy_blocks_first, func)  # blocks whose loops grow with bx (causal attention): longest first
    func = run(infer_layout, func)  # fragments, swizzled gemm operands, loop layouts
    func = run(layout_visual, func)  # tl.layout_visualization_enable: every fragment drawn
    func = run(inject_pipeline, func)  # T.Pipelined -> cp.async multi-stage ring (sm_90: TMA + mbarriers)
    func = run(plan_tma_stores, func)  # sm_90: shared -> global tile copies as TMA stores
    func = run(inject_sync, func)  # barriers between shared writes and reads
    func = run(defer_wgmma_wait, func)  # back-to-back wgmma gemms: one wait for both
    func = run(lower_threads, func)  # tile ops + T.Parallel -> per-thread code, fragments -> registers
    func = run(warp_specialize, func)  # sm_90a TMA pipelines: a producer warpgroup, setmaxnreg
    func = run(insert_bounds_checks, func)  # debug mode (tl.enable_bounds_check): every on-chip access checked
    func = run(legalize_memory_access, func)  # guard out-of-bounds global accesses
    func = run(vectorize, func)  # lane loops -> 2..16-byte vector loads / stores
    func = run(flatten_shared, func)  # shared tiles -> 1-D storage through their layouts
    func = run(simplify, func)  # fold index arithmetic and guards
    func = run(plan_shared_memory, func)  # one dynamic shared-memory block
    func = run(check_launch_limits, func)  # threads and shared memory per block within the target's limits
    func = run(widen_indices, func)  # index arithmetic that can reach 2^31: int64; launch limits
    run.finish()
    return func
