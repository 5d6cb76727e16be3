"""The "metal" tile-op rules: the CUDA thread-level rules wherever they are target-neutral, and
the Metal gemm (`gemm.py`).

Copies, fills, `T.im2col` (element by element), reductions (`tl.all_reduce` — SIMD-group shuffles, threadgroup scratch across
SIMD-groups: `codegen.py` spells them with `simd_shuffle_xor`), cumulative sums, reducers and
atomics lower exactly as for CUDA: they produce per-thread IR with barriers and shuffles, no
CUDA instruction. `T.print` / `T.device_assert` and the explicit Hopper operators never reach
here (`check_features.py` rejects them at their line); their Metal rules say so again, in
case a later pass builds one."""

from __future__ import annotations

from typing import Any

from ...ir.stmt import Stmt
from ...tileop import annotate, atomic, copy, cumsum, fill, gemm, im2col, reduce, reducer
from ...tileop import print as print_ops
from ..cuda import ops as cuda_ops
from ..cuda.im2col import im2col_elementwise
from .check_features import MetalUnsupportedError
from .gemm import gemm_metal


def _no_rule(feature: str):
    def rule(op: Any, tc: Any) -> Stmt:
        raise MetalUnsupportedError(f"{feature}", op.span, "compile for target='cuda'")

    return rule


copy.RULES["metal"] = cuda_ops.copy_cuda
gemm.RULES["metal"] = gemm_metal
fill.RULES["metal"] = cuda_ops.fill_cuda
reduce.RULES["metal"] = cuda_ops.reduce_cuda
cumsum.RULES["metal"] = cuda_ops.cumsum_cuda
atomic.RULES["metal"] = cuda_ops.atomic_cuda
reducer.RULES_INIT["metal"] = cuda_ops.reducer_init_cuda
reducer.RULES_UPDATE["metal"] = cuda_ops.reducer_update_cuda
reducer.RULES_FINALIZE["metal"] = cuda_ops.finalize_cuda
print_ops.RULES_PRINT["metal"] = _no_rule("T.print (Metal has no printf)")
print_ops.RULES_ASSERT["metal"] = _no_rule("T.device_assert (Metal kernels cannot trap)")
annotate.RULES["metal"] = cuda_ops._drop
im2col.RULES["metal"] = im2col_elementwise  # no cp.async: each element loaded on its own
