"""`T.fill(dst, value)` / `T.clear(dst)`: every element of the region gets
`cast(value, dst.dtype)`.

Reference ("c") lowering: a parallel loop nest over the region's non-unit
dims, bounds-versioned like `T.copy` when the region is global.
"""

from __future__ import annotations

from ..ir.stmt import Fill, Stmt
from .base import LowerContext, dispatch, loop_nest, nonunit_dims, region_indices, store
from .copy import bounds_versioned


def lower_c(op: Fill, lctx: LowerContext) -> Stmt:
    dst = op.dst
    dims = nonunit_dims(dst)
    ext = [dst.region[d].extent for d in dims]

    def make(ann):
        return loop_nest(
            ext, lambda iv: store(dst.buffer, region_indices(dst, dims, iv), op.value), "parallel", annotations=ann
        )

    if not ext:
        return make(None)
    return bounds_versioned(make, [dst])


RULES = {"c": lower_c}


def lower(op: Fill, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
