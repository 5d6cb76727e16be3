"""Scalar math and expression helpers of the T namespace (`T.max`, `T.exp2`,
`T.if_then_else`, `T.ceildiv`, `T.infinity`, `T.cast`, ...)."""

from __future__ import annotations

import builtins
from typing import Any

from ..errors import DSLError as _DSLError
from ..errors import UnsupportedError as _UnsupportedError
from ..ir.dtype import DataType
from ..ir.expr import FloatImm as _FloatImm
from ..ir.expr import IntImm as _IntImm
from ..ir.expr import PrimExpr, as_expr, binary, call, select
from ..ir.expr import cast as _cast


def _is_py(*xs: Any) -> bool:
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)


def max(a: Any, b: Any, *rest: Any) -> Any:  # noqa: A001
    """The larger of `a`, `b` (and `rest`); plain Python numbers fold at trace time."""
    if _is_py(a, b, *rest):
        return builtins.max(a, b, *rest)
    out = binary("max", a, b)
    for r in rest:
        out = binary("max", out, r)
    return out


def min(a: Any, b: Any, *rest: Any) -> Any:  # noqa: A001
    """The smaller of `a`, `b` (and `rest`); plain Python numbers fold at trace time."""
    if _is_py(a, b, *rest):
        return builtins.min(a, b, *rest)
    out = binary("min", a, b)
    for r in rest:
        out = binary("min", out, r)
    return out


