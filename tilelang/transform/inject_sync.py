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
  control is block-uniform — its condition (trip count), and every `break` /
  `continue` of the loop; see `uniformity.py`: values derived from thread
  indices, T.Parallel variables, fragments, or thread-private buffers written
  with such values or under such control are per-thread; `T.alloc_local` /
  `T.alloc_var` buffers assigned at tile level with uniform values, and loads
  from shared / read-only global memory at uniform addresses, are uniform.
  Otherwise the whole statement is atomic and barriers go before / after it;
  when it needs one *inside* (or already holds one), no correct placement
  exists and the pass raises a `TileLangError` at the statement — it never
  emits it without the barrier;
* conditions and loop bounds that read shared memory: they are reads, ordered
  against earlier writes like any other (a `while` condition at every trip);
* `break` / `continue`: the state at a `break` joins the loop's exit, the
  state at a `continue` its back edge (which gets its barrier before each
  `continue` too, as the one at the end of the body is skipped there).

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

A view (`view_alias.py`) counts as its base: any access of it touches the whole base.

Consecutive reads need no barrier, and one barrier settles every buffer.
`pass_configs["tl.disable_thread_storage_sync"]` (in `ctx` or in
`func.attrs["pass_configs"]`) turns the pass off.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..arith import Analyzer
from ..errors import TileLangError
from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import int32
from ..ir.expr import BinaryOp, BufferLoad, Call, IntImm, Ramp, StringImm, Var, structural_equal
from ..ir.function import PrimFunc
from ..ir.node import Node
from ..ir.stmt import (
    Allocate,
    AnnotateLayout,
    Atomic,
    Break,
    BufferStore,
    Continue,
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
from ..ir.visitor import Mutator, Visitor, collect, free_vars_of
from ..pass_config import in_force
from . import view_alias
from .context import CompileContext
from .uniformity import SPMD_LOOPS as _SPMD_LOOPS
from .uniformity import Uniformity
from .view_alias import alias_roots

SYNC_OP = "tl.sync_threads"
COMMIT_OP = "tl.cp_async_commit"
WAIT_OP = "tl.cp_async_wait"
DISABLE_KEY = "tl.disable_thread_storage_sync"


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
        root = view_alias.current_roots().get(b)
        if root is not None:  # a view: an access of its base's bytes, anywhere in them
            b, dims = root, None
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

    def visit_Im2Col(self, n: Any) -> None:  # a gather from global; cp.async when pipelined
        self.region("reads", n.img)
        self.region("async_writes" if n.annotations.get("async") else "writes", n.col)
        for e in (n.nhw_step, n.c_step):
            self.visit(e)

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


class _Planner:
    def __init__(self, body: Stmt) -> None:
        self.ov = _Overlap()
        self.inserted = 0
        self.dry = 0  # > 0 while exploring (no errors)
        self.uni = Uniformity(body)
        self.jumps: list = []  # per loop being planned: states at its `break`s and `continue`s

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
            if self.uni.loop_uniform(s):
                return self.with_control(s, st, (s.start, s.extent, s.step), lambda st: self.loop(s, st, s.var))
            return self.divergent(s, st, "a loop whose trip count")
        if isinstance(s, While):
            if self.uni.loop_uniform(s):
                return self.loop(s, st, None)
            return self.divergent(s, st, "a `while` loop whose condition")
        if isinstance(s, IfThenElse):
            if self.uniform(s.cond):
                return self.with_control(s, st, s.cond, lambda st: self.branch(s, st))
            return self.divergent(s, st, "a branch whose condition")
        if isinstance(s, (Break, Continue)):
            if self.jumps:
                self.jumps[-1][0 if isinstance(s, Break) else 1].append(st)
            return [s], _State()  # what follows in its sequence is not reached from here
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
        outer, self.uni = self.uni, self.uni.for_region(rng)  # its control need only agree in the region
        try:
            body, _ = self.seq(stmts_of(s.body), own)
        finally:
            self.uni = outer
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
    def with_control(self, s: Stmt, st: _State, control: Any, plan) -> tuple[list, _State]:
        """Plan `s` after the shared-memory reads of its `control` (a branch condition or loop
        bounds, evaluated once before it): a barrier before `s` when they conflict with `st`."""
        acc = collect_accesses(control, is_shared)
        pre: list = []
        if self.conflicts(acc, st):
            pre = [make_sync(s.span)]
            self.inserted += 1
            st = st.after_barrier()
        out, st = plan(st.add(acc))
        return pre + out, st

    def run_body(self, body: list, st: _State, dry: bool = True) -> tuple:
        """Plan one trip of a loop body from `st`: (statements, fall-through end state, states
        at its `break`s, states at its `continue`s, whether it inserted a barrier)."""
        before = self.inserted
        frame: tuple = ([], [])
        self.jumps.append(frame)
        self.dry += dry
        try:
            out, end = self.seq(body, st)
        finally:
            self.dry -= dry
            self.jumps.pop()
        added = self.inserted != before
        if dry:
            self.inserted = before
        return out, end, frame[0], frame[1], added

    # -- loops -----------------------------------------------------------------
    def loop(self, s: For | While, st: _State, var: Var | None) -> tuple[list, _State]:
        """A uniform loop. Hazards into the loop get one barrier before it; hazards of the
        back edge (late in trip k against early in trip k + 1, and against a `while`
        condition's shared reads) one at the end of the body — and before every `continue`,
        the back edge's other entries. The state after the loop joins its exits: the
        condition's (after any trip, or before the first when the loop may not run) and
        every `break`."""
        inner = _bound_vars(s.body) | ({var} if var is not None else set())
        cond = collect_accesses(s.cond, is_shared) if isinstance(s, While) else Accesses([], [], [])
        body0, _, _, _, _ = self.run_body(stmts_of(s.body), _State((), (), st.inflight), dry=False)
        pre: list = []
        if self.run_body(body0, st)[4] or self.conflicts(cond, st):
            pre = [make_sync(s.span)]  # settle what precedes the loop once, outside it
            self.inserted += 1
            st = st.after_barrier()
        entry = st.add(cond)
        _, end, brks, conts, _ = self.run_body(body0, entry)
        back = _join_all(end, conts)
        body = list(body0)
        carry = back.widen(inner)
        synced = False
        for _ in range(3):  # reach the fixed point of the back edge
            if self.run_body(body, carry.add(cond))[4] or self.conflicts(cond, carry):
                synced = True
                break
            _, e2, b2, c2, _ = self.run_body(body, carry.add(cond))
            brks = brks + b2
            nxt = carry.join(_join_all(e2, c2).widen(inner))
            if nxt.size() == carry.size():
                break
            carry = nxt
        else:  # pragma: no cover - the carried state grows monotonically and is small
            synced = True
        if synced:
            body = _sync_before_continues(body, s.span) + [make_sync(s.span)]
            self.inserted += 1
            back = back.after_barrier()
            _, _, b3, _, _ = self.run_body(body, back.add(cond))
            brks = brks + b3
        runs = isinstance(s, For) and _int(s.extent) is not None and _int(s.extent) >= 1
        exits = _join_all(back.add(cond), brks)
        out_state = (exits if runs else st.add(cond).join(exits)).widen(inner)
        new = _rebuild(s, "body", s.body, body)
        self.uni.same_loop(new, s)  # re-planned later (in an enclosing loop's next pass): same jumps
        return pre + [new], out_state

    # -- branches --------------------------------------------------------------
    def branch(self, s: IfThenElse, st: _State) -> tuple[list, _State]:
        """A uniform branch: each arm planned from the state before it; the states join after it."""
        then, st_t = self.seq(stmts_of(s.then_body), st.copy())
        if s.else_body is not None:
            els, st_e = self.seq(stmts_of(s.else_body), st.copy())
        else:
            els, st_e = None, st
        new = _rebuild(s, "then_body", s.then_body, then)
        if els is not None:
            new = _rebuild(new, "else_body", s.else_body, els)
        return [new], st_t.join(st_e)

    def divergent(self, s: Stmt, st: _State, what: str) -> tuple[list, _State]:
        """`s` may run differently in different threads: no barrier may go inside, so it
        is one atomic statement (barriers go before / after it) — and where it needs one
        inside (or holds one already), compiling it would be wrong: an error at `s`."""
        if not self.dry:
            need = self.needs_barrier_inside(s)
            if need:
                control = s.cond if isinstance(s, (While, IfThenElse)) else (s.start, s.extent, s.step)
                why = self.uni.why(control)
                if why is None and isinstance(s, (For, While)):
                    why = "a `break` / `continue` in it depends on " + (self.uni.jump_why(s) or "such a value")
                raise TileLangError(
                    f"{what} may differ between the threads of the block ({why}), but {need}; "
                    "a barrier there would be reached by some threads only, and without one "
                    "threads read shared memory other threads have not finished writing",
                    s.span,
                    "compute the condition only from block indices, kernel arguments, and values "
                    "assigned outside T.Parallel (a `T.alloc_local` / `T.alloc_var` set at tile "
                    "level from uniform values, or a global / shared element at a uniform index), "
                    "or move the shared-memory traffic out of it",
                )
        return self.atomic(s, st)

    def needs_barrier_inside(self, s: Stmt) -> str:
        """Why `s` would need a barrier inside ('' if it does not): planned as if uniform."""
        for x in _nested_evaluates(s):
            if is_sync(x) and not _under_ws(s, x):
                return "it contains a barrier"
        before = self.inserted
        self.dry += 1
        self.jumps.append(([], []))  # its jumps to an outer loop: not that loop's exits here
        try:
            if isinstance(s, For):
                self.loop(s, _State(), s.var)
            elif isinstance(s, While):
                self.loop(s, _State(), None)
            else:
                self.branch(s, _State())
        finally:
            self.dry -= 1
            self.jumps.pop()
        added = self.inserted != before
        self.inserted = before
        return "shared memory written in it is read by other threads in it (it needs a barrier inside)" if added else ""


def _join_all(st: _State, others: list) -> _State:
    for o in others:
        st = st.join(o)
    return st


def _sync_before_continues(body: list, span: Any) -> list:
    """`body` with a barrier before each `continue` of its own loop (not of loops nested in it)."""

    class _C(Mutator):
        def visit_For(self, n: For) -> Any:
            return n

        def visit_While(self, n: While) -> Any:
            return n

        def visit_Continue(self, n: Continue) -> Any:
            return seq(make_sync(n.span if n.span.line else span), n)

    return [_C().visit(x) for x in body]


def _under_ws(root: Stmt, target: Stmt) -> bool:
    """`target` sits inside a `T.ws` region of `root` (its barriers are the region's own)."""
    for ws in collect(root, lambda n: isinstance(n, WarpSpecialize)):
        if collect(ws, lambda n: n is target):
            return True
    return False


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


def inject_sync(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    if in_force(func, ctx).get(DISABLE_KEY):
        return func
    with view_alias.roots_in_force(alias_roots(func.body, func.params)):  # views touch their bases' bytes
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
