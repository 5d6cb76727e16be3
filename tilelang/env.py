"""`tilelang.env`: the environment settings TileLang reads, as one object.

`env.TILELANG_CACHE_DIR` etc. read `os.environ` on every access (so a change
takes effect at once), falling back to the documented default; assigning
(`env.TILELANG_CACHE_DIR = "/tmp/c"`) forces a value for this process until
`del env.TILELANG_CACHE_DIR` or `EnvVar.reset()`. The kernel-cache switch
(`enable_cache` / `disable_cache` / `is_cache_enabled`) lives here too:
`TILELANG_DISABLE_CACHE` truthy disables the cache whatever `enable_cache()`
said.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

_TRUE = ("1", "true", "yes", "on")


def _truthy(v: Any) -> bool:
    return str(v).strip().lower() in _TRUE


class EnvVar:
    """A live view of one environment variable, with a default and an optional forced value."""

    def __init__(self, key: str, default: Any = None) -> None:
        self.key = key
        self.default = default
        self._forced: Any = None

    def get(self) -> Any:
        if self._forced is not None:
            return self._forced
        default = self.default() if callable(self.default) else self.default
        return os.environ.get(self.key, default)

    def reset(self) -> None:
        self._forced = None

    def __get__(self, instance: Any, owner: Any) -> Any:
        return self if instance is None else self.get()

    def __set__(self, instance: Any, value: Any) -> None:
        self._forced = value

    def __delete__(self, instance: Any) -> None:
        self._forced = None

    def __repr__(self) -> str:
        return f"EnvVar({self.key!r}, default={self.default!r})"


class CacheState:
    """The process-wide kernel-cache switch."""

    _enabled = True

    @classmethod
    def enable(cls) -> None:
        cls._enabled = True

    @classmethod
    def disable(cls) -> None:
        cls._enabled = False

    @classmethod
    def is_enabled(cls) -> bool:
        return cls._enabled


def _cache_root() -> str:
    return os.path.expanduser("~/.tilelang/cache")


def _find_cuda_home() -> str:
    from .contrib.nvcc import find_cuda_path

    try:
        return find_cuda_path()
    except RuntimeError:  # no toolkit here: the public default is an empty string
        return ""


def _find_rocm_home() -> str:
    home = os.environ.get("ROCM_PATH") or os.environ.get("ROCM_HOME")
    if home:
        return home
    hipcc = shutil.which("hipcc")
    if hipcc:
        return str(Path(hipcc).resolve().parent.parent)
    return "/opt/rocm" if os.path.isdir("/opt/rocm") else ""


class Environment:
    """Every setting is read live; see the module docstring."""

    TILELANG_PACKAGE_PATH = Path(__file__).resolve().parent

    # kernel cache and temporary files
    TILELANG_CACHE_DIR = EnvVar("TILELANG_CACHE_DIR", _cache_root)
    TILELANG_TMP_DIR = EnvVar("TILELANG_TMP_DIR", lambda: os.path.join(Environment.TILELANG_CACHE_DIR.get(), "tmp"))
    TILELANG_DISABLE_CACHE = EnvVar("TILELANG_DISABLE_CACHE", "0")
    TILELANG_KERNEL_CACHE_USE_LIB_STAMP = EnvVar("TILELANG_KERNEL_CACHE_USE_LIB_STAMP", "0")
    TILELANG_CLEANUP_TEMP_FILES = EnvVar("TILELANG_CLEANUP_TEMP_FILES", "1")
    # compile defaults
    TILELANG_DEFAULT_TARGET = EnvVar("TILELANG_DEFAULT_TARGET", "auto")
    TILELANG_EXECUTION_BACKEND = EnvVar("TILELANG_EXECUTION_BACKEND", "auto")
    TILELANG_VERBOSE = EnvVar("TILELANG_VERBOSE", "0")
    TILELANG_PRINT_ON_COMPILATION = EnvVar("TILELANG_PRINT_ON_COMPILATION", "1")
    TILELANG_COMPILE_TIMEOUT_SECONDS = EnvVar("TILELANG_COMPILE_TIMEOUT_SECONDS", "")
    TILELANG_LAYOUT_COST_MODEL = EnvVar("TILELANG_LAYOUT_COST_MODEL", None)
    # autotuner
    TILELANG_AUTO_TUNING_DISABLE_CACHE = EnvVar("TILELANG_AUTO_TUNING_DISABLE_CACHE", "0")
    TILELANG_AUTO_TUNING_CPU_UTILITIES = EnvVar("TILELANG_AUTO_TUNING_CPU_UTILITIES", "0.9")
    TILELANG_AUTO_TUNING_CPU_COUNTS = EnvVar("TILELANG_AUTO_TUNING_CPU_COUNTS", "-1")
    TILELANG_AUTO_TUNING_MAX_CPU_COUNT = EnvVar("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", "-1")
    # diagnostics
    TILELANG_JIT_DIAGNOSTICS = EnvVar("TILELANG_JIT_DIAGNOSTICS", "0")
    TL_LOWER_TRACE = EnvVar("TL_LOWER_TRACE", "0")
    TL_LOWER_TRACE_DIR = EnvVar("TL_LOWER_TRACE_DIR", "./tl_lower_trace")
    TILELANG_ENABLE_IR_SPAN = EnvVar("TILELANG_ENABLE_IR_SPAN", "1")
    # toolchains and include paths
    CUDA_HOME = EnvVar("CUDA_HOME", _find_cuda_home)
    ROCM_HOME = EnvVar("ROCM_HOME", _find_rocm_home)
    CUTLASS_INCLUDE_DIR = EnvVar("TL_CUTLASS_PATH", None)
    COMPOSABLE_KERNEL_INCLUDE_DIR = EnvVar("TL_COMPOSABLE_KERNEL_PATH", None)
    TILELANG_TEMPLATE_PATH = EnvVar("TL_TEMPLATE_PATH", None)

    # -- kernel cache switch ----------------------------------------------------------------
    def is_cache_enabled(self) -> bool:
        return CacheState.is_enabled() and not _truthy(self.TILELANG_DISABLE_CACHE)

    def enable_cache(self) -> None:
        CacheState.enable()

    def disable_cache(self) -> None:
        CacheState.disable()

    def is_autotune_cache_disabled(self) -> bool:
        return _truthy(self.TILELANG_AUTO_TUNING_DISABLE_CACHE) or not self.is_cache_enabled()

    def is_print_on_compilation_enabled(self) -> bool:
        return _truthy(self.TILELANG_PRINT_ON_COMPILATION)

    def get_default_target(self) -> Any:
        """`TILELANG_DEFAULT_TARGET`; a JSON object string becomes a dict."""
        import json

        v = self.TILELANG_DEFAULT_TARGET
        if isinstance(v, str) and v.strip().startswith("{"):
            return json.loads(v)
        return v

    def get_default_execution_backend(self) -> str:
        return self.TILELANG_EXECUTION_BACKEND

    def get_default_verbose(self) -> bool:
        return _truthy(self.TILELANG_VERBOSE)

    def __repr__(self) -> str:
        names = [n for n, v in type(self).__dict__.items() if isinstance(v, EnvVar)]
        return "Environment(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"


env = Environment()

enable_cache = CacheState.enable
disable_cache = CacheState.disable


def is_cache_enabled() -> bool:
    return env.is_cache_enabled()


__all__ = ["CacheState", "EnvVar", "Environment", "disable_cache", "enable_cache", "env", "is_cache_enabled"]
