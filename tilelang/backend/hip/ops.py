"""The "hip" tile-op rules: the CUDA thread-level rules wherever they are target-neutral, and
the MFMA gemm (`gemm.py`).

Copies, fills, `T.im2col` (element by element), reductions (`tl.all_reduce`: `codegen.py` spells them `tl::AllReduce` of
`tl_hip/reduce.h`, `__shfl_xor` over the 64 lanes of a wave, LDS scratch across waves — the
rules ask for scratch only when a group spans more than `ThreadCtx.wave` = 64 lanes),
cumulative sums, reducers, atomics, `T.print` and `T.device_assert` lower exactly as for CUDA:
they produce per-thread IR with barriers and shuffles, no NVIDIA instruction."""

from __future__ import annotations

from ...tileop import annotate, atomic, copy, cumsum, fill, gemm, im2col, reduce, reducer
from ...tileop import print as print_ops
from ..cuda import ops as cuda_ops
from ..cuda.im2col import im2col_elementwise
from .gemm import gemm_hip

copy.RULES["hip"] = cuda_ops.copy_cuda
gemm.RULES["hip"] = gemm_hip
fill.RULES["hip"] = cuda_ops.fill_cuda
reduce.RULES["hip"] = cuda_ops.reduce_cuda
cumsum.RULES["hip"] = cuda_ops.cumsum_cuda
atomic.RULES["hip"] = cuda_ops.atomic_cuda
reducer.RULES_INIT["hip"] = cuda_ops.reducer_init_cuda
reducer.RULES_UPDATE["hip"] = cuda_ops.reducer_update_cuda
reducer.RULES_FINALIZE["hip"] = cuda_ops.finalize_cuda
print_ops.RULES_PRINT["hip"] = cuda_ops.print_cuda
print_ops.RULES_ASSERT["hip"] = cuda_ops.assert_cuda
annotate.RULES["hip"] = cuda_ops._drop
im2col.RULES["hip"] = im2col_elementwise  # no cp.async: each element loaded on its own
