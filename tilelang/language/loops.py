"""Loop constructs: `T.Parallel`, `T.Pipelined`, `T.serial`, `T.unroll`, `T.grid`,
`T.vectorized`, `T.Persistent`.

Each returns a loop spec; `for ... in spec` in a kernel body (rewritten by the
frontend) opens the IR loop(s), yields the loop variable(s) once to trace the
body, and closes them into `For` statements.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import DSLError
from ..ir.expr import IntImm, Var, as_expr, binary, const_int, logical_and
from ..ir.node import FrozenDict
from ..ir.stmt import For, IfThenElse, LetStmt
from .sizes import size


class LoopSpec:
    """`extents`: one (start, extent, step) per nested loop level."""

    kind = "serial"

    def __init__(self, levels: list[tuple], annotations: dict | None = None) -> None:
        self.levels = levels
        self.annotations = {k: v for k, v in (annotations or {}).items() if v is not None}

    def __iter__(self):
        raise DSLError(
            f"T.{type(self).__name__} can only be iterated by a `for` statement inside a kernel body",
            None,
            "write `for i in T.Parallel(n):` directly in the @tilelang.jit function",
        )

    def __tl_loop__(self, b: Any, names: tuple) -> Iterator:
        b.require_kernel(f"T.{type(self).__name__}")
        span = b.span_here()
        vars_ = []
        for k in range(len(self.levels)):
            name = names[k] if k < len(names) else f"i{k}"
            vars_.append(Var(name, self._var_dtype(k)))
        for _ in self.levels:
            b.push("for")
        ok = False
        try:
            yield vars_[0] if len(vars_) == 1 else tuple(vars_)
            ok = True
        finally:
            frames = [b.pop("for") for _ in self.levels]
            if ok:
                body = frames[0].body()
                for level in reversed(range(len(self.levels))):
                    start, extent, step = self.levels[level]
                    ann = FrozenDict(self.annotations) if level == 0 else FrozenDict()
                    loop = For(vars_[level], start, extent, self.kind, body, step, ann, span)
                    if level > 0:
                        body = _with_prefix(frames[level].stmts, loop)
                    else:
                        body = loop
                b.emit(body)

    def _var_dtype(self, k: int):
        return self.levels[k][1].dtype if self.levels[k][1].dtype.is_integer else "int32"


def _with_prefix(stmts: list, loop: For):
    from ..ir.stmt import seq

    return seq(*stmts, loop)


def _range(start: Any, stop: Any, step: Any) -> tuple:
    if stop is None:
        start, stop = 0, start
    start_e, stop_e = as_expr(start), as_expr(stop)
    if step is None or const_int(step) == 1:
        return (start_e, as_expr(binary("sub", stop_e, start_e)), None)
    step_e = as_expr(step)
    s = const_int(step_e)
    if s is not None and s <= 0:
        raise DSLError(f"loop step must be positive, got {s}", None)
    # number of iterations: ceil((stop - start) / step)
    extent = binary("floordiv", binary("add", binary("sub", stop_e, start_e), binary("sub", step_e, 1)), step_e)
    return (start_e, extent, step_e)


class Parallel(LoopSpec):
    """`for i, j in T.Parallel(M, N)`: independent iterations mapped onto threads."""

    kind = "parallel"

    def __init__(
        self,
        *extents: Any,
        coalesced_width: Any = None,
        loop_layout: Any = None,
        prefer_async: Any = None,
        annotations: dict | None = None,
    ) -> None:
        if not extents:
            raise DSLError("T.Parallel needs at least one extent", None, "e.g. T.Parallel(block_M, block_N)")
        levels = [(IntImm(0), as_expr(size(e, f"extent {k} of T.Parallel")), None) for k, e in enumerate(extents)]
        ann = dict(annotations or {})
        ann.update(coalesced_width=coalesced_width, loop_layout=loop_layout, prefer_async=prefer_async)
        super().__init__(levels, ann)


class Pipelined(LoopSpec):
    """`for k in T.Pipelined(n, num_stages=3)`: a software-pipelined serial loop."""

    kind = "pipelined"

    def __init__(
        self,
        start: Any,
        stop: Any = None,
        num_stages: int = 0,
        order: Any = None,
        stage: Any = None,
        sync: Any = None,
        group: Any = None,
        annotations: dict | None = None,
    ) -> None:
        if (order is None) != (stage is None):
            raise DSLError(
                "T.Pipelined needs both `stage=` and `order=` (or neither)",
                None,
                "give one entry per statement in each",
            )
        if stage is not None:
            if len(stage) != len(order):
                raise DSLError(
                    f"`stage` has {len(stage)} entries but `order` has {len(order)}",
                    None,
                    "give one entry per statement in each",
                )
            num_stages = max(stage) + 1 if num_stages in (0, None) else num_stages
        if num_stages is None or num_stages < 0:
            raise DSLError(f"num_stages must be >= 0, got {num_stages}", None)
        ann = dict(annotations or {})
        ann.update(
            num_stages=int(num_stages),
            stage=tuple(stage) if stage is not None else None,
            order=tuple(order) if order is not None else None,
            sync=sync,
            group=group,
        )
        super().__init__([_range(start, stop, None)], ann)


class serial(LoopSpec):  # noqa: N801 - public DSL name
    """A sequential loop `for i in T.serial(n)` (or `(start, stop[, step])`), run by every thread."""

    kind = "serial"

    def __init__(self, start: Any, stop: Any = None, step: Any = None, *, annotations: dict | None = None) -> None:
        super().__init__([_range(start, stop, step)], annotations)


Serial = serial


class unroll(LoopSpec):  # noqa: N801
    """A sequential loop that the backend fully unrolls."""

    kind = "unrolled"

    def __init__(
        self,
        start: Any,
        stop: Any = None,
        step: Any = None,
        *,
        explicit: bool = False,
        unroll_factor: Any = None,
        annotations: dict | None = None,
    ) -> None:
        if explicit and unroll_factor is not None:
            raise DSLError("T.unroll: `explicit` and `unroll_factor` are mutually exclusive", None)
        ann = dict(annotations or {})
        ann.update(unroll_factor=unroll_factor)
        super().__init__([_range(start, stop, step)], ann)


Unroll = unroll


class vectorized(LoopSpec):  # noqa: N801
    """A loop whose iterations become one vector access."""

    kind = "vectorized"

    def __init__(self, start: Any, stop: Any = None, *, annotations: dict | None = None) -> None:
        super().__init__([_range(start, stop, None)], annotations)


Vectorized = vectorized


class grid(LoopSpec):  # noqa: N801
    """Nested serial loops over each extent: `for i, j in T.grid(M, N)`."""

    kind = "serial"

    def __init__(self, *extents: Any) -> None:
        super().__init__([(IntImm(0), as_expr(e), None) for e in extents])


class parallel(LoopSpec):  # noqa: N801 - TVMScript's CPU-parallel loop
    """Lower-case alias of `T.Parallel`: iterations spread over the block's threads."""

    kind = "parallel"

    def __init__(self, start: Any, stop: Any = None, *, annotations: dict | None = None) -> None:
        super().__init__([_range(start, stop, None)], annotations)


