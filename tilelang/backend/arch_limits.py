"""Per-architecture limits of one SM and one block: the numbers occupancy is computed from.

Shared by the language server's resource estimate (`analysis/resources.py`), the CUDA
backend's launch-bounds decision (`backend/cuda/occupancy.py`) and its per-block launch checks
(`backend/cuda/check_launch_limits.py`), so all of them count the same machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ArchLimits:
    name: str
    smem_per_block: int  # bytes a block may request (dynamic, opt-in)
    smem_per_sm: int
    regs_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dims: tuple = (1024, 1024, 64)


KIB = 1024
ARCHES = {
    "sm_75": ArchLimits("sm_75", 64 * KIB, 64 * KIB, 65536, 1024, 16),
    "sm_80": ArchLimits("sm_80", 163 * KIB, 164 * KIB, 65536, 2048, 32),
    "sm_87": ArchLimits("sm_87", 163 * KIB, 164 * KIB, 65536, 1536, 16),
    "sm_86": ArchLimits("sm_86", 99 * KIB, 100 * KIB, 65536, 1536, 16),
    "sm_89": ArchLimits("sm_89", 99 * KIB, 100 * KIB, 65536, 1536, 24),
    "sm_90": ArchLimits("sm_90", 227 * KIB, 228 * KIB, 65536, 2048, 32),
    "sm_90a": ArchLimits("sm_90a", 227 * KIB, 228 * KIB, 65536, 2048, 32),
    # AMD CDNA2/3 compute unit: 64 KiB LDS per workgroup and CU, 512 VGPRs x 64 lanes x 4 SIMDs
    # (counted per lane: 128 Ki 32-bit registers), 2048 work-items (32 waves) per CU, waves of 64
    "hip:gfx90a": ArchLimits("gfx90a", 64 * KIB, 64 * KIB, 131072, 2048, 32, 64),
    "hip:gfx940": ArchLimits("gfx940", 64 * KIB, 64 * KIB, 131072, 2048, 32, 64),
    "hip:gfx942": ArchLimits("gfx942", 64 * KIB, 64 * KIB, 131072, 2048, 32, 64),
    "metal": ArchLimits("metal", 32 * KIB, 32 * KIB, 65536, 1024, 32),
    "c": ArchLimits("c", 1 << 30, 1 << 30, 1 << 30, 1 << 20, 1 << 20),
}


def _sm_number(name: str) -> int | None:
    m = re.fullmatch(r"sm_(\d+)[a-z]?", name)
    return int(m.group(1)) if m else None


def arch_limits(target: str) -> ArchLimits:
    """The limits of `target` ("sm_90a", "hip:gfx942", "metal", "c"). An sm_XY this table does
    not list gets those of the newest listed architecture not newer than it (compared as
    numbers: "sm_100a" is newer than "sm_90", although it sorts before it as a string)."""
    if target in ARCHES:
        return ARCHES[target]
    sm = _sm_number(target)
    if sm is not None:
        known = sorted((n, name) for name in ARCHES if (n := _sm_number(name)) is not None and n <= sm)
        return ARCHES[known[-1][1]] if known else ARCHES["sm_75"]
    return ARCHES["c"]