def ceildiv(a: Any, b: Any) -> Any:
    """`(a + b - 1) // b`: the number of `b`-sized tiles that cover `a`."""
    if _is_py(a, b):
        return -(-a // b)
    return binary("floordiv", binary("add", a, binary("sub", b, 1)), b)


cdiv = ceildiv


def align_up(x: Any, y: Any) -> Any:
    """`x` rounded up to a multiple of `y`."""
    return ceildiv(x, y) * y


def floordiv(a: Any, b: Any) -> Any:
    """Integer division rounding toward minus infinity (Python's `//`)."""
    return a // b if _is_py(a, b) else binary("floordiv", a, b)


def floormod(a: Any, b: Any) -> Any:
    """The remainder of `T.floordiv` (Python's `%`): it has the sign of `b`."""
    return a % b if _is_py(a, b) else binary("floormod", a, b)


def _require_int(fn: str, *xs: Any) -> None:
    for x in xs:
        is_int = isinstance(x, int) or (not isinstance(x, float) and as_expr(x).dtype.is_integer)
        if not is_int:
            from ..errors import DSLError

            raise DSLError(
                f"`T.{fn}` takes integers, got `{x}`",
                getattr(x, "span", None),
                "use `/` for floating-point division, `T.floordiv`/`T.floormod` to round toward -inf",
            )


def truncdiv(a: Any, b: Any) -> Any:
    """Integer division rounding toward zero (C's `/`); `//` and `T.floordiv` round toward -inf."""
    _require_int("truncdiv", a, b)
    if _is_py(a, b):
        q = builtins.abs(a) // builtins.abs(b)  # exact for any size, unlike int(a / b)
        return q if (a < 0) == (b < 0) else -q
    return binary("div", a, b)  # `div` on integers truncates


def truncmod(a: Any, b: Any) -> Any:
    """The remainder of `T.truncdiv` (C's `%`): it has the sign of `a`."""
    _require_int("truncmod", a, b)
    return a - truncdiv(a, b) * b


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """`t` where `cond` holds, else `f`; only the chosen side is evaluated."""
    return select(cond, t, f)


def Select(cond: Any, true_value: Any, false_value: Any) -> PrimExpr:  # noqa: N802 - TVMScript name
    """TVM's `Select(cond, t, f)`. TVM evaluates both sides; the guarded `if_then_else` gives the
    same value, so both spell the same node here."""
    return select(cond, true_value, false_value)


def infinity(dtype: Any) -> PrimExpr:
    """+inf of a floating-point dtype (`-T.infinity(dt)` is the usual max-reduction start)."""
    dt = DataType(dtype)
    if not dt.is_float:
        from ..errors import DSLError

        raise DSLError(
            f"`T.infinity({dt})`: {dt} has no infinity",
            None,
            "use a floating-point dtype, or `T.max_value(dtype)` / `T.min_value(dtype)` for integers",
        )
    return _FloatImm(float("inf"), dt)


def max_value(dtype: Any) -> PrimExpr:
    """The largest finite value of `dtype`."""
    dt = DataType(dtype)
    if dt.is_bool:
        return _IntImm(1, dt)
    if dt.is_float:
        finite = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
        return _FloatImm(finite.get(dt.base, 3.4028234663852886e38 if dt.bits == 32 else 1.7976931348623157e308), dt)
    if dt.is_uint:
        return _IntImm(2**dt.bits - 1, dt)
    return _IntImm(2 ** (dt.bits - 1) - 1, dt)


def min_value(dtype: Any) -> PrimExpr:
    """The lowest finite value of `dtype` (for floats: minus the largest, not the smallest positive)."""
    dt = DataType(dtype)
    if dt.is_bool:
        return _IntImm(0, dt)
    if dt.is_float:
        return _FloatImm(-max_value(dt).value, dt)
    if dt.is_uint:
        return _IntImm(0, dt)
    return _IntImm(-(2 ** (dt.bits - 1)), dt)


_ROUNDINGS = ("", "rn", "rz", "rp", "rm", "rs")


def cast(value: Any, dtype: Any, round: str = "", sat: bool = True, rbits: Any = None) -> PrimExpr:  # noqa: A002
    """`value` converted to `dtype`, with the rounding torch's `Tensor.to` uses: round to
    nearest even; float8_e4m3fn saturates to ±448 (it has no infinity; as torch 2.13 —
    torch 2.11 gave NaN), float8_e5m2, float16 and bfloat16 overflow to ±inf; NaN stays NaN. `round="rn"` and `sat=True`
    name exactly that; the other PTX rounding modes and `sat=False` on an e4m3fn
    destination (overflow to NaN) are not implemented and raise `unsupported`."""
    if round not in _ROUNDINGS:
        raise _DSLError(f"T.cast: invalid round={round!r}", None, f"use one of {', '.join(map(repr, _ROUNDINGS))}")
    if round not in ("", "rn"):
        raise _UnsupportedError(
            f"T.cast(round={round!r}) is not implemented: casts round to nearest even", None, "drop `round`"
        )
    if rbits is not None:
        raise _DSLError("T.cast: rbits is only meaningful with round='rs'", None, "drop `rbits`")
    dt = DataType(dtype)
    if not sat and dt.base == "float8_e4m3fn":
        raise _UnsupportedError(
            "T.cast(..., sat=False) to float8_e4m3fn (overflow to NaN) is not implemented",
            None,
            "drop sat=False: casts to e4m3fn saturate to ±448",
        )
    return _cast(value, dt)


def _is_dtype(x: Any) -> bool:
    if isinstance(x, DataType):
        return True
    if (
        isinstance(x, str)
        or type(x).__name__ == "dtype"
        or any(x is t for t in (builtins.int, builtins.float, builtins.bool))
    ):
        try:
            DataType(x)
        except Exception:
            return False
        return True
    return False


def Cast(dtype: Any, value: Any) -> PrimExpr:  # noqa: N802 - TVMScript name
    """TVM's `Cast(dtype, value)`: the dtype comes first (unlike `T.cast(value, dtype)`)."""
    if not _is_dtype(dtype):
        raise _DSLError(
            f"`T.Cast(dtype, value)` takes the dtype first, got `{dtype}` where the dtype goes",
            getattr(dtype, "span", None),
            f"write `T.Cast({value}, {dtype})`, or `T.cast({dtype}, {value})` (value first)"
            if _is_dtype(value)
            else "pass a dtype such as T.float32 or 'float16' first",
        )
    return _cast(value, dtype)


def reinterpret(value: Any, dtype: Any) -> PrimExpr:
    """The bits of `value` read as `dtype` (same width), without conversion."""
    if isinstance(value, (str, DataType)) and not isinstance(dtype, (str, DataType)):
        value, dtype = dtype, value  # deprecated (dtype, value) order
    return call("reinterpret", value, dtype=dtype)


def clamp(x: Any, lo: Any, hi: Any) -> Any:
    """`x` limited to the range `[lo, hi]`."""
    return min(max(x, lo), hi)


def abs(x: Any) -> Any:  # noqa: A001
    """The absolute value of `x`."""
    return builtins.abs(x) if _is_py(x) else call("abs", x)


def _unary(op: str):
    def fn(x: Any) -> PrimExpr:
        return call(op, as_expr(x))

    fn.__name__ = op
    fn.__doc__ = f"Elementwise `{op}`."
    return fn


exp = _unary("exp")
exp2 = _unary("exp2")
exp10 = _unary("exp10")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
expm1 = _unary("expm1")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
sinh = _unary("sinh")
cosh = _unary("cosh")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
nearbyint = _unary("nearbyint")
__exp = exp
__log = log
__exp10 = exp10
__log2 = log2
__log10 = log10
__sin = sin
__cos = cos
__tan = tan


def round(x: Any, rounding_mode: str = "ties-to-even") -> PrimExpr:  # noqa: A001
    """Round to the nearest integer value, ties to even (the only mode implemented)."""
    if rounding_mode != "ties-to-even":
        from ..errors import UnsupportedError

        raise UnsupportedError(
            f"T.round(rounding_mode={rounding_mode!r}) is not implemented",
            getattr(x, "span", None),
            "use the default 'ties-to-even', or T.floor / T.ceil / T.trunc",
        )
    return call("nearbyint", x)


def pow(a: Any, b: Any) -> PrimExpr:  # noqa: A001
    """`a` raised to the power `b`."""
    return call("pow", a, b)


def fmod(a: Any, b: Any) -> PrimExpr:
    """The floating-point remainder of `a / b` (C's `fmod`: the sign of `a`)."""
    return call("fmod", a, b)


def atan2(a: Any, b: Any) -> PrimExpr:
    """The angle of the point (`b`, `a`) in radians (C's `atan2(a, b)`)."""
    return call("atan2", a, b)


def hypot(a: Any, b: Any) -> PrimExpr:
    """`sqrt(a*a + b*b)` without intermediate overflow."""
    return call("hypot", a, b)


def copysign(a: Any, b: Any) -> PrimExpr:
    """The magnitude of `a` with the sign of `b`."""
    return call("copysign", a, b)


def fast_rcp(x: Any) -> PrimExpr:
    """An approximate reciprocal `1 / x` (the fast hardware instruction on GPUs)."""
    return 1.0 / as_expr(x)


def isnan(x: Any) -> PrimExpr:
    """True where `x` is NaN."""
    return call("isnan", x, dtype="bool")


def isinf(x: Any) -> PrimExpr:
    """True where `x` is plus or minus infinity."""
    return call("isinf", x, dtype="bool")


def isfinite(x: Any) -> PrimExpr:
    """True where `x` is neither infinite nor NaN."""
    return call("isfinite", x, dtype="bool")


def bitwise_and(a: Any, b: Any) -> PrimExpr:
    """`a & b` on integers."""
    return binary("bitand", a, b)


def bitwise_or(a: Any, b: Any) -> PrimExpr:
    """`a | b` on integers."""
    return binary("bitor", a, b)


def bitwise_xor(a: Any, b: Any) -> PrimExpr:
    """`a ^ b` on integers."""
    return binary("bitxor", a, b)


def bitwise_not(a: Any) -> PrimExpr:
    """`~a` on integers."""
    return call("bitnot", a)


def shift_left(a: Any, b: Any) -> PrimExpr:
    """`a << b` on integers."""
    return binary("shl", a, b)


def shift_right(a: Any, b: Any) -> PrimExpr:
    """`a >> b` on integers (arithmetic for signed types)."""
    return binary("shr", a, b)


def likely(x: Any) -> PrimExpr:
    """Marks `cond` as usually true (a branch hint; the value is unchanged)."""
    return as_expr(x)


def _imm(kind: str, make: Any, dtype: Any, value: Any) -> PrimExpr:
    if not _is_dtype(dtype):
        from ..errors import DSLError

        raise DSLError(
            f"`T.{kind}(dtype, value)` takes the dtype first, got `{dtype!r}` where the dtype goes",
            None,
            f"write `T.{kind}({value!r}, {dtype!r})`" if _is_dtype(value) else "pass a dtype such as 'int32' first",
        )
    return make(value, DataType(dtype))


def IntImm(dtype: Any, value: Any, span: Any = None) -> PrimExpr:  # noqa: N802 - TVMScript name
    """TVM's `IntImm(dtype, value)`: an integer constant, dtype first."""
    return _imm("IntImm", lambda v, dt: _IntImm(int(v), dt), dtype, value)


def FloatImm(dtype: Any, value: Any, span: Any = None) -> PrimExpr:  # noqa: N802 - TVMScript name
    """TVM's `FloatImm(dtype, value)`: a floating-point constant, dtype first."""
    return _imm("FloatImm", lambda v, dt: _FloatImm(float(v), dt), dtype, value)


# What `from .math import *` gives the T namespace: the helpers above, not this module's imports
# (`T.Any`, `T.builtins`, ... leaked before, and the IR's value-first `IntImm(value, dtype)` stood
# in for TVM's dtype-first `T.IntImm(dtype, value)`).
__all__ = [
    n
    for n, v in list(globals().items())
    if (callable(v) and getattr(v, "__module__", None) == __name__ and not n.startswith("_"))
    or n in ("cdiv", "PrimExpr")
] + ["__exp", "__log", "__exp10", "__log2", "__log10", "__sin", "__cos", "__tan"]
