"""The trace builder: a stack of frames collecting the statements a kernel body emits.

Requires: a rewritten kernel function (see ast_rewrite.py) executing under
`Builder.active()`. Guarantees: every emitted statement lands in the innermost
open frame, every IR node created while tracing gets the span of the user
statement being executed, and frames close into well-formed IR.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import DSLError
from ..ir import node as ir_node
from ..ir.buffer import Buffer, set_store_hook
from ..ir.expr import Var
from ..ir.span import NO_SPAN, Span
from ..ir.stmt import BufferStore, IfThenElse, Stmt, seq

_local = threading.local()


@dataclass
class Frame:
    kind: str  # function | kernel | for | if | else | while | macro
    stmts: list = field(default_factory=list)
    data: Any = None

    def body(self) -> Stmt:
        return seq(*self.stmts) if self.stmts else seq()


class Builder:
    """Collects IR while a kernel function is traced. One per trace."""

    def __init__(self, *, eager: bool = False) -> None:
        self.frames: list[Frame] = [Frame("function")]
        # 'ir' for loops that are traced into IR, 'py' for Python meta-loops;
        # decides what `break`/`continue` mean at trace time.
        self.loop_kinds: list[str] = []
        self.user_codes: set = set()  # ids of user code objects (hashing code objects is slow)
        self.eager = eager
        self.params: dict[str, Any] = {}  # eager: param name -> Buffer/Var (annotated in body)
        self.outputs: list[Buffer] = []  # eager: T.empty results in creation order
        self.consts: list[Var] = []  # T.const symbols
        self.dynamics: list[Var] = []  # T.dynamic symbols
        self.unnamed: set[int] = set()  # ids of freshly allocated buffers awaiting a name
        self.name_counts: dict[str, int] = {}
        self.attrs: dict[str, Any] = {}
        self.return_span: Span | None = None  # the `return` statement executed last
        self._prev_provider = None
        self._prev_builder = None

    # -- activation ----------------------------------------------------------
    @staticmethod
    def current() -> Builder | None:
        return getattr(_local, "builder", None)

    @staticmethod
    def require(what: str) -> Builder:
        b = getattr(_local, "builder", None)
        if b is None:
            from ..jit.exceptions import JITNoBuilderError

            raise JITNoBuilderError(
                f"{what} can only be used inside a kernel being traced (a @tilelang.jit function body)"
            )
        return b

    def __enter__(self) -> Builder:
        self._prev_builder = getattr(_local, "builder", None)
        _local.builder = self
        self._prev_provider = ir_node.set_span_provider(self.span_here)
        set_store_hook(_store)
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.builder = self._prev_builder
        ir_node.set_span_provider(self._prev_provider)

    # -- spans -----------------------------------------------------------------
    def span_here(self) -> Span:
        """Span of the user statement currently executing (innermost user frame)."""
        f = sys._getframe(1)
        codes = self.user_codes
        while f is not None:
            code = f.f_code
            if id(code) in codes:
                return _position(code, f.f_lasti)
            f = f.f_back
        return NO_SPAN

    # -- frames ------------------------------------------------------------------
    @property
    def top(self) -> Frame:
        return self.frames[-1]

    def emit(self, stmt: Stmt) -> None:
        self.frames[-1].stmts.append(stmt)

    def push(self, kind: str, data: Any = None) -> Frame:
        fr = Frame(kind, [], data)
        self.frames.append(fr)
        return fr

    def pop(self, kind: str) -> Frame:
        fr = self.frames.pop()
        if fr.kind != kind:  # pragma: no cover - internal invariant
            raise RuntimeError(f"frame mismatch: closing {kind}, open {fr.kind}")
        return fr

    def in_kernel(self) -> bool:
        return any(f.kind == "kernel" for f in self.frames)

    def require_kernel(self, what: str) -> None:
        if not self.in_kernel():
            raise DSLError(
                f"{what} must be used inside `with T.Kernel(...)`",
                self.span_here(),
                "move it into the kernel body",
            )

    def fresh_name(self, base: str) -> str:
        n = self.name_counts.get(base, 0)
        self.name_counts[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def attach_else(self) -> IfThenElse:
        stmts = self.top.stmts
        if not stmts or not isinstance(stmts[-1], IfThenElse):  # pragma: no cover
            raise RuntimeError("else without if")
        return stmts.pop()


_POSITIONS: dict = {}


def _position(code: Any, lasti: int) -> Span:
    hit = _POSITIONS.get(id(code))
    if hit is None or hit[0] is not code:
        if len(_POSITIONS) > 4096:
            _POSITIONS.clear()
        hit = (code, list(code.co_positions()) if hasattr(code, "co_positions") else None)
        _POSITIONS[id(code)] = hit  # keeps `code` alive, so its id cannot be reused
    pos = hit[1]
    if pos:
        i = min(max(lasti, 0) // 2, len(pos) - 1)
        line, end_line, col, end_col = pos[i]
        if line is not None:
            return Span(code.co_filename, line, col or 0, end_line or line, end_col or 0)
    return Span(code.co_filename, code.co_firstlineno, 0, code.co_firstlineno, 0)


def _store(buffer: Buffer, indices: tuple, value: Any) -> None:
    b = Builder.require(f"`{buffer.name}[...] = ...`")
    b.require_kernel(f"storing into `{buffer.name}`")
    b.emit(BufferStore(buffer, indices, value))
