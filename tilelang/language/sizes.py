"""Compile-time sizes: tensor dimensions, grid and thread extents, parallel loop extents.

Requires nothing. Guarantees: `size(value, what)` returns the value as the builders use it
(a numpy integer becomes an int) when it is an integer ≥ 0 or an integer IR expression whose
value is not known yet; a float (1024.7 is never truncated to 1024), a bool or a negative
constant is a `DSLError` saying which size is wrong. Inside a trace the error gets the span
of the user statement; outside one (a lazy `@T.prim_func` signature, evaluated by the
factory) the span of the user line that called the builder.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import DSLError
from ..ir.expr import FloatImm, IntImm, PrimExpr
from ..ir.span import Span

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def caller_span() -> Span | None:
    """The position of the innermost frame outside the tilelang package (the user's line)."""
    from ..frontend.builder import Builder, _position

    b = Builder.current()
    if b is not None:
        here = b.span_here()
        if here.line:
            return here
    f = sys._getframe(1)
    while f is not None:
        if not os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE + os.sep):
            return _position(f.f_code, f.f_lasti)
        f = f.f_back
    return None


def size(value: Any, what: str, minimum: int = 0) -> Any:
    """`value` checked as a size (see the module docstring); `minimum` 1 for thread counts.
    Values that are not numbers (a `T.alloc_var`, an expression) pass through unchanged."""
    v = value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value
    raw = v.value if isinstance(v, (IntImm, FloatImm)) else v
    if isinstance(raw, (bool, float)):
        kind = "a float" if isinstance(raw, float) else "a bool"
        raise DSLError(
            f"{what} is {raw!r}, {kind}; sizes must be integers ≥ {minimum}",
            caller_span(),
            "sizes are never rounded: pass an int",
        )
    if isinstance(raw, int):
        if raw < minimum:
            raise DSLError(f"{what} is {raw}; sizes must be integers ≥ {minimum}", caller_span())
        return v
    if isinstance(v, PrimExpr) and v.dtype.is_float:
        raise DSLError(f"{what} is `{v}`, a {v.dtype} value; sizes must be integers", caller_span())
    return v
