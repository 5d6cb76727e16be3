"""The statement and expression walk shared by every C-family dialect (see the package docstring).

Requires: a PrimFunc after its target's pipeline (no tile ops left) and a dialect subclass
supplying the tables and hooks the package docstring lists.
Guarantees: names, `// file:line` markers, the line -> span map, structured statements
(blocks, lets, while, if, break, continue), comparisons, logical operators, selects and
the operand parenthesization are printed the same way on every target; what differs is
asked of the dialect.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from typing import Any

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import DataType
from ...ir.expr import And, BinaryOp, Broadcast, Call, Cast, Compare, IntImm, Not, Or, Select, StringImm, Var, const_int
from ...ir.function import PrimFunc
from ...ir.span import NO_SPAN, Span
from ...ir.stmt import Break, Continue, IfThenElse, KernelLaunch, LetStmt, SeqStmt, Stmt, TileOp, While
from .text import CMP, LEFT_ASSOCIATIVE, PREC, c_string, ident, strip


def packed_no_address(buf: Buffer, span: Span | None) -> UnsupportedError:
    """The error for the address of one element of a packed 4-bit buffer."""
    return UnsupportedError(
        f"`{buf.name}` holds packed {buf.dtype} (two elements per byte): one element has no address "
        "— read and write its elements, or copy the tile into a wider dtype first",
        span,
    )


class LineSpans:
    """`span_of_line` for a generated source record with `line_spans` (generated line i, 1-based,
    -> Span | None at [i - 1])."""

    line_spans: list

    def span_of_line(self, line: int) -> Span | None:
        """The user span of the statement that generated line `line`."""
        i = min(max(line, 1), len(self.line_spans)) - 1
        while i >= 0:
            if self.line_spans[i] is not None:
                return self.line_spans[i]
            i -= 1
        return None


class CFamilyPrinter(ABC):
    """One translation unit of one PrimFunc; a dialect subclass sets the tables below."""

    TARGET = "C-family"  # the target in error messages: "the C backend cannot generate ..."
    INDENT = "    "  # one level of indentation
    RESERVED: frozenset = frozenset()  # identifiers a user name never takes
    TL = "tl_"  # how our runtime library's functions are spelled: tl_philox_* / tl::philox_*
    UNLOWERED_HINT = ""  # the hint of the error for a tile op that reached the generator
    INT64_LITERAL = ("INT64_C({})", "UINT64_C({})")  # (signed, unsigned) 64-bit literal formats
    CALLS: dict = {}  # intrinsic op -> handler method name (called with the Call)
    CALL_PREFIXES: tuple = ()  # (op prefix, handler method name), tried after CALLS

    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.lines: list[str] = []
        self.spans: list[Span | None] = []
        self.depth = 0
        self.names: dict[int, str] = {}
        self.used: set[str] = set(self.RESERVED)
        self.last_loc: tuple | None = None
        self.cur_span: Span | None = None
        self.nonneg: set[Var] = set()  # variables known to be >= 0 (cheap `/` and `%` for floor division)
        self.scalar_bufs: set[Buffer] = set()  # local.var buffers: plain scalar variables

    # -- output ----------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.lines.append(self.INDENT * self.depth + text if text else "")
        self.spans.append(self.cur_span)

    def at(self, span: Span | None) -> None:
        """Note the source line of the statements that follow (a `// file:line` comment)."""
        if span is None or span is NO_SPAN or not span.line:
            return
        self.cur_span = span
        loc = (span.file, span.line)
        if loc != self.last_loc:
            self.last_loc = loc
            self.emit(f"// {os.path.basename(span.file)}:{span.line}")

    def name(self, obj: Var | Buffer) -> str:
        hit = self.names.get(id(obj))
        if hit is not None:
            return hit
        return self.fresh(obj.name, obj)

    def fresh(self, hint: str, obj: Any = None, internal: bool = False) -> str:
        """A name not used yet: `hint` made an identifier (as is when `internal`), suffixed _1, _2, ..."""
        base = hint if internal else ident(hint)
        n, k = base, 0
        while n in self.used:
            k += 1
            n = f"{base}_{k}"
        self.used.add(n)
        if obj is not None:
            self.names[id(obj)] = n
        return n

    @abstractmethod
    def run(self) -> Any:
        """The translation unit: header, entry signature and body, as the target's source record."""

    def use(self, fn: str) -> None:
        """Note that the source calls library function `fn` (a dialect with headers includes its header)."""
        return None

    def source_text(self) -> tuple[str, list]:
        """The emitted lines as one text, and the span of each line (a line written with embedded
        newlines counts as several)."""
        spans: list = []
        for line, sp in zip(self.lines, self.spans):
            spans.extend([sp] * (line.count("\n") + 1))
        return "\n".join(self.lines) + "\n", spans

    # -- dialect tables as hooks -----------------------------------------------------------
    @abstractmethod
    def value_type(self, dt: DataType) -> str:
        """The C type an expression of `dt` is computed in."""

    @abstractmethod
    def binary_infix(self, e: BinaryOp) -> str | None:
        """The infix operator BinaryOp `e` prints as at its top level (None: a call)."""

    @abstractmethod
    def offset(self, buf: Buffer, indices: tuple) -> str:
        """The flattened element offset of `buf[indices]`."""

    # -- statements -------------------------------------------------------------------
    def body(self, s: Stmt | None) -> None:
        """The statements of a braced block (a SeqStmt's elements inline)."""
        if s is None:
            return
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.stmt(x)
        else:
            self.stmt(s)

    def block(self, s: Stmt | None) -> None:
        """`s` one level deeper."""
        self.depth += 1
        self.body(s)
        self.depth -= 1

    def stmt(self, s: Stmt) -> None:
        self.at(s.span)
        fn = getattr(self, "s_" + type(s).__name__, None)
        if fn is None:
            if isinstance(s, TileOp):
                raise UnsupportedError(
                    f"tile op {type(s).__name__} reached the {self.TARGET} code generator unlowered",
                    s.span,
                    self.UNLOWERED_HINT,
                )
            raise UnsupportedError(f"the {self.TARGET} backend cannot generate {type(s).__name__}", s.span)
        fn(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        self.emit("{")
        self.block(s)
        self.emit("}")

    def s_KernelLaunch(self, s: KernelLaunch) -> None:
        raise UnsupportedError("T.Kernel cannot be nested", s.span)

    def s_LetStmt(self, s: LetStmt) -> None:
        self.emit(f"const {self.value_type(s.var.dtype)} {self.name(s.var)} = {strip(self.expr(s.value))};")
        if s.var.dtype.is_integer and self.is_nonneg(s.value):
            self.nonneg.add(s.var)

    def while_cond(self, cond: Any) -> str:
        """The condition of a `while` head."""
        return strip(self.expr(cond))

    def s_While(self, s: While) -> None:
        self.emit(f"while ({self.while_cond(s.cond)}) {{")
        self.block(s.body)
        self.emit("}")

    def s_IfThenElse(self, s: IfThenElse) -> None:
        self.emit(f"if ({strip(self.expr(s.cond))}) {{")
        self.block(s.then_body)
        if s.else_body is not None:
            self.emit("} else {")
            self.block(s.else_body)
        self.emit("}")

    def s_Break(self, s: Break) -> None:
        self.emit("break;")

    def s_Continue(self, s: Continue) -> None:
        self.emit("continue;")

    # -- memory references ---------------------------------------------------------------
    def ref(self, buf: Buffer, indices: tuple) -> str:
        """The lvalue of `buf[indices]` (storage type)."""
        if buf in self.scalar_bufs:
            return self.name(buf)
        if buf.dtype.bits < 8:
            raise packed_no_address(buf, self.cur_span)
        return f"{self.name(buf)}[{strip(self.offset(buf, indices))}]"

    def needs_i64(self, buf: Buffer) -> bool:
        """True if an element offset of `buf` may not fit in 32 bits."""
        dims = buf.static_shape
        return dims is None or math.prod(dims) >= 2**31

    # -- expressions ------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        fn = getattr(self, "e_" + type(e).__name__, None)
        if fn is None:
            raise UnsupportedError(f"the {self.TARGET} backend cannot generate expression {type(e).__name__}",
                                   self.cur_span)  # fmt: skip
        return fn(e)

    def e_Var(self, e: Var) -> str:
        return self.name(e)

    def e_StringImm(self, e: StringImm) -> str:
        return c_string(e.value)

    def e_Broadcast(self, e: Broadcast) -> str:
        return self.expr(e.value)

    def e_Select(self, e: Select) -> str:
        return f"({strip(self.expr(e.cond))} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def e_IntImm(self, e: IntImm) -> str:
        v, dt = e.value, e.dtype
        if dt.is_bool:
            return "true" if v else "false"
        if dt.bits == 64:
            fmt = self.INT64_LITERAL[dt.is_uint]
            return self.long_literal(fmt.format(v) if v > -(2**63) else f"(-{fmt.format(2**63 - 1)} - 1)", v)
        if dt.is_uint and dt.bits == 32:
            return f"{v}u"
        if v == -(2**31):
            return "(-2147483647 - 1)"
        if dt.bits < 32:
            return self.short_literal(dt, v)
        return f"({v})" if v < 0 else str(v)

    def long_literal(self, text: str, v: int) -> str:
        """A 64-bit literal `text` of value `v` as an operand."""
        return text

    def short_literal(self, dt: DataType, v: int) -> str:
        """A literal of an integer type narrower than int."""
        return f"({v})" if v < 0 else str(v)

    def e_Cast(self, e: Cast) -> str:
        x = self.expr(e.value)
        if e.value.dtype.element_of() is e.dtype.element_of():
            return x
        return self.convert(e.value, e.dtype, x)

    @abstractmethod
    def convert(self, value: Any, dst: DataType, x: str) -> str:
        """`value` (printed `x`) converted to a different dtype `dst`."""

    def printf_conversion(self, dt: DataType, x: str) -> tuple[str, str]:
        """The printf conversion and argument that print a value of `dt` (printed `x`)."""
        if dt.is_float:
            return self.printf_float(dt, x)
        if dt.is_bool:
            return "%d", f"(int)({x})"
        if dt.is_uint:
            return "%llu", f"(unsigned long long)({x})"
        return "%lld", f"(long long)({x})"

    def printf_float(self, dt: DataType, x: str) -> tuple[str, str]:
        """The printf conversion and argument of a float value (full precision of its format)."""
        return ("%.17g" if dt.bits == 64 else "%.9g"), f"(double)({x})"

    def e_Compare(self, e: Compare) -> str:
        a, b = self.operands(e, CMP[e.op])
        return f"({a} {CMP[e.op]} {b})"

    def e_And(self, e: And) -> str:
        a, b = self.operands(e, "&&")
        return f"({a} && {b})"

    def e_Or(self, e: Or) -> str:
        a, b = self.operands(e, "||")
        return f"({a} || {b})"

    def e_Not(self, e: Not) -> str:
        return f"(!{self.expr(e.a)})"

    def infix_op(self, e: Any) -> str | None:
        """The operator `e` prints as at its top level (None: an atom such as a call)."""
        if isinstance(e, BinaryOp):
            return self.binary_infix(e)
        if isinstance(e, Compare):
            return CMP[e.op]
        if isinstance(e, And):
            return "&&"
        if isinstance(e, Or):
            return "||"
        return None

    def operands(self, e: Any, op: str) -> tuple[str, str]:
        """Both operands of infix `op`, without parentheses precedence makes redundant."""
        p = PREC[op]
        out = []
        for child, right in ((e.a, False), (e.b, True)):
            t = self.expr(child)
            cop = self.infix_op(child)
            if cop is not None and (PREC[cop] > p or (PREC[cop] == p and not right and op in LEFT_ASSOCIATIVE)):
                t = strip(t)
            out.append(t)
        return out[0], out[1]

    def is_nonneg(self, e: Any) -> bool:
        """True if the integer expression `e` can never be negative (so C's truncating `/`
        and `%` equal floor division). Loads are unknown; a narrowing cast may wrap."""
        if isinstance(e, IntImm):
            return e.value >= 0
        if isinstance(e, Var):
            return e in self.nonneg or e.dtype.is_uint
        if isinstance(e, Cast):
            return (
                e.dtype.is_integer
                and e.value.dtype.is_integer
                and self.is_nonneg(e.value)
                and (
                    e.dtype.bits > e.value.dtype.bits
                    or (e.dtype.bits == e.value.dtype.bits and e.dtype.kind == e.value.dtype.kind)
                )
            )
        if isinstance(e, BinaryOp):
            if e.op == "floormod":
                return self.is_nonneg(e.b) and const_int(e.b) != 0
            if e.op in ("add", "mul", "floordiv", "div", "min", "max", "shr", "bitor", "bitxor"):
                return self.is_nonneg(e.a) and self.is_nonneg(e.b)
            if e.op == "bitand":
                return self.is_nonneg(e.a) or self.is_nonneg(e.b)
        return False

    # -- calls --------------------------------------------------------------------------
    def e_Call(self, e: Call) -> str:
        handler = self.CALLS.get(e.op)
        if handler is None:
            handler = next((h for prefix, h in self.CALL_PREFIXES if e.op.startswith(prefix)), "call_other")
        return getattr(self, handler)(e)

    def call_other(self, e: Call) -> str:
        """A call none of the dialect's CALLS / CALL_PREFIXES names (math functions)."""
        raise self.unsupported_call(e)

    def unsupported_call(self, e: Call) -> UnsupportedError:
        return UnsupportedError(f"intrinsic `{e.op}` is not supported by the {self.TARGET} backend",
                                e.span if e.span.line else self.cur_span)  # fmt: skip

    def call_args(self, e: Call, first: int = 0) -> str:
        """The arguments of `e` from `first` on, comma-separated."""
        return ", ".join(strip(self.expr(a)) for a in e.args[first:])

    def call_library(self, e: Call) -> str:
        """`tl.<fn>(args)`: our runtime's function `fn` (T.rng_* Philox draws, CPU gemms)."""
        fn = self.TL + e.op[3:]
        self.use(fn)
        return f"{fn}({self.call_args(e)})"

    def call_extern(self, e: Call) -> str:
        """T.call_extern: (name, void, *args)."""
        self.use(e.args[0].value)  # on CUDA: a tl:: function of our headers, called by name
        return f"{e.args[0].value}({self.call_args(e, 2)})"

    def call_address_of(self, e: Call) -> str:
        ld = e.args[0]
        return f"(&{self.ref(ld.buffer, ld.indices)})"

    def call_if_then_else(self, e: Call) -> str:
        xs = [self.expr(a) for a in e.args]
        return f"({strip(xs[0])} ? {xs[1]} : {xs[2]})"
