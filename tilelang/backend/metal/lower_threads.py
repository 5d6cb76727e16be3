"""lower_threads (Metal): the thread-level lowering of `backend/cuda/lower_threads.py` with the
Metal tile-op rules (`ops.py`) and synchronous element copies.

Requires / guarantees: those of `lower_threads` (per-thread IR, fragments in registers), with
`ctx.target` a Metal `Target`, and:

* every `T.gemm` is the simdgroup_matrix form of `gemm.py` (its `GemmDecision`, family
  "simdgroup_matrix", was recorded by infer_layout from the accumulator's layout);
* global → threadgroup copies are element copies (`tirx.disable_vectorize` in force): the
  vector / cp.async chunk forms of the CUDA rules spell CUDA-only library calls.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..cuda.lower_threads import lower_threads as cuda_lower_threads
from . import ops  # noqa: F401 - registers the "metal" tile-op rules


def lower_threads(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Named as the CUDA pass: the analysis reads the per-thread IR after `lower_threads`."""
    ctx = CompileContext.of(ctx)
    configs = dict(ctx.pass_configs or {})
    configs["tirx.disable_vectorize"] = True
    return cuda_lower_threads(func, replace(ctx, pass_configs=configs))
