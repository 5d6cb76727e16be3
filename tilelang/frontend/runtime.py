"""The trace runtime: the `__tl__` namespace that rewritten kernel bodies call.

Requires: an active `Builder`. Guarantees: Python values keep Python
semantics (meta-programming), IR values produce IR statements in the
current frame; see ast_rewrite.py for which construct calls what.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import DSLError
from ..ir.buffer import Buffer
from ..ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    Var,
    as_expr,
    logical_and,
    logical_not,
    logical_or,
    select,
)
from ..ir.stmt import Break, Continue, DeviceAssert, IfThenElse, LetStmt
from ..ir.stmt import While as WhileStmt
from ..ir.visitor import collect
from .builder import Builder


def _b() -> Builder:
    return Builder.require("kernel control flow")


def is_ir(v: Any) -> bool:
    """True when `v` must be branched on in IR (not a Python/constant value)."""
    if isinstance(v, IntImm):
        return False
    if isinstance(v, PrimExpr):
        return True
    return isinstance(v, Buffer) and v.scope == "local.var"


def truth(v: Any) -> bool:
    if isinstance(v, IntImm):
        return bool(v.value)
    return bool(v)


# -- loops ---------------------------------------------------------------------


def iterate(it: Any, names: tuple) -> Iterator:
    if hasattr(it, "__tl_loop__"):
        return _ir_loop(it, names)
    return _py_loop(it)


def _ir_loop(spec: Any, names: tuple) -> Iterator:
    b = _b()
    b.loop_kinds.append("ir")
    try:
        yield from spec.__tl_loop__(b, names)
    finally:
        b.loop_kinds.pop()


def _py_loop(it: Any) -> Iterator:
    b = Builder.current()
    if b is None:
        yield from it
        return
    b.loop_kinds.append("py")
    try:
        yield from it
    finally:
        b.loop_kinds.pop()


@contextmanager
def py_loop():
    b = _b()
    b.loop_kinds.append("py")
    try:
        yield
    finally:
        b.loop_kinds.pop()


def range_(*args: Any, **kw: Any) -> Any:
    """`range()` in a kernel: Python range on ints, T.serial on IR values."""
    if all(isinstance(a, int) for a in args) and not kw:
        return range(*args)
    from ..language.loops import serial

    return serial(*args, **kw)


def _loop_ctl(stmt_cls: type) -> bool:
    b = _b()
    if not b.loop_kinds or b.loop_kinds[-1] == "py":
        return True  # Python break/continue
    b.emit(stmt_cls())
    return False


def brk() -> bool:
    return _loop_ctl(Break)


def cont() -> bool:
    return _loop_ctl(Continue)


@contextmanager
def While(cond: Any):  # noqa: N802 - mirrors the statement it emits
    b = _b()
    b.require_kernel("a `while` loop on an IR condition")
    b.push("while")
    b.loop_kinds.append("ir")
    try:
        yield
    finally:
        b.loop_kinds.pop()
        fr = b.pop("while")
    b.emit(WhileStmt(_as_cond(cond), fr.body()))


# -- branches -------------------------------------------------------------------


def _as_cond(c: Any) -> PrimExpr:
    c = as_expr(c)
    if not c.dtype.is_bool:
        c = c != 0
    return c


@contextmanager
def If(cond: Any):  # noqa: N802
    b = _b()
    b.push("if")
    try:
        yield
    finally:
        fr = b.pop("if")
    b.emit(IfThenElse(_as_cond(cond), fr.body(), None))


@contextmanager
def Else():  # noqa: N802
    b = _b()
    prev = b.attach_else()
    b.push("else")
    try:
        yield
    finally:
        fr = b.pop("else")
    b.emit(IfThenElse(prev.cond, prev.then_body, fr.body(), prev.span))


def ifexp(cond: Any, then: Any, other: Any) -> Any:
    if is_ir(cond):
        return select(_as_cond(cond), then(), other())
    return then() if truth(cond) else other()


def and_(a: Any, rest: Any) -> Any:
    if is_ir(a):
        return logical_and(_as_cond(a), _as_cond(rest()))
    if not truth(a):
        return a
    return rest()


def or_(a: Any, rest: Any) -> Any:
    if is_ir(a):
        return logical_or(_as_cond(a), _as_cond(rest()))
    if truth(a):
        return a
    return rest()


def _var_value(v: Any) -> Any:
    return v.__tl_expr__() if isinstance(v, Buffer) and v.scope == "local.var" else v


def eq(a: Any, b: Any) -> Any:
    """`a == b` in a kernel (see ast_rewrite._equality)."""
    return _var_value(a) == _var_value(b)


def ne(a: Any, b: Any) -> Any:
    """`a != b` in a kernel (see ast_rewrite._equality)."""
    return _var_value(a) != _var_value(b)


def not_(a: Any) -> Any:
    if is_ir(a):
        return logical_not(_as_cond(a))
    return not truth(a)


def expr_stmt(value: Any) -> None:
    """A bare call statement: an extern call runs even though its value is dropped."""
    if isinstance(value, Call):
        from ..language.extern import as_statement

        as_statement(value)


def assert_(cond: Any, msg: Any = "") -> None:
    if is_ir(cond):
        b = _b()
        b.require_kernel("an assert on an IR value")
        b.emit(DeviceAssert(_as_cond(cond), str(msg)))
        return
    if not truth(cond):
        raise DSLError(f"assertion failed: {msg}" if msg else "assertion failed", _b().span_here())


# -- assignment -----------------------------------------------------------------


def _has_load(e: PrimExpr) -> bool:
    return bool(collect(e, lambda n: isinstance(n, BufferLoad)))


def assign(name: str, value: Any, prev: Any) -> Any:
    b = Builder.current()
    if b is None:
        return value
    if isinstance(prev, Buffer) and prev.scope == "local.var" and prev is not value and not isinstance(value, Buffer):
        b.require_kernel(f"assigning to `{name}`")
        prev[0] = value
        return prev
    if isinstance(value, Buffer):
        if id(value) in b.unnamed:
            b.unnamed.discard(id(value))
            object.__setattr__(value, "name", b.fresh_name(name))  # construction-time naming
        return value
    if isinstance(value, PrimExpr) and b.in_kernel() and not isinstance(value, (Var, IntImm)) and _has_load(value):
        # A value that reads memory is bound once, so later stores cannot change it.
        var = Var(b.fresh_name(name), value.dtype)
        b.emit(LetStmt(var, value))
        return var
    return value


_AUG = {
    "Add": operator.add,
    "Sub": operator.sub,
    "Mult": operator.mul,
    "Div": operator.truediv,
    "FloorDiv": operator.floordiv,
    "Mod": operator.mod,
    "Pow": operator.pow,
    "BitAnd": operator.and_,
    "BitOr": operator.or_,
    "BitXor": operator.xor,
    "LShift": operator.lshift,
    "RShift": operator.rshift,
    "MatMult": operator.matmul,
}


def aug_assign(name: str, op: str, prev: Any, value: Any) -> Any:
    fn = _AUG[op]
    if isinstance(prev, Buffer) and prev.scope == "local.var":
        b = _b()
        b.require_kernel(f"updating `{name}`")
        prev[0] = fn(prev.__tl_expr__(), value)
        return prev
    return assign(name, fn(prev, value), None)


def annotate(name: str, annotation: Any, prev: Any) -> Any:
    """`A: T.Tensor(shape, dtype)` inside an eager kernel body declares parameter A."""
    from ..language.types import TensorType

    b = _b()
    if isinstance(annotation, TensorType):
        return annotation.declare_param(b, name, prev)
    return prev


def annotate_value(name: str, annotation: Any, value: Any) -> Any:
    from ..ir.dtype import DataType

    if isinstance(annotation, DataType) and not isinstance(value, Buffer):
        from ..ir.expr import cast

        value = cast(value, annotation)
    return assign(name, value, None)


def returned(value: Any) -> Any:
    """`return v`: the value, after noting where the return statement is (errors about what
    an eager kernel returns point there)."""
    b = Builder.current()
    if b is not None:
        b.return_span = b.span_here()
    return value


def unpack(value: Any, n: int) -> tuple:
    if isinstance(value, tuple):
        if len(value) != n:
            raise DSLError(f"expected {n} value(s) to unpack, got {len(value)}", _b().span_here())
        return value
    if n == 1:
        return (value,)
    raise DSLError(f"cannot unpack a single value into {n} names", _b().span_here())
