"""Measured resource figures: what ptxas reported for a build of the kernel.

`measured_stats(meta)` picks ptxas's figures out of a build's launch metadata (what the CUDA
backend records after nvcc: registers, spill stores / loads, static shared memory, the dynamic
block the launch requests, blocks per SM and the limiting resource).
"""

from __future__ import annotations

from typing import Any

MEASURED_KEYS = (
    "registers",
    "spill_bytes",
    "spill_stores",
    "spill_loads",
    "static_smem_bytes",
    "shared_bytes",
    "blocks_per_sm",
    "limiting",
    "arch",
)


def measured_stats(meta: dict | None) -> dict | None:
    """ptxas's figures in `meta` (None when the kernel was not compiled by ptxas)."""
    if not meta or "registers" not in meta:
        return None
    return {k: meta[k] for k in MEASURED_KEYS if k in meta}


def apply_measured(res: Any, stats: dict) -> None:
    """Replace the estimate in `res` (a `model.Resources`) by ptxas's figures."""
    res.measured = True
    res.source = f"ptxas, {stats.get('arch') or res.target}"
    res.regs_per_thread = int(stats["registers"])
    if res.threads:
        res.regs_per_block = res.regs_per_thread * res.threads
    res.spill_stores = stats.get("spill_stores")
    res.spill_loads = stats.get("spill_loads")
    res.static_shared_bytes = stats.get("static_smem_bytes")
    if stats.get("shared_bytes") is not None:
        res.shared_bytes = int(stats["shared_bytes"])
    if stats.get("blocks_per_sm") is not None:
        res.blocks_per_sm = int(stats["blocks_per_sm"])
        res.limiting = str(stats.get("limiting") or "")
