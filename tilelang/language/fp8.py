"""FP8 helpers (`tilelang.language.fp8`).

`determine_fp8_type(fmt)` picks the platform's 8-bit float dtype for a format
name: on CUDA (and CPU-only torch builds) "e4m3" is `float8_e4m3fn` (no
infinities, NaN = 0x7f/0xff, largest finite 448) and "e5m2" is `float8_e5m2`
(IEEE-like, with infinities). ROCm's FNUZ variants have no backend here, so a
ROCm torch build gets an error that says so instead of a dtype no target can
compile. `determine_torch_fp8_type` is the same choice as a torch dtype.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import UnsupportedError
from ..ir.dtype import DataType, float8_e4m3fn, float8_e5m2

__all__ = ["determine_fp8_type", "determine_torch_fp8_type", "float8_e4m3fn", "float8_e5m2"]

_FORMATS = {"e4m3": float8_e4m3fn, "e5m2": float8_e5m2}


def determine_fp8_type(fp8_format: Literal["e4m3", "e5m2"] = "e4m3") -> DataType:
    """The fp8 dtype of format `fp8_format` ("e4m3" or "e5m2") for this platform."""
    if fp8_format not in _FORMATS:
        raise ValueError(f"Unsupported FP8 format: {fp8_format!r} — use 'e4m3' or 'e5m2'")
    if _torch_is_rocm():
        raise UnsupportedError(
            f"determine_fp8_type({fp8_format!r}): this torch is a ROCm build, whose fp8 types "
            "(float8_e4m3fnuz / float8_e5m2fnuz on gfx94x) have no TileLang backend here",
            None,
            "use a CUDA or CPU build of torch; the CUDA (sm_80, sm_90a) and C backends use float8_e4m3fn / float8_e5m2",
        )
    return _FORMATS[fp8_format]


def determine_torch_fp8_type(fp8_format: Literal["e4m3", "e5m2"] = "e4m3") -> Any:
    """`determine_fp8_type(fp8_format)` as a torch dtype."""
    return determine_fp8_type(fp8_format).as_torch()


def _torch_is_rocm() -> bool:
    import torch

    return getattr(torch.version, "hip", None) is not None
