"""Integer helpers for the Python side of kernel factories (`tilelang.math`).

Both also exist at the top level (`tilelang.cdiv`, `tilelang.next_power_of_2`).
They work on plain Python ints — compile-time sizes such as `block_M` — not on
IR expressions; inside a kernel use `T.ceildiv`.
"""

from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2"]


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= `x`, for `x >= 1` (`1 << (x - 1).bit_length()`)."""
    return 1 << (x - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    """Ceiling division `ceil(a / b)` of integers (for b > 0)."""
    return (a + b - 1) // b
