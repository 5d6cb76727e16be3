"""Moving a built kernel between machines, in the kernel cache's own format.

A compile worker (another process, or another machine) builds a kernel
through its local kernel cache and returns `pack(...)`: the generated source,
the compiled library's bytes and the backend metadata — plain data that
pickles. The tuning process then calls `store_built(...)` to insert that
artifact into *its* kernel cache under *its* key, so constructing the
`JITKernel` afterwards is a cache hit. No shared filesystem is assumed.

`build_options` mirrors how `JITKernel` derives the options that enter the
kernel-cache key; it must stay in step with tilelang/jit/kernel.py (a test
checks that a worker-built kernel is a parent cache hit).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..backend.launch_plan import backend_for
from ..backend.registry import BuiltKernel, get_backend
from ..backend.target import Target
from ..cache import kernel_cache as kc
from ..cache.markers import span_anchors
from ..ir.function import PrimFunc
from ..jit.kernel import compile_options

build_options = compile_options  # the options JITKernel uses: one definition for both


def ir_hash(func: PrimFunc) -> str:
    return hashlib.sha256(func.script().encode()).hexdigest()


def kernel_key(func: PrimFunc, target: Target, options: dict) -> str:
    backend = get_backend(target)
    return kc.cache_key(func, target, options, backend.cache_salt(target))


def pack(built: BuiltKernel) -> dict:
    """Plain-data form of a built kernel: source, library bytes, metadata."""
    lib = Path(built.lib_path) if built.lib_path else None
    return {
        "source": built.kernel_source,
        "lib_suffix": lib.suffix if lib else None,
        "lib_bytes": lib.read_bytes() if lib else None,
        "meta": dict(built.meta),
    }


def _entry(key: str) -> Path:
    return kc.entry_dir(key)


def is_cached(func: PrimFunc, target: Target, options: dict) -> bool:
    backend = backend_for(get_backend(target), func)  # several T.Kernel blocks: backend/launch_plan.py
    return kc.read_entry(_entry(kernel_key(func, target, options)), backend.source_ext, backend) is not None


def store_built(func: PrimFunc, target: Target, options: dict, payload: dict) -> str | None:
    """Insert a packed artifact into the local kernel cache (atomic; a no-op on a hit).

    Returns the local cache key, or None when the kernel cache is disabled.
    """
    if not kc.is_cache_enabled():
        return None
    backend = backend_for(get_backend(target), func)
    if kc._postproc_active(backend):  # keyed on the post-processed source, which only a local lowering gives
        return None
    key = kernel_key(func, target, options)
    entry = _entry(key)
    if kc.read_entry(entry, backend.source_ext, backend) is not None:
        return key
    from ..cache import scratch

    with scratch.workdir("transfer-") as tmp:
        lib_path = None
        if payload.get("lib_bytes") is not None:
            lib_path = Path(tmp) / ("kernel" + (payload.get("lib_suffix") or ""))
            lib_path.write_bytes(payload["lib_bytes"])
        built = BuiltKernel(payload["source"], str(lib_path) if lib_path else None, dict(payload.get("meta") or {}))
        built.anchors = span_anchors(func)  # the payload was generated from this very IR
        kc.write_entry(entry, built, backend.source_ext, backend)
    return key
