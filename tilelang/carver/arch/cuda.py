"""NVIDIA GPUs. `CUDA(x)` accepts a torch device index / `torch.device`,
`"cuda"` / `"cuda:N"` / `"auto"` (query the device through torch), an arch
string (`"sm_80"`, `"sm_90a"`, `"cuda -arch=sm_86"`), a target dict
(`{"kind": "cuda", "arch": "sm_90a"}`) or any object with an `arch` attribute.

Arch strings need no GPU: the numbers come from the table below (one
representative part per arch; a live device overrides SM count, L2 size and
shared-memory sizes with what the driver reports).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .arch_base import TensorInstruction, TileDevice

KB = 1024
MB = 1024 * 1024

_MMA_AMPERE = [
    TensorInstruction("mma", (16, 8, 16), "16bit"),
    TensorInstruction("mma", (16, 8, 32), "8bit"),
    TensorInstruction("mma", (16, 8, 8), "tf32"),
]
_WGMMA = [
    TensorInstruction("wgmma", (64, 256, 16), "16bit"),
    TensorInstruction("wgmma", (64, 256, 32), "8bit"),
    TensorInstruction("wgmma", (64, 256, 8), "tf32"),
]
_TCGEN05 = [
    TensorInstruction("tcgen05", (128, 256, 16), "16bit"),
    TensorInstruction("tcgen05", (128, 256, 32), "8bit"),
    TensorInstruction("tcgen05", (128, 256, 8), "tf32"),
]


@dataclass(frozen=True)
class _Spec:
    name: str
    sms: int
    smem_block: int  # opt-in max per block
    smem_sm: int
    l2: int
    dram_gbps: int
    l2_gbps: int
    instructions: tuple[TensorInstruction, ...]


# Representative parts; bandwidths are approximate GB/s.
CUDA_ARCH_TABLE: dict[int, _Spec] = {
    70: _Spec("Tesla V100", 80, 96 * KB, 96 * KB, 6 * MB, 900, 2500, (TensorInstruction("mma", (8, 8, 4)),)),
    75: _Spec(
        "Tesla T4",
        40,
        64 * KB,
        64 * KB,
        4 * MB,
        320,
        1300,
        (TensorInstruction("mma", (16, 8, 8)), TensorInstruction("mma", (8, 8, 16), "8bit")),
    ),
    80: _Spec("A100-SXM4-80GB", 108, 163 * KB, 164 * KB, 40 * MB, 2039, 7000, tuple(_MMA_AMPERE)),
    86: _Spec("GeForce RTX 3090", 82, 99 * KB, 100 * KB, 6 * MB, 936, 2800, tuple(_MMA_AMPERE)),
    89: _Spec("GeForce RTX 4090", 128, 99 * KB, 100 * KB, 72 * MB, 1008, 5000, tuple(_MMA_AMPERE)),
    90: _Spec("H100-SXM5-80GB", 132, 227 * KB, 228 * KB, 50 * MB, 3350, 12000, tuple(_WGMMA + _MMA_AMPERE)),
    100: _Spec("B200", 148, 227 * KB, 228 * KB, 126 * MB, 8000, 20000, tuple(_TCGEN05 + _MMA_AMPERE)),
    120: _Spec("GeForce RTX 5090", 170, 99 * KB, 100 * KB, 96 * MB, 1792, 7000, tuple(_MMA_AMPERE)),
}

_ARCH_RE = re.compile(r"sm_(\d+)([a-z]?)")


def parse_cuda_arch(text: str) -> tuple[int, str]:
    """'sm_90a' -> (90, 'a'); also finds the arch inside 'cuda -arch=sm_80'."""
    m = _ARCH_RE.search(text)
    if not m:
        raise ValueError(f"cannot find a CUDA arch like 'sm_80' in {text!r}")
    return int(m.group(1)), m.group(2)


def _device_index(x: Any) -> int | None:
    """Device index if `x` names a live device, else None (x is an arch description)."""
    import torch

    if isinstance(x, bool):
        raise TypeError("CUDA() does not accept a bool")
    if isinstance(x, int):
        return x
    if isinstance(x, torch.device):
        if x.type != "cuda":
            raise ValueError(f"CUDA() needs a cuda device, got {x}")
        return x.index if x.index is not None else -1
    if isinstance(x, str) and (x in ("cuda", "auto", "nvidia") or re.fullmatch(r"cuda:\d+", x)):
        return int(x.split(":")[1]) if ":" in x else -1
    if isinstance(x, dict) and "arch" not in x:
        return -1
    return None


def _arch_text(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, dict):
        return str(x["arch"])
    arch = getattr(x, "arch", None)
    if arch is None:
        attrs = getattr(x, "attrs", None)
        arch = attrs.get("arch") if isinstance(attrs, dict) else None
    if arch is None:
        raise TypeError(f"CUDA() cannot interpret {x!r}: give a device index, 'cuda', or an arch string like 'sm_80'")
    return str(arch)


class CUDA(TileDevice):
    """An NVIDIA GPU; see the module docstring for accepted arguments."""

    platform = "CUDA"

    def __init__(self, target_or_device: Any = "cuda") -> None:
        super().__init__()
        index = _device_index(target_or_device)
        if index is not None:
            self._from_device(index)
        else:
            version, suffix = parse_cuda_arch(_arch_text(target_or_device))
            self._from_table(version, suffix)
        self.max_threads_per_block = 1024
        self.warp_size = 32
        self.sm_partition = 4
        self.reg_cap = 65536
        self.reserved_smem_per_block = 1 * KB if self.sm_version >= 80 else 0
        self.transaction_size = [32, 128]

    def _from_table(self, version: int, suffix: str = "") -> None:
        spec = CUDA_ARCH_TABLE.get(version)
        if spec is None:
            known = ", ".join(f"sm_{v}" for v in CUDA_ARCH_TABLE)
            raise ValueError(f"no built-in data for sm_{version}{suffix}; known CUDA archs: {known}")
        self.sm_version = version
        self.compute_capability = f"{version}{suffix}"
        self.target = f"sm_{version}{suffix}"
        self.name = spec.name
        self.compute_max_core = spec.sms
        self.smem_cap = spec.smem_block
        self.smem_per_sm = spec.smem_sm
        self.l2_cache_size_bytes = spec.l2
        self.bandwidth = [spec.dram_gbps, spec.l2_gbps]
        self.tensor_instructions = list(spec.instructions)

    def _from_device(self, index: int) -> None:
        import torch

        if not torch.cuda.is_available() or torch.version.hip is not None:
            raise RuntimeError(
                "CUDA('cuda') needs a visible NVIDIA GPU (torch.cuda.is_available() is False); "
                "describe the GPU by arch instead, e.g. CUDA('sm_80') or CUDA('sm_90a')"
            )
        if index < 0:
            index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        version = props.major * 10 + props.minor
        # The nearest known arch at or below this one supplies what torch does not report.
        base = max((v for v in CUDA_ARCH_TABLE if v <= version), default=min(CUDA_ARCH_TABLE))
        self._from_table(base)
        self.sm_version = version
        suffix = "a" if version in (90, 100) else ""
        self.compute_capability = f"{version}{suffix}"
        self.target = f"sm_{version}{suffix}"
        self.name = props.name
        self.device_index = index
        self.compute_max_core = props.multi_processor_count
        self.l2_cache_size_bytes = getattr(props, "L2_cache_size", self.l2_cache_size_bytes)
        self.smem_cap = getattr(props, "shared_memory_per_block_optin", self.smem_cap) or self.smem_cap
        self.smem_per_sm = getattr(props, "shared_memory_per_multiprocessor", self.smem_per_sm) or self.smem_per_sm
