"""The host CPU as a carver target (the "c" backend): one "core" per hardware
thread, no tensor instructions; `smem_cap` stands for a per-core L2 share and
`reg_cap` keeps accumulator tiles about as large as on a GPU (so hints stay
portable across targets)."""

from __future__ import annotations

import os
from typing import Any

from .arch_base import TileDevice


class CPU(TileDevice):
    """The host CPU."""

    platform = "CPU"

    def __init__(self, target: Any = "c") -> None:
        super().__init__()
        self.target = "c"
        self.name = "host CPU"
        self.compute_capability = "cpu"
        self.compute_max_core = os.cpu_count() or 1
        self.warp_size = 1
        self.sm_partition = 4
        self.smem_cap = self.smem_per_sm = 1024 * 1024
        self.reg_cap = 65536
        self.max_threads_per_block = 1024
        self.l2_cache_size_bytes = 1024 * 1024
        self.bandwidth = [50, 200]
        self.transaction_size = [64, 64]
