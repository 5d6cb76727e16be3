"""Statements of the tile IR, including the tile operators.

Scoping rule: `LetStmt` and `Allocate` have no body; they are in scope from
where they appear to the end of the enclosing statement list (`SeqStmt`,
loop body, branch or kernel body). This keeps traced programs flat and easy
to print, and every pass that moves statements keeps a binding before its
uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .buffer import Buffer, BufferRegion
from .expr import PrimExpr, Var
from .node import EMPTY, FrozenDict, Node, span_field
from .span import Span


class Stmt(Node):
    __slots__ = ()
    span: Span

    def __str__(self) -> str:
        from .printer import stmt_str

        return stmt_str(self)


# --------------------------------------------------------------------------
# Plain statements
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BufferStore(Stmt):
    buffer: Buffer
    indices: tuple
    value: PrimExpr
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Evaluate(Stmt):
    value: PrimExpr
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class LetStmt(Stmt):
    """Binds `var` to `value` for the rest of the enclosing block."""

    var: Var
    value: PrimExpr
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class SeqStmt(Stmt):
    stmts: tuple
    span: Span = span_field()


LOOP_KINDS = ("serial", "unrolled", "parallel", "pipelined", "vectorized", "thread")


@dataclass(frozen=True, eq=False)
class For(Stmt):
    """`for var in range(start, start + extent * step, step)`.

    kind: serial / unrolled / parallel (a T.Parallel tile loop) / pipelined /
    vectorized / thread (bound to threadIdx, annotation `thread`).
    """

    var: Var
    start: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    step: PrimExpr | None = None
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class While(Stmt):
    cond: PrimExpr
    body: Stmt
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class IfThenElse(Stmt):
    cond: PrimExpr
    then_body: Stmt
    else_body: Stmt | None = None
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Break(Stmt):
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Continue(Stmt):
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Allocate(Stmt):
    """Declares `buffer` (shared/fragment/local/var) for the rest of the block.
    `init` (optional) is the initial value of a `local.var`."""

    buffer: Buffer
    init: PrimExpr | None = None
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class KernelLaunch(Stmt):
    """`with T.Kernel(*grid, threads=...) as block_vars: body`."""

    grid: tuple  # PrimExprs, 1-3 of them
    block_vars: tuple  # Vars bound to blockIdx.x/y/z
    threads: tuple  # ints, padded to 3
    body: Stmt
    attrs: FrozenDict = EMPTY
    span: Span = span_field()

    @property
    def num_threads(self) -> int:
        n = 1
        for t in self.threads:
            n *= t
        return n


# --------------------------------------------------------------------------
# Tile operators (lowered per target by tilelang.tileop)
# --------------------------------------------------------------------------


class TileOp(Stmt):
    """Marker base class of tile operators."""

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class Copy(TileOp):
    """Element-wise copy `dst = cast(src)` over regions of equal extents
    (unit dimensions are ignored when matching)."""

    src: BufferRegion
    dst: BufferRegion
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


GEMM_POLICIES = ("Square", "FullRow", "FullCol")


@dataclass(frozen=True, eq=False)
class Gemm(TileOp):
    """`C += op(A) @ op(B)` (after zeroing C if `clear_accum`)."""

    A: BufferRegion
    B: BufferRegion
    C: BufferRegion
    transpose_A: bool = False
    transpose_B: bool = False
    policy: str = "Square"
    clear_accum: bool = False
    k_pack: int = 1
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


REDUCE_KINDS = ("sum", "max", "min", "absmax", "abssum", "bitand", "bitor", "bitxor")


@dataclass(frozen=True, eq=False)
class Reduce(TileOp):
    """Reduce `src` along `dim` into `dst` (whose shape is src's without `dim`,
    or with it set to 1). `clear=False` combines with dst's old value."""

    kind: str
    src: BufferRegion
    dst: BufferRegion
    dim: int
    clear: bool = True
    nan_propagate: bool = False
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Fill(TileOp):
    dst: BufferRegion
    value: PrimExpr
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class CumSum(TileOp):
    """Inclusive scan of `src` along `dim` into `dst` (may be the same buffer)."""

    src: BufferRegion
    dst: BufferRegion
    dim: int = 0
    reverse: bool = False
    op: str = "sum"
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


ATOMIC_KINDS = ("add", "max", "min")


