"""Data types of the tile IR.

`DataType` is a `str` subclass so user code may pass either `T.float16` or the
string `"float16"`; both normalise to the same interned object. It knows its
width, its class (float / int / uint / bool) and its torch counterpart.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Any

_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "uint": "uint32",
    "short": "int16",
    "long": "int64",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float8_e4m3": "float8_e4m3fn",
    "e4m3_float8": "float8_e4m3fn",
    "e5m2_float8": "float8_e5m2",
    "handle": "handle",
}

_BASE = {
    "bool": ("bool", 8),
    "int4": ("int", 4),
    "uint4": ("uint", 4),
    "float4_e2m1fn": ("float", 4),
    "int8": ("int", 8),
    "int16": ("int", 16),
    "int32": ("int", 32),
    "int64": ("int", 64),
    "uint8": ("uint", 8),
    "uint16": ("uint", 16),
    "uint32": ("uint", 32),
    "uint64": ("uint", 64),
    "float16": ("float", 16),
    "bfloat16": ("float", 16),
    "float32": ("float", 32),
    "float64": ("float", 64),
    "float8_e4m3fn": ("float", 8),
    "float8_e5m2": ("float", 8),
    "tfloat32": ("float", 32),
    "handle": ("handle", 64),
}


class TypeCode(IntEnum):
    """DLPack data type codes (`DLDataTypeCode`), the values of `DataType.type_code`."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    BOOL = 6
    Float8E4M3FN = 10
    Float8E5M2 = 12


# base dtype (or kind) -> type code; bfloat16 and the fp8 formats have codes of their own
_TYPE_CODES = {
    "int": TypeCode.INT,
    "uint": TypeCode.UINT,
    "float": TypeCode.FLOAT,
    "handle": TypeCode.HANDLE,
    "bool": TypeCode.BOOL,
    "bfloat16": TypeCode.BFLOAT,
    "float8_e4m3fn": TypeCode.Float8E4M3FN,
    "float8_e5m2": TypeCode.Float8E5M2,
}

_VECTOR = re.compile(r"^(?P<base>[a-z0-9_]+?)x(?P<lanes>\d+)$")
_INTERNED: dict[str, DataType] = {}


class DataType(str):
    """An interned, str-like scalar or vector element type."""

    kind: str
    bits: int
    lanes: int
    base: str

    def __new__(cls, name: Any) -> DataType:
        if isinstance(name, DataType):
            return name
        key = _normalise_name(name)
        hit = _INTERNED.get(key)
        if hit is not None:
            return hit
        base, lanes = key, 1
        if key not in _BASE:
            m = _VECTOR.match(key)
            if not m or m.group("base") not in _BASE:
                raise TypeError(
                    f"unknown dtype {name!r} — use one of {', '.join(sorted(_BASE))} (or an alias like 'float', 'half')"
                )
            base, lanes = m.group("base"), int(m.group("lanes"))
        obj = super().__new__(cls, key)
        obj.kind, obj.bits = _BASE[base]
        obj.lanes = lanes
        obj.base = base
        _INTERNED[key] = obj
        return obj

    # -- classification -------------------------------------------------
    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_uint(self) -> bool:
        return self.kind == "uint"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_float8(self) -> bool:
        return self.base.startswith("float8")

    @property
    def is_half_like(self) -> bool:
        return self.base in ("float16", "bfloat16")

    @property
    def is_subbyte(self) -> bool:
        """4-bit types (int4, uint4, float4_e2m1fn): stored packed, two per byte (see `storage_bytes`)."""
        return self.bits < 8

    def is_float4(self) -> bool:
        """float4_e2m1fn (a method, as `tvm.DataType.is_float4()`)."""
        return self.base == "float4_e2m1fn"

    @property
    def bytes(self) -> int:
        """Bytes of one (vector) element, rounded up: 1 for a 4-bit scalar (its storage byte is shared)."""
        return (self.bits * self.lanes + 7) // 8

    def storage_bytes(self, count: int) -> int:
        """Bytes `count` consecutive elements occupy: ceil(count * bits * lanes / 8).

        4-bit types pack two elements per byte, the lower-indexed element in the low nibble
        (bits 0-3) — the order of PTX's packed s4/u4/e2m1 registers and `torch.float4_e2m1fn_x2`."""
        return (count * self.bits * self.lanes + 7) // 8

    @property
    def itemsize(self) -> int:
        """Bytes of one (vector) element, as `tvm.DataType.itemsize`."""
        return self.bytes

    @property
    def type_code(self) -> int:
        """The DLPack type code (`DataType.TypeCode`), as `tvm.DataType.type_code`."""
        return int(_TYPE_CODES[self.base if self.base in _TYPE_CODES else self.kind])

    def element_of(self) -> DataType:
        return DataType(self.base)

    def with_lanes(self, lanes: int) -> DataType:
        return DataType(self.base if lanes == 1 else f"{self.base}x{lanes}")

    # -- torch interop ----------------------------------------------------
    def as_torch(self):
        """The torch dtype of a tensor holding this type. Torch has no 4-bit integer type:
        int4 / uint4 / float4_e2m1fn are held packed in int8 tensors whose last dimension is
        half the logical one (docs/subbyte.md; the runtime also accepts uint8, and
        `torch.float4_e2m1fn_x2` for float4_e2m1fn)."""
        import torch

        try:
            return getattr(torch, _TORCH_NAMES[self.base])
        except (KeyError, AttributeError) as err:
            raise TypeError(f"dtype {self} has no torch equivalent") from err

    def __call__(self, value: Any = None, *, span=None):
        """`T.float32(x)` casts or makes a constant; `T.int32()` makes a scalar Var."""
        from .expr import Var, as_expr, cast

        if value is None:
            return Var("v", self, span=span)
        return cast(as_expr(value, self), self)

    def __repr__(self) -> str:
        return f"DataType({str.__str__(self)!r})"

    def __reduce__(self):
        return (DataType, (str(self),))


