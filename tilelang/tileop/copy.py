"""`T.copy(src, dst)`: element-wise `dst = cast(src)` over two regions whose
extents agree once unit dimensions are dropped.

Reference ("c") lowering: one parallel loop per non-unit dimension. When a
region lies in global memory the nest is versioned: a run-time test that the
whole region is inside the tensor selects an unguarded copy (annotated
`tl.in_bounds`), otherwise the same nest runs and `legalize_memory_access`
guards each element (out-of-bounds reads give 0, writes are dropped).
"""

from __future__ import annotations

from ..errors import VerifyError
from ..ir.buffer import BufferRegion
from ..ir.expr import cast, logical_and
from ..ir.stmt import Copy, IfThenElse, Stmt
from .base import (
    IN_BOUNDS,
    LowerContext,
    dispatch,
    load,
    loop_nest,
    nonunit_dims,
    pick_extent,
    region_in_bounds,
    region_indices,
    store,
)


def matched_dims(a: BufferRegion, b: BufferRegion, span, what: str = "T.copy") -> tuple[list, list, list]:
    """Pair the non-unit dims of two regions: (dims of a, dims of b, extents)."""
    da, db = nonunit_dims(a), nonunit_dims(b)
    if len(da) != len(db):
        raise VerifyError(
            f"{what}: regions {a!r} and {b!r} have different shapes once unit dimensions are dropped",
            span,
            "copy between regions of the same shape",
        )
    ext = [pick_extent(a.region[x].extent, b.region[y].extent) for x, y in zip(da, db)]
    return da, db, ext


def bounds_versioned(make_nest, regions: list[BufferRegion]) -> Stmt:
    """`make_nest(annotations)` guarded by a whole-region bounds test of the
    global `regions`: the in-bounds version is marked so that
    legalize_memory_access leaves it unguarded."""
    conds = [c for r in regions if r.buffer.scope == "global" for c in [region_in_bounds(r)] if c is not None]
    has_global = any(r.buffer.scope == "global" for r in regions)
    if not has_global:
        return make_nest(None)
    if not conds:
        return make_nest({IN_BOUNDS: True})
    cond = conds[0]
    for c in conds[1:]:
        cond = logical_and(cond, c)
    return IfThenElse(cond, make_nest({IN_BOUNDS: True}), make_nest(None))


def lower_c(op: Copy, lctx: LowerContext) -> Stmt:
    src, dst = op.src, op.dst
    sd, dd, ext = matched_dims(src, dst, op.span)

    def make(ann):
        def body(iv):
            v = load(src.buffer, region_indices(src, sd, iv))
            return store(dst.buffer, region_indices(dst, dd, iv), cast(v, dst.buffer.dtype))

        return loop_nest(ext, body, "parallel", annotations=ann)

    if not ext:  # a single element: legalize_memory_access guards it if needed
        return make(None)
    return bounds_versioned(make, [src, dst])


RULES = {"c": lower_c}


def lower(op: Copy, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
