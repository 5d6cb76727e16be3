"""AMD Instinct GPUs (CDNA). `CDNA("gfx942")` reads the built-in table;
`CDNA("hip")` / `CDNA("auto")` / `CDNA(0)` query the visible ROCm device
through torch (its `gcnArchName` selects the table row, torch supplies the CU
count and L2 size). Wavefront 64, 32768 VGPR-equivalents per CU as `reg_cap`."""

from __future__ import annotations

import re
from typing import Any

from .arch_base import TensorInstruction, TileDevice

KB = 1024
MB = 1024 * 1024

_MFMA = (
    TensorInstruction("mfma", (16, 16, 16), "16bit"),
    TensorInstruction("mfma", (16, 16, 32), "8bit"),
    TensorInstruction("mfma", (16, 16, 4), "tf32"),
)

# name, CUs, LDS per workgroup (= per CU), L2 bytes, approx. HBM GB/s
CDNA_ARCH_TABLE: dict[str, tuple[str, int, int, int, int]] = {
    "gfx90a": ("Instinct MI250X (one GCD)", 110, 64 * KB, 8 * MB, 1638),
    "gfx942": ("Instinct MI300X", 304, 64 * KB, 4 * MB, 5300),
    "gfx950": ("Instinct MI355X", 256, 160 * KB, 4 * MB, 8000),
}


class CDNA(TileDevice):
    """An AMD CDNA GPU."""

    platform = "CDNA"

    def __init__(self, target: Any = "hip") -> None:
        super().__init__()
        text = target if isinstance(target, str) else None
        if isinstance(target, dict):
            text = target.get("mcpu") or target.get("arch")
        elif text is None:
            text = getattr(target, "mcpu", None) or getattr(target, "arch", None)
        m = re.search(r"gfx[0-9a-f]+", str(text)) if text is not None else None
        live = None
        if m is None:
            live = self._device(target)
            m = re.search(r"gfx[0-9a-f]+", live.gcnArchName)
        gfx = m.group(0) if m else ""
        if gfx not in CDNA_ARCH_TABLE:
            raise ValueError(f"no built-in data for {gfx or text!r}; known CDNA archs: {', '.join(CDNA_ARCH_TABLE)}")
        name, cus, lds, l2, bw = CDNA_ARCH_TABLE[gfx]
        self.target = self.compute_capability = gfx
        self.name, self.compute_max_core, self.l2_cache_size_bytes = name, cus, l2
        self.smem_cap = self.smem_per_sm = lds
        self.bandwidth = [bw, 4 * bw]
        self.warp_size = 64
        self.reg_cap = 32768
        self.sm_partition = 4
        self.max_threads_per_block = 1024
        self.tensor_instructions = list(_MFMA)
        self.transaction_size = [64, 128]
        if live is not None:
            self.name = live.name
            self.compute_max_core = live.multi_processor_count
            self.l2_cache_size_bytes = getattr(live, "L2_cache_size", l2) or l2

    @staticmethod
    def _device(target: Any):
        import torch

        if torch.version.hip is None or not torch.cuda.is_available():
            raise RuntimeError("CDNA('hip') needs a visible ROCm GPU; describe it by arch instead, e.g. CDNA('gfx942')")
        index = target if isinstance(target, int) else torch.cuda.current_device()
        return torch.cuda.get_device_properties(index)
