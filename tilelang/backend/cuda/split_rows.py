"""split_rows: an attention-shaped kernel whose register tiles overflow runs its rows in two halves.

Requires: a verified, simplified tile-level PrimFunc (before `infer_layout`); `ctx` with the
`target` and `pass_configs`.

Guarantees: an equivalent PrimFunc (the input is never modified). A kernel is rewritten when,
on a target where gemms may use wgmma (`infer_layout.wgmma_enabled`, unless
`tl.disable_row_split`):

* it has a gemm reading A from registers and its register tiles need more than a thread's 255
  registers (`infer_layout.register_bound_rs_gemm`: FlashAttention with 128×128 tiles on 128
  threads);
* every gemm is `FullRow`, not transposed on A, and its A and C are *row tiles*: tiles whose
  first dimension is the same M rows. Row tiles are closed under the statements that link
  them: copies between two tiles, reductions (over a dimension other than the rows), and
  `T.Parallel` nests that index several tiles by their first loop variable in the first
  dimension. A gemm's B operand is never a row tile;
* row statements write no tile but row tiles (and global memory, by rows);
* every statement touching a row tile treats rows independently: a `T.Parallel` nest whose
  first loop runs over the M rows and indexes each row tile by exactly that variable in its
  first dimension; a copy, fill, reduction or gemm over whole rows (a copy to or from global
  memory moves M consecutive rows); or a loop / branch / let that contains such statements
  and does not itself read a row tile;
* half the rows still fill whole warpgroups (M/2 a multiple of 64 per 128 threads), and the
  halves' register tiles fit 255 registers a thread.

Each row tile X becomes two tiles of M/2 rows (`X_0`, `X_1`), or one reused by both halves
(same name) when all its accesses lie in one run of row statements and the run's first access
writes all of it. A run is a stretch of consecutive statements of one list with row statements
in it (the statements touching no row tile must commute with the row statements before them:
the K/V tile loads of FlashAttention); it runs as written for rows [0, M/2), then its row
statements run again for rows [M/2, M). Loops are not duplicated, so each K/V tile is loaded
once, where it was, and used by both halves. The register tiles live at a time are then one
half's temporaries plus both halves' accumulators: FlashAttention 128×128 on 128 threads
needs 224 instead of 320 registers and keeps wgmma. Kernels that do not qualify are returned
unchanged (infer_layout then gives them mma.sync).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from ...ir.buffer import Buffer, BufferRegion, Range
from ...ir.decisions import ScheduleDecision, record
from ...ir.expr import BufferLoad, IntImm, Var, binary, const_int
from ...ir.function import PrimFunc
from ...ir.stmt import (
    Allocate,
    BufferStore,
    Copy,
    Fill,
    For,
    Gemm,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Reduce,
    SeqStmt,
    Stmt,
    TileOp,
    seq,
)
from ...ir.visitor import Mutator, collect, substitute
from ...pass_config import in_force
from ...transform.context import CompileContext
from ...transform.infer_layout import REGISTERS_PER_THREAD, register_bound_rs_gemm, wgmma_enabled, whole_tile_store
from ...transform.inject_sync import collect_accesses

DISABLE_KEY = "tl.disable_row_split"
LOCAL_SCOPES = ("shared", "shared.dyn", "local.fragment")
WARPGROUP = 128
WGMMA_ROWS = 64


class _NotSplittable(Exception):
    """The kernel does not qualify: it is left as it was."""


def split_rows(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if not row_split_enabled(func, ctx):
        return func

    made: list = []

    class _Kernels(Mutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> Any:
            new = split_kernel(k)
            if new is not None:
                made.append(ScheduleDecision(k.span, "row_split"))
            return new or k

    body = _Kernels().visit(func.body)
    return func if body is func.body else record(func.with_body(body), *made)


def row_split_enabled(func: PrimFunc | None, ctx: CompileContext | None) -> bool:
    return wgmma_enabled(ctx, func) and not in_force(func, ctx).get(DISABLE_KEY, False)


def split_kernel(k: KernelLaunch) -> KernelLaunch | None:
    """`k` with its rows in two halves, or None when it does not qualify (module docstring).

    Worked out once per kernel node (~20 ms for FlashAttention): the language server asks
    twice for the same node, through layout inference and through the analysis's report."""
    key = id(k)
    with _LOCK:
        hit = _RECENT.get(key)
        if hit is not None and hit[0] is k:
            return hit[1]
    out = _split(k)
    with _LOCK:  # the entry holds `k`, so its id cannot be reused while it is here
        _RECENT[key] = (k, out)
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return out


