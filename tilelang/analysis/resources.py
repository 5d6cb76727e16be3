"""The resource figures of a kernel, from the compiler's own output.

Requires: the `Compiled` result of the target's pipeline (`analysis/compiled.py`). Guarantees:
threads and shared memory are what the compiler plans (the kernel's block size; the
shared-memory plan `plan_shared_memory` recorded, after multi-buffering and reuse — the bytes the
launcher requests); every number is computed from concrete values or None (never guessed).
Registers are an *estimate* of what ptxas will allocate, read from the per-thread IR
`lower_threads` produced: the register arrays it declares (every `local` allocation: fragments'
per-thread shares, reduction scratch, scalars), packed into 32-bit registers, plus an allowance
for addresses, indices and temporaries that grows with the arrays (`estimate_registers`). Blocks
per SM and the limiting resource come from `backend/cuda/occupancy.py`, the same table the build
uses. Measured figures (ptxas) replace the estimate where a build exists (`measured.py`).
"""

from __future__ import annotations

from ..backend.arch_limits import ARCHES, ArchLimits, arch_limits  # noqa: F401 - re-exported
from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.stmt import Allocate, KernelLaunch
from ..ir.visitor import collect

# ptxas's registers beyond what the per-thread IR declares: addresses, loop indices, predicates and
# temporaries (a floor, and a share of the array registers), and the operand fragments and
# shared-memory addresses our gemm templates hold in registers (mma.sync: A/B fragments per warp
# tile, ldmatrix addresses; wgmma: descriptors), which the IR does not show; launch extents read at
# run time (dynamic shapes) in a gemm kernel keep many more addresses live. Least-squares fit of
# ptxas's counts on the reference kernels at sm_80 and sm_90a (tests/analysis/test_estimate.py
# compares them in CI; the kernels it misses by more than 15 % are listed there).
REG_FLOOR = 14
REG_SHARE = 0.57
GEMM_EXTRA = {"mma.sync": (34, 0.31), "wgmma": (18, 0.21)}  # (fixed, share of the array registers)
DYNAMIC_GEMM_EXTRA = 120
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


def estimate_registers(
    arrays: list[tuple[str, int]], gemm_families: frozenset = frozenset(), dynamic: bool = False
) -> int:
    """Registers per thread ptxas is expected to allocate for a kernel whose per-thread IR declares
    `arrays` and whose gemms run on `gemm_families` (the instruction families infer_layout recorded)
    — not capped: above 255, ptxas spills the excess (the occupancy figure uses 255)."""
    words = sum(w for _, w in arrays)
    regs = REG_FLOOR + REG_SHARE * words
    for family in ("mma.sync", "wgmma"):  # the heavier template when a kernel has both
        if family in gemm_families:
            fixed, share = GEMM_EXTRA[family]
            regs += fixed + share * words
            break
    if dynamic and gemm_families:
        regs += DYNAMIC_GEMM_EXTRA
    return int(round(regs))


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
