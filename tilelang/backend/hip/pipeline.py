"""The pass list of the HIP target (AMD Instinct gfx90a / gfx940 / gfx942), declared once as
data (run by `transform/runner.py`).

HIP reuses the target-neutral passes and the thread-level lowering the CUDA target uses
(`backend/cuda/lower_threads.py`, with the HIP tile-op rules of `ops.py`): layouts, barriers,
per-thread code and the shared-memory plan mean the same on AMD — `shared` tiles become LDS,
warps become waves of 64 lanes (`target.wave_size`). What differs:

* `check_hip_features` (first) rejects, at their line, what this backend has no form for:
  fp8 / 4-bit dtypes, TMA, wgmma, clusters, `T.ws`, mbarriers, `T.rng_*`, extern CUDA code;
* `T.Pipelined` loops run as plain loops with a barrier between the trip's LDS reads and the
  next trip's writes: gfx90a / gfx94x have no cp.async, and `inject_pipeline` (whose async
  forms are CUDA sm_80+ only) records them as "synchronous", 1 stage (`PipelineDecision`).
  Register double-buffering is not done: the plain loop is what runs, and what the editor shows;
* the CUDA-only schedules (persistent blocks, rasterization, row splits, TMA stores, warp
  specialization) are not run; `vectorize` is (16-byte global <-> LDS accesses);
* `check_hip_limits` checks threads per workgroup and the planned LDS (64 KiB).
"""

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
from ...transform.resolve_register_views import resolve_register_views
from ...transform.runner import Pass, run_pipeline
from ...transform.simplify import simplify
from ...transform.verify import verify
from ...transform.view_layouts import view_layouts
from ...transform.widen_indices import widen_indices
from ..cuda.flatten_shared import flatten_shared
from ..cuda.vectorize import vectorize
from .check_features import check_hip_features
from .check_limits import check_hip_limits
from .lower_threads import lower_threads

PASSES: tuple[Pass, ...] = (
    Pass(ast_print, "tl.ast_print_enable"),
    Pass(verify, "structure, scopes, tile-op operands"),
    Pass(check_hip_features, "NVIDIA-only features and dtypes: one error at their line"),
    Pass(resolve_register_views, "fragment / per-thread views: accesses of their bases"),
    Pass(check_hip_limits, "threads per workgroup within the target's limit (again at the end)"),
    Pass(simplify, "canonical arithmetic before the tile passes"),
    Pass(check_bounds, "accesses that certainly leave an on-chip buffer: errors at their line"),
    Pass(hoist_uniform_select, "a mask constant over the tile (causal off-diagonal): decided once"),
    Pass(fold_gemm_clear, "zeroing an accumulator right before its gemm: the gemm's clear"),
    Pass(infer_layout, "fragments, gemm operands (MFMA layouts), loop layouts"),
    Pass(view_layouts, "a shared tile and its views: one layout"),
    Pass(layout_visual, "tl.layout_visualization_enable: every fragment drawn"),
    Pass(inject_pipeline, "T.Pipelined -> plain loops (no cp.async on gfx90a/gfx94x), recorded as 1 stage"),
    Pass(inject_sync, "workgroup barriers between LDS writes and reads"),
    Pass(lower_threads, "tile ops + T.Parallel -> per-thread code; T.gemm on MFMA"),
    Pass(insert_bounds_checks, "debug mode (tl.enable_bounds_check): every on-chip access checked"),
    Pass(legalize_memory_access, "guard out-of-bounds global accesses"),
    Pass(vectorize, "lane loops -> 2..16-byte vector loads / stores"),
    Pass(flatten_shared, "LDS tiles -> 1-D storage through their layouts"),
    Pass(simplify, "fold index arithmetic and guards"),
    Pass(plan_shared_memory, "one LDS block, storage reused"),
    Pass(check_hip_limits, "threads and LDS within the target's limits (64 KiB)"),
    Pass(widen_indices, "index arithmetic that can reach 2^31: int64; launch limits"),
)
ANALYSIS_STOP = "plan_shared_memory"


def lower(func: PrimFunc, ctx: CompileContext | None = None, stop_after: str | None = None) -> PrimFunc:
    """Tile-level PrimFunc → per-thread PrimFunc the HIP code generator accepts (with
    `stop_after`: the IR after that pass). `ctx.target` is a HIP `Target`."""
    return run_pipeline(PASSES, func, ctx, "hip", stop_after)
