"""Per-block launch limits, checked the same way on every GPU target.

A block (CUDA/HIP) or threadgroup (Metal) with more threads than the target allows, or with
more planned shared memory than one block may use, builds but never launches: the driver says
so with no source line. Each backend's limit-check pass calls `check_block_limits` with its own
`ArchLimits` (from `arch_limits.py`, the table the analysis reads too) and its own words, so
the message a user sees names the target's concepts (block / threadgroup, shared memory /
threadgroup memory / LDS) while the rule itself lives here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TileLangError
from ..ir.expr import const_int
from ..ir.function import PrimFunc
from ..ir.span import Span
from ..ir.stmt import Allocate, KernelLaunch
from ..ir.visitor import collect
from .arch_limits import ArchLimits

SHARED_SCOPES = ("shared", "shared.dyn", "shared.barrier")


class LaunchLimitError(TileLangError):
    """A kernel whose block exceeds a per-block limit of the target (threads, shared memory,
    registers): it would build but never launch."""


@dataclass(frozen=True)
class BlockWords:
    """How a target names what the limits are about, for its error messages."""

    target: str  # "sm_90a", "Metal", "gfx90a"
    block: str = "block"  # "threadgroup" on Metal
    memory: str = "shared memory per block"  # what the memory figure is
    threads_hint: str = "use threads=1024 or fewer and give each thread more work, or split the tile over more blocks"
    memory_hint: str = (
        "use smaller tiles or fewer pipeline stages (num_stages), or keep a tile in registers (T.alloc_fragment)"
    )


def kernel_of(func: PrimFunc) -> tuple[KernelLaunch | None, Span]:
    """The first `KernelLaunch` of `func` and the span its errors point at."""
    kernels = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    if not kernels:
        return None, func.span
    k = kernels[0]
    return k, k.span if k.span.line else func.span


def kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"


def shared_breakdown(func: PrimFunc) -> str:
    """The three largest shared buffers of `func` with their sizes, for a message."""
    sizes: dict[str, int] = {}
    for a in collect(func.body, lambda n: isinstance(n, Allocate) and n.buffer.scope in SHARED_SCOPES):
        b = a.buffer
        n = 1
        for d in b.shape:
            c = const_int(d)
            n = n * c if c is not None and n is not None else None
        if n is not None:
            sizes[b.name] = sizes.get(b.name, 0) + (n * b.dtype.bits * b.dtype.lanes + 7) // 8
    top = sorted(sizes.items(), key=lambda x: -x[1])[:3]
    return ", ".join(f"`{name}` {kib(n)}" for name, n in top) or "planned by plan_shared_memory"


def check_block_limits(func: PrimFunc, limits: ArchLimits, words: BlockWords) -> None:
    """Raise `LaunchLimitError` at the `T.Kernel` line when the block of lowered `func` has too
    many threads (in total or along one dimension) or its planned shared memory
    (`attrs["smem_bytes"]`, after reuse) exceeds `limits.smem_per_block`."""
    kernel, span = kernel_of(func)
    if kernel is None:
        return
    threads = kernel.num_threads
    dims = tuple(kernel.threads)
    over = [d for d, m in zip(dims, limits.max_block_dims) if d > m]
    if threads > limits.max_threads_per_block or over:
        detail = f" ({words.block} {dims})" if len([d for d in dims if d != 1]) > 1 else ""
        raise LaunchLimitError(
            f"this kernel launches {threads} threads per {words.block}{detail}; {words.target} allows at most "
            f"{limits.max_threads_per_block} ({words.block} dimensions at most {limits.max_block_dims})",
            span,
            words.threads_hint,
        )
    smem = int(func.attrs.get("smem_bytes", 0) or 0)
    if smem > limits.smem_per_block:
        raise LaunchLimitError(
            f"this kernel needs {kib(smem)} of {words.memory} ({shared_breakdown(func)}); "
            f"{words.target} allows at most {kib(limits.smem_per_block)} per {words.block}",
            span,
            words.memory_hint,
        )
