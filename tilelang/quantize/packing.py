"""Packing helpers for the 4-bit dtypes (`T.int4`, `T.uint4`, `T.float4_e2m1fn`).

Torch has no 4-bit tensor, so a kernel parameter of a 4-bit dtype takes a byte tensor
(int8 or uint8; `torch.float4_e2m1fn_x2` too for float4_e2m1fn) whose last dimension is
half the logical one: element 2i of a row sits in the low nibble of byte i, element 2i+1 in
the high nibble (docs/subbyte.md). These helpers convert between that storage and ordinary
tensors, with the rounding the kernels use:

- `pack_int4(x)` / `unpack_int4(p)`: signed -8..7 (`signed=False`: uint4, 0..15);
- `pack_fp4(x)` / `unpack_fp4(p)`: float4_e2m1fn — floats round to nearest, ties to even,
  saturating at ±6, NaN to +6 (CUDA's `__nv_cvt_float_to_fp4`); `fp4_codes(x)` gives the
  4-bit codes without packing, `fp4_values(codes)` the floats of codes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FP4_VALUES", "fp4_codes", "fp4_values", "pack_fp4", "pack_int4", "unpack_fp4", "unpack_int4"]

# float4_e2m1fn: code & 7 indexes the magnitude, bit 3 is the sign
FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)

# |x| above each threshold moves one code up; `>=` where the tie goes to the upper (even) code
_FP4_STEPS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True), (5.0, False))


def _pack_codes(codes: Any) -> Any:
    import torch

    if codes.dim() == 0 or codes.shape[-1] % 2:
        raise ValueError(
            f"packing 4-bit values needs an even last dimension (two per byte), got shape {list(codes.shape)}"
        )
    c = codes.to(torch.int16) & 15
    packed = c[..., 0::2] | (c[..., 1::2] << 4)
    return torch.where(packed > 127, packed - 256, packed).to(torch.int8)


def _unpack_codes(packed: Any) -> Any:
    import torch

    if packed.dtype not in (torch.int8, torch.uint8) and str(packed.dtype) != "torch.float4_e2m1fn_x2":
        raise TypeError(f"packed 4-bit data must be an int8 or uint8 tensor, got {packed.dtype}")
    b = packed.view(torch.uint8).to(torch.int16)
    lo, hi = b & 15, (b >> 4) & 15
    return torch.stack((lo, hi), dim=-1).flatten(-2)


def pack_int4(x: Any, signed: bool = True) -> Any:
    """Integers (-8..7, or 0..15 with `signed=False`) → the packed int8 tensor a `T.int4`
    (`T.uint4`) parameter takes; the last dimension halves. Values out of range are an error."""
    import torch

    x = torch.as_tensor(x)
    if x.is_floating_point() or x.is_complex():
        raise TypeError(f"pack_int4 takes an integer tensor, got {x.dtype} — round it first")
    lo, hi = (-8, 7) if signed else (0, 15)
    if x.numel() and (int(x.min()) < lo or int(x.max()) > hi):
        raise ValueError(
            f"pack_int4: values must lie in [{lo}, {hi}] for {'int4' if signed else 'uint4'}, "
            f"got [{int(x.min())}, {int(x.max())}]"
        )
    return _pack_codes(x)


def unpack_int4(packed: Any, signed: bool = True) -> Any:
    """The packed int8/uint8 storage of `T.int4` (`T.uint4`) → an int8 tensor of the values;
    the last dimension doubles."""
    import torch

    c = _unpack_codes(packed)
    if signed:
        c = (c ^ 8) - 8
    return c.to(torch.int8)


def fp4_codes(x: Any) -> Any:
    """The float4_e2m1fn codes (uint8, 0..15) of floats, rounded as the kernels round."""
    import torch

    x = torch.as_tensor(x)
    a = x.to(torch.float64).abs()
    code = torch.zeros(x.shape, dtype=torch.int16, device=x.device)
    for t, tie_up in _FP4_STEPS:
        code += (a >= t) if tie_up else (a > t)
    nan = torch.isnan(a)
    code = torch.where(nan, torch.full_like(code, 7), code)
    sign = torch.signbit(x.to(torch.float64)) & ~nan
    return (code | (sign.to(torch.int16) << 3)).to(torch.uint8)


def fp4_values(codes: Any) -> Any:
    """float32 values of float4_e2m1fn codes (0..15)."""
    import torch

    c = torch.as_tensor(codes).to(torch.int64)
    table = torch.tensor(FP4_VALUES, dtype=torch.float32, device=c.device)
    mag = table[c & 7]
    return torch.where((c & 8) != 0, -mag, mag)


def pack_fp4(x: Any) -> Any:
    """Floats → the packed int8 tensor a `T.float4_e2m1fn` parameter takes (rounded to
    nearest even, saturating at ±6); the last dimension halves."""
    return _pack_codes(fp4_codes(x))


def unpack_fp4(packed: Any) -> Any:
    """Packed float4_e2m1fn storage (int8 / uint8 / float4_e2m1fn_x2) → float32 values; the
    last dimension doubles."""
    return fp4_values(_unpack_codes(packed))
