"""User-facing errors. Every error raised for a user mistake carries a span and
prints as `file:line:col: error: what is wrong — how to fix it`, followed by the
offending source line with the range underlined."""

from __future__ import annotations

import linecache

from .ir.span import NO_SPAN, Span


class TileLangError(Exception):
    """Base class of all errors about user kernels."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, hint: str = "") -> None:
        self.message = message
        self.span = span if span is not None else NO_SPAN
        self.hint = hint
        super().__init__(self.render())

    def with_span(self, span: Span) -> TileLangError:
        """Attach a span if the error was raised without one (e.g. deep in a helper)."""
        if self.span is NO_SPAN or self.span.line == 0:
            self.span = span
            self.args = (self.render(),)
        return self

    def render(self) -> str:
        head = f"{self.span}: {self.kind}: {self.message}"
        if self.hint:
            head += f" — {self.hint}"
        src = linecache.getline(self.span.file, self.span.line) if self.span.line else ""
        if not src.strip():
            return head
        src = src.rstrip("\n")
        start = self.span.col
        end = self.span.end_col if self.span.end_line == self.span.line else len(src)
        end = max(end, start + 1)
        return f"{head}\n    {src}\n    {' ' * start}{'^' * (end - start)}"

    def __str__(self) -> str:
        return self.render()


class DSLError(TileLangError, ValueError):
    """A mistake in a kernel body found while tracing (unknown name, bad shapes...)."""


class IRComparisonError(DSLError):
    """`a == b` / `a != b` on IR expressions used as a Python bool (`if a == b`, `a in list`,
    `list.index(a)`): `==` builds a comparison node, it does not compare the nodes."""


class VerifyError(TileLangError):
    """A structural problem found by the verifier after tracing."""


class LayoutError(TileLangError):
    """Conflicting or impossible layouts found by layout inference."""


class UnsupportedError(TileLangError):
    """A feature that this target or this version does not implement."""

    kind = "unsupported"


class IndexLimitError(TileLangError, ValueError):
    """A run-time size beyond what the kernel was compiled to index or launch (raised by the
    launcher before anything runs; `backend/launch_limits.py`). One line: the span is the
    kernel's definition."""

    def render(self) -> str:
        head = f"{self.span}: {self.kind}: {self.message}"
        return f"{head} — {self.hint}" if self.hint else head


class ArgumentError(TypeError):
    """Bad run-time argument passed to a compiled kernel (names the parameter)."""


class ArgumentValueError(ValueError):
    """Bad run-time argument value (shape mismatch, inconsistent dimension)."""


class ArgumentOverflowError(OverflowError):
    """A run-time scalar outside the range of its parameter's dtype (names the parameter)."""


class UnknownNameError(DSLError, AttributeError):
    """`T.<name>` that the language does not define."""
