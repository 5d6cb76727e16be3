"""`tilelang.tvm.DataType`: TVM's dtype spelling over tilelang.ir.dtype.DataType."""

from __future__ import annotations

from typing import Any

from ..ir.dtype import DataType as _IRDataType
from ._shim import unsupported


class _Flag(int):
    """A predicate usable as an attribute (`dt.is_float8`) and as a method (`dt.is_float8()`)."""

    def __new__(cls, value: bool) -> _Flag:
        return super().__new__(cls, bool(value))

    def __call__(self) -> bool:
        return bool(self)

    def __repr__(self) -> str:
        return repr(bool(self))

    __str__ = __repr__


class DataType(str):
    """`tvm.DataType("float16")`: a str naming the dtype (TileLang's normalised name), so it
    goes wherever TileLang takes a dtype; attributes as TVM's."""

    _dt: _IRDataType

    def __new__(cls, x: Any) -> DataType:
        dt = _IRDataType(str(x) if isinstance(x, DataType) else x)
        obj = super().__new__(cls, str.__str__(dt))
        obj._dt = dt
        return obj

    bits = property(lambda self: self._dt.bits)
    lanes = property(lambda self: self._dt.lanes)
    itemsize = property(lambda self: self._dt.itemsize)
    bytes = property(lambda self: self._dt.bytes)
    type_code = property(lambda self: self._dt.type_code)
    is_float = property(lambda self: _Flag(self._dt.is_float))
    is_int = property(lambda self: _Flag(self._dt.is_int))
    is_uint = property(lambda self: _Flag(self._dt.is_uint))
    is_bool = property(lambda self: _Flag(self._dt.is_bool))
    is_float8 = property(lambda self: _Flag(self._dt.base.startswith("float8")))
    is_float4 = property(lambda self: _Flag(self._dt.base.startswith("float4")))

    def with_lanes(self, lanes: int) -> DataType:
        return DataType(self._dt.with_lanes(lanes))

    def as_torch(self) -> Any:
        return self._dt.as_torch()

    def __repr__(self) -> str:
        return f"DataType({str.__str__(self)!r})"

    def __reduce__(self) -> Any:
        return (DataType, (str.__str__(self),))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_dt":
            raise AttributeError(name)
        raise unsupported(
            f"DataType.{name}",
            "tilelang.tvm.DataType has only bits, lanes, itemsize, bytes, type_code, with_lanes, as_torch and is_float8 / is_float4 "
            "/ is_float / is_int / is_uint / is_bool",
        )
