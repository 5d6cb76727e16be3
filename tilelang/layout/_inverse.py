"""Symbolic inversion of bijective index maps.

`invert(in_vars, in_extents, exprs, out_extents)` returns fresh output vars and,
for every input var, an expression of those output vars. Two strategies cover
every layout this package builds, and most that users write:

1. **Mixed radix.** If every output expression is a digit form (sum of
   `coef * ((v // s) % e)`, see `_expr.py`) whose coefficients form a mixed
   radix for that output, and the fields of every input var tile its digits
   exactly, the map is a digit permutation: read each field back from its
   output with `(o // coef) % extent` and reassemble the input. Works for any
   extents (not only powers of two).
2. **Linear over GF(2).** If all extents are powers of two and the map is
   XOR-linear on bits (swizzles, mma fragments), invert the bit matrix by
   Gauss-Jordan elimination and print each input bit-field as an XOR of
   output bit-fields.

Anything else raises `ValueError` naming the reason.
"""

from __future__ import annotations

import itertools

from ..ir.expr import IntImm, PrimExpr, Var, binary
from ._expr import compile_map, field_expr, normalize, parse_digits, simplify


def invert(
    in_vars: tuple, in_extents: tuple, exprs: tuple, out_extents: tuple, out_names: tuple
) -> tuple[tuple, tuple]:
    """Inverse of the bijection `in_vars -> exprs` as (out_vars, exprs over out_vars)."""
    n_in = _prod(in_extents)
    n_out = _prod(out_extents)
    if n_in != n_out:
        raise ValueError(
            f"the map is not a bijection: {n_in} inputs {list(in_extents)} but {n_out} outputs "
            f"{list(out_extents)} (padding or replication has no inverse)"
        )
    out_vars = tuple(Var(n) for n in out_names)
    res = _invert_radix(in_vars, in_extents, exprs, out_vars, out_extents)
    if res is None:
        res = _invert_gf2(in_vars, in_extents, exprs, out_vars, out_extents)
    if res is None:
        raise ValueError(
            "cannot invert this layout symbolically: it is neither a digit permutation "
            "(sums of (v // s) % e terms) nor XOR-linear on bits; check that it is a bijection"
        )
    ext = dict(zip(out_vars, out_extents))
    return out_vars, tuple(simplify(e, ext) for e in res)


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


# --------------------------------------------------------------------------
# Strategy 1: mixed radix digit permutation
# --------------------------------------------------------------------------


def _invert_radix(in_vars, in_extents, exprs, out_vars, out_extents):
    extents = dict(zip(in_vars, in_extents))
    per_var: dict[Var, list] = {v: [] for v in in_vars}
    for o, e, o_ext in zip(out_vars, exprs, out_extents):
        dg = parse_digits(e, extents, atoms=False)
        if dg is None or dg.const != 0:
            return None
        fields = sorted(normalize(dg).fields, key=lambda t: t.coef)
        radix = 1
        for t in fields:
            n = t.span
            if t.coef != radix or n is None:
                return None
            per_var[t.var].append((t.stride, n, o, t.coef, o_ext))
            radix *= n
        if radix != o_ext:
            return None
    out = []
    for v, ext in zip(in_vars, in_extents):
        parts = sorted(per_var[v], key=lambda p: p[0])
        stride = 1
        acc: PrimExpr | None = None
        for s, n, o, coef, o_ext in parts:
            if s != stride:
                return None
            term = field_expr(o, coef, n, o_ext)
            term = term if s == 1 else binary("mul", term, s)
            acc = term if acc is None else binary("add", acc, term)
            stride *= n
        if stride != ext:
            return None
        out.append(acc if acc is not None else IntImm(0))
    return tuple(out)


# --------------------------------------------------------------------------
# Strategy 2: linear over GF(2)
# --------------------------------------------------------------------------


def _log2(n: int) -> int | None:
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


