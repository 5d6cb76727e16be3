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
    out = {k: meta[k] for k in MEASURED_KEYS if k in meta}
    if "shared_bytes" not in out and "smem" in meta:  # an entry built before the key was recorded
        out["shared_bytes"] = int(meta["smem"]) + int(meta.get("static_smem_bytes", 0) or 0)
    return out


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


def cached_measurement(func: Any, target: Any, pass_configs: dict | None) -> dict | None:
    """ptxas's figures for the build of `func` (traced) that the kernel cache holds for `target`
    and these pass configs — every kernel a program compiled, the compile and benchmark actions —
    or None. Reads the cache only: nothing is built here."""
    if getattr(target, "kind", None) != "cuda":
        return None
    from ..backend.registry import get_backend
    from ..cache.kernel_cache import peek_entry
    from ..jit.kernel import compile_options

    try:
        built = peek_entry(get_backend(target), func, target, compile_options(func, pass_configs, None))
    except Exception:  # noqa: BLE001 - an unreadable cache is no measurement
        return None
    return measured_stats(built.meta) if built is not None else None
