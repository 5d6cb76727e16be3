"""Small floating-point formats in pure Python: rounding a Python float to the
value set of float16 / bfloat16 / float8_e4m3fn / float8_e5m2 (round to
nearest even, directly from the double, like `tl_cpu.h`) and encoding it to
storage bits. The code generator uses these for constants; tests use them as
an independent reference.
"""

from __future__ import annotations

import math
import struct

# base dtype -> (mantissa bits, exponent bias, largest finite value, saturating, has inf)
FORMATS = {
    "float16": (10, 15, 65504.0, False, True),
    "bfloat16": (7, 127, 3.3895313892515355e38, False, True),
    "float8_e4m3fn": (3, 7, 448.0, True, False),
    "float8_e5m2": (2, 15, 57344.0, False, True),
    "float4_e2m1fn": (1, 1, 6.0, True, False),  # NaN saturates to +6 (CUDA's __nv_cvt_float_to_fp4)
}


def round_to(value: float, base: str) -> float:
    """`value` rounded to the format `base` (returned as a Python float)."""
    if base == "float32":
        try:
            return struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if base == "float64" or base not in FORMATS:
        return float(value)
    mbits, bias, fmax, sat, _ = FORMATS[base]
    if math.isnan(value):
        return fmax if base == "float4_e2m1fn" else value
    if math.isinf(value):
        return math.copysign(fmax, value) if sat else value
    if value == 0.0:
        return value
    a = abs(value)
    e = max(math.frexp(a)[1] - 1, 1 - bias)  # exponent of the leading bit, clamped at the subnormal range
    q = a / math.ldexp(1.0, e - mbits)  # exact: a power-of-two scale
    r = math.ldexp(float(round(q)), e - mbits)  # round() on floats is ties-to-even
    if r > fmax:
        r = fmax if sat else math.inf
    return math.copysign(r, value)


def encode(value: float, base: str) -> int:
    """Storage bits of `value` (already rounded or not) in format `base`."""
    if base == "float32":
        return struct.unpack("<I", struct.pack("<f", round_to(value, base)))[0]
    if base == "float64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    mbits, bias, fmax, sat, has_inf = FORMATS[base]
    ebits = {"float16": 5, "bfloat16": 8, "float8_e4m3fn": 4, "float8_e5m2": 5, "float4_e2m1fn": 2}[base]
    width = 1 + ebits + mbits
    sign = (1 << (width - 1)) if math.copysign(1.0, value) < 0 else 0
    if math.isnan(value) and base == "float4_e2m1fn":
        return 0x7  # no NaN: +6
    if math.isnan(value):
        nan = (1 << (width - 1)) - 1 if not has_inf else ((1 << ebits) - 1) << mbits | (1 << (mbits - 1))
        if base == "float8_e5m2":
            nan = 0x7F
        return sign | nan
    v = abs(round_to(value, base))
    if math.isinf(v):
        return sign | (((1 << ebits) - 1) << mbits)
    if v == 0.0:
        return sign
    e = math.frexp(v)[1] - 1
    if e < 1 - bias:  # subnormal
        return sign | int(v / math.ldexp(1.0, 1 - bias - mbits))
    m = int((v / math.ldexp(1.0, e) - 1.0) * (1 << mbits))
    return sign | ((e + bias) << mbits) | m


def c_float_literal(value: float, base: str) -> str:
    """A C expression of type float (double for float64) with exactly `value`
    rounded to `base`."""
    v = round_to(value, base)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    s = repr(v)
    if "e" not in s and "." not in s and "n" not in s:
        s += ".0"
    if base == "float64":
        return s if v >= 0 else f"({s})"
    return f"{s}f" if v >= 0 else f"({s}f)"
