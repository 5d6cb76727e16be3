"""verify: structural checks of a traced PrimFunc.

Requires: a PrimFunc as the frontend produces it (tile ops not yet lowered;
also accepts lowered functions). Guarantees (or raises `VerifyError` at the
offending node's span):

- every buffer is a parameter or used inside the scope of its `Allocate`
  (`Allocate`/`LetStmt` scope: the rest of the enclosing statement list);
- every variable is a scalar parameter, a dynamic dimension, a block index,
  a loop variable or a `LetStmt` variable in scope;
- shared / fragment / local buffers are allocated inside the `KernelLaunch`,
  and tile operators only appear there; outside it only `LetStmt`s;
- loop bounds and steps are integers; `break`/`continue` are inside loops;
- buffers are indexed with as many indices as they have dimensions;
- tile-op operands are consistent: copy regions have equal extents once unit
  dims are dropped; gemm operand scopes (A, B shared/fragment/local; C
  fragment/local) and shapes (M, N, K agree, respecting transposes); reduce
  kinds and `dim`, and the dst shape rule (src shape without `dim`, or with
  it set to 1 — compared with dimensions of extent 1 dropped, so regions
  like `out[i, 0:n]` qualify); atomic kinds and value extents; reducer buffers.

Never mutates its input; returns it unchanged.
"""

from __future__ import annotations

from typing import Any

from ..errors import VerifyError
from ..ir.buffer import Buffer, BufferRegion
from ..ir.expr import BufferLoad, Var, const_int
from ..ir.function import PrimFunc
from ..ir.node import Node, child_fields
from ..ir.span import NO_SPAN, Span
from ..ir.stmt import (
    Allocate,
    Atomic,
    Break,
    BufferStore,
    Continue,
    Copy,
    CumSum,
    Evaluate,
    FinalizeReducer,
    For,
    Gemm,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Reduce,
    ReducerInit,
    ReducerUpdate,
    SeqStmt,
    Stmt,
    TileOp,
    While,
)
from ..tileop.base import extent_mismatch
from ..tileop.gemm import gemm_dtype_problem
from .context import CompileContext

PER_THREAD_SCOPES = ("local", "local.fragment", "local.var")  # held in registers on GPU targets
REDUCE_KINDS = ("sum", "max", "min", "absmax", "abssum", "bitand", "bitor", "bitxor")
ATOMIC_KINDS = ("add", "max", "min")
GEMM_AB_SCOPES = ("shared", "shared.dyn", "local.fragment", "local")
GEMM_C_SCOPES = ("local.fragment", "local")


