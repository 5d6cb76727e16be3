"""Expressions of the tile IR.

Requires: dtype, node. Guarantees: nodes are immutable; Python operators on
expressions build IR (including `==` and `<`), integer constants fold at
construction, mixed dtypes are promoted with explicit `Cast` nodes, and
`bool(expr)` raises an error that explains how to branch on an IR value.
Structural equality and hashing are the separate functions
`structural_equal` / `structural_hash`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .dtype import DataType, bool_, float32, int32, int64
from .node import Node, span_field
from .span import Span

# --------------------------------------------------------------------------
# Base class with operator overloading
# --------------------------------------------------------------------------


class PrimExpr(Node):
    """Base class of scalar (or vector) expressions."""

    __slots__ = ()
    dtype: DataType
    span: Span

    # arithmetic
    def __add__(self, o):
        return binary("add", self, o)

    def __radd__(self, o):
        return binary("add", o, self)

    def __sub__(self, o):
        return binary("sub", self, o)

    def __rsub__(self, o):
        return binary("sub", o, self)

    def __mul__(self, o):
        return binary("mul", self, o)

    def __rmul__(self, o):
        return binary("mul", o, self)

    def __truediv__(self, o):
        return binary("div", self, o)

    def __rtruediv__(self, o):
        return binary("div", o, self)

    def __floordiv__(self, o):
        return binary("floordiv", self, o)

    def __rfloordiv__(self, o):
        return binary("floordiv", o, self)

    def __mod__(self, o):
        return binary("floormod", self, o)

    def __rmod__(self, o):
        return binary("floormod", o, self)

    def __pow__(self, o):
        return call("pow", self, o)

    def __neg__(self):
        return binary("sub", as_expr(0, self.dtype), self)

    def __pos__(self):
        return self

    def __abs__(self):
        return call("abs", self)

    # bitwise / logical
    def __and__(self, o):
        return logical_or_bitwise("and", self, o)

    def __rand__(self, o):
        return logical_or_bitwise("and", o, self)

    def __or__(self, o):
        return logical_or_bitwise("or", self, o)

    def __ror__(self, o):
        return logical_or_bitwise("or", o, self)

    def __xor__(self, o):
        return binary("bitxor", self, o)

    def __rxor__(self, o):
        return binary("bitxor", o, self)

    def __lshift__(self, o):
        return binary("shl", self, o)

    def __rlshift__(self, o):
        return binary("shl", o, self)

    def __rshift__(self, o):
        return binary("shr", self, o)

    def __rrshift__(self, o):
        return binary("shr", o, self)

    def __invert__(self):
        if self.dtype.is_bool:
            return Not(self)
        return call("bitnot", self)

    # comparisons build IR
    def __eq__(self, o):  # type: ignore[override]
        return compare("eq", self, o)

    def __ne__(self, o):  # type: ignore[override]
        return compare("ne", self, o)

    def __lt__(self, o):
        return compare("lt", self, o)

    def __le__(self, o):
        return compare("le", self, o)

    def __gt__(self, o):
        return compare("gt", self, o)

    def __ge__(self, o):
        return compare("ge", self, o)

    __hash__ = object.__hash__

    def __bool__(self):
        from ..errors import DSLError

        raise DSLError(
            f"cannot use the IR value `{self}` as a Python bool",
            getattr(self, "span", None),
            "branch on it inside the kernel with `if`/`T.if_then_else` "
            "(the frontend turns those into IR), or make it a compile-time constant",
        )

    def __index__(self):
        from ..errors import DSLError

        raise DSLError(
            f"`{self}` is an IR value, not a Python int",
            getattr(self, "span", None),
            "use T.serial/T.Parallel instead of range() over symbolic sizes, "
            "or pass the size as a compile-time constant",
        )

    def astype(self, dtype: Any) -> PrimExpr:
        return cast(self, dtype)

    def __str__(self) -> str:
        from .printer import expr_str

        return expr_str(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


# --------------------------------------------------------------------------
# Leaves
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Var(PrimExpr):
    name: str
    dtype: DataType = int32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class IntImm(PrimExpr):
    value: int
    dtype: DataType = int32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class FloatImm(PrimExpr):
    value: float
    dtype: DataType = float32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class StringImm(PrimExpr):
    value: str
    dtype: DataType = DataType("handle")
    span: Span = span_field()

    __hash__ = object.__hash__


# --------------------------------------------------------------------------
# Compound expressions
# --------------------------------------------------------------------------

ARITH_OPS = ("add", "sub", "mul", "div", "floordiv", "floormod", "min", "max")
BIT_OPS = ("bitand", "bitor", "bitxor", "shl", "shr")
CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge")


@dataclass(frozen=True, eq=False)
class BinaryOp(PrimExpr):
    """Arithmetic or bitwise op. `div` on integers truncates (C semantics);
    `floordiv`/`floormod` round toward negative infinity."""

    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: DataType = int32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Compare(PrimExpr):
    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: DataType = bool_
    span: Span = span_field()

    __hash__ = object.__hash__

    def __bool__(self):
        if self.op not in ("eq", "ne"):
            return PrimExpr.__bool__(self)
        # Python asks for the truth of `==` in `if a == b`, `a in seq`, `seq.index(a)`: in compiler
        # code that is always a bug (it would compare nodes, but `==` builds IR), so say how to compare.
        from ..errors import IRComparisonError

        raise IRComparisonError(
            f"`{self}` compares IR expressions by building a comparison node; Python cannot use it as a bool",
            getattr(self, "span", None),
            "inside a kernel, branch on it with `if`/`T.if_then_else`; in Python code compare IR nodes "
            "with `is` (variables and buffers are identified by identity: `any(v is x for v in seq)`) or "
            "`tilelang.ir.expr.structural_equal(a, b)`",
        )


@dataclass(frozen=True, eq=False)
class And(PrimExpr):
    a: PrimExpr
    b: PrimExpr
    dtype: DataType = bool_
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Or(PrimExpr):
    a: PrimExpr
    b: PrimExpr
    dtype: DataType = bool_
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Not(PrimExpr):
    a: PrimExpr
    dtype: DataType = bool_
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Cast(PrimExpr):
    value: PrimExpr
    dtype: DataType = float32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Select(PrimExpr):
    """`cond ? t : f`; only the chosen side is evaluated (T.if_then_else)."""

    cond: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: DataType = float32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Call(PrimExpr):
    """Call of an intrinsic by name (`exp2`, `sqrt`, `shfl_xor`, ...)."""

    op: str
    args: tuple
    dtype: DataType = float32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class BufferLoad(PrimExpr):
    buffer: Any  # Buffer; typed loosely to avoid an import cycle
    indices: tuple
    dtype: DataType = float32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Ramp(PrimExpr):
    base: PrimExpr
    stride: PrimExpr
    lanes: int
    dtype: DataType = int32
    span: Span = span_field()

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: int
    dtype: DataType = float32
    span: Span = span_field()

    __hash__ = object.__hash__


# --------------------------------------------------------------------------
# Construction helpers with promotion and folding
# --------------------------------------------------------------------------


def is_expr(x: Any) -> bool:
    return isinstance(x, PrimExpr)


def as_expr(value: Any, hint: DataType | str | None = None) -> PrimExpr:
    """Convert a Python value (or a `local.var` buffer) into an expression.

    `hint` is the dtype of the other operand: `x * 2` with a float16 `x`
    makes a float16 constant rather than promoting `x`.
    """
    if isinstance(value, PrimExpr):
        return value
    if hasattr(value, "__tl_expr__"):
        return value.__tl_expr__()
    hint = DataType(hint) if hint is not None else None
    if isinstance(value, bool):
        return IntImm(int(value), bool_)
    if isinstance(value, int):
        if hint is not None and (hint.is_float or hint.is_integer):
            if hint.is_float:
                return FloatImm(float(value), hint.element_of())
            return IntImm(value, hint.element_of())
        return IntImm(value, int32 if -(2**31) <= value < 2**31 else int64)
    if isinstance(value, float):
        if hint is not None and hint.is_float:
            return FloatImm(value, hint.element_of())
        return FloatImm(value, float32)
    if type(value).__module__.startswith("numpy"):
        return as_expr(value.item(), hint)
    from ..errors import DSLError

    raise DSLError(
        f"cannot use a value of type {type(value).__name__} ({value!r:.60}) in a kernel expression",
        None,
        "kernel expressions take ints, floats, IR values and indexed buffers like A[i, j]",
    )


def promote(a: DataType, b: DataType) -> DataType:
    """The common dtype of a binary op's operands."""
    if a is b:
        return a
    if a.is_float and not b.is_float:
        return a
    if b.is_float and not a.is_float:
        return b
    if a.is_float and b.is_float:
        if a.bits != b.bits:
            return a if a.bits > b.bits else b
        return float32  # float16 vs bfloat16
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.is_int else b  # int32 vs uint32: keep signed


