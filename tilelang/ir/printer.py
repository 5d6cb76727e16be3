"""Readable, deterministic Python-like rendering of IR.

Used for golden tests, `TL_ENABLE_DUMP_IR`, error messages and as the input
of cache keys, so it must be deterministic and injective up to renaming:
distinct Vars/Buffers that share a name get numeric suffixes.
"""

from __future__ import annotations

from typing import Any

from .buffer import Buffer, BufferRegion, Range
from .expr import (
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Compare,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Var,
)
from .node import Node
from .stmt import (
    Allocate,
    AnnotateLayout,
    Atomic,
    Break,
    BufferStore,
    Continue,
    Copy,
    CumSum,
    DeviceAssert,
    Evaluate,
    Fill,
    FinalizeReducer,
    For,
    Gemm,
    Hint,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Print,
    Reduce,
    ReducerInit,
    ReducerUpdate,
    SeqStmt,
    Stmt,
    SyncOp,
    TmaCopy,
    WarpSpecialize,
    While,
)

_BIN = {
    "add": ("+", 4),
    "sub": ("-", 4),
    "mul": ("*", 5),
    "div": ("/", 5),
    "floordiv": ("//", 5),
    "floormod": ("%", 5),
    "bitand": ("&", 2),
    "bitor": ("|", 1),
    "bitxor": ("^", 1),
    "shl": ("<<", 3),
    "shr": (">>", 3),
}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Printer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.lines: list[str] = []
        self.line_sources: list[int] = []  # per printed line: the source line of its statement (0: none)
        self._source_line = 0

    # -- naming ------------------------------------------------------------
    def name(self, obj: Var | Buffer) -> str:
        key = id(obj)
        hit = self.names.get(key)
        if hit is not None:
            return hit
        base = obj.name or "v"
        n, k = base, 0
        while n in self.used:
            k += 1
            n = f"{base}_{k}"
        self.used.add(n)
        self.names[key] = n
        return n

    # -- expressions -------------------------------------------------------
    def expr(self, e: Any, prec: int = 0) -> str:
        if isinstance(e, (int, float, bool, str)) or e is None:
            return repr(e)
        if isinstance(e, Buffer):
            return self.name(e)
        if isinstance(e, Var):
            return self.name(e)
        if isinstance(e, IntImm):
            if e.dtype.is_bool:
                return "True" if e.value else "False"
            return str(e.value) if e.dtype == "int32" else f"T.{e.dtype}({e.value})"
        if isinstance(e, FloatImm):
            s = repr(e.value) if e.value == e.value and abs(e.value) != float("inf") else f"float('{e.value}')"
            return s if e.dtype == "float32" else f"T.{e.dtype}({s})"
        if isinstance(e, StringImm):
            return repr(e.value)
        if isinstance(e, BinaryOp):
            if e.op in ("min", "max"):
                return f"T.{e.op}({self.expr(e.a)}, {self.expr(e.b)})"
            sym, p = _BIN[e.op]
            s = f"{self.expr(e.a, p)} {sym} {self.expr(e.b, p + 1)}"
            return f"({s})" if p < prec else s
        if isinstance(e, Compare):
            s = f"{self.expr(e.a, 3)} {_CMP[e.op]} {self.expr(e.b, 3)}"
            return f"({s})" if prec > 0 else s
        if isinstance(e, And):
            return f"({self.expr(e.a, 1)} and {self.expr(e.b, 1)})"
        if isinstance(e, Or):
            return f"({self.expr(e.a, 1)} or {self.expr(e.b, 1)})"
        if isinstance(e, Not):
            return f"(not {self.expr(e.a, 6)})"
        if isinstance(e, Cast):
            return f"T.cast({self.expr(e.value)}, {e.dtype!s})"
        if isinstance(e, Select):
            return f"T.if_then_else({self.expr(e.cond)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})"
        if isinstance(e, Call):
            args = ", ".join(self.expr(a) for a in e.args)
            return f"T.{e.op}({args})" + ("" if e.dtype == "float32" else f":{e.dtype}")
        if isinstance(e, BufferLoad):
            return f"{self.name(e.buffer)}[{', '.join(self.expr(i) for i in e.indices)}]"
        if isinstance(e, Ramp):
            return f"T.ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})"
        if isinstance(e, Broadcast):
            return f"T.broadcast({self.expr(e.value)}, {e.lanes})"
        if isinstance(e, BufferRegion):
            return self.region(e)
        if isinstance(e, (tuple, list)):
            return "(" + ", ".join(self.expr(x) for x in e) + ("," if len(e) == 1 else "") + ")"
        if isinstance(e, PrimExpr):
            return f"<{type(e).__name__}>"
        return repr(e)

    def region(self, r: BufferRegion) -> str:
        parts = []
        for rg in r.region:
            parts.append(self.range(rg))
        return f"{self.name(r.buffer)}[{', '.join(parts)}]"

    def range(self, rg: Range) -> str:
        if isinstance(rg.extent, IntImm) and rg.extent.value == 1:
            return self.expr(rg.begin)
        return f"{self.expr(rg.begin)}:{self.expr(rg.begin + rg.extent)}"

    def shape(self, shape: tuple) -> str:
        return "(" + ", ".join(self.expr(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"

    # -- statements --------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)
        self.line_sources.append(self._source_line)

    def stmt(self, s: Stmt | None, d: int) -> None:
        if s is None:
            return
        outer = self._source_line
        span = getattr(s, "span", None)
        if span is not None and span.line:
            self._source_line = span.line
        try:
            self._stmt(s, d)
        finally:
            self._source_line = outer

    def _stmt(self, s: Stmt, d: int) -> None:
        if isinstance(s, SeqStmt):
            if not s.stmts:
                self.emit(d, "pass")
            for x in s.stmts:
                self.stmt(x, d)
            return
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            fields = ", ".join(
                f"{k}={self.expr(v)}" for k, v in vars(s).items() if k != "span" and not isinstance(v, Stmt)
            )
            self.emit(d, f"T.{type(s).__name__}({fields})")
            return
        m(s, d)

    def s_BufferStore(self, s: BufferStore, d: int) -> None:
        idx = ", ".join(self.expr(i) for i in s.indices)
        self.emit(d, f"{self.name(s.buffer)}[{idx}] = {self.expr(s.value)}")

    def s_Evaluate(self, s: Evaluate, d: int) -> None:
        self.emit(d, f"T.evaluate({self.expr(s.value)})")

    def s_LetStmt(self, s: LetStmt, d: int) -> None:
        self.emit(d, f"{self.name(s.var)}: {s.var.dtype} = {self.expr(s.value)}")

    def s_For(self, s: For, d: int) -> None:
        kind = {
            "serial": "serial",
            "unrolled": "unroll",
            "parallel": "Parallel",
            "pipelined": "Pipelined",
            "vectorized": "vectorized",
            "thread": "thread_binding",
        }[s.kind]
        args = [self.expr(s.start), self.expr(s.start + s.extent)] if not _is_zero(s.start) else [self.expr(s.extent)]
        if s.step is not None and not _is_one(s.step):
            args = [self.expr(s.start), self.expr(s.extent), f"step={self.expr(s.step)}"]
        for k in sorted(s.annotations):
            args.append(f"{k}={self.expr(s.annotations[k])}")
        self.emit(d, f"for {self.name(s.var)} in T.{kind}({', '.join(args)}):")
        self.stmt(s.body, d + 1)

    def s_While(self, s: While, d: int) -> None:
        self.emit(d, f"while {self.expr(s.cond)}:")
        self.stmt(s.body, d + 1)

    def s_IfThenElse(self, s: IfThenElse, d: int) -> None:
        self.emit(d, f"if {self.expr(s.cond)}:")
        self.stmt(s.then_body, d + 1)
        if s.else_body is not None:
            self.emit(d, "else:")
            self.stmt(s.else_body, d + 1)

    def s_Break(self, s: Break, d: int) -> None:
        self.emit(d, "break")

    def s_Continue(self, s: Continue, d: int) -> None:
        self.emit(d, "continue")

    def s_Allocate(self, s: Allocate, d: int) -> None:
        b = s.buffer
        fn = {
            "shared.dyn": "alloc_shared",
            "shared": "alloc_shared",
            "local.fragment": "alloc_fragment",
            "local": "alloc_local",
            "local.var": "alloc_var",
            "local.reducer": "alloc_reducer",
            "shared.barrier": "alloc_barrier",
        }.get(b.scope, "alloc_buffer")
        extra = "" if s.init is None else f", init={self.expr(s.init)}"
        for k in sorted(s.annotations):
            extra += f", {k}={self.expr(s.annotations[k])}"
        self.emit(d, f"{self.name(b)} = T.{fn}({self.shape(b.shape)}, {b.dtype!s}{extra})")

    def s_KernelLaunch(self, s: KernelLaunch, d: int) -> None:
        grid = ", ".join(self.expr(g) for g in s.grid)
        bv = ", ".join(self.name(v) for v in s.block_vars)
        threads = s.threads[0] if s.threads[1:] == (1, 1) else s.threads
        attrs = "".join(f", {k}={self.expr(v)}" for k, v in sorted(s.attrs.items()))
        self.emit(d, f"with T.Kernel({grid}, threads={threads}{attrs}) as ({bv},):")
        self.stmt(s.body, d + 1)

    def _ann(self, a) -> str:
        return "".join(f", {k}={self.expr(v)}" for k, v in sorted(a.items()))

    def s_Copy(self, s: Copy, d: int) -> None:
        self.emit(d, f"T.copy({self.region(s.src)}, {self.region(s.dst)}{self._ann(s.annotations)})")

    def s_Gemm(self, s: Gemm, d: int) -> None:
        opts = []
        if s.transpose_A:
            opts.append("transpose_A=True")
        if s.transpose_B:
            opts.append("transpose_B=True")
        if s.policy != "Square":
            opts.append(f"policy={s.policy}")
        if s.clear_accum:
            opts.append("clear_accum=True")
        if s.k_pack != 1:
            opts.append(f"k_pack={s.k_pack}")
        tail = "".join(", " + o for o in opts) + self._ann(s.annotations)
        self.emit(d, f"T.gemm({self.region(s.A)}, {self.region(s.B)}, {self.region(s.C)}{tail})")

    def s_Reduce(self, s: Reduce, d: int) -> None:
        self.emit(
            d,
            f"T.reduce_{s.kind}({self.region(s.src)}, {self.region(s.dst)}, dim={s.dim}, clear={s.clear}"
            f"{', nan_propagate=True' if s.nan_propagate else ''}{self._ann(s.annotations)})",
        )

    def s_Im2Col(self, s: Any, d: int) -> None:
        args = ", ".join(self.expr(x) for x in (s.nhw_step, s.c_step, s.kernel, s.stride, s.dilation, s.pad))
        self.emit(d, f"T.im2col({self.region(s.img)}, {self.region(s.col)}, {args}{self._ann(s.annotations)})")

    def s_Fill(self, s: Fill, d: int) -> None:
        self.emit(d, f"T.fill({self.region(s.dst)}, {self.expr(s.value)})")

    def s_CumSum(self, s: CumSum, d: int) -> None:
        self.emit(d, f"T.cum{s.op}({self.region(s.src)}, {self.region(s.dst)}, dim={s.dim}, reverse={s.reverse})")

    def s_Atomic(self, s: Atomic, d: int) -> None:
        v = self.region(s.value) if isinstance(s.value, BufferRegion) else self.expr(s.value)
        mo = f", memory_order={s.memory_order!r}" if s.memory_order else ""
        self.emit(d, f"T.atomic_{s.kind}({self.region(s.dst)}, {v}{mo})")

    def s_ReducerInit(self, s: ReducerInit, d: int) -> None:
        self.emit(d, f"T.reducer_init({self.name(s.reducer)})")

    def s_ReducerUpdate(self, s: ReducerUpdate, d: int) -> None:
        idx = ", ".join(self.expr(i) for i in s.indices)
        self.emit(d, f"T.reducer_update({self.name(s.reducer)}[{idx}], {self.expr(s.value)})")

    def s_FinalizeReducer(self, s: FinalizeReducer, d: int) -> None:
        self.emit(d, f"T.finalize_reducer({self.name(s.reducer)}, {self.name(s.dst)})")

    def s_Print(self, s: Print, d: int) -> None:
        obj = "None" if s.obj is None else self.expr(s.obj)
        self.emit(d, f"T.print({obj}, msg={s.msg!r})")

    def s_DeviceAssert(self, s: DeviceAssert, d: int) -> None:
        self.emit(d, f"T.device_assert({self.expr(s.cond)}, {s.msg!r})")

    def s_AnnotateLayout(self, s: AnnotateLayout, d: int) -> None:
        inner = ", ".join(f"{self.name(b)}: {lay!r}" for b, lay in s.layouts)
        self.emit(d, f"T.annotate_layout({{{inner}}})")

    def s_Hint(self, s: Hint, d: int) -> None:
        self.emit(d, f"T.{s.name}({', '.join(f'{k}={v!r}' for k, v in sorted(s.args.items()))})")

    def s_WarpSpecialize(self, s: WarpSpecialize, d: int) -> None:
        self.emit(d, f"with T.ws({', '.join(str(g) for g in s.warpgroups)}):")
        self.stmt(s.body, d + 1)

    def s_TmaCopy(self, s: TmaCopy, d: int) -> None:
        bar = "" if s.barrier is None else f", barrier={self.expr(s.barrier)}"
        self.emit(d, f"T.tma_copy({self.region(s.src)}, {self.region(s.dst)}{bar}{self._ann(s.annotations)})")

    def s_SyncOp(self, s: SyncOp, d: int) -> None:
        self.emit(d, f"T.{s.kind}({', '.join(self.expr(a) for a in s.args)})")

    # -- functions -----------------------------------------------------------
    def func(self, f) -> str:
        params = []
        for p in f.params:
            if isinstance(p, Buffer):
                params.append(f"{self.name(p)}: T.Tensor({self.shape(p.shape)}, {p.dtype!s})")
            else:
                params.append(f"{self.name(p)}: T.{p.dtype}")
        attrs = {k: v for k, v in f.attrs.items() if k not in ("layout_map", "source", "decisions")}
        self.emit(0, "@T.prim_func" + (f"  # {attrs}" if attrs else ""))
        self.emit(0, f"def {f.name}({', '.join(params)}):")
        self.stmt(f.body, 1)
        return "\n".join(self.lines)


def _is_zero(e: Any) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _is_one(e: Any) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def expr_str(e: Any) -> str:
    return Printer().expr(e)


def stmt_str(s: Stmt) -> str:
    p = Printer()
    p.stmt(s, 0)
    return "\n".join(p.lines)


def func_str(f) -> str:
    return Printer().func(f)


def func_lines(f) -> tuple[str, list[int]]:
    """The printed function and, per printed line, the source line of the statement it prints
    (0 where none) — what lets a lowering trace map a source line to what it became."""
    p = Printer()
    text = p.func(f)
    return text, list(p.line_sources)


def node_str(n: Node) -> str:
    from .function import PrimFunc

    if isinstance(n, PrimFunc):
        return func_str(n)
    if isinstance(n, Stmt):
        return stmt_str(n)
    return expr_str(n)
