"""Targets: parsing (strings, dicts, `TILELANG_DEFAULT_TARGET`, "auto" detection) and what a
target knows about itself.

`Target(kind, arch, attrs, sm_count)`: kind is "cuda" | "hip" | "metal" | "c". "auto"
picks CUDA (when a GPU and nvcc are present) → HIP → Metal → CPU; an
explicitly requested target that is not built or not available is an error,
never a silent fallback.

A Target is resolved once, when it is made: its architecture as a number (`sm`), its features
(`has_wgmma`, `has_tma`, `has_clusters`, `has_tcgen05`), its per-SM and per-block limits
(`limits`, from `arch_limits.py`) and, for CUDA, the SM count persistent schedules size their
grid by (`sm_count`: given — `Target("cuda", "sm_90a", sm_count=132)`,
`"cuda -arch=sm_90a -sm_count=132"`, `{"kind": "cuda", "arch": "sm_90a", "sm_count": 132}` —
else the device's when torch is already loaded and its GPU has this architecture, else the
usual part of that architecture, `DEFAULT_SM_COUNTS`). The SM count is part of `to_dict()`, so
of the kernel cache key: a kernel scheduled for 132 SMs is never reused for 114.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

_ALIASES = {"cpu": "c", "llvm": "c", "c": "c", "cuda": "cuda", "hip": "hip", "rocm": "hip", "metal": "metal"}


# The SM count of the usual part of each CUDA architecture (the persistent schedule's default
# when no device says otherwise): A100, A10/3090, L4/4090, H100 SXM/H200, B200.
DEFAULT_SM_COUNTS = {80: 108, 86: 84, 87: 16, 89: 58, 90: 132, 100: 148, 103: 148, 120: 84}
_FAMILY_SUFFIX = {90: "a", 100: "a", 103: "a"}  # arch-specific ("a") feature sets


@dataclass(frozen=True)
class Target:
    kind: str
    arch: str = ""
    attrs: tuple = field(default_factory=tuple)  # sorted (key, value) pairs
    sm_count: int | None = None  # CUDA: the SMs persistent schedules fill (resolved when made)

    def __post_init__(self) -> None:
        if self.kind == "cuda" and self.sm_count is None:
            object.__setattr__(self, "sm_count", _default_sm_count(self.arch))
        if self.sm_count is not None and (type(self.sm_count) is not int or self.sm_count < 1):
            raise ValueError(f"sm_count must be a positive int, got {self.sm_count!r}")

    def attr(self, key: str, default: Any = None) -> Any:
        return dict(self.attrs).get(key, default)

    @property
    def sm(self) -> int:
        """Numeric compute capability for CUDA targets (`sm_90a` → 90; `sm_100a` → 100)."""
        return _sm_number(self.arch) if self.kind == "cuda" else 0

    @property
    def arch_specific(self) -> bool:
        """The `a` feature set (`sm_90a`, `sm_100a`): wgmma, setmaxnreg, tcgen05."""
        return self.kind == "cuda" and self.arch.endswith("a")

    @property
    def has_tma(self) -> bool:
        return self.kind == "cuda" and self.sm >= 90

    @property
    def has_clusters(self) -> bool:
        return self.kind == "cuda" and self.sm >= 90

    @property
    def has_wgmma(self) -> bool:
        return self.kind == "cuda" and self.sm == 90 and self.arch_specific

    @property
    def has_tcgen05(self) -> bool:
        return self.kind == "cuda" and self.sm in (100, 103) and self.arch_specific

    @property
    def features(self) -> frozenset:
        names = ("tma", "clusters", "wgmma", "tcgen05")
        return frozenset(n for n in names if getattr(self, f"has_{n}"))

    @property
    def limits(self) -> Any:
        """The per-SM and per-block limits (`arch_limits.ArchLimits`) of this target."""
        from .arch_limits import arch_limits

        key = {"cuda": self.arch, "hip": f"hip:{self.arch}", "metal": "metal"}.get(self.kind, "c")
        return arch_limits(key)

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
        if self.sm_count is not None:
            d["sm_count"] = self.sm_count
        d.update(dict(self.attrs))
        return d


def _sm_number(arch: str) -> int:
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return int(digits) if digits else 0


def _default_sm_count(arch: str) -> int:
    """The SM count of the GPU torch uses when torch is already loaded (every compile-and-run path
    loads it) and that GPU has architecture `arch`; else the table value — the language server
    never imports torch just to ask."""
    sm = _sm_number(arch)
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and getattr(torch.version, "hip", None) is None:
                major, minor = torch.cuda.get_device_capability()
                if major * 10 + minor == sm:
                    return int(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)
        except Exception:  # noqa: BLE001 - no usable GPU: the table value
            pass
    known = [n for n in DEFAULT_SM_COUNTS if n <= sm]
    return DEFAULT_SM_COUNTS[max(known)] if known else DEFAULT_SM_COUNTS[80]


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


def gcn_arch_base(name: str) -> str:
    """The processor of an AMDGPU target ID: "gfx90a:sramecc+:xnack-" → "gfx90a" (the
    feature flags after ':' are settings of that processor, not another architecture)."""
    return name.split(":", 1)[0].strip()


def _hip_device_arch() -> str | None:
    """The AMDGPU processor (e.g. "gfx90a") of torch's current device when torch is a ROCm
    build with a usable device, else None."""
    try:
        import torch

        if getattr(torch.version, "hip", None) is None or not torch.cuda.is_available():
            return None
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return gcn_arch_base(getattr(props, "gcnArchName", "") or "") or None
    except Exception:  # noqa: BLE001 - a broken ROCm install: no HIP device
        return None


def detect() -> Target:
    arch = _cuda_device_arch()
    if arch and nvcc_path():
        return Target("cuda", arch)
    hip_arch = _hip_device_arch()
    if hip_arch:
        return Target("hip", hip_arch)
    if metal_available():
        return Target("metal")
    return Target("c")


def metal_available() -> bool:
    """Whether "auto" picks Metal (after CUDA and HIP): torch reports a usable MPS device and
    can compile Metal shaders (`torch.mps.compile_shader`, torch >= 2.6)."""
    try:
        import torch

        return bool(torch.backends.mps.is_available()) and hasattr(getattr(torch, "mps", None), "compile_shader")
    except Exception:  # noqa: BLE001 - a torch without the MPS backend: no Metal
        return False


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
                return parse({"kind": "hip", "arch": parts[0].split(":", 1)[1]})
            if parts[0].startswith("gfx"):
                return parse({"kind": "hip", "arch": parts[0]})
            raise ValueError(
                f"unknown target {target!r}: use 'auto', 'cuda', 'hip', 'metal', 'c' (or 'cpu'/'llvm'), or a dict like {{'kind': 'cuda', 'arch': 'sm_90a'}}"
            )
        attrs: dict = {}
        for p in parts[1:]:
            if p.startswith("-arch="):
                attrs["arch"] = p.split("=", 1)[1]
            elif p.startswith("-mcpu="):
                attrs["arch"] = p.split("=", 1)[1]
            elif p.startswith("-sm_count="):
                attrs["sm_count"] = _positive_int(p.split("=", 1)[1], target)
        return parse({"kind": kind, **attrs})
    if isinstance(target, dict):
        d = dict(target)
        kind = _ALIASES.get(str(d.pop("kind", "")))
        if kind is None:
            raise ValueError(f"target dict needs a 'kind' of cuda/hip/metal/c, got {target!r}")
        arch = str(d.pop("arch", d.pop("mcpu", "")) or "")
        if kind == "cuda" and not arch:
            arch = _cuda_device_arch() or "sm_90a"
        if kind == "hip":
            arch = hip_arch(arch)
        if kind == "metal":
            arch = metal_arch(arch)
        sms = d.pop("sm_count", None)
        if sms is not None:
            if kind != "cuda":
                raise ValueError(f"sm_count applies to CUDA targets only, got {target!r}")
            sms = _positive_int(sms, target)
        return Target(kind, arch, tuple(sorted((k, _freeze(v)) for k, v in d.items())), sms)
    raise ValueError(f"cannot interpret target {target!r}")


# --- HIP facts (the HIP backend, backend/hip/, and the analysis read them from here) ---
# AMD Instinct processors this compiler generates code for: MI200 (gfx90a), MI300 (gfx940 /
# gfx942). Every one runs waves of 64 lanes, has 64 KiB of LDS per workgroup, at most 1024
# work-items per workgroup and MFMA matrix instructions; none has cp.async-style asynchronous
# global->LDS copies (the pipelined loops double-buffer through registers: backend/hip).
HIP_ARCHES = ("gfx90a", "gfx940", "gfx942")
HIP_DEFAULT_ARCH = "gfx90a"
HIP_WAVE_SIZE = 64
# clang 15 (Debian's ROCm 5.2) stops at gfx940: a gfx942 target compiles for gfx940, the same
# ISA family with the same MFMA mnemonics (LLVM >= 17 knows gfx942)
HIP_OFFLOAD_PROXY = {"gfx942": "gfx940"}


def hip_arch(arch: str) -> str:
    """The AMDGPU processor of a HIP target ("" → the default; "gfx90a:xnack-" → "gfx90a");
    anything this compiler cannot generate code for is an error."""
    arch = gcn_arch_base(arch or HIP_DEFAULT_ARCH)
    if arch not in HIP_ARCHES:
        raise ValueError(f"unknown HIP processor {arch!r}: use one of {', '.join(HIP_ARCHES)}")
    return arch


def hip_offload_arch(target: Target) -> str:
    """The `--offload-arch` a HIP target compiles with (gfx942 → gfx940 before LLVM 17)."""
    return HIP_OFFLOAD_PROXY.get(target.arch, target.arch)


def wave_size(target: Any) -> int:
    """Threads that run in lockstep and exchange registers by shuffles: 64 on AMD (a wave), 32
    on NVIDIA (a warp) and Apple (a SIMD-group); the CPU simulates 32-thread warps."""
    return HIP_WAVE_SIZE if getattr(target, "kind", None) == "hip" else 32


# --- Metal facts (the Metal backend, backend/metal/, and the analysis read them from here) ---
# Apple GPU families: apple7 = M1 / A14, apple8 = M2 / A15-A16, apple9 = M3 / A17. Every one of
# them has SIMD-groups of 32 threads, 32 KiB of threadgroup memory and up to 1024 threads per
# threadgroup, and `simdgroup_matrix` (8x8) multiply-accumulate (MSL 2.3+).
METAL_ARCHES = ("apple7", "apple8", "apple9")
METAL_DEFAULT_ARCH = "apple8"
METAL_DEFAULT_MSL = "3.0"  # bfloat (and simdgroup_matrix<bfloat>) needs MSL 3.1
METAL_SIMD_WIDTH = 32


def metal_arch(arch: str) -> str:
    """The Apple GPU family of a Metal target ("" → the default); anything else is an error."""
    arch = arch or METAL_DEFAULT_ARCH
    if arch not in METAL_ARCHES:
        raise ValueError(f"unknown Metal GPU family {arch!r}: use one of {', '.join(METAL_ARCHES)}")
    return arch


def metal_msl_version(target: Target) -> tuple:
    """The Metal Shading Language version the kernel is written for (target attr `msl`, e.g.
    `{"kind": "metal", "msl": "3.1"}`), as (major, minor)."""
    text = str(target.attr("msl", METAL_DEFAULT_MSL))
    try:
        major, minor = (int(x) for x in text.split("."))
    except ValueError as err:
        raise ValueError(f"Metal target attr msl must look like '3.1', got {text!r}") from err
    return (major, minor)


def metal_features(target: Target) -> frozenset:
    """What a Metal target has: `simdgroup_matrix` (8x8 matrices), `simd_reductions`,
    `bfloat` (MSL 3.1+). Never cp.async, TMA, wgmma, clusters or fp8."""
    out = {"simdgroup_matrix", "simd_reductions"}
    if metal_msl_version(target) >= (3, 1):
        out.add("bfloat")
    return frozenset(out)


def _positive_int(v: Any, target: Any) -> int:
    try:
        n = int(v)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or (type(v) is not int and str(v).strip() != str(n)):
        raise ValueError(f"sm_count must be a positive integer in target {target!r}, got {v!r}")
    return n


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