def _convert_pair(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    if isinstance(a, PrimExpr) or hasattr(a, "__tl_expr__"):
        a = as_expr(a)
        b = as_expr(b, a.dtype)
    else:
        b = as_expr(b)
        a = as_expr(a, b.dtype)
    return a, b


def cast(value: Any, dtype: Any) -> PrimExpr:
    dtype = DataType(dtype)
    value = as_expr(value, dtype)
    if value.dtype is dtype:
        return value
    if isinstance(value, IntImm) and dtype.is_integer:
        return IntImm(value.value, dtype)
    if isinstance(value, (IntImm, FloatImm)) and dtype.is_float and dtype.lanes == 1:
        return FloatImm(float(value.value), dtype)
    return Cast(value, dtype)


def _fold_int(op: str, x: int, y: int) -> int | None:
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    if op == "floordiv":
        return x // y if y else None
    if op == "floormod":
        return x % y if y else None
    if op == "div":
        return int(x / y) if y else None
    if op == "min":
        return min(x, y)
    if op == "max":
        return max(x, y)
    return None


def binary(op: str, a: Any, b: Any) -> PrimExpr:
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and a.dtype is b.dtype:
        dt = a.dtype  # the common case (both IR values of one dtype): nothing to convert or promote
    else:
        a, b = _convert_pair(a, b)
        dt = promote(a.dtype, b.dtype)
    if dt.is_bool and op in ARITH_OPS:
        dt = int32
    if a.dtype is not dt:  # (cast's own first test, without its call: this runs for every IR operation)
        a = cast(a, dt)
    if b.dtype is not dt:
        b = cast(b, dt)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        folded = _fold_int(op, a.value, b.value)
        if folded is not None:
            return IntImm(folded, dt)
    if dt.is_integer:
        same = _int_identity(op, a, b)
        if same is not None:
            return same
    if op in ("floordiv", "floormod", "div") and isinstance(b, IntImm) and b.value == 0:
        from ..errors import DSLError

        raise DSLError("division by zero in a kernel expression", None, "check the divisor")
    if dt.is_float and isinstance(a, FloatImm) and isinstance(b, FloatImm):
        folded_f = _fold_float(op, a.value, b.value)
        if folded_f is not None:
            return FloatImm(folded_f, dt)
    return BinaryOp(op, a, b, dt)


def _int_identity(op: str, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """x+0, x-0, x*1, x//1 → x; x*0 → 0 (integers only: exact)."""
    av = a.value if isinstance(a, IntImm) else None
    bv = b.value if isinstance(b, IntImm) else None
    if op == "add":
        return b if av == 0 else a if bv == 0 else None
    if op == "sub":
        return a if bv == 0 else None
    if op == "mul":
        if av == 1:
            return b
        if bv == 1:
            return a
        if av == 0 or bv == 0:
            return IntImm(0, a.dtype)
    if op in ("floordiv", "div") and bv == 1:
        return a
    if op == "floormod" and bv == 1:
        return IntImm(0, a.dtype)
    return None


def _fold_float(op: str, x: float, y: float) -> float | None:
    try:
        return {
            "add": lambda: x + y,
            "sub": lambda: x - y,
            "mul": lambda: x * y,
            "div": lambda: x / y,
            "min": lambda: min(x, y),
            "max": lambda: max(x, y),
        }[op]()
    except (KeyError, ZeroDivisionError):
        return None


def compare(op: str, a: Any, b: Any) -> PrimExpr:
    a, b = _convert_pair(a, b)
    dt = promote(a.dtype, b.dtype)
    a, b = cast(a, dt), cast(b, dt)
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        x, y = a.value, b.value
        r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op]
        return IntImm(int(r), bool_)
    return Compare(op, a, b)


def logical_or_bitwise(kind: str, a: Any, b: Any) -> PrimExpr:
    a, b = _convert_pair(a, b)
    if a.dtype.is_bool and b.dtype.is_bool:
        return logical_and(a, b) if kind == "and" else logical_or(a, b)
    return binary("bit" + kind, a, b)


def logical_and(a: Any, b: Any) -> PrimExpr:
    a, b = as_expr(a), as_expr(b)
    if isinstance(a, IntImm):
        return b if a.value else a
    if isinstance(b, IntImm):
        return a if b.value else b
    return And(a, b)


def logical_or(a: Any, b: Any) -> PrimExpr:
    a, b = as_expr(a), as_expr(b)
    if isinstance(a, IntImm):
        return a if a.value else b
    if isinstance(b, IntImm):
        return b if b.value else a
    return Or(a, b)


def logical_not(a: Any) -> PrimExpr:
    a = as_expr(a)
    if isinstance(a, IntImm):
        return IntImm(int(not a.value), bool_)
    return Not(a)


# Intrinsics whose result dtype follows their (float) argument.
FLOAT_UNARY = {
    "exp",
    "exp2",
    "exp10",
    "log",
    "log2",
    "log10",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "floor",
    "ceil",
    "round",
    "trunc",
    "nearbyint",
}


def call(op: str, *args: Any, dtype: Any = None) -> PrimExpr:
    """Build an intrinsic call; float math on integer inputs computes in float32."""
    exprs = [as_expr(a) for a in args]
    if op in FLOAT_UNARY:
        (x,) = exprs
        if not x.dtype.is_float:
            x = cast(x, float32)
        if isinstance(x, FloatImm) and dtype is None:
            folded = _fold_unary(op, x.value)
            if folded is not None:
                return FloatImm(folded, x.dtype)
        return Call(op, (x,), DataType(dtype) if dtype else x.dtype)
    if op in ("pow", "atan2", "fmod", "hypot", "copysign", "nextafter"):
        a, b = _convert_pair(*exprs)
        dt = promote(a.dtype, b.dtype)
        if not dt.is_float:
            dt = float32
        return Call(op, (cast(a, dt), cast(b, dt)), DataType(dtype) if dtype else dt)
    if op == "abs":
        (x,) = exprs
        if isinstance(x, IntImm):
            return IntImm(abs(x.value), x.dtype)
        if isinstance(x, FloatImm):
            return FloatImm(abs(x.value), x.dtype)
        return Call(op, (x,), x.dtype)
    if dtype is None:
        dtype = exprs[0].dtype if exprs else int32
    return Call(op, tuple(exprs), DataType(dtype))


def _fold_unary(op: str, x: float) -> float | None:
    try:
        fn = {
            "exp": math.exp,
            "exp2": lambda v: 2.0**v,
            "log": math.log,
            "log2": math.log2,
            "sqrt": math.sqrt,
            "rsqrt": lambda v: 1.0 / math.sqrt(v),
        }.get(op)
        return fn(x) if fn else None
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


def select(cond: Any, t: Any, f: Any) -> PrimExpr:
    cond = as_expr(cond)
    t, f = _convert_pair(t, f)
    dt = promote(t.dtype, f.dtype)
    t, f = cast(t, dt), cast(f, dt)
    if isinstance(cond, IntImm):
        return t if cond.value else f
    if not cond.dtype.is_bool:
        cond = compare("ne", cond, 0)
    return Select(cond, t, f, dt)


def const_int(e: Any) -> int | None:
    """The Python int value of `e` if it is a constant integer, else None."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    return None


# --------------------------------------------------------------------------
# Structural equality / hashing (separate from `==`, which builds IR)
# --------------------------------------------------------------------------


def structural_equal(a: Any, b: Any) -> bool:
    from .node import child_fields

    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Var):
        return False  # distinct variables
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Node) and not isinstance(a, (Var,)):
        if type(a).__name__ == "Buffer":
            return False
        return all(structural_equal(getattr(a, f), getattr(b, f)) for f in child_fields(type(a)))
    return a == b


def structural_hash(a: Any) -> int:
    from .node import child_fields

    if isinstance(a, Var) or type(a).__name__ == "Buffer":
        return id(a)
    if isinstance(a, (tuple, list)):
        return hash(tuple(structural_hash(x) for x in a))
    if isinstance(a, Node):
        return hash((type(a).__name__,) + tuple(structural_hash(getattr(a, f)) for f in child_fields(type(a))))
    return hash(a)


class StructuralKey:
    """A dict/set key that matches structurally equal IR (`structural_equal`), not only the same
    object — unlike the node itself (identity-hashed) or its bare `structural_hash` (which would
    take two different expressions with colliding hashes for one)."""

    __slots__ = ("node", "_hash")

    def __init__(self, node: Any) -> None:
        self.node = node
        self._hash = structural_hash(node)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, StructuralKey) and other._hash == self._hash and structural_equal(self.node, other.node)
        )
