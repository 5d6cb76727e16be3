"""lower_threads_metal: the thread-level lowering of `backend/cuda/lower_threads.py` with the
Metal tile-op rules (`ops.py`) and synchronous element copies.

Requires / guarantees: those of `lower_threads` (per-thread IR, fragments in registers), with
`ctx.target` a Metal `Target`, and:

* every `T.gemm` is the simdgroup_matrix form of `gemm.py`; its `GemmDecision` ("mma.sync",
  which infer_layout recorded from the accumulator layout) is replaced by the Metal one
  (family "simdgroup_matrix", instruction "8x8x8", grid = SIMD-groups), so the editor reports
  the instruction that runs;
* global → threadgroup copies are element copies (`tirx.disable_vectorize` in force): the
  vector / cp.async chunk forms of the CUDA rules spell CUDA-only library calls.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.decisions import DECISIONS, GemmDecision, decisions_of, span_key
from ...ir.function import PrimFunc
from ...ir.stmt import Gemm, KernelLaunch
from ...ir.visitor import collect
from ...transform.context import CompileContext
from ..cuda.lower_threads import lower_threads
from . import ops  # noqa: F401 - registers the "metal" tile-op rules
from .gemm import gemm_decision


def lower_threads_metal(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    ctx = CompileContext.of(ctx)
    configs = dict(ctx.pass_configs or {})
    configs["tirx.disable_vectorize"] = True
    gemms = collect(func.body, lambda n: isinstance(n, Gemm))
    kernels = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    out = lower_threads(func, replace(ctx, pass_configs=configs))
    if not gemms or not kernels:
        return out
    threads = kernels[0].num_threads
    mine = [gemm_decision(g, threads) for g in gemms]
    keys = {span_key(g.span) for g in gemms}
    d = decisions_of(out)
    kept = tuple(g for g in d.gemms if not (isinstance(g, GemmDecision) and span_key(g.span) in keys))
    return out.with_attrs(**{DECISIONS: replace(d, gemms=kept + tuple(mine))})
