"""C code for packed 4-bit buffers (int4, uint4, float4_e2m1fn) — `tl_subbyte.h`.

A packed buffer is a `uint8_t` array of ceil(n / 2) bytes; element `i` (its row-major
offset) is the low nibble of byte `i >> 1` when `i` is even, the high nibble when odd.
In expressions int4 / uint4 are carried as `int32_t` and float4_e2m1fn as `float`.

Stores of one nibble are a read-modify-write of its byte. That is race-free for shared,
fragment and local buffers (a block's statements run in order on one OpenMP thread), but
blocks run in parallel, so a global store updates the byte atomically (`tl_st_nib_atomic`):
two blocks that write the two halves of one byte never lose either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import BufferLoad, Cast, FloatImm, IntImm, PrimExpr, Select, cast
from ..cfamily import strip
from .floatfmt import encode

if TYPE_CHECKING:
    from .codegen import CDialect

CHUNK = 2  # elements per storage byte


def is_packed(buf: Buffer) -> bool:
    return buf.dtype.bits < 8


def storage_count(count: int) -> int:
    """uint8_t elements of a packed array of `count` logical elements."""
    return -(-count // CHUNK)


def storage_count_expr(n: str) -> str:
    return f"((({n}) + 1) / 2)"


def load(cg: CDialect, buf: Buffer, indices: tuple) -> str:
    """The value (int32_t / float) of `buf[indices]`."""
    ptr, off = cg.name(buf), strip(cg.offset(buf, indices))
    dt = buf.dtype
    if dt.is_int:
        return f"tl_ld_i4({ptr}, {off})"
    if dt.is_uint:
        return f"tl_ld_u4({ptr}, {off})"
    return f"tl_e2m1_to_f32(tl_ld_u4({ptr}, {off}))"


def code_of(cg: CDialect, dt: DataType, value: PrimExpr) -> str:
    """The 4-bit code (an int expression; only its low 4 bits count) of `value` as `dt`."""
    if dt.is_integer:
        if isinstance(value, IntImm):
            return str(value.value & 15)
        v = value if value.dtype.is_integer or value.dtype.is_bool else cast(value, dt)
        return strip(cg.expr(v))
    # float4_e2m1fn
    if isinstance(value, BufferLoad) and value.buffer.dtype is dt and value.buffer not in cg.scalar_bufs:
        return f"tl_ld_u4({cg.name(value.buffer)}, {strip(cg.offset(value.buffer, value.indices))})"
    if isinstance(value, FloatImm):
        return str(encode(value.value, dt.base))
    if isinstance(value, Select) and value.dtype.element_of() is dt:  # a guarded load: choose codes
        t, f = code_of(cg, dt, value.true_value), code_of(cg, dt, value.false_value)
        return f"({strip(cg.expr(value.cond))} ? {t} : {f})"
    if isinstance(value, Cast) and value.dtype.element_of() is dt and value.value.dtype.is_float:
        value = value.value  # encode straight from the source: one rounding
    if value.dtype.base == "float64":
        return f"tl_f64_to_e2m1({strip(cg.expr(value))})"
    if not value.dtype.is_float:
        value = cast(value, DataType("float32"))
    return f"tl_f32_to_e2m1({strip(cg.expr(value))})"


def store(cg: CDialect, buf: Buffer, indices: tuple, value: PrimExpr) -> str:
    """The C statement storing `value` into `buf[indices]`."""
    fn = "tl_st_nib_atomic" if buf.scope == "global" else "tl_st_nib"
    return f"{fn}({cg.name(buf)}, {strip(cg.offset(buf, indices))}, {code_of(cg, buf.dtype, value)});"
