"""`tilelang.tvm.tirx` — upstream TileLang's name for the TIR namespace; the same `const`."""

from __future__ import annotations

from typing import Any

from ._shim import unsupported
from .tir import const


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise unsupported(f"tirx.{name}", "tilelang.tvm.tirx provides only const")


__all__ = ["const"]
