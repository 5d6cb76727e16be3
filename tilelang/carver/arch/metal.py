"""Apple GPUs (Metal). Numbers describe an M-series GPU: 32 KB threadgroup
memory, 32-wide SIMD groups, 8x8 `simdgroup_matrix` tiles."""

from __future__ import annotations

from typing import Any

from .arch_base import TensorInstruction, TileDevice


class METAL(TileDevice):
    """An Apple GPU (M1 and later)."""

    platform = "METAL"

    def __init__(self, target: Any = "metal") -> None:
        super().__init__()
        self.target = "metal"
        self.name = "Apple GPU"
        self.compute_capability = "metal"
        self.compute_max_core = 10
        self.warp_size = 32
        self.sm_partition = 4
        self.smem_cap = self.smem_per_sm = 32 * 1024
        self.reg_cap = 65536
        self.max_threads_per_block = 1024
        self.l2_cache_size_bytes = 8 * 1024 * 1024
        self.bandwidth = [100, 400]
        self.transaction_size = [32, 128]
        self.tensor_instructions = [TensorInstruction("simdgroup", (8, 8, 8), "16bit")]


Metal = METAL
