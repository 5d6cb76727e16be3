"""check_launch_limits: a kernel the driver would refuse to launch is an error when it is built.

Requires: a lowered CUDA PrimFunc with one `KernelLaunch` (its `threads` final: a producer
warpgroup added by `warp_specialize` is counted) and `attrs["smem_bytes"]` from
`plan_shared_memory` (the block's dynamic shared memory after reuse: the number the launcher
requests). The target's limits come from `backend/arch_limits.py`.

Guarantees (the input is returned unchanged): a `LaunchLimitError` at the `T.Kernel` line when

- the block has more threads than the architecture allows per block (1024), or a block
  dimension is past its own limit (1024, 1024, 64);
- the planned shared memory exceeds what one block may opt in to (227 KiB on sm_90a,
  163 KiB on sm_80), with the largest buffers named.

After ptxas, `check_built(lowered, arch, stats)` adds what only the built kernel knows:
static shared memory (`__shared__` in our headers) on top of the dynamic block, and registers
× threads against the register file (a kernel whose block cannot hold its registers fails
every launch with "too many resources requested").

Why here and not at launch: the driver reports these as a bare launch failure with no source
line; the language server shows the same limits as diagnostics at the `T.Kernel` line, and
the compiler must say it too.
"""

from __future__ import annotations

from ...errors import TileLangError
from ...ir.expr import const_int
from ...ir.function import PrimFunc
from ...ir.span import Span
from ...ir.stmt import Allocate, KernelLaunch
from ...ir.visitor import collect
from ...transform.context import CompileContext
from ..arch_limits import ArchLimits, arch_limits
from ..target import target_of

SHARED_SCOPES = ("shared", "shared.dyn", "shared.barrier")


class LaunchLimitError(TileLangError):
    """A kernel whose block exceeds a per-block limit of the target (threads, shared memory,
    registers): it would build but never launch."""


def check_launch_limits(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Check the block of lowered `func` against its target's per-block limits (see the
    module docstring); return `func` unchanged."""
    target = target_of(func, ctx)
    arch = target.arch if target is not None and target.arch else "sm_80"
    limits = arch_limits(arch)
    kernel, span = _kernel(func)
    if kernel is None:
        return func
    threads = kernel.num_threads
    dims = tuple(kernel.threads)
    over = [(k, d, m) for k, (d, m) in enumerate(zip(dims, limits.max_block_dims)) if d > m]
    if threads > limits.max_threads_per_block or over:
        detail = f" (block {tuple(dims)})" if len([d for d in dims if d != 1]) > 1 else ""
        raise LaunchLimitError(
            f"this kernel launches {threads} threads per block{detail}; {arch} allows at most "
            f"{limits.max_threads_per_block} (block dimensions at most {limits.max_block_dims})",
            span,
            "use threads=1024 or fewer and give each thread more work, or split the tile over more blocks",
        )
    smem = int(func.attrs.get("smem_bytes", 0) or 0)
    if smem > limits.smem_per_block:
        raise LaunchLimitError(
            f"this kernel needs {_kib(smem)} of shared memory per block ({_breakdown(func)}); "
            f"{arch} allows at most {_kib(limits.smem_per_block)} per block",
            span,
            "use smaller tiles or fewer pipeline stages (num_stages), or keep a tile in registers (T.alloc_fragment)",
        )
    return func


def check_built(lowered: PrimFunc, arch: str, stats: dict) -> None:
    """The limits only ptxas's figures show (see the module docstring)."""
    limits = arch_limits(arch)
    kernel, span = _kernel(lowered)
    if kernel is None:
        return
    threads = kernel.num_threads
    smem = int(lowered.attrs.get("smem_bytes", 0) or 0) + int(stats.get("static_smem_bytes", 0) or 0)
    if smem > limits.smem_per_block:
        raise LaunchLimitError(
            f"this kernel needs {_kib(smem)} of shared memory per block "
            f"({_kib(int(stats.get('static_smem_bytes', 0)))} static, reported by ptxas); "
            f"{arch} allows at most {_kib(limits.smem_per_block)}",
            span,
            "use smaller tiles or fewer pipeline stages",
        )
    regs = stats.get("registers")
    if regs:
        need = _block_registers(int(regs), threads, limits)
        if need > limits.regs_per_sm:
            raise LaunchLimitError(
                f"this kernel uses {regs} registers per thread (ptxas) × {threads} threads = {need} registers per "
                f"block; an {arch} block has at most {limits.regs_per_sm}",
                span,
                "use fewer threads per block or smaller register tiles (T.alloc_fragment)",
            )


def _block_registers(regs: int, threads: int, limits: ArchLimits) -> int:
    # registers are allocated per warp, in units of 256 (8 per thread)
    per_thread = -(-regs // 8) * 8
    warps = -(-threads // limits.warp_size)
    return per_thread * limits.warp_size * warps


def _kernel(func: PrimFunc) -> tuple[KernelLaunch | None, Span]:
    kernels = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    if not kernels:
        return None, func.span
    k = kernels[0]
    return k, k.span if k.span.line else func.span


def _breakdown(func: PrimFunc) -> str:
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
    return ", ".join(f"`{name}` {_kib(n)}" for name, n in top) or "planned by plan_shared_memory"


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"
