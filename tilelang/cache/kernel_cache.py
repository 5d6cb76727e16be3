"""Implementation of the kernel cache (see package docstring)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..backend.registry import BuiltKernel
from ..backend.target import Target
from ..ir.function import PrimFunc


def enable_cache() -> None:
    """Turn the kernel cache on for this process (`TILELANG_DISABLE_CACHE=1` still wins)."""
    from ..env import CacheState

    CacheState.enable()


def disable_cache() -> None:
    """Turn the kernel cache off for this process: every compile builds afresh and writes nothing."""
    from ..env import CacheState

    CacheState.disable()


def is_cache_enabled() -> bool:
    from ..env import env

    return env.is_cache_enabled()


def cache_dir() -> Path:
    from .. import __version__
    from ..env import env

    root = Path(env.TILELANG_CACHE_DIR)
    return root / __version__ / f"{platform.system().lower()}-{platform.machine()}"


def clear_cache() -> None:
    shutil.rmtree(cache_dir(), ignore_errors=True)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# the packages whose code decides what a kernel compiles to; the frontend is covered by the
# printed IR in the key, the launch side (jit, profiler, ...) does not change the binary
_COMPILER_PACKAGES = ("ir", "arith", "layout", "transform", "tileop", "backend")


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    """Digest of the compiler's own source, so a changed compiler never serves a kernel
    built by its previous code (the version string alone does not change during development)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for pkg in _COMPILER_PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:24]


def cache_key(func: PrimFunc, target: Target, options: dict, salt: str) -> str:
    from .. import __version__

    h = hashlib.sha256()
    for part in (
        __version__,
        compiler_digest(),
        func.script(),
        repr(sorted(func.attrs.get("out_idx", ()) or ())),
        str(target.to_dict()),
        json.dumps(options, sort_keys=True, default=str),
        salt,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def entry_dir(key: str) -> Path:
    """Directory of the cache entry for `key`."""
    return cache_dir() / "kernels" / key[:2] / key


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_entry(entry: Path, source_ext: str) -> BuiltKernel | None:
    meta_path = entry / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
        lib_name = meta.get("lib_name")
        lib_path = entry / lib_name if lib_name else None
        if lib_path is not None and _sha256_file(lib_path) != meta["lib_sha256"]:
            return None
        source = (entry / f"kernel.{source_ext}").read_text()
        if hashlib.sha256(source.encode()).hexdigest() != meta["source_sha256"]:
            return None
    except (OSError, ValueError, KeyError):
        return None
    return BuiltKernel(source, str(lib_path) if lib_path else None, meta.get("backend_meta", {}))


def write_entry(entry: Path, built: BuiltKernel, source_ext: str) -> BuiltKernel:
    entry.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "backend_meta": built.meta,
        "source_sha256": hashlib.sha256(built.kernel_source.encode()).hexdigest(),
    }
    lib_path = None
    if built.lib_path:
        name = "kernel" + Path(built.lib_path).suffix
        lib_path = entry / name
        _atomic_write(lib_path, Path(built.lib_path).read_bytes())
        meta["lib_name"] = name
        meta["lib_sha256"] = _sha256_file(lib_path)
    _atomic_write(entry / f"kernel.{source_ext}", built.kernel_source.encode())
    _atomic_write(entry / "meta.json", json.dumps(meta, indent=1).encode())  # last: marks the entry complete
    return BuiltKernel(built.kernel_source, str(lib_path) if lib_path else None, built.meta, built.lowered)


# pass configs whose effect is an output of lowering (printed IR, dumps, pictures, sources), not the binary
_DIAGNOSTICS = (
    "tl.ast_print_enable",
    "tl.layout_visualization_enable",
    "tl.enable_dump_ir",
    "tl.pass_profile",
    "cuda.kernels_output_dir",
    "tl.debug_merge_shared_memory_allocations",
)


def _diagnostics_on(options: dict) -> bool:
    cfg = options.get("pass_configs") or {}
    return any(cfg.get(k) for k in _DIAGNOSTICS)


def _postproc_active(backend: Any) -> bool:
    from ..engine.callback import postproc_for

    return postproc_for(backend.kind) is not None


def load_or_build(backend: Any, func: PrimFunc, target: Target, options: dict) -> BuiltKernel:
    """Return a built kernel for `func`, from the cache when possible."""
    if not is_cache_enabled():
        workdir = tempfile.mkdtemp(prefix="tilelang-")
        return backend.build(func, target, options, workdir)
    salt, pre = backend.cache_salt(target), None
    if _postproc_active(backend):
        # a source post-processing hook may do anything: key on what it produced (see engine/callback.py)
        pre = backend.lower(func, target, options)
        salt += "|postproc:" + hashlib.sha256(pre.kernel_source.encode()).hexdigest()
    elif _diagnostics_on(options):
        pre = backend.lower(func, target, options)  # their outputs (dumps, pictures) appear on a hit too
    key = cache_key(func, target, options, salt)
    entry = entry_dir(key)
    hit = read_entry(entry, backend.source_ext)
    if hit is not None:
        return hit
    with tempfile.TemporaryDirectory(prefix="tilelang-build-") as workdir:
        if pre is not None and getattr(backend, "builds_from_lowered", False):
            built = backend.build(func, target, options, workdir, pre=pre)
        else:
            built = backend.build(func, target, options, workdir)
        try:
            return write_entry(entry, built, backend.source_ext)
        except OSError:
            # An unwritable cache must not break compilation: keep the build in a private dir.
            keep = tempfile.mkdtemp(prefix="tilelang-")
            if built.lib_path:
                dst = Path(keep) / Path(built.lib_path).name
                shutil.copy(built.lib_path, dst)
                built.lib_path = str(dst)
            return built