@dataclass(frozen=True, eq=False)
class Atomic(TileOp):
    """Atomic read-modify-write of global/shared memory.

    `dst` is a region (a single element for the scalar form); `value` is a
    scalar expression or a region of the same extents.
    """

    kind: str
    dst: BufferRegion
    value: Any  # PrimExpr | BufferRegion
    memory_order: str | None = None
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class ReducerInit(TileOp):
    reducer: Buffer
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class ReducerUpdate(TileOp):
    """`reducer[indices] (op)= value` where op is the reducer's operator."""

    reducer: Buffer
    indices: tuple
    value: PrimExpr
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class FinalizeReducer(TileOp):
    reducer: Buffer
    dst: Buffer
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Print(TileOp):
    """`T.print(obj, msg)`: a scalar expression, a buffer, or only the message."""

    obj: Any  # PrimExpr | Buffer | None
    msg: str = ""
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class DeviceAssert(TileOp):
    cond: PrimExpr
    msg: str = ""
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class AnnotateLayout(TileOp):
    """`T.annotate_layout({buffer: layout})`: pins layouts for layout inference."""

    layouts: tuple  # tuple[(Buffer, Layout), ...]
    span: Span = span_field()


@dataclass(frozen=True, eq=False)
class Hint(TileOp):
    """A scheduling hint with no semantic effect (`T.use_swizzle`, ...)."""

    name: str
    args: FrozenDict = EMPTY
    span: Span = span_field()


def seq(*stmts: Stmt) -> Stmt:
    """A SeqStmt of `stmts`, flattening nested sequences; one statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat), flat[0].span if flat else span_field().default_factory())


def stmts_of(s: Stmt | None) -> tuple:
    if s is None:
        return ()
    return s.stmts if isinstance(s, SeqStmt) else (s,)


def flat_stmts(s: Stmt | None) -> list:
    """The statements of `s` with nested statement lists spliced in (no SeqStmt left)."""
    return [x for y in stmts_of(s) for x in (flat_stmts(y) if isinstance(y, SeqStmt) else (y,))]


# --------------------------------------------------------------------------
# Explicit Hopper constructs (T.ws, T.tma_copy, barriers; tilelang/language/hopper.py)
# --------------------------------------------------------------------------

WARPGROUP_SIZE = 128


@dataclass(frozen=True, eq=False)
class WarpSpecialize(Stmt):
    """`with T.ws(*warpgroups): body` — `body` is executed only by the threads of
    the given warpgroups (warpgroup g = threads [128 g, 128 g + 128)).

    `warpgroups` is an ascending run of consecutive ids, so the region's threads are
    one range (`thread_range`). Inside the region, tile operators and `T.Parallel`
    loops are distributed over the region's threads only (thread 0 of the region is
    thread 128 * warpgroups[0] of the block), barriers synchronise only the region's
    threads, and the region is ordered against other warpgroups' regions by the
    user's mbarriers, not by automatic barriers. Other passes (automatic warp
    specialization) may build this node too."""

    warpgroups: tuple  # ints
    body: Stmt
    span: Span = span_field()

    @property
    def thread_range(self) -> tuple:
        """`(first thread, number of threads)` of the region."""
        return (self.warpgroups[0] * WARPGROUP_SIZE, len(self.warpgroups) * WARPGROUP_SIZE)


@dataclass(frozen=True, eq=False)
class TmaCopy(TileOp):
    """`T.tma_copy(src, dst, barrier=...)`: a split-phase bulk copy (TMA on sm_90a).

    Load (global → shared): the copy's bytes are announced to `barrier` (expect-tx)
    and delivered asynchronously; nothing waits here — consumers wait on the barrier
    with `T.mbarrier_wait_parity`. Store (shared → global, `barrier` None): issued
    asynchronously; `T.tma_store_wait()` waits for it. `barrier` is a BufferLoad of a
    `shared.barrier` buffer (one mbarrier)."""

    src: BufferRegion
    dst: BufferRegion
    barrier: PrimExpr | None = None
    annotations: FrozenDict = EMPTY
    span: Span = span_field()


SYNC_KINDS = (
    "mbarrier_wait_parity",  # (barrier, parity)
    "mbarrier_arrive",  # (barrier,) or (barrier, cta_id)
    "mbarrier_expect_tx",  # (barrier, bytes)
    "mbarrier_arrive_expect_tx",  # (barrier, bytes)
    "fence_proxy_async",  # ()
    "tma_store_arrive",  # ()
    "tma_store_wait",  # (count,)
    "wait_wgmma",  # (count,)
    "set_max_nreg",  # (count, is_inc)
    "named_barrier_sync",  # (barrier id, thread count)
    "cluster_arrive",  # ()
    "cluster_arrive_relaxed",  # ()
    "cluster_wait",  # ()
    "cluster_sync",  # ()
)


@dataclass(frozen=True, eq=False)
class SyncOp(TileOp):
    """An explicit synchronisation / scheduling statement (`T.mbarrier_arrive`,
    `T.set_max_nreg`, `T.cluster_sync`, ...): `kind` is one of SYNC_KINDS, `args` its
    operands (barriers are BufferLoads of `shared.barrier` buffers). Executed by every
    thread that reaches it (an arrive from a 128-thread region is 128 arrivals)."""

    kind: str
    args: tuple = ()
    span: Span = span_field()
