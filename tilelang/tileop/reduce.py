"""`T.reduce_<kind>(src, dst, dim, clear, nan_propagate)` with kind in
sum / max / min / absmax / abssum / bitand / bitor / bitxor.

`dst` has src's shape without `dim` (or with `dim` set to 1). With
`clear=True` the result is the reduction of src along `dim`; with
`clear=False` dst's old value takes part too. The accumulation happens in
dst's dtype. Float max/min ignore NaN inputs unless `nan_propagate`.

Reference ("c") lowering: a parallel nest over the output elements, each a
serial loop over `dim` into a scalar accumulator.
"""

from __future__ import annotations

from ..errors import VerifyError
from ..ir.expr import IntImm, Var, const_int
from ..ir.stmt import For, Reduce, Stmt, seq
from .base import (
    LowerContext,
    combine,
    dispatch,
    identity,
    load,
    loop_nest,
    nonunit_dims,
    pick_extent,
    scalar_var,
    store,
)

KINDS = ("sum", "max", "min", "absmax", "abssum", "bitand", "bitor", "bitxor")


def output_dims(op: Reduce) -> list[tuple[int, int]]:
    """Pairs (src dim, dst dim) of the non-unit dims that survive the reduction.

    dst's non-unit dims must be src's non-unit dims other than `dim`, in order
    (so both "drop dim" and "keep dim as 1" shapes, and regions with extra unit
    dims, are accepted)."""
    nd = len(op.src.region)
    dim = op.dim + nd if op.dim < 0 else op.dim
    kept = [d for d in nonunit_dims(op.src) if d != dim]
    dd = nonunit_dims(op.dst)
    if len(kept) != len(dd):
        raise VerifyError(
            f"T.reduce_{op.kind}: output `{op.dst.buffer.name}` region {op.dst!r} does not match "
            f"the input {op.src!r} reduced along dim {dim}",
            op.span,
            f"the output is the input's shape without dim {dim}, or with it set to 1",
        )
    return list(zip(kept, dd))


def lower_c(op: Reduce, lctx: LowerContext) -> Stmt:
    src, dst = op.src, op.dst
    nd = len(src.region)
    dim = op.dim + nd if op.dim < 0 else op.dim
    loops = output_dims(op)
    ext = [pick_extent(src.region[s].extent, dst.region[d].extent) for s, d in loops]
    dt = dst.buffer.dtype

    def body(iv):
        didx = list(dst.begins)
        sidx = list(src.begins)
        for (s, d), v in zip(loops, iv):
            didx[d] = didx[d] + v if const_int(didx[d]) != 0 else v
            sidx[s] = sidx[s] + v if const_int(sidx[s]) != 0 else v
        init = identity(op.kind, dt) if op.clear else load(dst.buffer, tuple(didx))
        acc, alloc = scalar_var("acc", dt, init)
        red = src.region[dim].extent
        r = Var("r", red.dtype if red.dtype.is_integer else "int32")
        sidx[dim] = sidx[dim] + r if const_int(sidx[dim]) != 0 else r
        zero = (IntImm(0),)
        upd = store(acc, zero, combine(op.kind, load(acc, zero), load(src.buffer, tuple(sidx)), op.nan_propagate))
        loop = For(r, IntImm(0, r.dtype), red, "serial", upd)
        return seq(alloc, loop, store(dst.buffer, tuple(didx), load(acc, zero)))

    return loop_nest(ext, body, "parallel")


RULES = {"c": lower_c}


def lower(op: Reduce, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