def _invert_gf2(in_vars, in_extents, exprs, out_vars, out_extents, max_points: int = 1 << 20):
    in_bits = [_log2(e) for e in in_extents]
    out_bits = [_log2(e) for e in out_extents]
    if None in in_bits or None in out_bits or _prod(in_extents) > max_points:
        return None
    fn = compile_map(in_vars, exprs)
    # global bit numbering: var k's bit b -> offset[k] + b
    in_off = list(itertools.accumulate([0] + in_bits[:-1]))
    out_off = list(itertools.accumulate([0] + out_bits[:-1]))
    n = sum(in_bits)

    def pack_out(vals) -> int:
        x = 0
        for val, off, b in zip(vals, out_off, out_bits):
            if not 0 <= val < (1 << b):
                raise _NotLinear
            x |= val << off
        return x

    try:
        if pack_out(fn(*([0] * len(in_vars)))) != 0:
            return None
        cols = []  # image of each input bit
        for k, b in enumerate(in_bits):
            for bit in range(b):
                args = [0] * len(in_vars)
                args[k] = 1 << bit
                cols.append(pack_out(fn(*args)))
        for point in itertools.product(*(range(e) for e in in_extents)):
            x = 0
            gbits = 0
            for val, off in zip(point, in_off):
                gbits |= val << off
            j = 0
            while gbits:
                if gbits & 1:
                    x ^= cols[j]
                gbits >>= 1
                j += 1
            if pack_out(fn(*point)) != x:
                return None
    except _NotLinear:
        return None
    inv = _gf2_inverse(cols, n)
    if inv is None:
        return None
    # inv[j] = mask of output bits whose XOR is input bit j
    out_bit_of = [(d, b) for d, nb in enumerate(out_bits) for b in range(nb)]
    result = []
    for k, nb in enumerate(in_bits):
        sources = [frozenset(out_bit_of[p] for p in range(n) if inv[in_off[k] + b] >> p & 1) for b in range(nb)]
        result.append(_emit_bits(sources, out_vars, out_bits))
    return tuple(result)


class _NotLinear(Exception):
    pass


def _gf2_inverse(cols: list, n: int) -> list | None:
    """`cols[j]` is the image (bitmask of output bits) of input bit j. Returns,
    for each input bit j, the bitmask of output bits whose XOR equals it."""
    rows = [sum(1 << j for j in range(n) if cols[j] >> p & 1) for p in range(n)]
    return _invert_rows(rows, n)


def _invert_rows(rows: list, n: int) -> list | None:
    """Rows of an n x n GF(2) matrix A (row p = bitmask over columns j) -> rows of A^-1."""
    a = list(rows)
    inv = [1 << p for p in range(n)]
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r] >> col & 1), None)
        if piv is None:
            return None
        a[col], a[piv] = a[piv], a[col]
        inv[col], inv[piv] = inv[piv], inv[col]
        for r in range(n):
            if r != col and a[r] >> col & 1:
                a[r] ^= a[col]
                inv[r] ^= inv[col]
    # A x = y  (x = input bits, y = output bits)  =>  x = A^-1 y ; inv[j] = row j of A^-1 over y.
    return inv


def _emit_bits(sources: list, out_vars: tuple, out_bits: list) -> PrimExpr:
    """Sum over runs of input bits; each run is an XOR of shifted output bit-fields."""
    acc: PrimExpr | None = None
    j = 0
    while j < len(sources):
        src = sources[j]
        w = 1
        while j + w < len(sources) and sources[j + w] == frozenset((d, b + w) for d, b in src):
            if any(b + w >= out_bits[d] for d, b in src):
                break
            w += 1
        term: PrimExpr | None = None
        for d, b in sorted(src, key=lambda db: (-db[1], db[0])):
            f = field_expr(out_vars[d], 1 << b, 1 << w, 1 << out_bits[d])
            term = f if term is None else binary("bitxor", term, f)
        if term is not None:
            term = term if j == 0 else binary("mul", term, 1 << j)
            acc = term if acc is None else binary("add", acc, term)
        j += w
    return acc if acc is not None else IntImm(0)
