"""Test helpers used by the examples and the test-suite.

- `main()`: run pytest on the calling file (for `if __name__ == "__main__":`).
- `requires_cuda`, `requires_cuda_compute_version(major, minor=0, mode="ge")`
  (and `_ge/_gt/_le/_lt/_eq`), `requires_package(name)`: skip decorators that
  work on test functions and classes (pytest marks when pytest is importable,
  `unittest.SkipTest` otherwise).
- `set_random_seed(seed=42)`: Python, NumPy (if installed) and torch RNGs.
- `torch_assert_close(a, b, ...)`: `tilelang.utils.tensor.torch_assert_close`
  (a tolerance check that allows a fraction of mismatches).
- `process_func(fn, *args, **kw)` / `regression()`: run `regression_*`
  functions of the calling module and print the values they recorded.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import random
import sys
import unittest
from collections.abc import Callable
from typing import Any

from ..utils.tensor import torch_assert_close

__all__ = [
    "main",
    "process_func",
    "regression",
    "requires_cuda",
    "requires_cuda_compute_version",
    "requires_cuda_compute_version_eq",
    "requires_cuda_compute_version_ge",
    "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_le",
    "requires_cuda_compute_version_lt",
    "requires_package",
    "set_random_seed",
    "torch_assert_close",
]


def main() -> None:
    """Run pytest on the file that called `main()` and exit with its status."""
    import pytest

    caller = inspect.stack()[1].filename
    sys.exit(pytest.main([os.path.abspath(caller), *sys.argv[1:]]))


# -- skip decorators -----------------------------------------------------------------
def _skip_unless(condition: bool, reason: str) -> Callable[[Any], Any]:
    """Decorator: skip the test (function or class) unless `condition` holds."""

    def deco(obj: Any) -> Any:
        try:
            import pytest
        except ImportError:
            if condition:
                return obj
            return unittest.skip(reason)(obj)
        return pytest.mark.skipif(not condition, reason=reason)(obj)

    return deco


def cuda_available() -> bool:
    """An NVIDIA GPU is visible to torch (ROCm builds do not count)."""
    import torch

    return torch.cuda.is_available() and torch.version.hip is None


def requires_cuda(obj: Any) -> Any:
    """Skip unless an NVIDIA GPU is visible; also marks the test `cuda`. Use as `@requires_cuda`."""
    obj = _skip_unless(cuda_available(), "requires a CUDA GPU")(obj)
    try:
        import pytest
    except ImportError:
        return obj
    return pytest.mark.cuda(obj)


_MODES = {
    "ge": lambda a, b: a >= b,
    "gt": lambda a, b: a > b,
    "le": lambda a, b: a <= b,
    "lt": lambda a, b: a < b,
    "eq": lambda a, b: a == b,
}


def requires_cuda_compute_version(major: int, minor: int = 0, mode: str = "ge") -> Callable[[Any], Any]:
    """Skip unless a CUDA GPU is visible and its compute capability compares
    (`mode`: ge/gt/le/lt/eq) with (major, minor)."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    ok = False
    if cuda_available():
        from ..contrib.nvcc import get_target_compute_version, parse_compute_version

        ok = _MODES[mode](parse_compute_version(get_target_compute_version()), (major, minor))
    return _skip_unless(ok, f"requires a CUDA GPU with compute capability {mode} {major}.{minor}")


def _mode_variant(mode: str) -> Callable[..., Callable[[Any], Any]]:
    def variant(major: int, minor: int = 0) -> Callable[[Any], Any]:
        return requires_cuda_compute_version(major, minor, mode)

    variant.__name__ = f"requires_cuda_compute_version_{mode}"
    variant.__doc__ = f"`requires_cuda_compute_version(major, minor, mode={mode!r})`."
    return variant


requires_cuda_compute_version_ge = _mode_variant("ge")
requires_cuda_compute_version_gt = _mode_variant("gt")
requires_cuda_compute_version_le = _mode_variant("le")
requires_cuda_compute_version_lt = _mode_variant("lt")
requires_cuda_compute_version_eq = _mode_variant("eq")


def requires_package(name: str) -> Callable[[Any], Any]:
    """Skip unless the package `name` can be imported."""
    return _skip_unless(importlib.util.find_spec(name) is not None, f"requires the {name!r} package")


# -- randomness and comparison ----------------------------------------------------------
def set_random_seed(seed: int = 42) -> None:
    """Seed Python's `random`, NumPy (if installed) and torch (CPU and every CUDA device)."""
    import torch

    random.seed(seed)
    if importlib.util.find_spec("numpy") is not None:
        import numpy

        numpy.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


# -- regression runner --------------------------------------------------------------------
_RECORDS: list[tuple[str, Any]] = []


def process_func(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call `func(*args, **kwargs)` and record its result (e.g. a latency) for `regression()`."""
    result = func(*args, **kwargs)
    _RECORDS.append((getattr(func, "__qualname__", repr(func)), result))
    return result


def regression(prefix: str = "regression_") -> list[tuple[str, Any]]:
    """Run every function named `prefix*` in the calling module, then print and
    return what `process_func` recorded, as (name, value) pairs."""
    caller = inspect.stack()[1].frame.f_globals
    start = len(_RECORDS)
    for name, fn in list(caller.items()):
        if name.startswith(prefix) and callable(fn):
            fn()
    records = _RECORDS[start:]
    for name, value in records:
        print(f"{name}: {value}")
    return records
