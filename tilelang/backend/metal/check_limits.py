"""check_metal_limits: a kernel an Apple GPU cannot launch is an error when it is built.

Requires: a PrimFunc with one `KernelLaunch`; after `plan_shared_memory`,
`attrs["smem_bytes"]` (the threadgroup memory the launch requests, after reuse).
The limits are those of `arch_limits("metal")` (the same table the analysis reads).

Guarantees (the input is returned unchanged): a `LaunchLimitError` at the `T.Kernel` line when
the threadgroup has more than 1024 threads, or the planned threadgroup memory exceeds 32 KiB —
the message gives the total and the largest buffers (the gemm's accumulator staging tiles of
`gemm.py` included, so the user sees what the Metal gemm costs)."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..arch_limits import arch_limits
from ..cuda.check_launch_limits import LaunchLimitError, _breakdown, _kernel, _kib


def check_metal_limits(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    limits = arch_limits("metal")
    kernel, span = _kernel(func)
    if kernel is None:
        return func
    threads = kernel.num_threads
    if threads > limits.max_threads_per_block:
        raise LaunchLimitError(
            f"this kernel launches {threads} threads per threadgroup; Metal allows at most "
            f"{limits.max_threads_per_block}",
            span,
            "use threads=1024 or fewer and give each thread more work",
        )
    smem = int(func.attrs.get("smem_bytes", 0) or 0)
    if smem > limits.smem_per_block:
        raise LaunchLimitError(
            f"this kernel needs {_kib(smem)} of threadgroup memory ({_breakdown(func)}); Metal allows at most "
            f"{_kib(limits.smem_per_block)} per threadgroup",
            span,
            "use smaller tiles (block_M / block_N / block_K), or fewer shared tiles",
        )
    return func