def verify(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """Check `func` (see the module docstring); return it unchanged."""
    _Verifier(func).run()
    return func


def _fmt(ext) -> str:
    return "[" + ", ".join(str(e) for e in ext) + "]"


class _At:
    """A location to report at (`_Verifier.fail` reads `.span`)."""

    def __init__(self, span: Span) -> None:
        self.span = span


class _Verifier:
    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.buffers: list[set] = [set(func.buffer_params)]
        self.vars: list[set] = [set(func.scalar_params) | set(func.dynamic_vars())]
        self.in_kernel = False
        self.loop_depth = 0
        self.span: Span = func.span
        # the innermost expression being checked that has a span of its own: where a variable
        # is *used* (a variable's own span is where it was defined, e.g. its loop header)
        self.expr_span: Span | None = None
        self.allocated_somewhere: set = set()

    # -- scopes ------------------------------------------------------------
    def push(self) -> None:
        self.buffers.append(set())
        self.vars.append(set())

    def pop(self) -> None:
        self.buffers.pop()
        self.vars.pop()

    def has_buffer(self, b: Buffer) -> bool:
        return any(b in s for s in self.buffers)

    def has_var(self, v: Var) -> bool:
        return any(v in s for s in self.vars)

    def fail(self, msg: str, node: Any = None, hint: str = "") -> None:
        span = getattr(node, "span", None)
        if span is None or span is NO_SPAN or span.line == 0:
            span = self.span
        raise VerifyError(msg, span, hint)

    def run(self) -> None:
        from ..ir.visitor import collect

        self.allocated_somewhere = {a.buffer for a in collect(self.func.body, lambda n: isinstance(n, Allocate))}
        for p in self.func.buffer_params:
            if p.scope != "global":
                self.fail(f"parameter `{p.name}` has scope {p.scope}; kernel parameters are global tensors", p)
            for d in p.shape:
                self.expr(d)
        self.block(self.func.body)

    # -- statements ----------------------------------------------------------
    def block(self, s: Stmt | None) -> None:
        """A statement list with its own scope."""
        self.push()
        try:
            for x in s.stmts if isinstance(s, SeqStmt) else ([] if s is None else [s]):
                self.stmt(x)
        finally:
            self.pop()

    def stmt(self, s: Stmt) -> None:
        outer, outer_expr = self.span, self.expr_span
        if s.span is not NO_SPAN and s.span.line:
            self.span = s.span
        self.expr_span = None
        try:
            self._stmt(s)
        finally:
            self.span, self.expr_span = outer, outer_expr

    def _stmt(self, s: Stmt) -> None:
        if isinstance(s, SeqStmt):
            self.block(s)
        elif isinstance(s, KernelLaunch):
            if self.in_kernel:
                self.fail("T.Kernel cannot be nested", s)
            for g in s.grid:
                self.expr(g)
                if not g.dtype.is_integer:
                    self.fail(f"grid extent `{g}` is {g.dtype}, not an integer", s)
            self.push()
            self.vars[-1].update(s.block_vars)
            self.in_kernel = True
            try:
                self.block(s.body)
            finally:
                self.in_kernel = False
                self.pop()
        elif isinstance(s, LetStmt):
            self.expr(s.value)
            self.vars[-1].add(s.var)
        elif isinstance(s, Allocate) and s.buffer.scope == "global" and not self.in_kernel:
            self.fail(  # split_kernels.py turns it into a parameter of every kernel before any pipeline
                f"T.alloc_global `{s.buffer.name}` reached a target pipeline: scratch is allocated by the host",
                s,
                "compile the function with tilelang.compile / tilelang.lower / @tilelang.jit, which launch its "
                "kernels in order (backend/launch_plan.py)",
            )
        elif not self.in_kernel and not (isinstance(s, Evaluate) and const_int(s.value) is not None):
            self.fail(
                f"{type(s).__name__} outside T.Kernel: only scalar definitions may precede the kernel launch",
                s,
                "move the statement inside `with T.Kernel(...)`",
            )
        elif isinstance(s, Allocate):
            b = s.buffer
            for d in b.shape:
                self.expr(d)
                if not d.dtype.is_integer:
                    self.fail(f"buffer `{b.name}` has a non-integer dimension `{d}`", s)
            if b.scope in PER_THREAD_SCOPES and any(const_int(d) is None for d in b.shape):
                self.fail(
                    f"`{b.name}` ({b.scope}) has a shape that is not known at compile time: "
                    f"{[str(d) for d in b.shape]}",
                    s,
                    "register tiles need compile-time shapes on every target: size it with a constant "
                    "(e.g. the block size) and guard the unused part",
                )
            if s.init is not None:
                self.expr(s.init)
            self.buffers[-1].add(b)
        elif isinstance(s, For):
            for what, e in (("start", s.start), ("extent", s.extent), ("step", s.step)):
                if e is None:
                    continue
                self.expr(e)
                if not e.dtype.is_integer:
                    self.fail(
                        f"loop {what} `{e}` is {e.dtype}; loop bounds must be integers",
                        s,
                        "cast it with T.int32(...) or use an integer expression",
                    )
            self.push()
            self.vars[-1].add(s.var)
            self.loop_depth += 1
            try:
                self.block(s.body)
            finally:
                self.loop_depth -= 1
                self.pop()
        elif isinstance(s, While):
            self.expr(s.cond)
            self.loop_depth += 1
            try:
                self.block(s.body)
            finally:
                self.loop_depth -= 1
        elif isinstance(s, IfThenElse):
            self.expr(s.cond)
            self.block(s.then_body)
            if s.else_body is not None:
                self.block(s.else_body)
        elif isinstance(s, (Break, Continue)):
            if self.loop_depth == 0:
                self.fail(f"`{type(s).__name__.lower()}` outside a loop", s)
        elif isinstance(s, BufferStore):
            self.use_buffer(s.buffer, s)
            self.indices(s.buffer, s.indices, s)
            self.expr(s.value)
        elif isinstance(s, Evaluate):
            self.expr(s.value)
        elif isinstance(s, TileOp):
            self.tile_op(s)
        else:
            self.generic(s)

    # -- tile ops ------------------------------------------------------------
    def tile_op(self, s: TileOp) -> None:
        self.generic(s)  # buffers, regions and expressions in scope
        if isinstance(s, Copy):
            self.same_extents("T.copy", s.src, s.dst, s)
        elif isinstance(s, Gemm):
            self.gemm(s)
        elif isinstance(s, Reduce):
            self.reduce(s)
        elif isinstance(s, CumSum):
            self.same_extents("T.cumsum", s.src, s.dst, s)
            nd = len(s.src.region)
            if not -nd <= s.dim < nd:
                self.fail(f"T.cumsum: dim={s.dim} is out of range for a {nd}-D input", s)
        elif isinstance(s, Atomic):
            if s.kind not in ATOMIC_KINDS:
                self.fail(f"unknown atomic kind {s.kind!r}", s, f"use one of {', '.join(ATOMIC_KINDS)}")
            if isinstance(s.value, BufferRegion):
                self.same_extents(f"T.atomic_{s.kind}", s.value, s.dst, s)
        elif isinstance(s, (ReducerInit, ReducerUpdate, FinalizeReducer)):
            if s.reducer.scope != "local.reducer":
                self.fail(
                    f"`{s.reducer.name}` is not a reducer (scope {s.reducer.scope})",
                    s,
                    "allocate it with T.alloc_reducer",
                )
            if isinstance(s, ReducerUpdate):
                self.indices(s.reducer, s.indices, s)

    def same_extents(self, what: str, a: BufferRegion, b: BufferRegion, s: Stmt) -> None:
        bad = extent_mismatch(a.extents, b.extents)
        if bad is not None:
            self.fail(
                f"{what}: `{a.buffer.name}` region {_fmt(a.extents)} and `{b.buffer.name}` region {_fmt(b.extents)} "
                f"have different shapes ({bad})",
                s,
                "the regions must have equal extents once dimensions of extent 1 are dropped",
            )

    def gemm(self, s: Gemm) -> None:
        for name, r, scopes in (("A", s.A, GEMM_AB_SCOPES), ("B", s.B, GEMM_AB_SCOPES), ("C", s.C, GEMM_C_SCOPES)):
            if r.buffer.scope not in scopes:
                where = "T.alloc_fragment" if name == "C" else "T.alloc_shared or T.alloc_fragment"
                self.fail(
                    f"T.gemm operand {name} (`{r.buffer.name}`) is in {r.buffer.scope} memory",
                    s,
                    f"{name} must be allocated with {where}",
                )
        mats = []
        for name, r in (("A", s.A), ("B", s.B), ("C", s.C)):
            ext = list(r.extents)
            if len(ext) < 2 or any(const_int(e) != 1 for e in ext[:-2]):
                self.fail(
                    f"T.gemm operand {name} (`{r.buffer.name}`) must be a 2-D tile, got {_fmt(r.extents)}",
                    s,
                    "slice a 2-D tile (leading dimensions of extent 1 are allowed)",
                )
            mats.append((const_int(ext[-2]), const_int(ext[-1])))
        (a0, a1), (b0, b1), (c0, c1) = mats
        m, ka = (a1, a0) if s.transpose_A else (a0, a1)
        kb, n = (b1, b0) if s.transpose_B else (b0, b1)
        problems = []
        if ka is not None and kb is not None and ka != kb:
            problems.append(f"K of A is {ka} but K of B is {kb}")
        if m is not None and c0 is not None and m != c0:
            problems.append(f"M of A is {m} but C has {c0} rows")
        if n is not None and c1 is not None and n != c1:
            problems.append(f"N of B is {n} but C has {c1} columns")
        if problems:
            self.fail(
                f"T.gemm operand shapes disagree: A {_fmt(s.A.extents)}{' (transposed)' if s.transpose_A else ''}, "
                f"B {_fmt(s.B.extents)}{' (transposed)' if s.transpose_B else ''}, C {_fmt(s.C.extents)}: "
                + "; ".join(problems),
                s,
                "A is (M, K) (or (K, M) with transpose_A), B is (K, N) (or (N, K) with transpose_B), C is (M, N)",
            )
        if s.C.buffer is s.A.buffer or s.C.buffer is s.B.buffer:
            self.fail("T.gemm accumulator C must not be the same buffer as A or B", s)
        problem = gemm_dtype_problem(s.A.buffer.dtype, s.B.buffer.dtype, s.C.buffer.dtype)
        if problem is not None:
            self.fail(problem[0], s, problem[1])

    def reduce(self, s: Reduce) -> None:
        if s.kind not in REDUCE_KINDS:
            self.fail(f"unknown reduction kind {s.kind!r}", s, f"use one of {', '.join(REDUCE_KINDS)}")
        src, dst = list(s.src.extents), list(s.dst.extents)
        nd = len(src)
        if not -nd <= s.dim < nd:
            self.fail(f"T.reduce_{s.kind}: dim={s.dim} is out of range for a {nd}-D input", s)
        d = s.dim % nd
        kept = [e for i, e in enumerate(src) if i != d and const_int(e) != 1]
        got = [e for e in dst if const_int(e) != 1]
        same = len(kept) == len(got) and all(
            const_int(p) is None or const_int(q) is None or const_int(p) == const_int(q) for p, q in zip(kept, got)
        )
        if not same:
            drop = [e for i, e in enumerate(src) if i != d]
            self.fail(
                f"T.reduce_{s.kind}: output `{s.dst.buffer.name}` has shape {_fmt(dst)} but reducing {_fmt(src)} "
                f"along dim {d} gives {_fmt(drop) if drop else '[1]'}",
                s,
                f"allocate the output with the input's shape without dim {d} (or with it set to 1)",
            )
        if s.kind.startswith("bit") and not (s.src.dtype.is_integer and s.dst.dtype.is_integer):
            self.fail(f"T.reduce_{s.kind} needs integer buffers, got {s.src.dtype} -> {s.dst.dtype}", s)

    # -- expressions -----------------------------------------------------------
    def use_buffer(self, b: Buffer, node: Any) -> None:
        if self.has_buffer(b):
            return
        if b.scope == "global":
            self.fail(
                f"buffer `{b.name}` is global but is not a parameter of `{self.func.name}`",
                node,
                "declare it as a T.Tensor parameter",
            )
        if b in self.allocated_somewhere:
            where = "outside T.Kernel" if not self.in_kernel else "outside the scope of its allocation"
            self.fail(
                f"buffer `{b.name}` ({b.scope}) is used {where}",
                node,
                "a buffer lives from its T.alloc_* to the end of the enclosing block",
            )
        self.fail(
            f"buffer `{b.name}` ({b.scope}) is used but never allocated",
            node,
            "allocate it with T.alloc_shared / T.alloc_fragment / T.alloc_local",
        )

    def indices(self, b: Buffer, idx: tuple, node: Any) -> None:
        if len(idx) != len(b.shape) and not (b.scope == "local.var" and len(idx) <= 1):
            self.fail(f"buffer `{b.name}` has {len(b.shape)} dimension(s) but is indexed with {len(idx)}", node)
        for i in idx:
            self.expr(i)
            if not i.dtype.is_integer:
                self.fail(f"index `{i}` of `{b.name}` is {i.dtype}; indices must be integers", node)

    def expr(self, e: Any) -> None:
        if isinstance(e, Var):
            if not self.has_var(e):
                self.fail(
                    f"variable `{e.name}` is used outside the scope where it is defined",
                    _At(self.expr_span) if self.expr_span is not None else None,
                    "a loop (or let) variable exists only inside the body that defines it",
                )
            return
        outer = self.expr_span
        span = getattr(e, "span", None)
        if span is not None and span.line:
            self.expr_span = span
        try:
            self._expr(e)
        finally:
            self.expr_span = outer

    def _expr(self, e: Any) -> None:
        if isinstance(e, BufferLoad):
            self.use_buffer(e.buffer, e)
            self.indices(e.buffer, e.indices, e)
        elif isinstance(e, BufferRegion):
            self.use_buffer(e.buffer, e)
            if len(e.region) != len(e.buffer.shape):
                self.fail(f"region of `{e.buffer.name}` has {len(e.region)} ranges for {len(e.buffer.shape)} dims", e)
            for r in e.region:
                self.expr(r.begin)
                self.expr(r.extent)
        elif isinstance(e, Buffer):
            self.use_buffer(e, e)
        elif isinstance(e, (tuple, list)):
            for x in e:
                self.expr(x)
        elif isinstance(e, Node):
            self.generic(e)

    def generic(self, n: Node) -> None:
        for f in child_fields(type(n)):
            v = getattr(n, f)
            if isinstance(v, (Node, tuple, list)) and not isinstance(v, Stmt):
                self.expr(v)
            elif isinstance(v, Stmt):
                self.block(v)
