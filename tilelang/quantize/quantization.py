"""Expression builders that unpack low-bit integers from packed storage words, under the names
public TileLang 0.1.x programs import from `tilelang.quantize` (dequantize kernels that keep
their weights in uint8 / int8 tensors and decode them by hand inside a `T.Parallel`).

Each factory takes the storage word's type (`storage_type` + `storage_nbit`, e.g. "uint", 8)
and returns `f(nbit, val, pos, dtype)`: the `pos`-th `nbit`-bit field of `val` (fields counted
from the least significant bit, the order of the 4-bit dtypes' packing), converted to `dtype`:

- `_tir_packed_to_unsigned_convert`: the field as an unsigned number (0 … 2^nbit − 1);
- `_tir_packed_to_signed_convert`: the field minus 2^(nbit−1) (offset binary: 0 … 15 → −8 … 7);
- `_tir_packed_int_to_int_convert`: the field sign-extended (two's complement, what `T.int4` holds);
- `_tir_packed_to_unsigned_convert_with_zeros`: `f(nbit, val, pos, zero, dtype)`, the unsigned
  field minus the zero point `zero`.
"""

from __future__ import annotations

from typing import Any

from ..errors import DSLError
from ..ir.dtype import DataType, int32
from ..ir.expr import IntImm, PrimExpr, as_expr, binary, cast

__all__ = [
    "_tir_packed_int_to_int_convert",
    "_tir_packed_to_signed_convert",
    "_tir_packed_to_unsigned_convert",
    "_tir_packed_to_unsigned_convert_with_zeros",
]


def _field(storage: DataType, nbit: int, val: Any, pos: Any) -> PrimExpr:
    """The `pos`-th `nbit`-bit field of `val` as a non-negative int32."""
    val = as_expr(val)
    if val.dtype.element_of() is not storage:
        raise DSLError(
            f"the packed value has dtype {val.dtype}, but the converter was made for {storage} storage",
            getattr(val, "span", None),
            f"pass storage_type / storage_nbit matching {val.dtype}",
        )
    if not isinstance(nbit, int) or not 0 < nbit < storage.bits:
        raise DSLError(f"nbit must be an int in 1..{storage.bits - 1}, got {nbit!r}", getattr(val, "span", None))
    word = cast(val, int32)
    if storage.bits < 32:  # the storage bits, without the sign extension of a signed word
        word = binary("bitand", word, IntImm((1 << storage.bits) - 1, int32))
    shift = binary("mul", cast(as_expr(pos), int32), IntImm(nbit, int32))
    if storage.bits == 32 and storage.is_int:  # keep a logical shift for a signed 32-bit word
        word = cast(val, DataType("uint32"))
        shifted = cast(binary("shr", word, cast(shift, DataType("uint32"))), int32)
    else:
        shifted = binary("shr", word, shift)
    return binary("bitand", shifted, IntImm((1 << nbit) - 1, int32))


def _tir_packed_to_unsigned_convert(storage_type: str = "uint", storage_nbit: int = 8):
    storage = DataType(f"{storage_type}{storage_nbit}")

    def f_convert(nbit: int, val: Any, pos: Any, dtype: Any) -> PrimExpr:
        return cast(_field(storage, nbit, val, pos), DataType(dtype))

    return f_convert


def _tir_packed_to_signed_convert(storage_type: str = "uint", storage_nbit: int = 8):
    storage = DataType(f"{storage_type}{storage_nbit}")

    def f_convert(nbit: int, val: Any, pos: Any, dtype: Any) -> PrimExpr:
        dt = DataType(dtype)
        return binary("sub", cast(_field(storage, nbit, val, pos), dt), as_expr(1 << (nbit - 1), dt))

    return f_convert


def _tir_packed_int_to_int_convert(storage_type: str = "uint", storage_nbit: int = 8):
    storage = DataType(f"{storage_type}{storage_nbit}")

    def f_convert(nbit: int, val: Any, pos: Any, dtype: Any) -> PrimExpr:
        f = _field(storage, nbit, val, pos)
        half = IntImm(1 << (nbit - 1), int32)
        return cast(binary("sub", binary("bitxor", f, half), half), DataType(dtype))  # sign extension

    return f_convert


def _tir_packed_to_unsigned_convert_with_zeros(storage_type: str = "uint", storage_nbit: int = 8):
    storage = DataType(f"{storage_type}{storage_nbit}")

    def f_convert(nbit: int, val: Any, pos: Any, zero: Any, dtype: Any) -> PrimExpr:
        dt = DataType(dtype)
        return binary("sub", cast(_field(storage, nbit, val, pos), dt), cast(as_expr(zero), dt))

    return f_convert
