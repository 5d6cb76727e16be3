"""Hardware descriptions for the carver: `CUDA`, `CDNA`, `METAL`, `CPU`,
`get_arch`, `auto_infer_current_arch` and architecture predicates."""

from __future__ import annotations

from typing import Any

from ...ir.dtype import DataType
from . import driver
from .arch_base import TensorInstruction, TileDevice
from .cdna import CDNA
from .cpu import CPU
from .cuda import CUDA
from .metal import METAL, Metal


def get_arch(target: Any = "cuda") -> TileDevice:
    """Arch object for a target: a TileDevice (returned as is), a device index,
    "cuda"/"cuda:N"/"sm_XX", "hip"/"gfxNNN", "metal", "c"/"cpu"/"llvm", "auto",
    a target dict ({"kind": "cuda", "arch": "sm_90a"}) or an object with kind/arch."""
    if isinstance(target, TileDevice):
        return target
    if isinstance(target, int) and not isinstance(target, bool):
        return CUDA(target)
    if isinstance(target, dict):
        kind = str(target.get("kind", "cuda"))
    elif isinstance(target, str):
        kind = target.strip().split()[0] if target.strip() else ""
    else:
        kind = str(getattr(target, "kind", "cuda"))
    kind = kind.lower()
    if kind == "auto":
        return auto_infer_current_arch()
    if kind.startswith(("cuda", "sm_", "nvidia")):
        return CUDA(target)
    if kind.startswith(("hip", "rocm", "gfx")):
        return CDNA(target)
    if kind == "metal":
        return METAL(target)
    if kind in ("c", "cpu", "llvm"):
        return CPU(target)
    raise ValueError(f"unsupported carver target {target!r}; use cuda/sm_XX, hip/gfxNNN, metal, or c")


def auto_infer_current_arch() -> TileDevice:
    """The arch of the machine: CUDA or ROCm GPU through torch, Apple MPS, else the CPU."""
    import torch

    if torch.cuda.is_available():
        return CDNA("hip") if torch.version.hip is not None else CUDA("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return METAL("metal")
    return CPU("c")


def _sm(arch: Any) -> int:
    return arch.sm_version if isinstance(arch, CUDA) and arch.sm_version is not None else -1


def is_cuda_arch(arch: Any) -> bool:
    return isinstance(arch, CUDA)


def is_volta_arch(arch: Any) -> bool:
    return 70 <= _sm(arch) < 75


def is_ampere_arch(arch: Any) -> bool:
    """sm_80, sm_86, sm_87 (Ada, sm_89, has its own predicate)."""
    return 80 <= _sm(arch) < 89


def is_ada_arch(arch: Any) -> bool:
    return _sm(arch) == 89


def is_hopper_arch(arch: Any) -> bool:
    return 90 <= _sm(arch) < 100


def is_cdna_arch(arch: Any) -> bool:
    return isinstance(arch, CDNA)


def is_metal_arch(arch: Any) -> bool:
    return isinstance(arch, METAL)


def is_cpu_arch(arch: Any) -> bool:
    return isinstance(arch, CPU)


def has_mma_support(arch: Any) -> bool:
    """True when the m16n8k16 `mma.sync` family exists (sm_80 and later)."""
    return _sm(arch) >= 80


def is_tensorcore_supported_precision(in_dtype: Any, accum_dtype: Any, arch: Any) -> bool:
    """Whether (in_dtype, accum_dtype) can run on the arch's matrix instructions."""
    i, a = DataType(in_dtype).base, DataType(accum_dtype).base
    half, f8 = ("float16", "bfloat16"), ("float8_e4m3fn", "float8_e5m2")
    if isinstance(arch, CUDA):
        sm = _sm(arch)
        if sm < 70:
            return False
        if i == "float16" and a in ("float16", "float32"):
            return True
        if sm < 80:
            return sm >= 75 and i == "int8" and a == "int32"
        if (i == "bfloat16" and a == "float32") or (i in ("int8", "uint8") and a == "int32"):
            return True
        if i == "tfloat32" and a == "float32":
            return True
        return i in f8 and a in ("float32", "float16") and sm >= 89
    if isinstance(arch, CDNA):
        if i in half and a == "float32" or i == "float16" and a == "float16":
            return True
        if i in ("int8", "uint8") and a == "int32":
            return True
        return i in f8 and a == "float32" and arch.target in ("gfx942", "gfx950")
    if isinstance(arch, METAL):
        return i in ("float16", "float32", "bfloat16") and a in ("float16", "float32")
    return False


__all__ = [
    "CDNA",
    "CPU",
    "CUDA",
    "METAL",
    "Metal",
    "TensorInstruction",
    "TileDevice",
    "auto_infer_current_arch",
    "driver",
    "get_arch",
    "has_mma_support",
    "is_ada_arch",
    "is_ampere_arch",
    "is_cdna_arch",
    "is_cpu_arch",
    "is_cuda_arch",
    "is_hopper_arch",
    "is_metal_arch",
    "is_tensorcore_supported_precision",
    "is_volta_arch",
]
