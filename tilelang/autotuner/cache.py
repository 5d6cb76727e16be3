"""The tuning-result cache: an in-process dict plus `<cache_dir()>/autotuner/<sha256>/`.

An entry directory holds
- `best_config.json`: {"index": i, "config": ...} — `i` indexes the config
  list, which is part of the key, so the exact config object is recovered;
- `latency.json`: latency, ref_latency, tuning time, the skipped configs and
  their reasons, every benchmarked latency;
- `kernel/`: the best kernel's source, library and metadata (the transfer.py
  payload), re-inserted into the kernel cache if it was cleared since; with the
  kernel cache intact, rebuilding the best config is a kernel-cache hit.
Files are written to temporary names and renamed; `latency.json` goes last
and marks the entry complete.

Off when TILELANG_AUTO_TUNING_DISABLE_CACHE is truthy or the kernel cache is
disabled; callers also skip it when the key has an unstable part.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..cache import kernel_cache as kc

_MEMORY: dict[str, Any] = {}
_TRUTHY = ("1", "true", "yes", "on")


def enabled() -> bool:
    off = os.environ.get("TILELANG_AUTO_TUNING_DISABLE_CACHE", "0").lower() in _TRUTHY
    return not off and kc.is_cache_enabled()


def entry_dir(key: str) -> Path:
    return kc.cache_dir() / "autotuner" / key


def memory_get(key: str) -> Any:
    return _MEMORY.get(key)


def memory_put(key: str, result: Any) -> None:
    _MEMORY[key] = result


def load(key: str) -> dict | None:
    """The stored record ({index, config, latency, ...}) and `artifact` payload, or None."""
    d = entry_dir(key)
    try:
        latency = json.loads((d / "latency.json").read_text())
        best = json.loads((d / "best_config.json").read_text())
    except (OSError, ValueError):
        return None
    record = {**latency, **best}
    try:
        meta = json.loads((d / "kernel" / "meta.json").read_text())
        lib = meta.get("lib_name")
        record["artifact"] = {
            "source": (d / "kernel" / meta["source_name"]).read_text(),
            "lib_suffix": Path(lib).suffix if lib else None,
            "lib_bytes": (d / "kernel" / lib).read_bytes() if lib else None,
            "meta": meta.get("backend_meta", {}),
        }
    except (OSError, ValueError, KeyError):
        record["artifact"] = None
    return record


def store(key: str, best: dict, latency: dict, artifact: dict | None, source_ext: str) -> None:
    """Write one entry atomically (per file; `latency.json` last)."""
    d = entry_dir(key)
    try:
        (d / "kernel").mkdir(parents=True, exist_ok=True)
        if artifact is not None:
            meta: dict[str, Any] = {"source_name": f"kernel.{source_ext}", "backend_meta": artifact.get("meta", {})}
            kc._atomic_write(d / "kernel" / meta["source_name"], artifact["source"].encode())
            if artifact.get("lib_bytes") is not None:
                meta["lib_name"] = "kernel" + (artifact.get("lib_suffix") or "")
                kc._atomic_write(d / "kernel" / meta["lib_name"], artifact["lib_bytes"])
            kc._atomic_write(d / "kernel" / "meta.json", json.dumps(meta, indent=1, default=str).encode())
        kc._atomic_write(d / "best_config.json", json.dumps(best, indent=1, default=str).encode())
        kc._atomic_write(d / "latency.json", json.dumps(latency, indent=1, default=str).encode())
    except OSError:
        pass  # an unwritable cache must not fail a tuning run
