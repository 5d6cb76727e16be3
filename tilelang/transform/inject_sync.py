"""inject_sync: block-wide barriers between shared-memory accesses of different statements.

Requires: tile-level IR (tile ops still present; run after `inject_pipeline`
and before thread-level lowering). `T.Parallel` nests and tile ops are atomic
statements here: each is executed by the whole block, and its lowering owns
any synchronisation *inside* it.

Guarantees: an equivalent PrimFunc (the input is never modified) in which
`Evaluate(Call("tl.sync_threads", ()))` separates every pair of statements
that touch the same shared buffer, at least one of them writing it (RAW, WAR
and WAW: different threads may touch different elements), along every path
of execution, including

* across loop iterations: accesses late in iteration k against accesses early
  in iteration k+1 get a barrier at the *end* of the loop body unless one
  already separates them;
* into and out of loops: a hazard between what precedes a loop and the start
  of its body is fixed by one barrier *before* the loop when the body does not
  already have one in time;
* branches: a barrier is placed inside a branch (or a loop) only when its
  condition (trip count) is block-uniform — see `_Uniformity`: no T.Parallel
  variables, fragment / local loads or thread-index calls, directly or through
  LetStmts and `local.var` scalars; loads from global / shared memory at a
  uniform address count as uniform. Otherwise the whole statement is atomic
  and the barrier goes before / after it (a hazard *inside* it cannot be
  fixed and is reported with a warning).

Barriers already in the IR (for example those `inject_pipeline` emitted)
are reused, never duplicated; so is the one a TMA store (`Copy` annotated
`tma_store`, see `plan_tma_stores`) brings in its lowering. Asynchronous copies (`Copy` annotated
`async=True`) are modelled as cp.async: their writes are "in flight" until
the next `tl.cp_async_wait`, and become pending writes there; issuing one
only needs a barrier against earlier reads / writes of the region it writes.

Accesses are tracked per buffer *region*: two accesses of one buffer are
independent when some dimension is provably disjoint — constant or provably
ordered ranges, or stage indices `(e + c1) % s` / `(e + c2) % s` with
`c1 != c2 (mod s)` (multi-buffered pipeline slots). Only shared scopes
(`shared`, `shared.dyn`) are tracked: fragments and locals are private to a
thread, and `shared.barrier` objects synchronise themselves.

Consecutive reads need no barrier, and one barrier settles every buffer.
`pass_configs["tl.disable_thread_storage_sync"]` (in `ctx` or in
`func.attrs["pass_configs"]`) turns the pass off.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

from ..arith import Analyzer
from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import int32
from ..ir.expr import BinaryOp, BufferLoad, Call, IntImm, Ramp, StringImm, Var, structural_equal
from ..ir.function import PrimFunc
from ..ir.node import Node
from ..ir.stmt import (
    Allocate,
    AnnotateLayout,
    Atomic,
    BufferStore,
    Copy,
    CumSum,
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
    WarpSpecialize,
    While,
    seq,
    stmts_of,
)
from ..ir.visitor import Mutator, Visitor, free_vars_of
from ..pass_config import in_force

SYNC_OP = "tl.sync_threads"
COMMIT_OP = "tl.cp_async_commit"
WAIT_OP = "tl.cp_async_wait"
DISABLE_KEY = "tl.disable_thread_storage_sync"

# Loops whose iterations run on different threads (or lanes): atomic statements.
_SPMD_LOOPS = ("parallel", "vectorized", "thread")


def make_sync(span: Any = None) -> Evaluate:
    """`T.evaluate(T.tl.sync_threads())` carrying `span`."""
    if span is None:
        return Evaluate(Call(SYNC_OP, ()))
    return Evaluate(Call(SYNC_OP, (), span=span), span=span)


def is_call_stmt(s: Any, op: str) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == op


def is_sync(s: Any) -> bool:
    return is_call_stmt(s, SYNC_OP)


def is_shared(b: Buffer) -> bool:
    return b.scope in ("shared", "shared.dyn")


# --------------------------------------------------------------------------
# Access summaries
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Access:
    """One access to `buffer`: `dims[d]` is `(begin, extent)` of dimension d,
    or None where unknown; `dims` None means the whole buffer."""

    buffer: Buffer
    dims: tuple | None
    ws: tuple | None = None  # thread range of the T.ws region it happened in (`_Planner.warp_region`)


@dataclass
class Accesses:
    reads: list
    writes: list
    async_writes: list

    def buffers_read(self) -> set:
        return {a.buffer for a in self.reads}

    def buffers_written(self) -> set:
        return {a.buffer for a in self.writes} | {a.buffer for a in self.async_writes}


def _bound_vars(node: Any) -> set:
    """Vars bound (by loops or LetStmts) anywhere inside `node`."""
    out: set = set()

    class _B(Visitor):
        def visit_For(self, n: For) -> None:
            out.add(n.var)
            self.generic_visit(n)

        def visit_LetStmt(self, n: LetStmt) -> None:
            out.add(n.var)
            self.generic_visit(n)

    _B().visit(node)
    return out


class _Collect(Visitor):
    def __init__(self, keep, bound: set) -> None:
        self.keep = keep
        self.bound = bound
        self.acc = Accesses([], [], [])

    # -- helpers -------------------------------------------------------------
    def _known(self, e: Any) -> bool:
        return not any(v in self.bound for v in free_vars_of(e))

    def _region_dims(self, r: BufferRegion) -> tuple:
        return tuple((g.begin, g.extent) if self._known(g.begin) and self._known(g.extent) else None for g in r.region)

    def _point_dims(self, idx: tuple) -> tuple:
        return tuple(None if isinstance(i, Ramp) or not self._known(i) else (i, IntImm(1, i.dtype)) for i in idx)

    def _add(self, kind: str, b: Buffer, dims: tuple | None) -> None:
        if self.keep(b):
            getattr(self.acc, kind).append(Access(b, dims))

    def region(self, kind: str, r: BufferRegion) -> None:
        self._add(kind, r.buffer, self._region_dims(r))
        for g in r.region:
            self.visit(g.begin)
            self.visit(g.extent)

    # -- expressions -----------------------------------------------------------
    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self._add("reads", n.buffer, self._point_dims(n.indices))
        self.visit(n.indices)

    def visit_Call(self, n: Call) -> None:
        if n.op == "address_of" or "ptr" in n.op:  # a pointer escapes: it may be read and written
            for a in n.args:
                if isinstance(a, BufferLoad):
                    self._add("writes", a.buffer, None)
        self.visit(n.args)

    def visit_BufferRegion(self, n: BufferRegion) -> None:  # in an op this pass does not know
        self.region("reads", n)
        self._add("writes", n.buffer, self._region_dims(n))

    def visit_Buffer(self, n: Buffer) -> None:  # a bare buffer reference (unknown use)
        self._add("reads", n, None)
        self._add("writes", n, None)

    # -- statements ------------------------------------------------------------
    def visit_BufferStore(self, n: BufferStore) -> None:
        self._add("writes", n.buffer, self._point_dims(n.indices))
        self.visit(n.indices)
        self.visit(n.value)

    def visit_Allocate(self, n: Allocate) -> None:
        if n.init is not None:
            self.visit(n.init)

    def visit_Copy(self, n: Copy) -> None:
        self.region("reads", n.src)
        if "tma_barrier" in n.annotations:
            return  # a TMA load of inject_pipeline's mbarrier ring: ordered by its barriers, like TmaCopy
        self.region("async_writes" if n.annotations.get("async") else "writes", n.dst)

    def visit_TmaCopy(self, n: Any) -> None:
        # a TMA load lands asynchronously and is waited for on its mbarrier (the user's
        # protocol orders it); a TMA store reads shared memory like a copy
        if n.barrier is None:
            self.region("reads", n.src)

    def visit_Gemm(self, n: Gemm) -> None:
        self.region("reads", n.A)
        self.region("reads", n.B)
        self.region("reads", n.C)
        self.region("writes", n.C)

    def visit_Reduce(self, n: Reduce) -> None:
        self.region("reads", n.src)
        if not n.clear:
            self.region("reads", n.dst)
        self.region("writes", n.dst)

    def visit_CumSum(self, n: CumSum) -> None:
        self.region("reads", n.src)
        self.region("writes", n.dst)

    def visit_Fill(self, n: Fill) -> None:
        self.region("writes", n.dst)
        self.visit(n.value)

    def visit_Atomic(self, n: Atomic) -> None:
        self.region("reads", n.dst)
        self.region("writes", n.dst)
        if isinstance(n.value, BufferRegion):
            self.region("reads", n.value)
        else:
            self.visit(n.value)

    def visit_ReducerInit(self, n: ReducerInit) -> None:
        self._add("writes", n.reducer, None)

    def visit_ReducerUpdate(self, n: ReducerUpdate) -> None:
        self._add("reads", n.reducer, None)
        self._add("writes", n.reducer, None)
        self.visit(n.indices)
        self.visit(n.value)

    def visit_FinalizeReducer(self, n: FinalizeReducer) -> None:
        self._add("reads", n.reducer, None)
        self._add("writes", n.dst, None)

    def visit_Print(self, n: Print) -> None:
        if isinstance(n.obj, Buffer):
            self._add("reads", n.obj, None)
        elif isinstance(n.obj, Node):
            self.visit(n.obj)

    def visit_AnnotateLayout(self, n: AnnotateLayout) -> None:
        pass

    def visit_Hint(self, n: Hint) -> None:
        pass


def collect_accesses(node: Any, keep=None) -> Accesses:
    """Reads / writes / asynchronous writes of buffers in `node` (a statement
    or expression, summarised as one atomic step). `keep(buffer)` filters
    buffers (default: all). Dimensions indexed by variables bound inside
    `node` are unknown (None)."""
    c = _Collect(keep or (lambda b: True), _bound_vars(node))
    c.visit(node)
    return c.acc


# --------------------------------------------------------------------------
# Overlap of accesses
# --------------------------------------------------------------------------


def _int(e: Any) -> int | None:
    return e.value if isinstance(e, IntImm) else None


class _Overlap:
    def __init__(self) -> None:
        self.an = Analyzer()
        self.memo: dict = {}

    def dims_disjoint(self, a: tuple, b: tuple) -> bool:
        (b1, e1), (b2, e2) = a, b
        ib1, ie1, ib2, ie2 = _int(b1), _int(e1), _int(b2), _int(e2)
        if None not in (ib1, ie1, ib2, ie2):
            return ib1 + ie1 <= ib2 or ib2 + ie2 <= ib1
        an = self.an
        try:
            if ie1 == 1 and ie2 == 1 and _slots_differ(b1, b2, an):
                return True
            return an.can_prove(b1 + e1 <= b2) or an.can_prove(b2 + e2 <= b1)
        except Exception:  # noqa: BLE001 - expressions the analyzer cannot compare: assume overlap
            return False

    def may_overlap(self, a: Access, b: Access) -> bool:
        if a.buffer is not b.buffer:
            return False
        if a.dims is None or b.dims is None:
            return True
        key = (a, b)  # identity-hashed; the memo keeps both alive
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        res = True
        for da, db in zip(a.dims, b.dims):
            if da is not None and db is not None and self.dims_disjoint(da, db):
                res = False
                break
        self.memo[key] = res
        self.memo[(b, a)] = res
        return res


def _slots_differ(x: Any, y: Any, an: Analyzer) -> bool:
    """`x != y` for every value of the variables: a nonzero constant
    difference, or `(e + c1) % s` vs `(e + c2) % s` with c1 != c2 mod s."""
    d = _int(an.simplify(x - y))
    if d is not None:
        return d != 0
    if (
        isinstance(x, BinaryOp)
        and isinstance(y, BinaryOp)
        and x.op == y.op == "floormod"
        and _int(x.b) is not None
        and _int(x.b) == _int(y.b)
        and _int(x.b) > 0
    ):
        d = _int(an.simplify(x.a - y.a))
        return d is not None and d % _int(x.b) != 0
    return False


# --------------------------------------------------------------------------
# Planner state
# --------------------------------------------------------------------------


class _State:
    """Accesses since the last barrier: reads, writes, and cp.async writes in flight."""

    __slots__ = ("reads", "writes", "inflight")

    def __init__(self, reads=(), writes=(), inflight=()) -> None:
        self.reads = list(reads)
        self.writes = list(writes)
        self.inflight = list(inflight)

    def copy(self) -> _State:
        return _State(self.reads, self.writes, self.inflight)

    def after_barrier(self) -> _State:
        return _State((), (), self.inflight)

    def after_wait(self) -> _State:
        return _State(self.reads, self.writes + self.inflight, ())

    def add(self, acc: Accesses) -> _State:
        return _State(
            _merge(self.reads, acc.reads), _merge(self.writes, acc.writes), _merge(self.inflight, acc.async_writes)
        )

    def join(self, other: _State) -> _State:
        return _State(
            _merge(self.reads, other.reads), _merge(self.writes, other.writes), _merge(self.inflight, other.inflight)
        )

    def widen(self, vars_: set) -> _State:
        """Forget the position of accesses indexed by `vars_` (out of scope)."""
        if not vars_:
            return self
        return _State(_widen(self.reads, vars_), _widen(self.writes, vars_), _widen(self.inflight, vars_))

    def size(self) -> int:
        return len(self.reads) + len(self.writes) + len(self.inflight)


def _same_access(a: Access, b: Access) -> bool:
    if a.buffer is not b.buffer:
        return False
    if a.dims is None or b.dims is None:
        return a.dims is None and b.dims is None
    return structural_equal(a.dims, b.dims)


def _merge(xs: list, ys: list) -> list:
    out = list(xs)
    for y in ys:
        if any(_covers(x, y) for x in out):
            continue
        out.append(y)
    return out


def _covers(x: Access, y: Access) -> bool:
    # an access of one T.ws region does not stand in for a block-level one or another region's
    return x.buffer is y.buffer and (x.ws is None or x.ws == y.ws) and (x.dims is None or _same_access(x, y))


def _widen(xs: list, vars_: set) -> list:
    out: list = []
    for a in xs:
        if a.dims is not None:
            dims = tuple(None if d is None or any(v in vars_ for v in free_vars_of(d)) else d for d in a.dims)
            if any(x is not y for x, y in zip(dims, a.dims)):
                a = Access(a.buffer, dims, a.ws)
        out = _merge(out, [a])
    return out


# --------------------------------------------------------------------------
# The planner
# --------------------------------------------------------------------------


def _thread_dependent_call(op: str) -> bool:
    return any(k in op for k in ("thread", "lane", "warp", "shfl", "rand"))


class _Uniformity:
    """Which expressions have the same value in every thread of the block.

    Per-thread values: variables of T.Parallel / vectorized / thread loops,
    loads from fragments and `local` arrays, thread-index-like calls, and
    everything computed from them. Loads from global or shared memory at a
    uniform address are uniform (every thread reads the same word), and so is
    a `local.var` scalar that is only ever assigned at tile level (outside
    T.Parallel, under uniform conditions) uniform values — a fixed point.
    """

    def __init__(self, body: Stmt) -> None:
        self.bad_vars: set = set()
        self.ok_scalars: set = set()
        lets: list = []
        stores: list = []
        uni = self

        class _Sites(Visitor):
            def __init__(self) -> None:
                self.spmd = 0
                self.conds: list = []

            def visit_Allocate(self, n: Allocate) -> None:
                if n.buffer.scope == "local.var":
                    uni.ok_scalars.add(n.buffer)

            def visit_For(self, n: For) -> None:
                spmd = n.kind in _SPMD_LOOPS
                if spmd or self.spmd:
                    uni.bad_vars.add(n.var)
                self.spmd += spmd
                self.conds.append((n.start, n.extent))
                self.visit(n.body)
                self.conds.pop()
                self.spmd -= spmd

            def visit_IfThenElse(self, n: IfThenElse) -> None:
                self.conds.append(n.cond)
                self.visit(n.then_body)
                if n.else_body is not None:
                    self.visit(n.else_body)
                self.conds.pop()

            def visit_While(self, n: While) -> None:
                self.conds.append(n.cond)
                self.visit(n.body)
                self.conds.pop()

            def visit_LetStmt(self, n: LetStmt) -> None:
                if self.spmd:
                    uni.bad_vars.add(n.var)
                else:
                    lets.append((n.var, n.value))

            def visit_BufferStore(self, n: BufferStore) -> None:
                if n.buffer.scope == "local.var":
                    stores.append((n.buffer, (n.indices, n.value), tuple(self.conds), self.spmd > 0))

        _Sites().visit(body)
        for b, _, _, spmd in stores:
            if spmd:
                self.ok_scalars.discard(b)
        changed = True
        while changed:
            changed = False
            for v, value in lets:
                if v not in self.bad_vars and not self.uniform(value):
                    self.bad_vars.add(v)
                    changed = True
            for b, what, conds, _ in stores:
                if b in self.ok_scalars and not (self.uniform(what) and self.uniform(conds)):
                    self.ok_scalars.discard(b)
                    changed = True

    def uniform(self, e: Any) -> bool:
        ok = True
        uni = self

        class _U(Visitor):
            def visit_Var(self, n: Var) -> None:
                nonlocal ok
                if n in uni.bad_vars:
                    ok = False

            def visit_BufferLoad(self, n: BufferLoad) -> None:
                nonlocal ok
                b = n.buffer
                if not (b.scope in ("global", "shared", "shared.dyn") or b in uni.ok_scalars):
                    ok = False
                self.visit(n.indices)

            def visit_Call(self, n: Call) -> None:
                nonlocal ok
                if _thread_dependent_call(n.op):
                    ok = False
                self.generic_visit(n)

        _U().visit(e)
        return ok


class _Planner:
    def __init__(self, body: Stmt) -> None:
        self.ov = _Overlap()
        self.inserted = 0
        self.dry = 0  # > 0 while exploring (no warnings)
        self.uni = _Uniformity(body)

    # -- hazards -------------------------------------------------------------
    def conflicts(self, acc: Accesses, st: _State) -> bool:
        ov = self.ov.may_overlap
        for w in acc.writes + acc.async_writes:
            if any(ov(w, x) for x in st.reads) or any(ov(w, x) for x in st.writes):
                return True
        for r in acc.reads:
            if any(ov(r, x) for x in st.writes):
                return True
        return False

    def uniform(self, e: Any) -> bool:
        return self.uni.uniform(e)

    # -- sequences -------------------------------------------------------------
    def seq(self, stmts: tuple | list, st: _State) -> tuple[list, _State]:
        out: list = []
        for s in stmts:
            new, st = self.stmt(s, st)
            out.extend(new)
        return out, st

    def adds_barrier(self, stmts: list, st: _State) -> bool:
        before = self.inserted
        self.dry += 1
        try:
            self.seq(stmts, st)
        finally:
            self.dry -= 1
        added = self.inserted != before
        self.inserted = before
        return added

    def end_state(self, stmts: list, st: _State) -> _State:
        before = self.inserted
        self.dry += 1
        try:
            _, out = self.seq(stmts, st)
        finally:
            self.dry -= 1
        self.inserted = before
        return out

    def stmt(self, s: Stmt, st: _State) -> tuple[list, _State]:
        if isinstance(s, SeqStmt):
            return self.seq(s.stmts, st)
        if is_sync(s):
            return [s], st.after_barrier()
        if is_call_stmt(s, WAIT_OP):
            return [s], st.after_wait()
        if is_call_stmt(s, COMMIT_OP):
            return [s], st
        if isinstance(s, KernelLaunch):
            body, _ = self.seq(stmts_of(s.body), _State())
            return [_rebuild(s, "body", s.body, body)], st
        if isinstance(s, Allocate):
            return [s], st
        if isinstance(s, LetStmt):
            return self.atomic(s, st)
        if isinstance(s, For) and s.kind not in _SPMD_LOOPS:
            if self.uniform((s.start, s.extent, s.step)):
                return self.loop(s, st, s.var)
            return self.divergent(s, st, (s.body,), "a loop whose trip count")
        if isinstance(s, While):
            if self.uniform(s.cond):
                return self.loop(s, st, None)
            return self.divergent(s, st, (s.body,), "a `while` loop whose condition")
        if isinstance(s, IfThenElse):
            return self.branch(s, st)
        if isinstance(s, WarpSpecialize):
            return self.warp_region(s, st)
        if _is_tma_store(s):
            # its lowering (tma_lower.tma_store_stmt) starts with a proxy fence and a block
            # barrier of its own: one placed here would be a second
            return [s], st.after_barrier().add(collect_accesses(s, is_shared))
        return self.atomic(s, st)

    def warp_region(self, s: WarpSpecialize, st: _State) -> tuple[list, _State]:
        """A `T.ws` region runs in some warpgroups only. Against block-level statements it
        is one atomic statement (a block barrier before it when they conflict); against
        other regions it is ordered by the user's mbarriers, so their accesses are not
        hazards here; inside, its statements are planned against its own warpgroups'
        earlier accesses (those barriers become the region's named barrier when lowered)."""
        rng = s.thread_range
        found = collect_accesses(s, is_shared)
        acc = Accesses(
            *([Access(a.buffer, a.dims, rng) for a in xs] for xs in (found.reads, found.writes, found.async_writes))
        )
        out: list = []
        block_level = _State([a for a in st.reads if a.ws is None], [a for a in st.writes if a.ws is None], st.inflight)
        if self.conflicts(acc, block_level):
            out.append(make_sync(s.span))
            self.inserted += 1
            st = st.after_barrier()
        own = _State([a for a in st.reads if a.ws == rng], [a for a in st.writes if a.ws == rng], st.inflight)
        body, _ = self.seq(stmts_of(s.body), own)
        out.append(_rebuild(s, "body", s.body, body))
        return out, st.add(acc)

    def atomic(self, s: Stmt, st: _State) -> tuple[list, _State]:
        acc = collect_accesses(s, is_shared)
        out = [s]
        if self.conflicts(acc, st):
            out = [make_sync(s.span), s]
            self.inserted += 1
            st = st.after_barrier()
        if any(is_call_stmt(x, WAIT_OP) for x in _nested_evaluates(s)):
            st = st.after_wait()  # a cp.async wait inside a construct: its copies have landed
        return out, st.add(acc)

    # -- loops -----------------------------------------------------------------
    def loop(self, s: For | While, st: _State, var: Var | None) -> tuple[list, _State]:
        inner = _bound_vars(s.body) | ({var} if var is not None else set())
        body0, _ = self.seq(stmts_of(s.body), _State((), (), st.inflight))
        pre: list = []
        if self.adds_barrier(body0, st):
            pre = [make_sync(s.span)]  # settle what precedes the loop once, outside it
            self.inserted += 1
            st = st.after_barrier()
        end = self.end_state(body0, st)
        body = list(body0)
        carry = end.widen(inner)
        for _ in range(3):  # reach the fixed point of the back edge
            if self.adds_barrier(body, carry):
                body.append(make_sync(s.span))
                self.inserted += 1
                end = end.after_barrier()
                break
            nxt = carry.join(self.end_state(body, carry).widen(inner))
            if nxt.size() == carry.size():
                break
            carry = nxt
        else:  # pragma: no cover - the carried state grows monotonically and is small
            body.append(make_sync(s.span))
            self.inserted += 1
            end = end.after_barrier()
        runs = isinstance(s, For) and _int(s.extent) is not None and _int(s.extent) >= 1
        out_state = (end if runs else st.join(end)).widen(inner)
        return pre + [_rebuild(s, "body", s.body, body)], out_state

    # -- branches --------------------------------------------------------------
    def branch(self, s: IfThenElse, st: _State) -> tuple[list, _State]:
        if self.uniform(s.cond):
            then, st_t = self.seq(stmts_of(s.then_body), st.copy())
            if s.else_body is not None:
                els, st_e = self.seq(stmts_of(s.else_body), st.copy())
            else:
                els, st_e = None, st
            new = _rebuild(s, "then_body", s.then_body, then)
            if els is not None:
                new = _rebuild(new, "else_body", s.else_body, els)
            return [new], st_t.join(st_e)
        return self.divergent(s, st, (s.then_body, s.else_body), "a branch whose condition")

    def divergent(self, s: Stmt, st: _State, parts: tuple, what: str) -> tuple[list, _State]:
        """`s` may run differently in different threads: no barrier may go inside,
        so it is one atomic statement (barriers go before / after it)."""
        if not self.dry:
            for part in parts:
                if part is not None and self.adds_barrier(list(stmts_of(part)), _State()):
                    warnings.warn(
                        f"{s.span}: shared memory is written and read by different statements inside "
                        f"{what} may differ between threads; no barrier can be placed there "
                        "(make the condition block-uniform, or move it inside a T.Parallel loop)",
                        stacklevel=3,
                    )
                    break
        return self.atomic(s, st)


def _is_tma_store(s: Stmt) -> bool:
    return isinstance(s, Copy) and bool(s.annotations.get("tma_store"))


def _nested_evaluates(s: Stmt) -> list:
    """Evaluate statements nested in an atomic construct. (Barriers among them are
    not trusted: inside a T.Parallel nest or a divergent branch they may not be
    reached by every thread.)"""
    out: list = []

    class _E(Visitor):
        def visit_Evaluate(self, n: Evaluate) -> None:
            out.append(n)

    if not isinstance(s, Evaluate):
        _E().visit(s)
    return out


def _rebuild(node: Stmt, field: str, old: Stmt, new: list) -> Stmt:
    """`node` with `field` replaced by the statement list `new` (identity kept if unchanged)."""
    old_list = stmts_of(old)
    if len(old_list) == len(new) and all(a is b for a, b in zip(old_list, new)):
        return node
    if not new:
        body = SeqStmt((), old.span)
    elif len(new) == 1:
        body = new[0]
    else:
        body = SeqStmt(tuple(new), old.span)
    return replace(node, **{field: body})


def inject_sync(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    if in_force(func, ctx).get(DISABLE_KEY):
        return func
    planner = _Planner(func.body)
    out, _ = planner.stmt(func.body, _State())
    if planner.inserted:
        func = func.with_body(seq(*out) if len(out) != 1 else out[0])
    if _has_wgmma(func):
        func = func.with_body(_ProxyFences().visit(func.body))
    return func


PROXY_FENCE = "tl::fence_proxy_async"


def _has_wgmma(func: PrimFunc) -> bool:
    from .infer_layout import wgmma_plan_of

    return any(wgmma_plan_of(lay) is not None for lay in (func.attrs.get("layout_map") or {}).values())


class _ProxyFences(Mutator):
    """wgmma reads shared memory through the async proxy: shared writes of the generic
    proxy (stores, cp.async once waited for) are visible to it only after
    `fence.proxy.async.shared::cta` in each writing thread before the barrier. In a
    kernel with wgmma gemms a barrier gets one unless, within its statement sequence,
    nothing since the previous barrier can have written shared memory (e.g. the
    barrier after a gemm that only read its tiles). The start of a sequence counts
    as written (a loop's back edge, code before a branch)."""

    def visit_SeqStmt(self, n: SeqStmt) -> Any:
        out: list = []
        changed, dirty = False, True
        for s in n.stmts:
            if is_sync(s):
                if dirty:
                    out.append(_proxy_fence(s))
                    changed = True
                out.append(s)
                dirty = False
            elif _is_tma_store(s):  # fences and synchronises before it reads the tile
                out.append(s)
                dirty = False
            else:
                t = self.visit(s)
                changed |= t is not s
                out.append(t)
                dirty = dirty or _may_write_shared(s)
        return seq(*out) if changed else n

    def visit_Evaluate(self, n: Evaluate) -> Any:
        return seq(_proxy_fence(n), n) if is_sync(n) else n


def _may_write_shared(s: Stmt) -> bool:
    """False only for statements that provably complete no shared-memory write: a gemm
    (reads its tiles), or code whose accesses write no shared buffer and wait for no
    cp.async group."""
    if isinstance(s, Gemm):
        return False
    if any(is_call_stmt(x, WAIT_OP) for x in _nested_evaluates(s)):
        return True
    return any(is_shared(b) for b in collect_accesses(s).buffers_written())


def _proxy_fence(sync: Evaluate) -> Evaluate:
    return Evaluate(Call("tl.call", (StringImm(PROXY_FENCE),), int32, span=sync.span), span=sync.span)


__all__ = ["inject_sync", "collect_accesses", "Access", "Accesses", "make_sync", "is_sync", "SYNC_OP"]
