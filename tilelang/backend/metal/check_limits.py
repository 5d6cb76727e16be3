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
from ..block_limits import BlockWords, check_block_limits

METAL_WORDS = BlockWords(
    "Metal",
    block="threadgroup",
    memory="threadgroup memory",
    threads_hint="use threads=1024 or fewer and give each thread more work",
    memory_hint="use smaller tiles (block_M / block_N / block_K), or fewer shared tiles",
)


def check_metal_limits(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    check_block_limits(func, arch_limits("metal"), METAL_WORDS)
    return func
