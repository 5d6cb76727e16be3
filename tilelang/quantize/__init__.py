"""`tilelang.quantize`: helpers for quantized data.

`pack_int4` / `unpack_int4` / `pack_fp4` / `unpack_fp4` / `fp4_codes` / `fp4_values` convert
between torch tensors and the packed storage of the 4-bit dtypes (`T.int4`, `T.uint4`,
`T.float4_e2m1fn`) that kernel parameters take (docs/subbyte.md); `_tir_packed_to_unsigned_convert`
and its siblings (`quantization.py`) build the IR that decodes packed fields by hand, as public
programs with uint8 weight storage do. Importing this package
does not import torch.
"""

from .packing import FP4_VALUES, fp4_codes, fp4_values, pack_fp4, pack_int4, unpack_fp4, unpack_int4
from .quantization import (
    _tir_packed_int_to_int_convert,
    _tir_packed_to_signed_convert,
    _tir_packed_to_unsigned_convert,
    _tir_packed_to_unsigned_convert_with_zeros,
)

__all__ = [
    "_tir_packed_int_to_int_convert",
    "_tir_packed_to_signed_convert",
    "_tir_packed_to_unsigned_convert",
    "_tir_packed_to_unsigned_convert_with_zeros",
    "FP4_VALUES",
    "fp4_codes",
    "fp4_values",
    "pack_fp4",
    "pack_int4",
    "unpack_fp4",
    "unpack_int4",
]
