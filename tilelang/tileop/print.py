"""Debug ops: `T.print(obj, msg)` and `T.device_assert(cond, msg)`.

`T.print` prints a scalar expression, every element of a buffer (with its
index), or just the message, once per block. `T.device_assert` stops the
block when `cond` is false and makes the launch fail with `msg` (and where
it was written).

Reference ("c") lowering: intrinsic calls the C code generator turns into
`printf` / error reporting:
- `tl.print(prefix[, i0, i1, ..., value])`
- `if not cond: tl.assert_fail(message)`
"""

from __future__ import annotations

from ..ir.buffer import Buffer
from ..ir.dtype import int32
from ..ir.expr import Call, IntImm, StringImm, logical_not
from ..ir.stmt import DeviceAssert, Evaluate, IfThenElse, Print, Stmt
from .base import LowerContext, dispatch, load, loop_nest


def _print_c(op: Print, lctx: LowerContext) -> Stmt:
    msg = op.msg
    if op.obj is None:
        return Evaluate(Call("tl.print", (StringImm(msg),), int32))
    if isinstance(op.obj, Buffer):
        buf = op.obj
        prefix = StringImm(f"{msg}{': ' if msg else ''}{buf.name}")

        def body(iv):
            return Evaluate(Call("tl.print", (prefix, *iv, load(buf, tuple(iv))), int32))

        if buf.scope == "local.var":
            return Evaluate(Call("tl.print", (prefix, load(buf, (IntImm(0),))), int32))
        return loop_nest(list(buf.shape), body, "serial")
    return Evaluate(Call("tl.print", (StringImm(msg), op.obj), int32))


def _assert_c(op: DeviceAssert, lctx: LowerContext) -> Stmt:
    where = f"{op.span.file}:{op.span.line}" if op.span.line else "<unknown>"
    text = f"{where}: device_assert failed" + (f": {op.msg}" if op.msg else "")
    return IfThenElse(logical_not(op.cond), Evaluate(Call("tl.assert_fail", (StringImm(text),), int32)))


RULES_PRINT = {"c": _print_c}
RULES_ASSERT = {"c": _assert_c}


def lower(op, lctx: LowerContext) -> Stmt:
    if isinstance(op, Print):
        return dispatch(RULES_PRINT, op, lctx)
    return dispatch(RULES_ASSERT, op, lctx)