_RECENT_SIZE = 8
_RECENT: OrderedDict = OrderedDict()  # id(kernel) -> (kernel, its split or None)
_LOCK = threading.Lock()  # kernels are lowered concurrently (autotuner, language server)


def _split(k: KernelLaunch) -> KernelLaunch | None:
    if not register_bound_rs_gemm(k):
        return None
    try:
        plan = _Plan(k)
        body = plan.rewrite()
    except _NotSplittable:
        return None
    return replace(k, body=body)


# --------------------------------------------------------------------------
# Which tiles are row tiles
# --------------------------------------------------------------------------


def _allocations(k: KernelLaunch) -> dict:
    return {a.buffer: a for a in collect(k.body, lambda n: isinstance(n, Allocate)) if a.buffer.scope in LOCAL_SCOPES}


def _nest_row_buffers(nest: For, local: set) -> set:
    """Local tiles a `T.Parallel` nest indexes by its first loop variable in their first dimension."""
    i = nest.var
    hits = collect(nest, lambda n: isinstance(n, (BufferLoad, BufferStore)) and n.buffer in local)
    return {h.buffer for h in hits if h.indices and h.indices[0] is i}


def _row_tiles(k: KernelLaunch, local: set) -> tuple[set, int]:
    gemms = collect(k.body, lambda n: isinstance(n, Gemm))
    if not gemms:
        raise _NotSplittable
    rows = {g.A.buffer for g in gemms} | {g.C.buffer for g in gemms}
    sizes = {const_int(b.shape[0]) for b in rows}
    if len(sizes) != 1 or None in sizes:
        raise _NotSplittable
    links: list = []
    for s in collect(k.body, lambda n: isinstance(n, (Copy, Reduce))):
        pair = {s.src.buffer, s.dst.buffer} & local
        if len(pair) == 2:
            links.append(pair)
    for nest in collect(k.body, lambda n: isinstance(n, For) and n.kind == "parallel"):
        links.append(_nest_row_buffers(nest, local))
    changed = True
    while changed:
        changed = False
        for group in links:
            if group & rows and not group <= rows:
                rows |= group
                changed = True
    if any(g.B.buffer in rows or g.transpose_A or g.policy != "FullRow" for g in gemms):
        raise _NotSplittable
    (m,) = sizes
    if any(b not in local or const_int(b.shape[0]) != m for b in rows):
        raise _NotSplittable
    return rows, m


# --------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------


def _row_tiles_in(node: Any, rows: set) -> set:
    """The row tiles `node` loads, stores or names in a region."""
    hits = collect(node, lambda n: isinstance(n, (BufferLoad, BufferStore, BufferRegion)) and n.buffer in rows)
    return {n.buffer for n in hits}


def _touches(node: Any, rows: set) -> bool:
    return bool(_row_tiles_in(node, rows))