DataType.TypeCode = TypeCode  # as `tvm.DataType.TypeCode`

_TORCH_NAMES = {
    "bool": "bool",
    "int4": "int8",  # packed storage, two elements per byte (DataType.as_torch)
    "uint4": "int8",
    "float4_e2m1fn": "int8",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
}


def _normalise_name(name: Any) -> str:
    if isinstance(name, str):
        s = name.strip()
        return _ALIASES.get(s, s)
    if name is int:
        return "int32"
    if name is float:
        return "float32"
    if name is bool:
        return "bool"
    mod = type(name).__module__
    if mod.startswith("torch"):
        return str(name).removeprefix("torch.")
    if mod.startswith("numpy"):
        return str(name)
    raise TypeError(f"cannot interpret {name!r} as a dtype")


def dtype(x: Any) -> DataType:
    """Normalise a str, Python type, torch or numpy dtype into a `DataType`."""
    return DataType(x)


def from_torch(t) -> DataType:
    return DataType(str(t).removeprefix("torch."))


bool_ = DataType("bool")
int4 = DataType("int4")
uint4 = DataType("uint4")
float4_e2m1fn = DataType("float4_e2m1fn")
_PACKED_DOC = (
    "{name}: a 4-bit {what}, stored packed two per byte (element 2i in the low nibble, 2i+1 in the "
    "high nibble). Torch has no 4-bit tensor: pass an int8 or uint8 tensor{extra} whose last dimension "
    "is half the logical one (the logical last dimension must be even); `tilelang.quantize` packs "
    "and unpacks. Casts: {casts}. See docs/subbyte.md."
)
int4.__doc__ = _PACKED_DOC.format(
    name="int4", what="two's-complement integer (-8..7)", extra="", casts="from wider integers by wrapping to 4 bits"
)
uint4.__doc__ = _PACKED_DOC.format(
    name="uint4", what="unsigned integer (0..15)", extra="", casts="from wider integers by wrapping to 4 bits"
)
float4_e2m1fn.__doc__ = _PACKED_DOC.format(
    name="float4_e2m1fn",
    what="float (1 sign, 2 exponent, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives)",
    extra=" (or torch.float4_e2m1fn_x2)",
    casts="from floats round to nearest even, saturating to ±6 (NaN gives +6), as CUDA's __nv_cvt_float_to_fp4",
)
int8 = DataType("int8")
int16 = DataType("int16")
int32 = DataType("int32")
int64 = DataType("int64")
uint8 = DataType("uint8")
uint16 = DataType("uint16")
uint32 = DataType("uint32")
uint64 = DataType("uint64")
float16 = DataType("float16")
bfloat16 = DataType("bfloat16")
float32 = DataType("float32")
float64 = DataType("float64")
float8_e4m3fn = DataType("float8_e4m3fn")
float8_e5m2 = DataType("float8_e5m2")
tfloat32 = DataType("tfloat32")
handle = DataType("handle")
