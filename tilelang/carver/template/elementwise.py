"""`ElementwiseTemplate`: out = f(in) over an n-d shape.

Heuristic: 16-byte vectors along the last axis (narrower if the last extent is
not a multiple), one vector per thread, 256- and 128-thread blocks. The block
tile fills the last axis first (up to its power-of-two ceiling), then the outer
axes. Hints with a grid that covers every SM come first, then larger blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..arch import TileDevice
from ..roller.hint import Hint
from .base import BaseTemplate, check_dtype, check_extent, pow2_ceil


def vector_width(extent: int, bits: int) -> int:
    """Largest power of two <= 128 bits / `bits` that divides `extent`."""
    vec = max(1, 128 // bits)
    while vec > 1 and extent % vec:
        vec //= 2
    return vec


def fill_tile(shape: list[int], elems: int) -> list[int]:
    """Power-of-two tile of about `elems` elements, innermost axis first."""
    tile = [1] * len(shape)
    left = elems
    for d in reversed(range(len(shape))):
        tile[d] = max(1, min(pow2_ceil(shape[d]), left))
        left = max(1, left // tile[d])
    return tile


@dataclass
class ElementwiseTemplate(BaseTemplate):
    shape: Any = None
    dtype: Any = "float16"

    def __post_init__(self) -> None:
        if not isinstance(self.shape, (list, tuple)) or not self.shape:
            raise ValueError(f"shape must be a non-empty list of positive ints, got {self.shape!r}")
        self.shape = [check_extent(f"shape[{i}]", s) for i, s in enumerate(self.shape)]
        self.dtype = check_dtype("dtype", self.dtype)

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        vec = vector_width(self.shape[-1], self.dtype.bits)
        hints = []
        for threads in (256, 128):
            tile = fill_tile(self.shape, threads * vec)
            thread = tile[:-1] + [max(1, tile[-1] // vec)]
            grid = math.prod(-(-s // t) for s, t in zip(self.shape, tile))
            idle = max(0, arch.compute_max_core - grid)
            hints.append(
                Hint(
                    block=tile,
                    thread=thread,
                    vectorize={"input": vec, "output": vec},
                    arch=arch,
                    score=float(idle * 1000 + abs(math.prod(thread) - 256)),
                )
            )
        unique = {tuple(h.block): h for h in reversed(hints)}
        return sorted(unique.values(), key=lambda h: h.score)[:topk]
