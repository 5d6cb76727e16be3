"""Blocks per SM: what a compiled kernel gets, and whether to ask ptxas for one more.

`resident_blocks(arch, threads, registers, smem)` is how many blocks of a kernel fit one SM at
once, from the per-SM limits of the architecture (`backend/arch_limits.py`: registers, threads,
shared memory with its per-block reservation, blocks). `min_blocks_to_request(...)` says when the registers alone
cost a block that shared memory would allow — ptxas picked a count just past a cliff, e.g.
130 registers on 256 threads leaves one 98 KB FlashAttention block per SM where 128 would
leave two — and the register cap `__launch_bounds__(threads, blocks)` would impose is within
`NEAR` of what ptxas used, so a recompile with that bound can keep (or trade a few registers
for) the extra block. The backend keeps the recompiled kernel only if it spills at most
`SPILL_SLACK` bytes (a value or two, stored and reloaded: cheaper than a block per SM).
"""

from __future__ import annotations

from ..arch_limits import ARCHES, ArchLimits

REGISTERS_PER_SM = 65536  # every CUDA architecture since sm_50 (arch_limits.regs_per_sm)
SMEM_RESERVED_PER_BLOCK = 1024  # the driver keeps 1 KB of each block's shared memory (sm_80+)
REGISTER_GRANULE = 8  # registers per thread are allocated in warp units of 256
MAX_REGISTERS = 255
SPILL_SLACK = 16
NEAR = 0.9  # ask for the extra block only if the cap keeps >= 90 % of the registers used


def limits(arch: str) -> ArchLimits | None:
    """The SM limits of a CUDA architecture we know (None: leave the decision to ptxas)."""
    return ARCHES.get(arch) if arch.startswith("sm_") else None


def _warps(threads: int) -> int:
    return -(-threads // 32)


def blocks_by_registers(threads: int, registers: int) -> int:
    per_thread = -(-max(registers, 1) // REGISTER_GRANULE) * REGISTER_GRANULE
    return REGISTERS_PER_SM // (per_thread * 32 * _warps(threads))


def register_cap(threads: int, blocks: int) -> int:
    """Registers a thread may use with `blocks` blocks of `threads` resident."""
    per = REGISTERS_PER_SM // (blocks * 32 * _warps(threads))
    return min(MAX_REGISTERS, per // REGISTER_GRANULE * REGISTER_GRANULE)


def blocks_without_registers(arch: str, threads: int, smem: int) -> int | None:
    """Blocks per SM that threads, shared memory and the block limit allow (None: arch unknown)."""
    lim = limits(arch)
    if lim is None:
        return None
    by_smem = lim.smem_per_sm // (smem + SMEM_RESERVED_PER_BLOCK)
    return min(by_smem, lim.max_threads_per_sm // threads, lim.max_blocks_per_sm)


def resident_blocks(arch: str, threads: int, registers: int, smem: int) -> int | None:
    other = blocks_without_registers(arch, threads, smem)
    return None if other is None else min(other, blocks_by_registers(threads, registers))


def blocks_and_limit(arch: str, threads: int, registers: int, smem: int) -> tuple[int, str] | None:
    """(blocks per SM, the resource that limits them: "registers" | "shared memory" | "threads" |
    "blocks") for a kernel of `threads` threads, `registers` per thread and `smem` bytes of shared
    memory per block; None for an architecture this table does not know."""
    lim = limits(arch)
    if lim is None:
        return None
    options = {
        "threads": lim.max_threads_per_sm // max(threads, 1),
        "shared memory": lim.smem_per_sm // (smem + SMEM_RESERVED_PER_BLOCK),
        "registers": blocks_by_registers(threads, registers),
        "blocks": lim.max_blocks_per_sm,
    }
    limiting = min(options, key=lambda k: options[k])
    return max(0, options[limiting]), limiting


def min_blocks_to_request(arch: str, threads: int, registers: int, smem: int) -> int | None:
    """The `__launch_bounds__` minimum blocks per SM worth a recompile, or None."""
    want = blocks_without_registers(arch, threads, smem)
    if want is None or want <= blocks_by_registers(threads, registers):
        return None
    cap = register_cap(threads, want)
    return want if cap >= NEAR * registers else None
