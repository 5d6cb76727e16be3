"""check_hip_limits: a kernel an AMD Instinct GPU cannot launch is an error when it is built.

Requires: a PrimFunc with one `KernelLaunch`; after `plan_shared_memory`,
`attrs["smem_bytes"]` (the LDS the launch requests, after reuse). The limits are those of
`arch_limits("hip:<arch>")`: 1024 work-items and 64 KiB of LDS per workgroup.

Guarantees (the input is returned unchanged): a `LaunchLimitError` at the `T.Kernel` line when
the workgroup has more than 1024 threads, or the planned LDS exceeds 64 KiB, with the
largest buffers named."""

from __future__ import annotations

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..cuda.check_launch_limits import LaunchLimitError, _breakdown, _kernel, _kib
from ..target import parse, target_of


def check_hip_limits(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    target = target_of(func, ctx) or parse("hip")
    limits = target.limits
    kernel, span = _kernel(func)
    if kernel is None:
        return func
    threads = kernel.num_threads
    if threads > limits.max_threads_per_block:
        raise LaunchLimitError(
            f"this kernel launches {threads} threads per workgroup; {target.arch} allows at most "
            f"{limits.max_threads_per_block}",
            span,
            "use threads=1024 or fewer and give each thread more work",
        )
    smem = int(func.attrs.get("smem_bytes", 0) or 0)
    if smem > limits.smem_per_block:
        raise LaunchLimitError(
            f"this kernel needs {_kib(smem)} of LDS ({_breakdown(func)}); {target.arch} allows at most "
            f"{_kib(limits.smem_per_block)} per workgroup",
            span,
            "use smaller tiles (block_M / block_N / block_K), or fewer shared tiles",
        )
    return func
