"""Run-time scalar arguments: what a kernel's scalar parameter accepts, and its dtype's range.

Requires: the dtype of a scalar kernel parameter. Guarantees: `ScalarRule(dtype)` is built
once per parameter when a kernel is loaded; `rule.convert(value, name, kernel)` returns the
value the launchers store (a Python int, float or bool) or raises, naming the parameter:

- integer parameters take integers (Python ints, bools, numpy integers, anything with
  `__index__`) inside the dtype's range — a float is a `TypeError` (no silent truncation:
  3.7 is not 3), an integer outside the range an `OverflowError` (2**40 is not 0);
- float parameters take ints and floats (and numpy numbers) whose value, rounded to the dtype,
  is finite — a finite value that rounds to infinity (1e40 for float32) is an
  `OverflowError`; an explicit inf or nan passes as given;
- bool parameters take bools, numpy bools and the integers 0 and 1.

numpy scalars are recognised by duck typing (`type(x).__module__ == "numpy"` and `.item()`),
so the core never imports numpy. `rule.fast_check(var)` is a Python expression that is True
for the common exact types already in range; the generated call path (`fast_call.py`) uses
it and sends everything else — numpy scalars, bools, out-of-range values — through
`convert`, so the hot path costs one type test and one chained comparison.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ..errors import ArgumentError, ArgumentOverflowError
from ..ir.dtype import DataType

_FLT_MAX = 3.4028234663852886e38


def float_format(base: str) -> tuple[int, float] | None:
    """(mantissa bits, largest finite value) of float format `base`; None for float64."""
    if base in ("float32", "tfloat32"):
        return 23, _FLT_MAX
    from ..backend.c.floatfmt import FORMATS  # the small formats' one table (imported on demand)

    fmt = FORMATS.get(base)
    return None if fmt is None else (fmt[0], fmt[2])


def overflow_threshold(base: str) -> float:
    """The smallest magnitude that rounds past the largest finite value of float format `base`
    (round to nearest even: the largest value plus half an ulp at the top), inf for float64."""
    fmt = float_format(base) if base != "float64" else None
    if fmt is None:
        return math.inf
    mbits, fmax = fmt
    return fmax + math.ldexp(1.0, math.frexp(fmax)[1] - 1 - mbits - 1)


def _unwrap_numpy(value: Any) -> Any:
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


class ScalarRule:
    """How a scalar parameter of `dtype` takes its argument (see the module docstring)."""

    __slots__ = ("dtype", "kind", "lo", "hi", "limit")

    def __init__(self, dtype: Any) -> None:
        dt = DataType(dtype)
        self.dtype = dt
        self.lo = self.hi = 0
        self.limit = math.inf
        if dt.is_bool:
            self.kind = "bool"
        elif dt.is_int:
            self.kind = "int"
            self.lo, self.hi = -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
        elif dt.is_uint:
            self.kind = "int"
            self.lo, self.hi = 0, (1 << dt.bits) - 1
        elif dt.is_float:
            self.kind = "float"
            self.limit = overflow_threshold(dt.base)
        else:  # handles and other kinds: passed as given (the launchers decide)
            self.kind = "other"

    def fast_check(self, var: str) -> str:
        """A Python expression over the local `var`: True when the value needs no conversion."""
        if self.kind == "int":
            return f"(type({var}) is int and {self.lo} <= {var} <= {self.hi})"
        if self.kind == "float":
            if self.limit == math.inf:
                return f"(type({var}) is float or (type({var}) is int and -{1 << 53} <= {var} <= {1 << 53}))"
            lim = repr(self.limit)
            return f"((type({var}) is float or type({var}) is int) and -{lim} < {var} < {lim})"
        if self.kind == "bool":
            return f"(type({var}) is bool)"
        return f"isinstance({var}, scalar_types)"

    def convert(self, value: Any, name: str, kernel: str) -> Any:
        """`value` as the launchers store it, or the error naming parameter `name`."""
        v = _unwrap_numpy(value)
        what = f"argument `{name}` of kernel `{kernel}` ({self.dtype})"
        if type(v).__name__ in ("Tensor", "Parameter") or not isinstance(v, (int, float)):
            raise ArgumentError(f"{what} must be a Python scalar, got {type(value).__name__}")
        if self.kind == "int":
            if isinstance(v, float):
                raise ArgumentError(
                    f"{what} must be an integer, got the float {v!r} — pass int(...) if truncation is meant"
                )
            v = operator.index(v)
            if not self.lo <= v <= self.hi:
                raise ArgumentOverflowError(f"{what}: {v} does not fit in {self.dtype} (range {self.lo} to {self.hi})")
            return v
        if self.kind == "float":
            try:
                f = float(v)
            except OverflowError:
                raise ArgumentOverflowError(f"{what}: {v} is too large for a float") from None
            if math.isfinite(f) and abs(f) >= self.limit:
                raise ArgumentOverflowError(
                    f"{what}: {v!r} overflows {self.dtype} (largest finite value {float_format(self.dtype.base)[1]!r})"
                )
            return f
        if self.kind == "bool":
            if isinstance(v, float) or v not in (0, 1):
                raise ArgumentError(f"{what} must be a bool, got {v!r}")
            return bool(v)
        return v
