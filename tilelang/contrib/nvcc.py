"""CUDA toolkit discovery and compute-capability helpers.

- `get_target_compute_version(target=None) -> "9.0"`: from an arch ("sm_90a",
  "cuda -arch=sm_80", {"arch": "sm_86"}, an object with `.arch`), or from the
  current torch CUDA device when `target` is None / "cuda" / "auto".
- `find_cuda_path()`: the toolkit root (CUDA_HOME, CUDA_PATH, nvcc on PATH,
  /usr/local/cuda).
- `get_nvcc_version() -> (major, minor)` from `nvcc --version`.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from typing import Any

_ARCH_RE = re.compile(r"sm_(\d+)([a-z]?)")


def parse_compute_version(compute_version: str) -> tuple[int, int]:
    """ "8.6" -> (8, 6)."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(compute_version))
    if not m:
        raise ValueError(f"compute version must look like '8.0', got {compute_version!r}")
    return int(m.group(1)), int(m.group(2))


def arch_to_compute_version(arch: str) -> str:
    """ "sm_90a" -> "9.0", "sm_86" -> "8.6", "sm_120" -> "12.0"."""
    m = _ARCH_RE.search(str(arch))
    if not m:
        raise ValueError(f"cannot find a CUDA arch like 'sm_80' in {arch!r}")
    digits = m.group(1)
    return f"{int(digits[:-1])}.{digits[-1]}"


def get_target_compute_version(target: Any = None) -> str:
    """Compute version "major.minor" of `target` (see the module docstring)."""
    arch = None
    if isinstance(target, dict):
        arch = target.get("arch")
    elif isinstance(target, str):
        if target.strip() not in ("", "cuda", "auto", "nvidia"):
            arch = target
    elif target is not None:
        arch = getattr(target, "arch", None)
    if arch is not None:
        return arch_to_compute_version(str(arch))
    import torch

    if not torch.cuda.is_available() or torch.version.hip is not None:
        raise RuntimeError("no CUDA device is visible to read the compute version from; pass an arch such as 'sm_80'")
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def _is_toolkit(root: str) -> bool:
    """A directory with bin/nvcc and include/cuda_runtime.h."""
    has_nvcc = any(os.path.isfile(os.path.join(root, "bin", n)) for n in ("nvcc", "nvcc.exe"))
    return has_nvcc and os.path.isfile(os.path.join(root, "include", "cuda_runtime.h"))


@functools.lru_cache(maxsize=1)
def find_cuda_path() -> str:
    """Root of the CUDA toolkit; RuntimeError if none is found."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and _is_toolkit(root):
            return root
    nvcc = shutil.which("nvcc")
    if nvcc:
        root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if _is_toolkit(root):
            return root
    if _is_toolkit("/usr/local/cuda"):
        return "/usr/local/cuda"
    if nvcc:  # a wrapper script somewhere on PATH
        return os.path.dirname(os.path.dirname(nvcc))
    raise RuntimeError("CUDA toolkit not found: set CUDA_HOME or put nvcc on PATH")


def nvcc_path() -> str:
    """The nvcc executable to run."""
    return shutil.which("nvcc") or os.path.join(find_cuda_path(), "bin", "nvcc")


@functools.lru_cache(maxsize=1)
def get_nvcc_version() -> tuple[int, int]:
    """(major, minor) of the CUDA compiler, parsed from `nvcc --version`."""
    from ..backend.toolrun import QUERY_TIMEOUT, run_tool

    out = run_tool([nvcc_path(), "--version"], "`nvcc --version`", timeout=QUERY_TIMEOUT).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    if not m:
        raise RuntimeError(f"cannot parse the nvcc version from: {out.strip()!r}")
    return int(m.group(1)), int(m.group(2))


def have_fp16(compute_version: str) -> bool:
    return parse_compute_version(compute_version) >= (5, 3)


def have_bf16(compute_version: str) -> bool:
    return parse_compute_version(compute_version) >= (8, 0)


def have_tensorcore(compute_version: str) -> bool:
    return parse_compute_version(compute_version) >= (7, 0)


def have_fp8(compute_version: str) -> bool:
    return parse_compute_version(compute_version) >= (8, 9)


def have_tma(compute_version: str) -> bool:
    return parse_compute_version(compute_version) >= (9, 0)
