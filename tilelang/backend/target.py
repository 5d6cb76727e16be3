"""Target parsing: strings, dicts, `TILELANG_DEFAULT_TARGET`, and "auto" detection.

`Target(kind, arch, attrs)`: kind is "cuda" | "hip" | "metal" | "c". "auto"
picks CUDA (when a GPU and nvcc are present) → HIP → Metal → CPU; an
explicitly requested target that is not built or not available is an error,
never a silent fallback.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from dataclasses import dataclass, field
from typing import Any

_ALIASES = {"cpu": "c", "llvm": "c", "c": "c", "cuda": "cuda", "hip": "hip", "rocm": "hip", "metal": "metal"}


@dataclass(frozen=True)
class Target:
    kind: str
    arch: str = ""
    attrs: tuple = field(default_factory=tuple)  # sorted (key, value) pairs

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)

    @property
    def sm(self) -> int:
        """Numeric compute capability for CUDA targets (`sm_90a` → 90)."""
        digits = "".join(ch for ch in self.arch if ch.isdigit())
        return int(digits) if digits else 0

    def __str__(self) -> str:
        if self.kind == "cuda":
            return f"cuda -arch={self.arch}"
        if self.kind == "hip":
            return f"hip -mcpu={self.arch}"
        return self.kind

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        if self.arch:
            d["arch"] = self.arch
        d.update(dict(self.attrs))
        return d


def _cuda_device_arch() -> str | None:
    try:
        import torch

        if torch.cuda.is_available() and torch.version.hip is None:
            major, minor = torch.cuda.get_device_capability()
            suffix = "a" if (major, minor) in ((9, 0), (10, 0), (10, 3)) else ""
            return f"sm_{major}{minor}{suffix}"
    except Exception:  # pragma: no cover - broken driver
        return None
    return None


def nvcc_path() -> str | None:
    for env in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(env)
        if root and os.path.exists(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda/bin/nvcc"
    return None


def detect() -> Target:
    arch = _cuda_device_arch()
    if arch and nvcc_path():
        return Target("cuda", arch)
    try:
        import torch

        if torch.version.hip is not None and torch.cuda.is_available():
            name = torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
            return Target("hip", name)
    except Exception:  # pragma: no cover
        pass
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return Target("metal")
    return Target("c")


def parse(target: Any = None) -> Target:
    """Normalise any accepted target spelling into a `Target`."""
    if isinstance(target, Target):
        return target
    if target is None:
        target = os.environ.get("TILELANG_DEFAULT_TARGET", "auto") or "auto"
    if isinstance(target, str):
        s = target.strip()
        if s.startswith("{"):
            return parse(json.loads(s))
        if s == "auto":
            return detect()
        parts = s.split()
        kind = _ALIASES.get(parts[0])
        if kind is None:
            if parts[0].startswith("sm_"):
                return Target("cuda", parts[0])
            if parts[0].startswith("hip:"):
                return Target("hip", parts[0].split(":", 1)[1])
            raise ValueError(
                f"unknown target {target!r}: use 'auto', 'cuda', 'hip', 'metal', 'c' (or 'cpu'/'llvm'), or a dict like {{'kind': 'cuda', 'arch': 'sm_90a'}}"
            )
        attrs = {}
        for p in parts[1:]:
            if p.startswith("-arch="):
                attrs["arch"] = p.split("=", 1)[1]
            elif p.startswith("-mcpu="):
                attrs["arch"] = p.split("=", 1)[1]
        return parse({"kind": kind, **attrs})
    if isinstance(target, dict):
        d = dict(target)
        kind = _ALIASES.get(str(d.pop("kind", "")))
        if kind is None:
            raise ValueError(f"target dict needs a 'kind' of cuda/hip/metal/c, got {target!r}")
        arch = str(d.pop("arch", d.pop("mcpu", "")) or "")
        if kind == "cuda" and not arch:
            arch = _cuda_device_arch() or "sm_90a"
        if kind == "hip" and not arch:
            arch = "gfx942"
        return Target(kind, arch, tuple(sorted((k, _freeze(v)) for k, v in d.items())))
    raise ValueError(f"cannot interpret target {target!r}")


def _freeze(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def target_of(func: Any, ctx: Any) -> Target | None:
    """The target a pass compiles `func` for: `ctx.target` (a `CompileContext`, or a dict of its
    keys), else the function's `target` attribute, parsed; None when neither names one."""
    from ..transform.context import CompileContext

    t = CompileContext.of(ctx).target
    if t is None and func is not None:
        t = func.attrs.get("target")
    return None if t is None else parse(t)
