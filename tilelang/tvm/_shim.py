"""What the `tilelang.tvm` modules share: the error for a TVM name that has no counterpart
here, located at the user's line."""

from __future__ import annotations

import sys

from ..errors import UnsupportedError
from ..ir.span import NO_SPAN, Span


class TVMNameError(UnsupportedError, AttributeError):
    """`tilelang.tvm.<name>` that the compatibility module does not provide (also an
    AttributeError, so `hasattr` and `getattr(..., default)` behave as for any module)."""


def caller_span(depth: int = 2) -> Span:
    """The span of the expression executing `depth` frames up (the user's attribute access)."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return NO_SPAN
    while f is not None and f.f_globals.get("__name__", "").startswith(("tilelang.tvm", "importlib")):
        f = f.f_back
    if f is None:
        return NO_SPAN
    line, end_line, col, end_col = f.f_lineno, f.f_lineno, 0, 0
    try:
        pos = list(f.f_code.co_positions())[f.f_lasti // 2]
        if pos[0] is not None:
            line, end_line, col, end_col = pos[0], pos[1] or pos[0], pos[2] or 0, pos[3] or 0
    except (AttributeError, IndexError):  # Python < 3.11: line only
        pass
    return Span(f.f_code.co_filename, line, col, end_line, end_col)


def unsupported(qualname: str, provided: str, depth: int = 3) -> TVMNameError:
    """The error for `tilelang.tvm.<qualname>`; `provided` says what that namespace has."""
    return TVMNameError(
        f"tilelang.tvm.{qualname} — TileLang here has no TVM; {provided}",
        caller_span(depth),
        "use the tilelang / tilelang.language API for anything else",
    )
