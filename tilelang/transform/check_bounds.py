"""check_bounds: an access that certainly leaves its on-chip buffer is an error at its line.

Requires: tile-level IR after `verify` and `simplify` (tile ops still present).

Guarantees: returns `func` unchanged, or raises `VerifyError` at the span of the first
access to a shared, fragment or local buffer (`T.alloc_shared`, `T.alloc_fragment`,
`T.alloc_local`, `T.alloc_var`) — an element load or store, or a tile-op region — that is
outside the buffer on an iteration the kernel certainly executes. Global buffers are not
checked here: their out-of-range parts are guarded (`legalize_memory_access`).

"Certainly executes" is decided without guessing: the access is reached on every
iteration of the loops around it (no `if`/`while` in between, no `break`/`continue` in
those loops, every loop with a constant trip count ≥ 1), and every block of the grid runs
it. Then each corner of the iteration box (every loop variable and block index at its
first or last value) is an iteration that runs; the index is evaluated there, and a value
outside `[0, extent)` is the error. An access the pass cannot decide is left alone (the
GPU backends and the bounds-check debug mode see it later), so the check never rejects a
correct program. `T.assume(cond)` facts narrow what is certain: an iteration where an
assumption is false is not checked. For an index that is affine in the loop variables (nearly all are) the
corners hold its extremes, so no out-of-range affine access escapes.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..arith import Analyzer
from ..errors import VerifyError
from ..ir.buffer import Buffer, BufferRegion
from ..ir.expr import BufferLoad, Call, IntImm, Var, const_int
from ..ir.function import PrimFunc
from ..ir.stmt import Break, BufferStore, Continue, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, While
from ..ir.visitor import Visitor, collect, substitute
from .context import CompileContext

ON_CHIP = ("shared", "shared.dyn", "local.fragment", "local", "local.var")
MAX_CORNERS = 256  # 8 free variables; beyond that an access is left to the run-time checks


def check_bounds(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    _Checker().visit(func.body)
    return func


def _leaves_loop(body: Any) -> bool:
    return bool(collect(body, lambda n: isinstance(n, (Break, Continue))))


class _Checker(Visitor):
    def visit(self, node: Any) -> None:
        if isinstance(node, (For, IfThenElse, While, KernelLaunch)):
            k = len(self.facts)  # a T.assume inside a body holds only there
            super().visit(node)
            del self.facts[k:]
            return
        super().visit(node)

    def __init__(self) -> None:
        self.ranges: list[tuple[Var, int, int]] = []  # (var, first, last) of enclosing loops / block indices
        self.certain = [False]  # is the current statement reached on every iteration?
        self.lets: dict = {}
        self.facts: list = []  # T.assume conditions in force (to the end of their statement list)

    # -- where accesses are certain ----------------------------------------------------------
    def visit_KernelLaunch(self, n: KernelLaunch) -> None:
        pushed = 0
        for v, g in zip(n.block_vars, n.grid):
            g = const_int(g)
            if g is not None and g >= 1:
                self.ranges.append((v, 0, g - 1))
                pushed += 1
        self.certain.append(True)
        self.visit(n.body)
        self.certain.pop()
        del self.ranges[len(self.ranges) - pushed :]

    def visit_For(self, n: For) -> None:
        start, extent = const_int(n.start), const_int(n.extent)
        step = 1 if n.step is None else const_int(n.step)
        sure = self.certain[-1] and None not in (start, extent, step) and extent >= 1 and not _leaves_loop(n.body)
        if sure:
            self.ranges.append((n.var, start, start + (extent - 1) * step))
        self.certain.append(sure)
        self.visit(n.body)
        self.certain.pop()
        if sure:
            self.ranges.pop()

    def visit_IfThenElse(self, n: IfThenElse) -> None:
        self.visit(n.cond)
        self.certain.append(False)
        self.visit(n.then_body)
        if n.else_body is not None:
            self.visit(n.else_body)
        self.certain.pop()

    def visit_While(self, n: While) -> None:
        self.certain.append(False)
        self.generic_visit(n)
        self.certain.pop()

    def visit_LetStmt(self, n: LetStmt) -> None:
        self.visit(n.value)
        self.lets[n.var] = n.value  # for the rest of its block; a Var is bound once

    def visit_SeqStmt(self, n: SeqStmt) -> None:
        k = len(self.facts)
        self.generic_visit(n)
        del self.facts[k:]

    def visit_Evaluate(self, n: Evaluate) -> None:
        if isinstance(n.value, Call) and n.value.op == "tl.assume":
            cond = n.value.args[0]
            if not collect(cond, lambda x: isinstance(x, BufferLoad)):
                self.facts.append(cond)  # iterations it rules out are not "certainly executed"
            return
        self.generic_visit(n)

    # -- accesses ------------------------------------------------------------------------------
    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self.element(n.buffer, n.indices, n)
        self.generic_visit(n)

    def visit_BufferStore(self, n: BufferStore) -> None:
        self.element(n.buffer, n.indices, n)
        self.generic_visit(n)

    def visit_BufferRegion(self, n: BufferRegion) -> None:
        if self.certain[-1] and n.buffer.scope in ON_CHIP:
            for d, (r, size) in enumerate(zip(n.region, n.buffer.shape)):
                extent = const_int(r.extent)
                if extent is not None and extent >= 1:
                    self.index(n.buffer, d, r.begin, size, n, "the region's first index")
                    self.index(n.buffer, d, r.begin + (extent - 1), size, n, "the region's last index")
        self.generic_visit(n)

    def element(self, buf: Buffer, indices: tuple, node: Any) -> None:
        if not self.certain[-1] or buf.scope not in ON_CHIP:
            return
        if len(indices) != len(buf.shape):  # a local.var read as a scalar
            return
        for d, (i, size) in enumerate(zip(indices, buf.shape)):
            self.index(buf, d, i, size, node, "index")

    def index(self, buf: Buffer, dim: int, idx: Any, size: Any, node: Any, what: str) -> None:
        size = const_int(size)
        if size is None or isinstance(idx, IntImm) and 0 <= idx.value < size:
            return
        idx = substitute(idx, self.lets) if self.lets else idx
        facts = [substitute(f, self.lets) if self.lets else f for f in self.facts]
        an = Analyzer()
        for v, lo, hi in self.ranges:
            an.bind(v, lo, hi)
        for f in facts:
            try:
                an.assume(f)
            except Exception:  # noqa: BLE001 - a fact it cannot use only means less is known
                pass
        lo, hi = an.const_int_bound(idx)
        if isinstance(lo, int) and isinstance(hi, int) and 0 <= lo and hi < size:
            return  # in range on every iteration: the common case, no corners needed
        used = {v for v in collect(idx, lambda x: isinstance(x, Var))}
        box = [(v, a, b) for v, a, b in self.ranges if v in used]
        if 2 ** len(box) > MAX_CORNERS:
            return
        for corner in itertools.product(*[(a, b) if a != b else (a,) for _, a, b in box]):
            at_corner = {v: c for (v, _, _), c in zip(box, corner)}
            if any(const_int(Analyzer().simplify(substitute(f, at_corner))) == 0 for f in facts):
                continue  # an iteration the user's T.assume rules out
            value = Analyzer().simplify(substitute(idx, at_corner))
            if isinstance(value, IntImm) and not 0 <= value.value < size:
                at = ", ".join(f"{v.name}={c}" for (v, _, _), c in zip(box, corner))
                shape = [const_int(s) for s in buf.shape]
                raise VerifyError(
                    f"out-of-range access: {what} {value.value} is outside dimension {dim} of `{buf.name}` "
                    f"({buf.scope}, shape {shape})" + (f" when {at}" if at else ""),
                    getattr(node, "span", None),
                    f"keep indices of `{buf.name}` in [0, {size}): allocate it larger, shrink the loop, "
                    "or guard the access with an if",
                )
