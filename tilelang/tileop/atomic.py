"""`T.atomic_add / atomic_max / atomic_min(dst, value)`: read-modify-write of
`dst` that is safe against other blocks doing the same. `dst` is one element
(scalar form, `value` a scalar expression) or a region (`value` a region of the
same extents, or a scalar applied to every element). `value` is converted to
dst's dtype and combined in that dtype (max/min ignore NaN like fmaxf).

Reference ("c") lowering: a loop nest of `tl.atomic_<kind>(address_of(dst[...]),
value)` intrinsic calls for global and shared memory (blocks run on several
CPU threads); a plain read-modify-write for per-block local buffers.
"""

from __future__ import annotations

from ..ir.buffer import BufferRegion
from ..ir.expr import Call, cast
from ..ir.stmt import Atomic, Evaluate, Stmt
from .base import (
    LowerContext,
    address_of,
    combine,
    dispatch,
    load,
    loop_nest,
    nonunit_dims,
    region_indices,
    store,
)
from .copy import bounds_versioned, matched_dims

KINDS = ("add", "max", "min")


def lower_c(op: Atomic, lctx: LowerContext) -> Stmt:
    dst = op.dst
    dt = dst.buffer.dtype
    if isinstance(op.value, BufferRegion):
        vd, dd, ext = matched_dims(op.value, dst, op.span, f"T.atomic_{op.kind}")

        def value(iv):
            return load(op.value.buffer, region_indices(op.value, vd, iv))

        regions = [op.value, dst]
    else:
        dd = nonunit_dims(dst)
        ext = [dst.region[d].extent for d in dd]

        def value(iv):
            return op.value

        regions = [dst]

    def body(iv):
        idx = region_indices(dst, dd, iv)
        v = value(iv)
        v = v if v.dtype is dt else cast(v, dt)
        if dst.buffer.scope == "global" or dst.buffer.is_shared:
            return Evaluate(Call(f"tl.atomic_{op.kind}", (address_of(dst.buffer, idx), v), dt))
        return store(dst.buffer, idx, combine(op.kind, load(dst.buffer, idx), v))

    def make(ann):
        return loop_nest(ext, body, "parallel", annotations=ann)

    if not ext:
        return make(None)
    return bounds_versioned(make, regions)


RULES = {"c": lower_c}


def lower(op: Atomic, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
