"""The resource figures of a kernel, from the compiler's own output.

Requires: the `Compiled` result of the target's pipeline (`analysis/compiled.py`). Guarantees:
threads and shared memory are what the compiler plans (the kernel's block size; the
shared-memory plan `plan_shared_memory` recorded, after multi-buffering and reuse — the bytes the
launcher requests); every number is computed from concrete values or None (never guessed).
Registers are an *estimate* of what ptxas will allocate, read from the per-thread IR the code
generator consumes: the peak of a register-pressure scan over it (`register_model.py`: register
arrays live at each point, loads in flight, addresses, the gemm templates' operand fragments)
plus a floor (`estimate_registers`). Blocks
per SM and the limiting resource come from `backend/cuda/occupancy.py`, the same table the build
uses. Measured figures (ptxas) replace the estimate where a build exists (`measured.py`).
"""

from __future__ import annotations

from ..backend.arch_limits import ARCHES, ArchLimits, arch_limits  # noqa: F401 - re-exported
from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.stmt import Allocate, KernelLaunch
from ..ir.visitor import collect

# ptxas's count = REG_FLOOR + the peak pressure of `register_model.pressure` (register arrays live
# at the peak point, the loads in flight and addresses of the statement there, the operand fragments
# and ldmatrix addresses of our gemm templates, wgmma's descriptors). REG_FLOOR: what every kernel
# holds besides (thread and block indices, the loop counter, the kernel-parameter base), calibrated
# against ptxas (nvcc 13). A kernel with dynamic shapes needs no term of its own: the 64-bit
# addresses its run-time strides force are counted by the scan (`WIDE_ADDRESS_WORDS`);
# tests/analysis/test_estimate.py compares every reference kernel in CI and lists the misses.
REG_FLOOR = 5
REG_MAX = 255
REG_SCOPES = ("local", "local.var")


def numel(buf: Buffer) -> int | None:
    n = 1
    for d in buf.shape:
        v = const_int(d)
        if v is None:
            return None
        n *= v
    return n


def buffer_bytes(buf: Buffer) -> int | None:
    n = numel(buf)
    return None if n is None else (n * buf.dtype.bits * buf.dtype.lanes + 7) // 8


def kernel_of(func) -> KernelLaunch | None:
    ks = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    return ks[0] if ks else None


def allocations(func) -> list[Allocate]:
    return collect(func.body, lambda n: isinstance(n, Allocate))


def register_arrays(lowered) -> list[tuple[str, int]] | None:
    """(name, 32-bit registers) of every register array of the per-thread IR `lowered` (the
    output of `lower_threads`), in declaration order; None when a size is not constant."""
    out: list[tuple[str, int]] = []
    for a in allocations(lowered):
        b = a.buffer
        if b.scope not in REG_SCOPES:
            continue
        n = numel(b)
        if n is None:
            return None
        out.append((b.name, max(1, -(-n * b.dtype.bits * b.dtype.lanes // 32))))
    return out


def estimate_registers(lowered, fast_math: bool = False, arch: str | None = None) -> int | None:
    """Registers per thread ptxas is expected to allocate for the per-thread IR `lowered` (a
    register-pressure scan, `register_model.pressure`) built for `arch`, with --use_fast_math when
    `fast_math`. None when a register array's size is not constant. Capped only by the kernel's launch bounds: above 255 ptxas
    spills the excess (the occupancy figure uses 255, the pressure diagnostic the full count)."""
    from .register_model import pressure

    got = pressure(lowered, REG_FLOOR, fast_math, arch)
    if got is None:
        return None
    regs = REG_FLOOR + got.peak
    # a warp-specialized kernel that raises its consumers' limit with setmaxnreg is compiled for
    # that limit: ptxas reports it (it may use every register up to it)
    regs = max(regs, got.raised_to)
    cap = launch_bounds_cap(lowered)
    return regs if cap is None else min(regs, cap)


def launch_bounds_cap(lowered) -> int | None:
    """The most registers per thread ptxas may use under the kernel's `__launch_bounds__(threads,
    min_blocks)` (the code generator writes min_blocks from the kernel's `min_blocks_per_sm`,
    e.g. for setmaxnreg): the register file shared by that many threads, in the allocation unit
    of 8 per thread; None without a minimum (ptxas's own limit, 255, applies)."""
    from ..backend.cuda.occupancy import REGISTERS_PER_SM

    k = kernel_of(lowered)
    blocks = const_int(k.attrs.get("min_blocks_per_sm")) if k is not None and k.attrs.get("min_blocks_per_sm") else None
    if not blocks:
        return None
    threads = 1
    for t in k.threads:
        threads *= int(t)
    return min(REG_MAX, REGISTERS_PER_SM // (threads * blocks) // 8 * 8)


def occupancy(arch: str, threads: int, smem: int, regs_per_thread: int) -> tuple[float, int, str] | None:
    """(resident warps / max warps, blocks per SM, limiting resource) from the build's table
    (`backend/cuda/occupancy.py`); None for an architecture it does not know."""
    from ..backend.cuda.occupancy import blocks_and_limit, limits

    got = blocks_and_limit(arch, threads, regs_per_thread, smem)
    lim = limits(arch)
    if got is None or lim is None:
        return None
    blocks, limiting = got
    warps = -(-threads // lim.warp_size)
    return min(1.0, blocks * warps / (lim.max_threads_per_sm // lim.warp_size)), blocks, limiting
