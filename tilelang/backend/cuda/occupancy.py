"""Blocks per SM: what a compiled kernel gets, and whether to ask ptxas for one more.

`resident_blocks(arch, threads, registers, smem)` is how many blocks of a kernel fit one SM at
once, from the per-SM limits of the architecture (registers, threads, shared memory with its
per-block reservation, blocks). `min_blocks_to_request(...)` says when the registers alone
cost a block that shared memory would allow — ptxas picked a count just past a cliff, e.g.
130 registers on 256 threads leaves one 98 KB FlashAttention block per SM where 128 would
leave two — and the register cap `__launch_bounds__(threads, blocks)` would impose is within
`NEAR` of what ptxas used, so a recompile with that bound can keep (or trade a few registers
for) the extra block. The backend keeps the recompiled kernel only if it spills at most
`SPILL_SLACK` bytes (a value or two, stored and reloaded: cheaper than a block per SM).
"""

from __future__ import annotations

from dataclasses import dataclass

REGISTERS_PER_SM = 65536
REGISTER_GRANULE = 8  # registers per thread are allocated in warp units of 256
MAX_REGISTERS = 255
SPILL_SLACK = 16
NEAR = 0.9  # ask for the extra block only if the cap keeps >= 90 % of the registers used


@dataclass(frozen=True)
class SmLimits:
    smem_per_sm: int
    smem_reserved_per_block: int
    max_threads: int
    max_blocks: int


_LIMITS = {
    "sm_80": SmLimits(164 * 1024, 1024, 2048, 32),
    "sm_86": SmLimits(100 * 1024, 1024, 1536, 16),
    "sm_87": SmLimits(164 * 1024, 1024, 1536, 16),
    "sm_89": SmLimits(100 * 1024, 1024, 1536, 24),
    "sm_90": SmLimits(228 * 1024, 1024, 2048, 32),
}


def limits(arch: str) -> SmLimits | None:
    return _LIMITS.get(arch.removesuffix("a"))


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
    by_smem = lim.smem_per_sm // (smem + lim.smem_reserved_per_block)
    return min(by_smem, lim.max_threads // threads, lim.max_blocks)


def resident_blocks(arch: str, threads: int, registers: int, smem: int) -> int | None:
    other = blocks_without_registers(arch, threads, smem)
    return None if other is None else min(other, blocks_by_registers(threads, registers))


def min_blocks_to_request(arch: str, threads: int, registers: int, smem: int) -> int | None:
    """The `__launch_bounds__` minimum blocks per SM worth a recompile, or None."""
    want = blocks_without_registers(arch, threads, smem)
    if want is None or want <= blocks_by_registers(threads, registers):
        return None
    cap = register_cap(threads, want)
    return want if cap >= NEAR * registers else None
