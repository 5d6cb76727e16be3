"""`T.cumsum(src, dst, dim, reverse)`: inclusive scan along `dim` (from the end
when `reverse`); `dst` may be `src` itself. The running value is kept in
dst's dtype.

Reference ("c") lowering: a parallel nest over the other dims, each a serial
scan with a scalar accumulator (each element is read before it is written,
so the in-place form is exact).
"""

from __future__ import annotations

from ..errors import VerifyError
from ..ir.expr import IntImm, Var, binary
from ..ir.stmt import CumSum, For, Stmt, seq
from .base import (
    LowerContext,
    combine,
    dispatch,
    identity,
    load,
    loop_nest,
    nonunit_dims,
    region_indices,
    scalar_var,
    store,
)
from .copy import matched_dims


def lower_c(op: CumSum, lctx: LowerContext) -> Stmt:
    src, dst = op.src, op.dst
    sd, dd, ext = matched_dims(src, dst, op.span, "T.cumsum")
    nd = len(src.region)
    dim = op.dim + nd if op.dim < 0 else op.dim
    if dim not in nonunit_dims(src):
        # scanning a dimension of extent 1 is a copy
        from ..ir.stmt import Copy
        from .copy import lower_c as copy_c

        return copy_c(Copy(src, dst), lctx)
    p = sd.index(dim)
    outer = [k for k in range(len(sd)) if k != p]
    kind = {"sum": "sum", "add": "sum", "max": "max", "min": "min"}.get(op.op)
    if kind is None:
        raise VerifyError(f"T.cumsum: unknown scan operator {op.op!r}", op.span, "use sum, max or min")
    dt = dst.buffer.dtype
    n = ext[p]

    def body(iv):
        acc, alloc = scalar_var("acc", dt, identity(kind, dt))
        r = Var("r", n.dtype if n.dtype.is_integer else "int32")
        rr = binary("sub", binary("sub", n, 1), r) if op.reverse else r
        full = [None] * len(sd)
        for k, v in zip(outer, iv):
            full[k] = v
        full[p] = rr
        zero = (IntImm(0),)
        upd = store(acc, zero, combine(kind, load(acc, zero), load(src.buffer, region_indices(src, sd, full))))
        out = store(dst.buffer, region_indices(dst, dd, full), load(acc, zero))
        return seq(alloc, For(r, IntImm(0, r.dtype), n, "serial", seq(upd, out)))

    return loop_nest([ext[k] for k in outer], body, "parallel")


RULES = {"c": lower_c}


def lower(op: CumSum, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
