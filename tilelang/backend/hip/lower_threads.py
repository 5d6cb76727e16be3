"""lower_threads (HIP): the thread-level lowering of `backend/cuda/lower_threads.py` with the
HIP tile-op rules (`ops.py`).

Requires / guarantees: those of `lower_threads` (per-thread IR, fragments in registers), with
`ctx.target` a HIP `Target`, and:

* every `T.gemm` is the MFMA form of `gemm.py` (its accumulator has a `layout/mfma.py` layout,
  chosen by infer_layout for HIP);
* global <-> LDS copies are synchronous (no cp.async on gfx90a / gfx94x: `inject_pipeline`
  left the pipelined loops plain); the `vectorize` pass that runs after this one turns a
  thread's contiguous elements into 16-byte vector accesses;
* reductions shuffle within a wave of 64 lanes (`ThreadCtx.wave`) and use LDS scratch only
  across waves.
"""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..cuda.lower_threads import lower_threads as cuda_lower_threads
from . import ops  # noqa: F401 - registers the "hip" tile-op rules


def lower_threads(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Named as the CUDA pass: the analysis reads the per-thread IR after `lower_threads`."""
    return cuda_lower_threads(func, ctx)
