"""`T.alloc_reducer` handles: `reducer_init` (every element gets the identity
of the reducer's op: sum / max / min / bitand / bitor / bitxor),
`reducer_update(acc[idx], v)` (`acc[idx] = acc[idx] (op) v`) and
`finalize_reducer(acc, dst)` (dst receives the reduction result).

On a GPU the handle is replicated across threads and finalize combines the
replicas; with one thread per block (the "c" lowering) the accumulated array
already is the result, so finalize is a copy (nothing when dst is acc).
"""

from __future__ import annotations

from ..ir.stmt import FinalizeReducer, ReducerInit, ReducerUpdate, Stmt, seq
from .base import LowerContext, combine, dispatch, identity, load, loop_nest, nonunit_dims, region_indices, store
from .copy import lower_c as copy_c


def _init_c(op: ReducerInit, lctx: LowerContext) -> Stmt:
    buf = op.reducer
    region = buf.full_region()
    dims = nonunit_dims(region)
    value = identity(lctx.reducer_op(buf), buf.dtype)
    return loop_nest(
        [region.region[d].extent for d in dims], lambda iv: store(buf, region_indices(region, dims, iv), value)
    )


def _update_c(op: ReducerUpdate, lctx: LowerContext) -> Stmt:
    buf = op.reducer
    return store(buf, op.indices, combine(lctx.reducer_op(buf), load(buf, op.indices), op.value))


def _finalize_c(op: FinalizeReducer, lctx: LowerContext) -> Stmt:
    if op.dst is op.reducer:
        return seq()
    from ..ir.stmt import Copy

    return copy_c(Copy(op.reducer.full_region(), op.dst.full_region()), lctx)


RULES_INIT = {"c": _init_c}
RULES_UPDATE = {"c": _update_c}
RULES_FINALIZE = {"c": _finalize_c}


def lower(op, lctx: LowerContext) -> Stmt:
    if isinstance(op, ReducerInit):
        return dispatch(RULES_INIT, op, lctx)
    if isinstance(op, ReducerUpdate):
        return dispatch(RULES_UPDATE, op, lctx)
    return dispatch(RULES_FINALIZE, op, lctx)
