"""`from tilelang import tvm`: the few TVM names public TileLang programs use, over our own IR.

TileLang here has no TVM (DESIGN.md: pure-Python compiler, own IR). Programs written for
upstream TileLang often import `tvm` only for

* `tvm.DataType(x)` — a dtype (`.bits`, `.lanes`, `.itemsize`, `.type_code`, `.with_lanes(n)`,
  `.as_torch()`, and the predicates `is_float8`, `is_float4`, `is_float`, `is_int`, `is_uint`,
  `is_bool`, which work both as attributes and called: `dt.is_float8` and `dt.is_float8()`);
  it is a `str` (`"float16"`), accepted wherever TileLang takes a dtype;
* `tvm.tir.const(value, dtype=None)` / `tvm.tirx.const(...)` — an IR constant;
* `tvm.target.Target(target, host=None)` — a `tilelang.Target` (any spelling `target=` takes).

Any other name raises `TVMNameError` (an `unsupported` TileLangError and an AttributeError)
at the line that asks for it. Both `from tilelang import tvm` and `import tilelang.tvm as tvm`
work; nothing here imports TVM.
"""

from __future__ import annotations

from typing import Any

from . import target, tir, tirx
from ._shim import TVMNameError, unsupported
from .dtype import DataType

PROVIDED = "tilelang.tvm provides only DataType, tir.const, tirx.const and target.Target"


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise unsupported(name, PROVIDED)


__all__ = ["DataType", "TVMNameError", "target", "tir", "tirx"]
