"""`GeneralReductionTemplate`: reduce some axes of an n-d tensor.

`structure` has one letter per axis: "S" (spatial, kept) or "R" (reduced),
e.g. "SR" is a row reduction of a matrix, "RS" a column reduction.

Heuristic, for 128- and 256-thread blocks:
- innermost axis reduced (contiguous reduction): threads cooperate along it
  with 16-byte vectors (`reduce_thread`, rstep = reduce_thread * vec); leftover
  threads take several rows of the innermost spatial axis;
- innermost axis spatial: threads run along it with vectors (coalesced; fewer
  of them, down to a warp, while the grid leaves SMs idle), the leftover
  threads split the innermost reduce axis;
- all other axes: tile 1 (spatial) / rstep 1 (reduce).
Hints with a grid covering every SM come first, then 128-thread blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..arch import TileDevice
from ..roller.hint import Hint
from .base import BaseTemplate, check_dtype, check_extent, pow2_ceil, pow2_floor
from .elementwise import vector_width


@dataclass
class GeneralReductionTemplate(BaseTemplate):
    structure: str = "SR"
    shape: Any = None
    dtype: Any = "float16"

    def __post_init__(self) -> None:
        if not isinstance(self.structure, str) or not self.structure or set(self.structure) - {"S", "R"}:
            raise ValueError(f"structure must be a string of 'S'/'R' letters, got {self.structure!r}")
        if "R" not in self.structure:
            raise ValueError("structure has no reduce axis ('R'); use ElementwiseTemplate for pure spatial maps")
        if not isinstance(self.shape, (list, tuple)) or len(self.shape) != len(self.structure):
            raise ValueError(
                f"shape must have one extent per structure letter ({len(self.structure)}), got {self.shape!r}"
            )
        self.shape = [check_extent(f"shape[{i}]", s) for i, s in enumerate(self.shape)]
        self.dtype = check_dtype("dtype", self.dtype)

    def _one(self, arch: TileDevice, threads: int) -> Hint:
        s_axes = [i for i, c in enumerate(self.structure) if c == "S"]
        r_axes = [i for i, c in enumerate(self.structure) if c == "R"]
        block, thread = [1] * len(s_axes), [1] * len(s_axes)
        rstep, rthread = [1] * len(r_axes), [1] * len(r_axes)
        last = len(self.shape) - 1
        ws = max(1, arch.warp_size)
        vec = vector_width(self.shape[last], self.dtype.bits)
        if self.structure[-1] == "R":
            rt = max(1, min(threads, pow2_floor(-(-self.shape[last] // vec))))
            rthread[-1], rstep[-1] = rt, rt * vec
            if s_axes:
                st = max(1, min(threads // rt, pow2_ceil(self.shape[s_axes[-1]])))
                thread[-1] = block[-1] = st
        else:
            tn = max(1, min(threads, pow2_ceil(-(-self.shape[last] // vec))))
            outer = math.prod(self.shape[a] for a in s_axes[:-1])
            while tn > ws and outer * -(-self.shape[last] // (tn * vec)) < arch.compute_max_core:
                tn //= 2
            thread[-1], block[-1] = tn, tn * vec
            rt = max(1, min(threads // tn, pow2_ceil(self.shape[r_axes[-1]])))
            rthread[-1] = rstep[-1] = rt
        grid = math.prod(-(-self.shape[a] // b) for a, b in zip(s_axes, block))
        idle = max(0, arch.compute_max_core - grid)
        return Hint(
            block=block,
            thread=thread,
            rstep=rstep,
            reduce_thread=rthread,
            vectorize={"input": vec},
            arch=arch,
            score=float(idle * 1000 + abs(threads - 128)),
        )

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        ws = max(1, arch.warp_size)
        hints = {}
        for threads in (128, 256):
            h = self._one(arch, max(ws, threads))
            hints.setdefault((tuple(h.block), tuple(h.rstep), tuple(h.thread), tuple(h.reduce_thread)), h)
        return sorted(hints.values(), key=lambda h: h.score)[:topk]
