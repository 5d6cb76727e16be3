"""A pure-Python Philox4x32-10 and the draws T.rng_rand / T.rng_rand_float make (the
reference the C and CUDA headers must match bit for bit).

Written from the published algorithm (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC'11) and the stream layout of tilelang/language/random.py; every float step is
one IEEE-754 operation, in the order the headers perform them."""

from __future__ import annotations

import math
import struct

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox4x32_10(ctr: tuple, key: tuple) -> tuple:
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return c0, c1, c2, c3


def u32(seed: int, seq: int, pos: int) -> int:
    blk = pos >> 2
    out = philox4x32_10((blk & MASK, blk >> 32 & MASK, seq & MASK, seq >> 32 & MASK), (seed & MASK, seed >> 32 & MASK))
    return out[pos & 3]


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def unit_f32(x: int) -> float:
    return f32(f32(float(x)) * 2.0**-32 + 2.0**-33)  # the product is exact


def unit_f64(x: int, y: int) -> float:
    z = x ^ (y << 21)
    return float(z) * 2.0**-53 + 2.0**-54


def _log(u: float) -> float:
    b = struct.unpack("<Q", struct.pack("<d", u))[0]
    e = ((b >> 52) & 0x7FF) - 1023
    m = struct.unpack("<d", struct.pack("<Q", (b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000))[0]
    if m > 1.4142135623730951:
        m = m * 0.5
        e += 1
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = 1.0 / 27.0
    for k in range(25, 0, -2):
        p = p * s2 + 1.0 / k
    return e * 0.6931471805599453 + (2.0 * s) * p


def _cos2pi(v: float) -> float:
    t = v * 4.0
    q = math.floor(t)
    r = t - q
    quad = int(q) & 3
    swap = r > 0.5
    if swap:
        r = 1.0 - r
    x = r * 1.5707963267948966
    x2 = x * x
    c = s = 1.0
    for k in range(20, 1, -2):
        c = 1.0 - (c * x2) / float(k * (k - 1))
    for k in range(21, 2, -2):
        s = 1.0 - (s * x2) / float(k * (k - 1))
    s = s * x
    cr, sr = (s, c) if swap else (c, s)
    return (cr, -sr, -cr, sr)[quad]


def _box_muller(u1: float, u2: float) -> float:
    return math.sqrt(-2.0 * _log(u1)) * _cos2pi(u2)


def draw(kind: str, seed: int, seq: int, pos: int) -> float | int:
    """One draw of `kind` (u32 / uniform_f32 / uniform_f64 / normal_f32 / normal_f64) at `pos`."""
    if kind == "u32":
        return u32(seed, seq, pos)
    if kind == "uniform_f32":
        return unit_f32(u32(seed, seq, pos))
    if kind == "uniform_f64":
        return unit_f64(u32(seed, seq, pos), u32(seed, seq, pos + 1))
    if kind == "normal_f32":
        return f32(_box_muller(unit_f32(u32(seed, seq, pos)), unit_f32(u32(seed, seq, pos + 1))))
    if kind == "normal_f64":
        u1 = unit_f64(u32(seed, seq, pos), u32(seed, seq, pos + 1))
        return _box_muller(u1, unit_f64(u32(seed, seq, pos + 2), u32(seed, seq, pos + 3)))
    raise ValueError(kind)


# positions one draw of each kind consumes
WIDTH = {"u32": 1, "uniform_f32": 1, "uniform_f64": 2, "normal_f32": 2, "normal_f64": 4}