class _Plan:
    def __init__(self, k: KernelLaunch) -> None:
        self.k = k
        self.allocs = _allocations(k)
        self.rows, self.m = _row_tiles(k, set(self.allocs))
        self.half = self.m // 2
        threads = k.num_threads
        if self.m % 2 or threads % WARPGROUP or self.half % (WGMMA_ROWS * threads // WARPGROUP):
            raise _NotSplittable
        self.runs: dict = {}  # row tile -> ids of the runs that touch it
        self.first_full: dict = {}  # row tile -> its first access in its run writes all of it
        self.run_id = 0
        self._item_lists: dict = {}  # id(statement) -> _items of its statement list
        self._scan(k.body)
        self.reused = {
            b for b in self.rows if len(self.runs.get(b, ())) == 1 and self.first_full.get(b, False)
        }  # fmt: skip
        self._check_registers(threads)
        self.halves = self._new_buffers()

    # -- analysis ---------------------------------------------------------------
    def _items(self, s: Stmt) -> list:
        """The statement list of `s` as ("alloc", stmt), ("other", stmt: touches no row tile),
        ("nested", stmt: a loop / branch / let holding row statements) and ("run", [stmts]): a
        stretch of consecutive statements with row statements in it, whose other statements
        commute with the row statements before them. Computed once per list: the analysis and
        the rewrite see the same grouping."""
        hit = self._item_lists.get(id(s))
        if hit is None:
            hit = self._item_lists[id(s)] = self._group(_stmts(s))
        return hit

    def _group(self, stmts: list) -> list:
        items: list = []
        stretch: list = []

        def flush() -> None:
            others = [s for s in stretch if not _touches(s, self.rows)]
            if len(others) == len(stretch):
                items.extend(("other", s) for s in others)
            elif others and not self._commute(stretch):
                raise _NotSplittable
            else:
                items.append(("run", list(stretch)))
            stretch.clear()

        for s in stmts:
            if isinstance(s, Allocate):
                flush()
                items.append(("alloc", s))
            elif not _touches(s, self.rows) or self._atomic(s):
                stretch.append(s)
            else:
                flush()
                items.append(("nested", s))
        flush()
        return items

    def _atomic(self, s: Stmt) -> bool:
        """A statement the halves run one copy each of: a tile op, a store, a `T.Parallel` nest,
        or a branch on no row tile between such statements (hoist_uniform_select's masks)."""
        if isinstance(s, IfThenElse):
            branches = [s.then_body] + ([s.else_body] if s.else_body is not None else [])
            # every branch statement must be a row statement: the second half re-runs the whole if
            stmts = [x for b in branches for x in _stmts(b)]
            return not _touches(s.cond, self.rows) and all(_touches(x, self.rows) and self._atomic(x) for x in stmts)
        return isinstance(s, (TileOp, BufferStore)) or (isinstance(s, For) and s.kind == "parallel")

    def _commute(self, stretch: list) -> bool:
        """Each statement that touches no row tile may run before the second half's copies of
        the row statements before it: neither writes what the other reads or writes."""
        for pos, s in enumerate(stretch):
            if _touches(s, self.rows):
                continue
            acc = collect_accesses(s)
            for r in stretch[:pos]:
                if not _touches(r, self.rows):
                    continue
                racc = collect_accesses(r)
                if acc.buffers_written() & (racc.buffers_read() | racc.buffers_written()):
                    return False
                if racc.buffers_written() & acc.buffers_read():
                    return False
        return True

    def _scan(self, s: Stmt) -> None:
        for kind, x in self._items(s):
            if kind == "run":
                self.run_id += 1
                seen: set = set()
                for r in x:  # (statements touching no row tile have none)
                    if _touches(r, self.rows):
                        written = collect_accesses(r).buffers_written() - self.rows
                        if any(b.scope != "global" for b in written):
                            # a tile both halves write part of, read before the second half ran
                            raise _NotSplittable
                    for b in _row_tiles_in(r, self.rows):
                        self.runs.setdefault(b, set()).add(self.run_id)
                        if b not in seen:  # its first access in this run
                            seen.add(b)
                            self.first_full[b] = self.first_full.get(b, True) and _writes_all_first(r, b)
            elif kind == "nested":
                self._scan_nested(x)

    def _scan_nested(self, s: Stmt) -> None:
        if isinstance(s, For) and s.kind != "parallel":
            if _touches((s.start, s.extent), self.rows):
                raise _NotSplittable
            self._scan(s.body)
        elif isinstance(s, IfThenElse):
            if _touches(s.cond, self.rows):
                raise _NotSplittable
            self._scan(s.then_body)
            if s.else_body is not None:
                self._scan(s.else_body)
        elif isinstance(s, LetStmt):
            if _touches(s.value, self.rows):
                raise _NotSplittable
            self._scan(s.body)
        elif isinstance(s, SeqStmt):
            self._scan(s)
        else:
            raise _NotSplittable

    def _check_registers(self, threads: int) -> None:
        total = 0
        for b in self.allocs:
            if b.scope != "local.fragment":
                continue
            shape = b.static_shape
            if shape is None:
                raise _NotSplittable
            nbytes = math.prod(shape) * b.dtype.bytes
            if b in self.rows:
                nbytes = nbytes // 2 if b in self.reused else nbytes
            total += nbytes
        if total / threads / 4 > REGISTERS_PER_THREAD:
            raise _NotSplittable

    def _new_buffers(self) -> dict:
        out: dict = {}
        for b in self.rows:
            shape = (IntImm(self.half), *b.shape[1:])
            if b in self.reused:
                nb = replace(b, shape=shape)
                out[b] = (nb, nb)
            else:
                out[b] = tuple(replace(b, name=f"{b.name}_{h}", shape=shape) for h in range(2))
        return out

    # -- rewrite ----------------------------------------------------------------
    def rewrite(self) -> Stmt:
        return self._rewrite(self.k.body)

    def _rewrite(self, s: Stmt) -> Stmt:
        out: list = []
        for kind, x in self._items(s):
            if kind == "alloc":
                if x.buffer in self.rows:
                    news = dict.fromkeys(self.halves[x.buffer])  # one or two, in order
                    out.extend(replace(x, buffer=nb) for nb in news)
                else:
                    out.append(x)
            elif kind == "other":
                out.append(x)
            elif kind == "run":
                # the first half in program order with the other statements where they were (a tile
                # load stays next to its first reader), then the second half's row statements
                out.extend(self._half(r, 0) for r in x)
                out.extend(self._half(r, 1) for r in x if _touches(r, self.rows))
            else:
                out.append(self._nested(x))
        return seq(*out) if len(out) != 1 else out[0]

    def _nested(self, s: Stmt) -> Stmt:
        if isinstance(s, For):
            return replace(s, body=self._rewrite(s.body))
        if isinstance(s, IfThenElse):
            other = None if s.else_body is None else self._rewrite(s.else_body)
            return replace(s, then_body=self._rewrite(s.then_body), else_body=other)
        if isinstance(s, LetStmt):
            return replace(s, body=self._rewrite(s.body))
        return self._rewrite(s)

    def _region(self, r: BufferRegion, h: int) -> BufferRegion:
        """A row tile's whole-rows region as the same region of half `h`'s tile; a global region
        feeding or receiving a row tile as its h-th half of rows."""
        if r.buffer in self.rows:
            first = r.region[0]
            if _const(first.begin) != 0 or _const(first.extent) != self.m:
                raise _NotSplittable
            rng = (Range(IntImm(0), IntImm(self.half), first.span), *r.region[1:])
            return BufferRegion(self.halves[r.buffer][h], rng, r.span)
        if r.buffer.scope != "global":
            raise _NotSplittable
        for d, rng in enumerate(r.region):
            ext = _const(rng.extent)
            if ext == 1:
                continue
            if ext != self.m:
                raise _NotSplittable
            new = Range(binary("add", rng.begin, IntImm(h * self.half)), IntImm(self.half), rng.span)
            return BufferRegion(r.buffer, (*r.region[:d], new, *r.region[d + 1 :]), r.span)
        raise _NotSplittable

    def _half(self, s: Stmt, h: int) -> Stmt:
        if not _touches(s, self.rows):
            return s
        if isinstance(s, Copy):
            if s.src.buffer not in self.rows and s.dst.buffer not in self.rows:
                raise _NotSplittable
            return replace(s, src=self._region(s.src, h), dst=self._region(s.dst, h))
        if isinstance(s, Fill):
            return replace(s, dst=self._region(s.dst, h))
        if isinstance(s, Reduce):
            if s.dim % len(s.src.region) == 0 or s.src.buffer not in self.rows or s.dst.buffer not in self.rows:
                raise _NotSplittable
            return replace(s, src=self._region(s.src, h), dst=self._region(s.dst, h))
        if isinstance(s, Gemm):
            return replace(s, A=self._region(s.A, h), C=self._region(s.C, h))
        if isinstance(s, For) and s.kind == "parallel":
            return self._half_nest(s, h)
        if isinstance(s, IfThenElse):
            other = None if s.else_body is None else seq(*(self._half(x, h) for x in _stmts(s.else_body)))
            return replace(s, then_body=seq(*(self._half(x, h) for x in _stmts(s.then_body))), else_body=other)
        raise _NotSplittable

    def _half_nest(self, nest: For, h: int) -> For:
        if _const(nest.start) != 0 or _const(nest.extent) != self.m:
            raise _NotSplittable
        i = nest.var
        i2 = Var(i.name, i.dtype)
        offset = binary("add", i2, IntImm(h * self.half)) if h else i2
        halves, rows = self.halves, self.rows

        class _Rows(Mutator):
            def _index(self, buf: Any, indices: tuple) -> tuple:
                if not indices or indices[0] is not i:
                    raise _NotSplittable
                return halves[buf][h], (i2, *(self.visit(x) for x in indices[1:]))

            def visit_BufferLoad(self, n: BufferLoad) -> Any:
                if n.buffer not in rows:
                    return self.generic_visit(n)
                buf, idx = self._index(n.buffer, n.indices)
                return replace(n, buffer=buf, indices=idx)

            def visit_BufferStore(self, n: BufferStore) -> Any:
                if n.buffer not in rows:
                    return self.generic_visit(n)
                buf, idx = self._index(n.buffer, n.indices)
                return replace(n, buffer=buf, indices=idx, value=self.visit(n.value))

            def visit_Var(self, n: Var) -> Any:
                return offset if n is i else n

        body = _Rows().visit(nest.body)
        if h:  # the second copy binds fresh inner loop variables (each loop owns its variable)
            inner = collect(body, lambda n: isinstance(n, For))
            body = substitute(body, {lp.var: Var(lp.var.name, lp.var.dtype) for lp in inner})
        return replace(nest, var=i2, extent=IntImm(self.half), body=body)


def _const(e: Any) -> int | None:
    """`e` as an int, simplified first (the language server runs this pass on traced, unsimplified
    kernels: `(bx + 1) * 128 - bx * 128` is 128)."""
    v = const_int(e)
    if v is None:
        from ...arith import Analyzer

        v = const_int(Analyzer().simplify(e))
    return v


def _stmts(s: Stmt) -> list:
    return list(s.stmts) if isinstance(s, SeqStmt) else [s]


def _writes_all_first(s: Stmt, b: Buffer) -> bool:
    """`s` writes every element of `b` without reading `b` first."""
    if isinstance(s, Fill):
        return s.dst.buffer is b and s.dst.is_whole(_const)
    if isinstance(s, Copy):
        return s.dst.buffer is b and s.src.buffer is not b and s.dst.is_whole(_const)
    if isinstance(s, Reduce):
        return s.dst.buffer is b and s.src.buffer is not b and s.clear and s.dst.is_whole(_const)
    if isinstance(s, Gemm):
        return s.C.buffer is b and s.clear_accum and b not in (s.A.buffer, s.B.buffer)
    if isinstance(s, IfThenElse):  # every way through writes all of it first
        branches = (s.then_body, s.else_body)
        return s.else_body is not None and all(_writes_all_first(_stmts(x)[0], b) for x in branches)
    if isinstance(s, For) and s.kind == "parallel":
        store = whole_tile_store(s)
        if store is None or store.buffer is not b:
            return False
        return not collect(store.value, lambda n: isinstance(n, BufferLoad) and n.buffer is b)
    return False


__all__ = ["split_rows", "split_kernel", "row_split_enabled", "DISABLE_KEY"]
