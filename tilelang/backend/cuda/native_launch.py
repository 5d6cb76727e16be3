"""The native kernel launcher: `native/launcher.c` built once per machine and Python.

Requires: a C compiler (`$CC` or `cc`) and the headers of the running Python
(`Python.h`). Guarantees: `extension()` returns the loaded module, or None when it
cannot be built or is turned off (`TILELANG_NATIVE_LAUNCH=0`); callers then keep
the ctypes launcher (`runtime.CudaModule.launcher`), which behaves the same, only
slower per call. `unavailable_reason()` says why it is None.

Why: a tiny kernel's call through ctypes spends several microseconds on slot
stores and ctypes' argument conversion; the C launcher packs the parameters on
its own stack and calls `cuLaunchKernel` directly (measured in
`benchmarks/cuda_kernels.py`, launch overhead).

The library is cached in `<cache dir>/native` (this process's scratch directory when
the cache is disabled or not trusted: `cache.trust`; an existing library is imported
only if it passes the same ownership checks as kernel-cache entries) under a hash of the
source, the Python version and ABI, its include directory and the compiler, so it
is compiled once (~0.3 s) and then only loaded. `prebuild()` starts that
compilation on a background thread, so the first kernel build overlaps it with
nvcc instead of adding it.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
from types import ModuleType

from ...errors import TileLangError
from ..toolrun import run_tool

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "launcher.c")
MODULE_NAME = "tilelang_launcher"

_lock = threading.Lock()
_module: ModuleType | None = None
_reason: str | None = None
_tried = False
_builder: threading.Thread | None = None
_private_dir: str | None = None


def enabled() -> bool:
    return os.environ.get("TILELANG_NATIVE_LAUNCH", "1").lower() not in ("0", "false", "no", "off")


def unavailable_reason() -> str | None:
    """Why `extension()` returned None (None while it has not, or when it is loaded)."""
    return _reason


def _library_path() -> tuple[str, list[str]]:
    from ...cache import scratch, trust
    from ...cache.kernel_cache import cache_dir, cache_root, is_cache_enabled, warn_unusable

    include = sysconfig.get_paths()["include"]
    cc = os.environ.get("CC") or "cc"
    with open(SOURCE, "rb") as f:
        source = f.read()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    key = hashlib.sha256(
        b"\0".join([source, sys.version.encode(), suffix.encode(), include.encode(), _file_identity(cc).encode()])
    ).hexdigest()[:32]
    global _private_dir
    directory = None
    if is_cache_enabled():
        try:
            trust.make_dirs(cache_root(), cache_dir() / "native")
            directory = str(cache_dir() / "native")
        except OSError as err:  # not ours, or writable by others: never load a library from it
            warn_unusable(err)
    if directory is None:  # nothing written to the user's cache; built once per process
        if _private_dir is None or not os.path.isdir(_private_dir):
            _private_dir = scratch.keep_dir("native-")
        directory = _private_dir
    path = os.path.join(directory, f"{MODULE_NAME}-{key}{suffix}")
    cmd = [cc, "-O2", "-shared", "-fPIC", "-std=c11", f"-I{include}", SOURCE, "-o"]
    return path, cmd


def _file_identity(program: str) -> str:
    """Path, size and mtime of `program` (cheap, unlike running `cc --version` on every load:
    a compiler upgrade changes them, and the library is then rebuilt)."""
    path = shutil.which(program)
    if path is None:
        raise RuntimeError(f"C compiler `{program}` not found (install gcc or set $CC)")
    st = os.stat(os.path.realpath(path))
    return f"{os.path.realpath(path)}:{st.st_size}:{int(st.st_mtime)}"


def _build() -> str:
    """Compile the extension if it is not cached; its path. Raises OSError/RuntimeError."""
    from ...cache.trust import file_mode, trusted_file

    path, cmd = _library_path()
    if trusted_file(path):  # a library someone else could have written is rebuilt, never imported
        return path
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        raise RuntimeError("Python.h not found (install the python3-dev package)")
    fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=os.path.dirname(path))
    os.close(fd)
    try:
        proc = run_tool([*cmd, tmp], f"the C compiler `{cmd[0]}`", "the native CUDA launcher")
    except TileLangError:
        os.unlink(tmp)
        raise
    if proc.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(f"cc failed: {proc.stderr.strip()[-500:]}")
    os.chmod(tmp, file_mode())
    os.replace(tmp, path)  # atomic: a concurrent process sees the whole library or none
    return path


def prebuild() -> None:
    """Start compiling the extension on a background thread if it is enabled and not built."""
    global _builder
    if not enabled() or _tried:
        return
    with _lock:
        if _builder is None:
            _builder = threading.Thread(target=_try_build, name="tilelang-native-launcher", daemon=True)
            _builder.start()


def _try_build() -> tuple[str | None, str | None]:
    """(the library's path, None), or (None, why it could not be built)."""
    try:
        return _build(), None
    except (OSError, RuntimeError, ValueError, TileLangError) as err:
        return None, str(err)


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def extension() -> ModuleType | None:
    """The loaded launcher module, building it on first use (after waiting for `prebuild`'s
    thread, whose library is then on disk); None if unavailable."""
    global _module, _reason, _tried
    if _tried:
        return _module
    builder = _builder
    if builder is not None:
        builder.join()
    with _lock:
        if _tried:
            return _module
        if not enabled():
            _reason = "turned off by TILELANG_NATIVE_LAUNCH=0"
        else:
            path, _reason = _try_build()
            if path is not None:
                try:
                    _module = _load(path)
                except (ImportError, OSError) as err:
                    _reason = f"cannot load {path}: {err}"
        _tried = True
        return _module
