"""`tilelang.tvm.tir` (and, identically, `tilelang.tvm.tirx`): only `const`."""

from __future__ import annotations

from typing import Any

from ..ir.dtype import DataType
from ..ir.expr import FloatImm, IntImm, PrimExpr, as_expr, cast
from ._shim import unsupported


def const(value: Any, dtype: Any = None, span: Any = None) -> PrimExpr:
    """An IR constant of `dtype` (default: int32 for an int, float32 for a float, bool for a
    bool), as TVM's `tir.const`; `span` is accepted and unused (spans come from the trace)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    dt = DataType(str(dtype))
    if isinstance(value, bool) or (isinstance(value, int) and not dt.is_float):
        return IntImm(int(value), dt)
    if isinstance(value, (int, float)) and dt.is_float:
        return FloatImm(float(value), dt)
    return cast(as_expr(value), dt)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise unsupported(f"tir.{name}", "tilelang.tvm.tir provides only const")


__all__ = ["const"]
