"""IR integer expressions as Python source, for code generated and run on the host.

Requires: expressions of integer arithmetic (+ - * // % & | ^ << >> min max, `div`
truncating toward zero, comparisons and logic as 0/1, select, integer casts, bitnot)
over `Var`s that the caller names. Guarantees: the source computes on Python ints
exactly what the IR means; `div` calls `_tdiv`, which the caller binds to `truncdiv`.
Used by layouts (compiled index maps) and the generated call path of kernels.
"""

from __future__ import annotations

from .expr import And, BinaryOp, Call, Cast, Compare, IntImm, Not, Or, PrimExpr, Select, Var

_PY_BIN = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "floordiv": "//",
    "floormod": "%",
    "bitand": "&",
    "bitor": "|",
    "bitxor": "^",
    "shl": "<<",
    "shr": ">>",
}
_PY_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def truncdiv(a: int, b: int) -> int:
    """C-style (truncating) integer division, the IR's `div` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def py_source(e: PrimExpr, names: dict) -> str:
    """Python source computing `e` on ints; `names` maps each Var to an identifier."""
    if isinstance(e, IntImm):
        return str(int(e.value))
    if isinstance(e, Var):
        try:
            return names[e]
        except KeyError:
            raise ValueError(f"layout expression uses `{e.name}`, which is not one of the layout's variables") from None
    if isinstance(e, BinaryOp):
        a, b = py_source(e.a, names), py_source(e.b, names)
        if e.op in _PY_BIN:
            return f"({a} {_PY_BIN[e.op]} {b})"
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        if e.op == "div":
            return f"_tdiv({a}, {b})"
    if isinstance(e, Compare):
        return f"int({py_source(e.a, names)} {_PY_CMP[e.op]} {py_source(e.b, names)})"
    if isinstance(e, And):
        return f"int({py_source(e.a, names)} and {py_source(e.b, names)})"
    if isinstance(e, Or):
        return f"int({py_source(e.a, names)} or {py_source(e.b, names)})"
    if isinstance(e, Not):
        return f"int(not {py_source(e.a, names)})"
    if isinstance(e, Select):
        c, t, f = (py_source(x, names) for x in (e.cond, e.true_value, e.false_value))
        return f"({t} if {c} else {f})"
    if isinstance(e, Cast) and (e.dtype.is_integer or e.dtype.is_bool):
        inner = py_source(e.value, names)
        if e.value.dtype.is_integer or e.value.dtype.is_bool:
            return inner
        # a float value (a scalar parameter): C's conversion truncates toward zero
        return f"int({inner})" if e.dtype.is_integer else f"int(bool({inner}))"
    if isinstance(e, Call) and e.op == "bitnot":
        return f"(~{py_source(e.args[0], names)})"
    raise TypeError(
        f"layout index expressions must be integer arithmetic (+ - * // % & | ^ << >> min max select); got `{e}`"
    )
