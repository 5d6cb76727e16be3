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
from ..block_limits import BlockWords, check_block_limits
from ..target import parse, target_of


def check_hip_limits(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    target = target_of(func, ctx) or parse("hip")
    words = BlockWords(
        target.arch,
        block="workgroup",
        memory="LDS",
        threads_hint="use threads=1024 or fewer and give each thread more work",
        memory_hint="use smaller tiles (block_M / block_N / block_K), or fewer shared tiles",
    )
    check_block_limits(func, target.limits, words)
    return func
