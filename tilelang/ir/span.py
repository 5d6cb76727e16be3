"""Source spans: where in the user's kernel source an IR node came from.

Every IR node carries a `Span`. Spans are created by the frontend from the
bytecode position of the user statement being traced and survive every pass.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open source range; lines are 1-based, columns 0-based (like `ast`)."""

    file: str
    line: int
    col: int = 0
    end_line: int = 0
    end_col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


NO_SPAN = Span("<unknown>", 0, 0, 0, 0)
