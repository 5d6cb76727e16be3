"""Tile-op operands as regions, and the rule for pairing two regions' extents.

`to_region` turns a buffer, a slice of one, or a head address `A[i, j]` into a
`BufferRegion`. Slice extents are written `stop - start` by the user
(`A[bx * blk:(bx + 1) * blk, :]`), so they go through the arithmetic
simplifier here: with `blk = 1` that extent is `1`, a unit dimension, and the
checks below (and every pass after them) see it as one.

Two regions pair up as the public API does: unit dimensions are dropped from
both, and what is left must pair one to one, in order (`A[bx, 0:N]`, a 1×N
region, copies into a fragment of shape `(N,)`; `(1, N)` into `(N,)`). A head
address takes the other side's extents, right-aligned, leading unit extents
dropped to fit its rank. Only a provable mismatch is an error: two extents
that the simplifier cannot tell apart (a dynamic `n` against `128`) pair, and
the lowering guards the accesses.
"""

from __future__ import annotations

from typing import Any

from ..arith import Analyzer
from ..errors import DSLError
from ..ir.buffer import Buffer, BufferRegion, Range
from ..ir.expr import BufferLoad, IntImm, as_expr, const_int
from ..tileop.base import extent_mismatch


def fmt_extents(ext: tuple | list) -> str:
    return "[" + ", ".join(str(e) for e in ext) + "]"


def simplify_region(r: BufferRegion, an: Analyzer | None = None) -> BufferRegion:
    """`r` with every non-constant extent in canonical form (`r` itself when none changes)."""
    if all(type(x.extent) is IntImm for x in r.region):
        return r
    an = an or Analyzer()
    ranges, changed = [], False
    for x in r.region:
        e = x.extent if type(x.extent) is IntImm else an.simplify(x.extent)
        changed |= e is not x.extent
        ranges.append(x if e is x.extent else Range(x.begin, e, x.span))
    return BufferRegion(r.buffer, tuple(ranges), r.span) if changed else r


def to_region(x: Any, what: str, other_extents: tuple | None = None) -> BufferRegion:
    """Buffer → whole region; region → itself (extents simplified); `A[i, j]` → a
    region starting there whose extents come from the other operand (`other_extents`)."""
    if isinstance(x, Buffer):
        return x.full_region()
    if isinstance(x, BufferRegion):
        return simplify_region(x)
    if isinstance(x, BufferLoad):
        if other_extents is None:
            return BufferRegion(x.buffer, tuple(Range(i, IntImm(1)) for i in x.indices))
        nd = len(x.indices)
        ext = list(other_extents)
        while len(ext) > nd and const_int(ext[0]) == 1:
            ext.pop(0)
        if len(ext) > nd:
            raise DSLError(
                f"{what}: the region {fmt_extents(tuple(other_extents))} does not fit in the {nd}-D buffer "
                f"`{x.buffer.name}`",
                None,
                "index the smaller side with explicit slices",
            )
        ext = [IntImm(1)] * (nd - len(ext)) + ext
        return BufferRegion(x.buffer, tuple(Range(i, as_expr(e)) for i, e in zip(x.indices, ext)))
    raise DSLError(
        f"{what}: expected a buffer, a slice of one, or `A[i, j]`, got {type(x).__name__}",
        None,
        "pass a T.alloc_* buffer, a tensor parameter, or a region like A[i:i+n, :]",
    )


def check_same_extents(what: str, a: BufferRegion, b: BufferRegion) -> None:
    """Raise unless `a` and `b` pair up once unit dimensions are dropped (the rule:
    `tileop.base.extent_mismatch`)."""
    bad = extent_mismatch(a.extents, b.extents)
    if bad is not None:
        raise DSLError(
            f"{what}: source extents {fmt_extents(a.extents)} and destination extents "
            f"{fmt_extents(b.extents)} do not match ({bad})",
            None,
            "copy between regions of the same shape; unit dimensions are ignored, so "
            "`A[bx, 0:N]` pairs with a buffer of shape (N,) or (1, N)",
        )
