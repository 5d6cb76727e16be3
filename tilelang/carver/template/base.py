"""`BaseTemplate`: an operator description that recommends `Hint`s for an arch.

Subclasses are dataclasses holding the operator's sizes and dtypes and implement
`get_hardware_aware_configs(arch, topk)`.
"""

from __future__ import annotations

import math
from typing import Any

from ...ir.dtype import DataType
from ..arch import TileDevice, get_arch
from ..roller.hint import Hint


def check_extent(name: str, value: Any) -> int:
    """A positive int (bools and symbolic sizes are rejected with a clear message)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


def check_dtype(name: str, value: Any) -> DataType:
    try:
        return DataType(value)
    except TypeError as err:
        raise TypeError(f"{name}: {err}") from None


def pow2_floor(x: int) -> int:
    return 1 << (max(1, x).bit_length() - 1)


def pow2_ceil(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


class BaseTemplate:
    """Common API: `.with_arch(arch)`, `.has_arch()`, `.arch`, `.recommend_hints(topk)`."""

    def with_arch(self, arch: TileDevice | str | Any) -> BaseTemplate:
        """Attach an arch (a TileDevice or anything `get_arch` accepts); returns self."""
        self._arch = get_arch(arch)
        return self

    def has_arch(self) -> bool:
        return getattr(self, "_arch", None) is not None

    @property
    def arch(self) -> TileDevice:
        if not self.has_arch():
            raise ValueError(f"{type(self).__name__} has no arch: call .with_arch(CUDA('sm_80')) (or similar) first")
        return self._arch

    def recommend_hints(self, topk: int = 10) -> list[Hint]:
        """Up to `topk` hints for the attached arch, best first."""
        if isinstance(topk, bool) or not isinstance(topk, int) or topk <= 0:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        return self.get_hardware_aware_configs(self.arch, topk)

    def get_hardware_aware_configs(self, arch: TileDevice, topk: int = 10) -> list[Hint]:
        raise NotImplementedError

    def equivalent_function(self) -> Any:
        """Upstream returns the TIR of the compute; this carver works from sizes only."""
        raise NotImplementedError(f"{type(self).__name__} does not build an IR function; use recommend_hints()")
