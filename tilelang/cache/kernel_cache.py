"""Implementation of the kernel cache (see package docstring)."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import platform
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..backend.launch_plan import backend_for
from ..backend.registry import BuiltKernel
from ..backend.target import Target
from ..backend.toolrun import building
from ..ir.function import PrimFunc
from . import scratch
from .entry import (
    CACHE_FORMAT,
    _atomic_write,  # noqa: F401 - the autotuner's result cache writes through it
    discard_entry,
    read_entry,
    write_entry,
)
from .markers import reanchor, span_anchors

log = logging.getLogger("tilelang")


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


def cache_root() -> Path:
    """The directory the user chose (`tilelang.env.TILELANG_CACHE_DIR`: the environment
    variable, default `~/.tilelang/cache`): everything below it must be trusted
    (`trust.check_chain`)."""
    from ..env import env

    return Path(env.TILELANG_CACHE_DIR).expanduser().absolute()


def cache_dir() -> Path:
    from .. import __version__

    return cache_root() / __version__ / f"{platform.system().lower()}-{platform.machine()}"


def clear_cache() -> None:
    shutil.rmtree(cache_dir(), ignore_errors=True)


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
        str(CACHE_FORMAT),
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


_warned: set[str] = set()


def warn_unusable(err: BaseException) -> None:
    """Say once per reason that the on-disk cache is not used (builds then go to this
    process's scratch directory)."""
    text = str(err)
    if text not in _warned:
        _warned.add(text)
        log.warning(
            "tilelang: the kernel cache is not used: %s; kernels are built privately for this process "
            "(to use it again: `chmod -R go-w %s`, or delete it)",
            text,
            cache_root(),
        )


def _private_build(backend: Any, func: PrimFunc, target: Target, options: dict) -> BuiltKernel:
    """A build kept in this process's scratch directory (removed at exit)."""
    return backend.build(func, target, options, scratch.keep_dir("build-"))


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


def for_requester(hit: BuiltKernel, backend: Any, func: PrimFunc, target: Target, options: dict) -> BuiltKernel:
    """`hit` (an entry another kernel with the same IR may have built) with the `// file:line`
    markers of `func` (cache/markers.py); where they cannot be re-anchored, the source of a
    fresh lowering of `func` (no compile: the binary is the entry's)."""
    wanted = span_anchors(func)
    source = reanchor(hit.kernel_source, hit.anchors, wanted, func.span.file if func.span.line else "<unknown>")
    if source is None:
        source = backend.lower(func, target, options).kernel_source
    if source is hit.kernel_source:
        return hit
    return BuiltKernel(source, hit.lib_path, hit.meta, hit.lowered, wanted)


def _build_and_store(
    backend: Any, func: PrimFunc, target: Target, options: dict, entry: Path, pre: BuiltKernel | None
) -> BuiltKernel:
    with scratch.workdir() as workdir:
        if pre is not None and getattr(backend, "builds_from_lowered", False):
            built = backend.build(func, target, options, workdir, pre=pre)
        else:
            built = backend.build(func, target, options, workdir)
        built.anchors = span_anchors(func)
        try:  # another process may have stored the same IR meanwhile (its markers: `for_requester`)
            return for_requester(write_entry(entry, built, backend.source_ext, backend), backend, func, target, options)
        except OSError as err:
            # An unwritable or untrusted cache must not break compilation: keep the build privately.
            warn_unusable(err)
            keep = Path(scratch.keep_dir("build-"))
            if built.lib_path:
                dst = keep / Path(built.lib_path).name
                shutil.copy(built.lib_path, dst)
                built.lib_path = str(dst)
            return built


def _entry_for(backend: Any, func: PrimFunc, target: Target, options: dict) -> tuple[Path | None, Any]:
    """(the entry directory of this kernel or None when the cache is disabled, the lowered
    kernel when the key needed it first). A source post-processing hook may do anything, so
    its output is part of the key (engine/callback.py); diagnostic pass configs lower first
    so that their outputs (dumps, pictures) appear on a cache hit too."""
    if not is_cache_enabled():
        return None, None
    salt, pre = backend.cache_salt(target), None
    if _postproc_active(backend):
        pre = backend.lower(func, target, options)
        salt += "|postproc:" + hashlib.sha256(pre.kernel_source.encode()).hexdigest()
    elif _diagnostics_on(options):
        pre = backend.lower(func, target, options)
    return entry_dir(cache_key(func, target, options, salt)), pre


def peek_entry(backend: Any, func: PrimFunc, target: Target, options: dict) -> BuiltKernel | None:
    """The cached build of `func` (checked like any hit), or None — never builds, never lowers
    (kernels whose key needs lowering first, under a source hook or diagnostic configs, give None)."""
    if not is_cache_enabled() or _postproc_active(backend) or _diagnostics_on(options):
        return None
    entry = entry_dir(cache_key(func, target, options, backend.cache_salt(target)))
    return read_entry(entry, backend.source_ext, backend) if entry.is_dir() else None


def load_or_build(backend: Any, func: PrimFunc, target: Target, options: dict) -> BuiltKernel:
    """Return a built kernel for `func`, from the cache when possible (not loaded)."""
    backend = backend_for(backend, func)  # several T.Kernel blocks: one entry for all (launch_plan.py)
    with building(func.name):
        entry, pre = _entry_for(backend, func, target, options)
        if entry is None:
            return _private_build(backend, func, target, options)
        hit = read_entry(entry, backend.source_ext, backend)
        if hit is not None:
            return for_requester(hit, backend, func, target, options)
        return _build_and_store(backend, func, target, options, entry, pre)


def load_kernel(backend: Any, func: PrimFunc, target: Target, options: dict) -> tuple[BuiltKernel, Callable]:
    """`(built, launch)`: `load_or_build` and `backend.load`. A cached entry that passes every
    check and still fails to load (a library without its entry symbol, a cubin the driver
    rejects) is discarded and rebuilt; a fresh build's load errors are the caller's."""
    backend = backend_for(backend, func)
    with building(func.name):
        entry, pre = _entry_for(backend, func, target, options)
        hit = read_entry(entry, backend.source_ext, backend) if entry is not None else None
        if hit is not None:
            try:
                return for_requester(hit, backend, func, target, options), backend.load(hit)
            except Exception as err:  # noqa: BLE001 - whatever a damaged entry raises, it is rebuilt
                log.warning("tilelang: kernel cache entry %s failed to load (%s); rebuilding it", entry, err)
                discard_entry(entry)
        if entry is None:
            built = _private_build(backend, func, target, options)
        else:
            built = _build_and_store(backend, func, target, options, entry, pre)
        return built, backend.load(built)
