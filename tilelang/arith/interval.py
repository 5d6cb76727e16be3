"""Integer interval arithmetic: the numeric core of `Analyzer.const_int_bound`.

An interval is a pair `(lo, hi)` of *inclusive* bounds. `lo` is a Python int
or `NEG_INF`; `hi` is an int or `POS_INF` (the markers are `math.inf`, so
ordinary comparisons with ints work). Every function here is sound: the
result contains every value the operation can produce for operands drawn
from the argument intervals. Integers are mathematical (no wrap-around);
callers that care about overflow intersect with `dtype_range`.
"""

from __future__ import annotations

import math

NEG_INF = -math.inf
POS_INF = math.inf
EVERYTHING = (NEG_INF, POS_INF)

Interval = tuple  # (lo, hi)


def dtype_range(dtype) -> Interval:
    """The values a scalar of `dtype` can hold; unbounded for non-integers."""
    kind = dtype.kind
    if kind == "int":
        half = 1 << (dtype.bits - 1)
        return (-half, half - 1)
    if kind == "uint":
        return (0, (1 << dtype.bits) - 1)
    if kind == "bool":
        return (0, 1)
    return EVERYTHING


def is_index_dtype(dtype) -> bool:
    """Scalar integer (signed or unsigned): the dtypes of index arithmetic."""
    return dtype.lanes == 1 and (dtype.kind == "int" or dtype.kind == "uint")


def is_inf(x) -> bool:
    return isinstance(x, float)


def _mul(x, y):
    """x * y where 0 * inf is 0 (a zero factor pins the product)."""
    if x == 0 or y == 0:
        return 0
    return x * y


def _floordiv(x, y):
    """floor(x / y) extended to infinite operands (y != 0)."""
    if is_inf(x):
        return x if y > 0 else -x
    if is_inf(y):
        return 0 if (x >= 0) == (y > 0) or x == 0 else -1
    return x // y


def _truncdiv(x, y):
    """x / y rounded toward zero, extended to infinite operands (y != 0)."""
    if is_inf(x):
        return x if y > 0 else -x
    if is_inf(y):
        return 0
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def add(a: Interval, b: Interval) -> Interval:
    return (a[0] + b[0], a[1] + b[1])


def sub(a: Interval, b: Interval) -> Interval:
    return (a[0] - b[1], a[1] - b[0])


def scale(a: Interval, k: int) -> Interval:
    if k > 0:
        return (_mul(a[0], k), _mul(a[1], k))
    if k < 0:
        return (_mul(a[1], k), _mul(a[0], k))
    return (0, 0)


def mul(a: Interval, b: Interval) -> Interval:
    c = (_mul(a[0], b[0]), _mul(a[0], b[1]), _mul(a[1], b[0]), _mul(a[1], b[1]))
    return (min(c), max(c))


def power(a: Interval, e: int) -> Interval:
    """`a ** e` (e >= 1): odd powers are monotone, even powers are >= 0."""
    if e == 1:
        return a
    lo, hi = a[0] ** e, a[1] ** e  # inf ** e stays infinite with the right sign
    if e % 2:
        return (lo, hi)
    if a[0] >= 0:
        return (lo, hi)
    if a[1] <= 0:
        return (hi, lo)
    return (0, max(lo, hi))


def _split_divisor(b: Interval) -> list[Interval]:
    """The nonzero parts of a divisor interval (division by zero is undefined)."""
    parts = []
    if b[0] < 0:
        parts.append((b[0], min(b[1], -1)))
    if b[1] > 0:
        parts.append((max(b[0], 1), b[1]))
    return parts


def _divide(a: Interval, b: Interval, fn) -> Interval:
    parts = _split_divisor(b)
    if not parts:
        return EVERYTHING
    lo, hi = POS_INF, NEG_INF
    for p in parts:
        # For a divisor of fixed sign, floor and trunc division are monotone in
        # each argument, so the extremes are at the corners.
        c = (fn(a[0], p[0]), fn(a[0], p[1]), fn(a[1], p[0]), fn(a[1], p[1]))
        lo, hi = min(lo, *c), max(hi, *c)
    return (lo, hi)


def floordiv(a: Interval, b: Interval) -> Interval:
    return _divide(a, b, _floordiv)


def truncdiv(a: Interval, b: Interval) -> Interval:
    return _divide(a, b, _truncdiv)


def floormod(a: Interval, b: Interval) -> Interval:
    if b[0] > 0:
        if b[0] == b[1] and not is_inf(a[0]) and not is_inf(a[1]):
            c = b[0]
            k = a[0] // c
            if a[1] < (k + 1) * c:  # a lies inside one period: no wrap-around
                return (a[0] - k * c, a[1] - k * c)
        hi = b[1] - 1
        if a[0] >= 0:
            hi = min(hi, a[1])
        return (0, hi)
    if b[1] < 0:
        return (b[0] + 1, 0)
    lo = b[0] + 1 if b[0] < 0 else 0
    hi = b[1] - 1 if b[1] > 0 else 0
    return (lo, hi)


def truncmod(a: Interval, b: Interval) -> Interval:
    m = max(abs(b[0]), abs(b[1])) - 1
    lo = 0 if a[0] >= 0 else max(a[0], -m)
    hi = 0 if a[1] <= 0 else min(a[1], m)
    return (lo, hi)


def minimum(a: Interval, b: Interval) -> Interval:
    return (min(a[0], b[0]), min(a[1], b[1]))


def maximum(a: Interval, b: Interval) -> Interval:
    return (max(a[0], b[0]), max(a[1], b[1]))


def union(a: Interval, b: Interval) -> Interval:
    return (min(a[0], b[0]), max(a[1], b[1]))


def intersect(a: Interval, b: Interval) -> Interval:
    """Intersection; if the intervals are disjoint (contradictory facts), keep `a`."""
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else a


def _bit_width_cap(hi) -> int | float:
    """Smallest 2^k - 1 >= hi (hi >= 0)."""
    if is_inf(hi):
        return POS_INF
    return (1 << int(hi).bit_length()) - 1


def bitand(a: Interval, b: Interval) -> Interval:
    if a[0] >= 0 and b[0] >= 0:
        return (0, min(a[1], b[1]))
    if a[0] >= 0:
        return (0, a[1])
    if b[0] >= 0:
        return (0, b[1])
    return EVERYTHING


def bitor_xor(a: Interval, b: Interval) -> Interval:
    if a[0] >= 0 and b[0] >= 0:
        return (0, _bit_width_cap(max(a[1], b[1])))
    return EVERYTHING


def shr(a: Interval, b: Interval) -> Interval:
    if b[0] < 0:
        return EVERYTHING
    if b[1] > 128:  # shifting by more than any width: only the sign survives
        lo = min(a[0], -1) if a[0] < 0 else 0
        return (lo, max(a[1], 0))
    return floordiv(a, (1 << b[0], 1 << b[1]))


def shl(a: Interval, b: Interval) -> Interval:
    if b[0] < 0 or b[1] > 128:
        return EVERYTHING
    return mul(a, (1 << b[0], 1 << b[1]))


def const_of(a: Interval) -> int | None:
    """The single value of a one-point interval, else None."""
    return a[0] if a[0] == a[1] and not is_inf(a[0]) else None
