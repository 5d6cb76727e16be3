"""CUDA code for packed 4-bit buffers (int4, uint4, float4_e2m1fn) — `tl/subbyte.h`.

A packed buffer is `uint8_t` storage of ceil(n / 2) bytes; element `i` (its flattened
offset, after `flatten_shared` for shared tiles) is the low nibble of byte `i >> 1` when `i`
is even, the high nibble when odd. Values are carried as `int` (int4 / uint4) and `float`
(float4_e2m1fn).

A store writes one nibble without losing the other: in registers (`local`, what fragments
become) only the owning thread writes, so a plain read-modify-write (`tl::st_nib`) is
race-free; in shared and global memory another thread may write the other nibble at the
same time, so the byte is updated atomically (`tl::st_nib_atomic`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import BufferLoad, Call, Cast, FloatImm, IntImm, PrimExpr, Select, cast
from ..c.floatfmt import encode
from ..cfamily import packed_no_address as no_address
from ..cfamily import strip

if TYPE_CHECKING:
    from .codegen import CudaDialect

REGISTER_SCOPES = ("local", "local.fragment")


def is_packed(buf: Buffer) -> bool:
    return buf.dtype.bits < 8


def storage_count(count: int) -> int:
    return -(-count // 2)


def load(cg: CudaDialect, buf: Buffer, indices: tuple) -> str:
    ptr, off = cg.name(buf), strip(cg.offset(buf, indices))
    dt = buf.dtype
    fn = "tl::ld_i4" if dt.is_int else "tl::ld_u4"
    cg.use(fn)
    if dt.is_float:
        return f"tl::e2m1_to_f32({fn}({ptr}, {off}))"
    return f"{fn}({ptr}, {off})"


def code_of(cg: CudaDialect, dt: DataType, value: PrimExpr) -> str:
    """An int expression whose low 4 bits are the code of `value` as `dt`."""
    cg.use("tl::ld_u4")
    if dt.is_integer:
        if isinstance(value, IntImm):
            return str(value.value & 15)
        v = value if value.dtype.is_integer or value.dtype.is_bool else cast(value, dt)
        return strip(cg.expr(v))
    if isinstance(value, BufferLoad) and is_packed(value.buffer) and value.buffer.dtype is dt:
        return f"tl::ld_u4({cg.name(value.buffer)}, {strip(cg.offset(value.buffer, value.indices))})"
    if isinstance(value, FloatImm):
        return str(encode(value.value, dt.base))
    if isinstance(value, Select) and value.dtype.element_of() is dt:  # a guarded load: choose codes
        t, f = code_of(cg, dt, value.true_value), code_of(cg, dt, value.false_value)
        return f"({strip(cg.expr(value.cond))} ? {t} : {f})"
    if isinstance(value, Cast) and value.dtype.element_of() is dt and value.value.dtype.is_float:
        value = value.value  # encode straight from the source value: one rounding
    if value.dtype.base == "float64":
        return f"tl::f64_to_e2m1({strip(cg.expr(value))})"
    x = strip(cg.expr(value))
    return (
        f"tl::f32_to_e2m1((float)({x}))" if value.dtype.base not in ("float32", "tfloat32") else f"tl::f32_to_e2m1({x})"
    )


def store(cg: CudaDialect, buf: Buffer, indices: tuple, value: PrimExpr) -> str:
    fn = "tl::st_nib" if buf.scope in REGISTER_SCOPES else "tl::st_nib_atomic"
    cg.use(fn)
    return f"{fn}({cg.name(buf)}, {strip(cg.offset(buf, indices))}, {code_of(cg, buf.dtype, value)});"


def store_pair(cg: CudaDialect, call: Call) -> str:
    """`tl.store_nibble_pair` (pair_nibble_stores.py): one byte store of two elements."""
    at, lo, hi = call.args
    buf = at.buffer
    cg.use("tl::st_nib_pair")
    code = ", ".join(code_of(cg, buf.dtype, x) for x in (lo, hi))
    return f"tl::st_nib_pair({cg.name(buf)}, {strip(cg.offset(buf, at.indices))}, {code})"


def cast_to(cg: CudaDialect, dst: DataType, value: PrimExpr, x: str) -> str:
    """C++ of `value` (printed `x`) converted to the 4-bit `dst`, in its carried type."""
    src = value.dtype
    if dst.is_integer:
        fn = "tl::wrap_i4" if dst.is_int else "tl::wrap_u4"
        cg.use(fn)
        if src.is_integer or src.is_bool:
            return f"{fn}({strip(x)})"
        return f"{fn}((long long)({strip(x)}))"
    cg.use("tl::round_e2m1")
    if src.base == "float64":
        return f"tl::round_e2m1_f64({strip(x)})"
    return f"tl::round_e2m1((float)({strip(x)}))"


def address_of(cg: CudaDialect, ld: BufferLoad) -> str:
    """The byte address of a packed element that starts a byte (a tile origin handed to the
    tensor-core gemm templates); an element in a high nibble has no address."""
    from ...arith import Analyzer
    from ...ir.expr import binary, compare

    buf = ld.buffer
    flat: PrimExpr = IntImm(0)
    for k, i in enumerate(ld.indices):
        flat = binary("add", binary("mul", flat, buf.shape[k]), i) if k else i
    if buf.strides is not None or not Analyzer().can_prove(compare("eq", binary("floormod", flat, 2), 0)):
        raise no_address(buf, cg.cur_span)
    ptr = f"({cg.name(buf)} + (({strip(cg.offset(buf, ld.indices))}) >> 1))"
    cg.use("tl::ld_u4")  # tl/subbyte.h: the pair types
    if buf.dtype.is_integer:  # the tensor-core templates pick m16n8k64 .s4 / .u4 from the pointer type
        return f"reinterpret_cast<tl::{'int4x2_t' if buf.dtype.is_int else 'uint4x2_t'}*>{ptr}"
    return ptr
