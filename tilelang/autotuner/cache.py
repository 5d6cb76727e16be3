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
and marks the entry complete. Entries are read under the kernel cache's rules
(`cache.trust`: owner-only directories and regular files, bounded reads, bare file
names); anything else is a miss.

Off when TILELANG_AUTO_TUNING_DISABLE_CACHE is truthy or the kernel cache is
disabled; callers also skip it when the key has an unstable part.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..cache import kernel_cache as kc
from ..cache import trust
from ..cache.entry import LIB_LIMIT, SOURCE_LIMIT, is_bare_name

_MEMORY: dict[str, Any] = {}
_TRUTHY = ("1", "true", "yes", "on")
_JSON_LIMIT = 16 << 20


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
    try:  # the same ownership rules as kernel-cache entries: its kernel is inserted into that cache
        trust.check_chain(kc.cache_root(), d / "kernel")
        latency = json.loads(trust.read_file(d / "latency.json", _JSON_LIMIT))
        best = json.loads(trust.read_file(d / "best_config.json", _JSON_LIMIT))
    except (OSError, ValueError):
        return None
    if type(latency) is not dict or type(best) is not dict:
        return None
    record = {**latency, **best}
    try:
        meta = json.loads(trust.read_file(d / "kernel" / "meta.json", _JSON_LIMIT))
        lib, source = meta.get("lib_name"), meta["source_name"]
        if not is_bare_name(source) or not (lib is None or is_bare_name(lib)) or type(meta["backend_meta"]) is not dict:
            raise ValueError("malformed kernel metadata")
        record["artifact"] = {
            "source": trust.read_file(d / "kernel" / source, SOURCE_LIMIT).decode(),
            "lib_suffix": Path(lib).suffix if lib else None,
            "lib_bytes": trust.read_file(d / "kernel" / lib, LIB_LIMIT) if lib else None,
            "meta": meta["backend_meta"],
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        record["artifact"] = None
    return record


def store(key: str, best: dict, latency: dict, artifact: dict | None, source_ext: str) -> None:
    """Write one entry atomically (per file; `latency.json` last)."""
    d = entry_dir(key)
    try:
        trust.make_dirs(kc.cache_root(), d / "kernel")
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
