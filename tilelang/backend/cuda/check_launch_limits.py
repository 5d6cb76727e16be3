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

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..arch_limits import ArchLimits, arch_limits
from ..block_limits import BlockWords, LaunchLimitError, check_block_limits, kernel_of, kib
from ..target import target_of

__all__ = ["LaunchLimitError", "check_built", "check_launch_limits"]


def check_launch_limits(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Check the block of lowered `func` against its target's per-block limits (see the
    module docstring); return `func` unchanged."""
    target = target_of(func, ctx)
    arch = target.arch if target is not None and target.arch else "sm_80"
    check_block_limits(func, arch_limits(arch), BlockWords(arch))
    return func


def check_built(lowered: PrimFunc, arch: str, stats: dict) -> None:
    """The limits only ptxas's figures show (see the module docstring)."""
    limits = arch_limits(arch)
    kernel, span = kernel_of(lowered)
    if kernel is None:
        return
    threads = kernel.num_threads
    smem = int(lowered.attrs.get("smem_bytes", 0) or 0) + int(stats.get("static_smem_bytes", 0) or 0)
    if smem > limits.smem_per_block:
        raise LaunchLimitError(
            f"this kernel needs {kib(smem)} of shared memory per block "
            f"({kib(int(stats.get('static_smem_bytes', 0)))} static, reported by ptxas); "
            f"{arch} allows at most {kib(limits.smem_per_block)}",
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