class Persistent:
    """`for bx, by in T.Persistent([m_blocks, n_blocks], wave_size, index, group_size=8)`.

    Each of `wave_size` resident blocks (this one is `index`) walks the tile
    domain in waves; tiles are ordered in panels of `group_size` rows for L2
    locality; iterations past the end of the domain are skipped.
    """

    def __init__(self, domain: Any, wave_size: Any, index: Any, group_size: int = 8) -> None:
        if not isinstance(domain, (list, tuple)) or not 1 <= len(domain) <= 2:
            raise DSLError(
                "T.Persistent domain must be a list of 1 or 2 extents",
                None,
                "e.g. T.Persistent([m_blocks, n_blocks], sm_num, block_id)",
            )
        self.domain = [as_expr(d) for d in domain]
        self.wave = as_expr(wave_size)
        self.index = as_expr(index)
        self.group = int(group_size)

    def __tl_loop__(self, b: Any, names: tuple) -> Iterator:
        b.require_kernel("T.Persistent")
        span = b.span_here()
        total = self.domain[0] if len(self.domain) == 1 else self.domain[0] * self.domain[1]
        waves = binary("floordiv", total + self.wave - 1, self.wave)
        w = Var("wave")
        tile = Var("tile_id")
        b.push("for")
        b.emit(LetStmt(tile, w * self.wave + self.index))
        b.push("if")
        ok = False
        try:
            if len(self.domain) == 1:
                coords: Any = tile
            else:
                m, n = self.domain
                group = self.group
                # panels of `group` rows of M walked column-wise (grouped order)
                per_group = n * group
                gid = binary("floordiv", tile, per_group)
                first_m = gid * group
                rows = binary("min", m - first_m, group)
                in_group = binary("floormod", tile, per_group)
                mi = first_m + binary("floormod", in_group, rows)
                ni = binary("floordiv", in_group, rows)
                bx, by = Var(names[0] if names else "bx"), Var(names[1] if len(names) > 1 else "by")
                b.emit(LetStmt(bx, mi))
                b.emit(LetStmt(by, ni))
                coords = (bx, by)
            yield coords
            ok = True
        finally:
            if_fr = b.pop("if")
            for_fr = b.pop("for")
            if ok:
                guard = IfThenElse(logical_and(tile < total, tile >= 0), if_fr.body(), None, span)
                for_fr.stmts.append(guard)
                b.emit(For(w, IntImm(0), waves, "serial", for_fr.body(), None, FrozenDict(), span))
