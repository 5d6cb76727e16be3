"""Explicit Hopper (sm_90a) constructs of the `T` namespace: warp-specialized
regions, mbarriers, split-phase TMA copies, asynchronous wgmma, register
re-allocation and thread-block clusters.

Builders only: each checks its operands with spans and emits one statement
(`WarpSpecialize`, `TmaCopy`, `SyncOp` of tilelang/ir/stmt.py, or a `Gemm`
annotated `wgmma_wait=False`). Lowering: the CPU backend executes the block
program in order (tilelang/backend/c/hopper.py: regions run one after another,
barriers are checked for protocols that cannot complete in program order), the
CUDA backend maps them to PTX (tilelang/backend/cuda/explicit_hopper.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import DSLError
from ..frontend.builder import Builder
from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import int32
from ..ir.expr import BufferLoad, Call, IntImm, PrimExpr, as_expr, const_int
from ..ir.node import FrozenDict
from ..ir.stmt import WARPGROUP_SIZE, Evaluate, SyncOp, TmaCopy
from ..ir.stmt import WarpSpecialize as WarpSpecializeStmt
from .kernel import Kernel
from .ops import GemmWarpPolicy, _check_same_extents, gemm, to_region

BARRIER_SCOPE = "shared.barrier"
SYNC_THREADS = "tl.sync_threads"  # the block barrier every pass knows (transform/inject_sync.py)


def _builder(what: str) -> Builder:
    b = Builder.require(what)
    b.require_kernel(what)
    return b


def _kernel_threads(b: Builder) -> int:
    for fr in reversed(b.frames):
        if fr.kind == "kernel":
            n = 1
            for t in fr.data.threads:
                n *= t
            return n
    return 0  # pragma: no cover - require_kernel ran first


def _region_threads(b: Builder) -> int:
    """Threads executing the current statement: the enclosing T.ws region's, else the block's."""
    for fr in reversed(b.frames):
        if fr.kind == "ws":
            return len(fr.data) * WARPGROUP_SIZE
    return _kernel_threads(b)


def _int_arg(value: Any, what: str, name: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        c = const_int(value) if isinstance(value, PrimExpr) else None
        if c is None:
            raise DSLError(
                f"{what}: `{name}` must be a compile-time integer, got {value!r}", None, f"pass a Python int for {name}"
            )
        value = c
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise DSLError(f"{what}: `{name}` must be in {rng}, got {value}", None)
    return value


def _int_expr(value: Any, what: str, name: str) -> PrimExpr:
    if isinstance(value, bool):
        value = int(value)
    try:
        e = as_expr(value)
    except Exception:  # noqa: BLE001 - any non-expression operand
        e = None
    if e is None or not e.dtype.is_integer:
        raise DSLError(
            f"{what}: `{name}` must be an integer expression, got {value!r}",
            None,
            "e.g. `ko % 2` or `(ko // num_stages) & 1`",
        )
    return e


def barrier_ref(x: Any, what: str, name: str = "mbarrier") -> BufferLoad:
    """One mbarrier: `bars[i]` of a T.alloc_barrier buffer, or the buffer itself (its first)."""
    if isinstance(x, Buffer) and x.scope == BARRIER_SCOPE:
        return BufferLoad(x, (IntImm(0),), x.dtype)
    if isinstance(x, BufferLoad) and x.buffer.scope == BARRIER_SCOPE:
        return x
    got = f"`{x.buffer.name}` ({x.buffer.scope})" if isinstance(x, (BufferLoad, BufferRegion)) else repr(x)
    if isinstance(x, Buffer):
        got = f"`{x.name}` ({x.scope})"
    raise DSLError(
        f"{what}: `{name}` must be an mbarrier from T.alloc_barrier, got {got}",
        None,
        "allocate barriers with `bars = T.alloc_barrier([128, 128])` and pass `bars[i]`",
    )


# --------------------------------------------------------------------------
# Warp-specialized regions
# --------------------------------------------------------------------------


class ws:  # noqa: N801 - public DSL name
    """`with T.ws(g, ...):` — the body runs only in warpgroups `g, ...` (threads
    [128 g, 128 g + 128)). Several ids must be consecutive (`T.ws(0, 1)`)."""

    def __init__(self, *warpgroup_ids: Any) -> None:
        if not warpgroup_ids:
            raise DSLError("T.ws needs at least one warpgroup id", None, "e.g. `with T.ws(0):`")
        ids = tuple(_int_arg(g, "T.ws", "warpgroup id", 0) for g in warpgroup_ids)
        if any(b != a + 1 for a, b in zip(ids, ids[1:])):
            raise DSLError(
                f"T.ws warpgroup ids must be consecutive and ascending, got {list(ids)}",
                None,
                "use one region per warpgroup range, e.g. `T.ws(0, 1)` or `T.ws(2)`",
            )
        self.ids = ids

    def __enter__(self) -> None:
        b = _builder("T.ws")
        span = b.span_here()
        if any(fr.kind == "ws" for fr in b.frames):
            raise DSLError("T.ws regions cannot be nested", span, "close the outer `with T.ws(...)` first")
        threads = _kernel_threads(b)
        if threads % WARPGROUP_SIZE:
            raise DSLError(
                f"T.ws needs a block of whole warpgroups (multiples of 128 threads), the kernel has {threads}",
                span,
                "launch the kernel with threads=256 (two warpgroups), 384, ...",
            )
        if (self.ids[-1] + 1) * WARPGROUP_SIZE > threads:
            raise DSLError(
                f"T.ws({', '.join(map(str, self.ids))}): the kernel has only {threads // WARPGROUP_SIZE} "
                f"warpgroup(s) ({threads} threads)",
                span,
                f"use warpgroup ids below {threads // WARPGROUP_SIZE} or launch more threads",
            )
        self.span = span
        b.push("ws", self.ids)

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        b = Builder.require("T.ws")
        fr = b.pop("ws")
        if exc_type is None:
            b.emit(WarpSpecializeStmt(self.ids, fr.body(), self.span))


WarpSpecialize = ws  # upstream's long name


# --------------------------------------------------------------------------
# mbarriers
# --------------------------------------------------------------------------


def _sync(kind: str, *args: Any) -> None:
    b = _builder(f"T.{kind}")
    b.emit(SyncOp(kind, tuple(args)))


def mbarrier_wait_parity(mbarrier: Any, parity: Any) -> None:
    """Wait until the phase of `mbarrier` with parity `parity` (0/1) has completed."""
    _builder("T.mbarrier_wait_parity")
    bar = barrier_ref(mbarrier, "T.mbarrier_wait_parity")
    _sync("mbarrier_wait_parity", bar, _int_expr(parity, "T.mbarrier_wait_parity", "parity"))


def mbarrier_arrive(mbarrier: Any, cta_id: Any = None) -> None:
    """Arrive on `mbarrier` (every executing thread arrives once); `cta_id`: the same
    barrier in another CTA of the cluster."""
    _builder("T.mbarrier_arrive")
    bar = barrier_ref(mbarrier, "T.mbarrier_arrive")
    if cta_id is None:
        _sync("mbarrier_arrive", bar)
    else:
        _sync("mbarrier_arrive", bar, _int_expr(cta_id, "T.mbarrier_arrive", "cta_id"))


def barrier_wait(barrier: Any, parity: Any) -> None:
    """`T.mbarrier_wait_parity` under its short name."""
    _builder("T.barrier_wait")
    bar = barrier_ref(barrier, "T.barrier_wait", "barrier")
    _sync("mbarrier_wait_parity", bar, _int_expr(parity, "T.barrier_wait", "parity"))


def barrier_arrive(barrier: Any) -> None:
    """`T.mbarrier_arrive` under its short name."""
    _builder("T.barrier_arrive")
    _sync("mbarrier_arrive", barrier_ref(barrier, "T.barrier_arrive", "barrier"))


def mbarrier_expect_tx(mbarrier: Any, tx: Any) -> None:
    """Announce `tx` more bytes (from TMA copies) for the current phase, without arriving."""
    _builder("T.mbarrier_expect_tx")
    bar = barrier_ref(mbarrier, "T.mbarrier_expect_tx")
    _sync("mbarrier_expect_tx", bar, _int_expr(tx, "T.mbarrier_expect_tx", "tx"))


def mbarrier_arrive_expect_tx(mbarrier: Any, tx: Any) -> None:
    """Arrive and announce `tx` more bytes for the current phase."""
    _builder("T.mbarrier_arrive_expect_tx")
    bar = barrier_ref(mbarrier, "T.mbarrier_arrive_expect_tx")
    _sync("mbarrier_arrive_expect_tx", bar, _int_expr(tx, "T.mbarrier_arrive_expect_tx", "tx"))


# --------------------------------------------------------------------------
# TMA
# --------------------------------------------------------------------------


def tma_copy(
    src: Any,
    dst: Any,
    *,
    barrier: Any = None,
    eviction_policy: Any = None,
    annotations: dict | None = None,
) -> None:
    """Split-phase bulk copy. global → shared: announces its bytes to `barrier`
    (required) and returns at once — wait with `T.mbarrier_wait_parity`. shared →
    global: no barrier; wait with `T.tma_store_wait()`. Either side may be a point
    `A[i, j]` (a region of the other side's shape starting there) or a slice."""
    b = _builder("T.tma_copy")
    if isinstance(src, BufferLoad) and not isinstance(dst, BufferLoad):
        d = to_region(dst, "T.tma_copy")
        s = to_region(src, "T.tma_copy", d.extents)
    else:
        s = to_region(src, "T.tma_copy")
        d = to_region(dst, "T.tma_copy", s.extents)
    _check_same_extents("T.tma_copy", s, d)
    ss, ds = s.buffer.scope, d.buffer.scope
    shared = ("shared", "shared.dyn")
    if ss == "global" and ds in shared:
        if barrier is None:
            raise DSLError(
                "T.tma_copy from global to shared memory needs `barrier=`: the copy completes on that mbarrier",
                b.span_here(),
                "pass barrier=bars[i] and wait with T.mbarrier_wait_parity(bars[i], parity)",
            )
        bar = barrier_ref(barrier, "T.tma_copy", "barrier")
    elif ss in shared and ds == "global":
        if barrier is not None:
            raise DSLError(
                "T.tma_copy from shared to global memory takes no `barrier`",
                b.span_here(),
                "drop barrier= and wait for the store with T.tma_store_wait()",
            )
        bar = None
    else:
        raise DSLError(
            f"T.tma_copy copies global → shared or shared → global, got `{s.buffer.name}` ({ss}) → "
            f"`{d.buffer.name}` ({ds})",
            b.span_here(),
            "use T.copy for other memory spaces",
        )
    if s.buffer.dtype is not d.buffer.dtype:
        raise DSLError(
            f"T.tma_copy cannot convert: `{s.buffer.name}` is {s.buffer.dtype}, `{d.buffer.name}` is {d.buffer.dtype}",
            b.span_here(),
            "copy between buffers of one dtype (T.copy casts)",
        )
    ann = dict(annotations or {})
    if eviction_policy is not None:
        ann["eviction_policy"] = eviction_policy
    b.emit(TmaCopy(s, d, bar, FrozenDict(ann)))


def tma_store_arrive() -> None:
    """Commit the TMA stores issued so far as one group (`T.tma_store_wait` waits for groups)."""
    _sync("tma_store_arrive")


def tma_store_wait(count: Any = 0, read: bool = True) -> None:
    """Wait until at most `count` groups of TMA stores are pending."""
    _builder("T.tma_store_wait")
    _sync("tma_store_wait", IntImm(_int_arg(count, "T.tma_store_wait", "count", 0)))


# --------------------------------------------------------------------------
# wgmma
# --------------------------------------------------------------------------


def wgmma_gemm(
    A: Any,
    B: Any,
    C: Any,
    transpose_A: bool = False,
    transpose_B: bool = False,
    policy: Any = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    annotations: dict | None = None,
) -> None:
    """`T.gemm` issued asynchronously (sm_90a wgmma) without waiting: the accumulator
    is valid after `T.wait_wgmma(n)` leaves at most `n` groups in flight."""
    _builder("T.wgmma_gemm")
    ann = dict(annotations or {})
    ann["wgmma_wait"] = False
    gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, annotations=ann)


def wait_wgmma(id: Any = 0) -> None:  # noqa: A002 - upstream parameter name
    """Wait until at most `id` asynchronous wgmma groups are in flight."""
    _builder("T.wait_wgmma")
    _sync("wait_wgmma", IntImm(_int_arg(id, "T.wait_wgmma", "id", 0, 7)))


# --------------------------------------------------------------------------
# Fences, registers, named barriers
# --------------------------------------------------------------------------


def fence_proxy_async() -> None:
    """Order this thread's shared-memory writes before later TMA / wgmma reads of them."""
    _sync("fence_proxy_async")


def set_max_nreg(reg_count: Any, is_inc: Any) -> None:
    """setmaxnreg: raise (`is_inc` true) or lower this warpgroup's registers per thread."""
    _builder("T.set_max_nreg")
    n = _int_arg(reg_count, "T.set_max_nreg", "reg_count", 24, 256)
    if n % 8:
        raise DSLError(f"T.set_max_nreg: `reg_count` must be a multiple of 8, got {n}", None, "e.g. 40, 232, 240")
    inc = _int_arg(int(is_inc) if isinstance(is_inc, bool) else is_inc, "T.set_max_nreg", "is_inc", 0, 1)
    _sync("set_max_nreg", IntImm(n), IntImm(inc))


def inc_max_nreg(reg_count: Any) -> None:
    """Raise this warpgroup's register limit to `reg_count` (`setmaxnreg.inc`, sm_90a)."""
    set_max_nreg(reg_count, 1)


def dec_max_nreg(reg_count: Any) -> None:
    """Lower this warpgroup's register limit to `reg_count` (`setmaxnreg.dec`, sm_90a)."""
    set_max_nreg(reg_count, 0)


def sync_threads(barrier_id: Any = None, arrive_count: Any = None) -> None:
    """`__syncthreads()` (inside a T.ws region: a barrier of the region's threads), or
    with `barrier_id` a named barrier `bar.sync id, arrive_count` (default: the
    threads executing this statement)."""
    b = _builder("T.sync_threads")
    if barrier_id is None:
        if arrive_count is not None:
            raise DSLError("T.sync_threads: `arrive_count` needs a `barrier_id`", None, "e.g. T.sync_threads(1, 256)")
        b.emit(Evaluate(Call(SYNC_THREADS, (), int32)))
        return
    bid = _int_arg(barrier_id, "T.sync_threads", "barrier_id", 0, 15)
    if bid >= 8:  # tilelang/backend/cuda/explicit_hopper.py: REGION_BARRIER_BASE
        raise DSLError(
            f"T.sync_threads: named barriers 8..15 belong to the T.ws regions' own barriers, got {bid}",
            None,
            "use a barrier_id in 1..7 (0 is the __syncthreads barrier)",
        )
    count = _region_threads(b) if arrive_count is None else _int_arg(arrive_count, "T.sync_threads", "arrive_count", 32)
    if count % 32 or count > _kernel_threads(b):
        raise DSLError(
            f"T.sync_threads: `arrive_count` must be a multiple of 32 and at most the block's "
            f"{_kernel_threads(b)} threads, got {count}",
            None,
        )
    b.emit(SyncOp("named_barrier_sync", (IntImm(bid), IntImm(count))))


# --------------------------------------------------------------------------
# Clusters
# --------------------------------------------------------------------------


class ClusterKernel(Kernel):
    """`with T.ClusterKernel(gx, gy, threads=256, cluster_dims=(2, 1, 1)) as (bx, by):`
    — a kernel whose blocks are launched in thread-block clusters (sm_90a)."""

    def __init__(
        self, *blocks: Any, cluster_dims: Any = None, threads: Any = None, prelude: str | None = None, **attrs: Any
    ) -> None:
        super().__init__(*blocks, threads=threads, prelude=prelude, **attrs)
        if cluster_dims is None:
            raise DSLError("T.ClusterKernel needs `cluster_dims=`", None, "e.g. cluster_dims=(2, 1, 1)")
        dims = (cluster_dims,) if not isinstance(cluster_dims, (tuple, list)) else tuple(cluster_dims)
        if not 1 <= len(dims) <= 3:
            raise DSLError(f"T.ClusterKernel: cluster_dims has 1 to 3 entries, got {len(dims)}", None)
        dims = tuple(_int_arg(d, "T.ClusterKernel", "cluster_dims", 1) for d in dims) + (1,) * (3 - len(dims))
        size = dims[0] * dims[1] * dims[2]
        if size > 8:
            raise DSLError(
                f"T.ClusterKernel: a cluster of {size} blocks exceeds the portable maximum of 8",
                None,
                "use at most 8 blocks per cluster",
            )
        for k, (g, c) in enumerate(zip(self.blocks, dims)):
            gc = const_int(g)
            if gc is not None and gc % c:
                raise DSLError(
                    f"T.ClusterKernel: grid dimension {k} ({gc}) is not a multiple of cluster_dims[{k}] ({c})",
                    None,
                    "round the grid up to a multiple of the cluster shape and guard the extra blocks",
                )
        if len(self.blocks) < 3 and any(c > 1 for c in dims[len(self.blocks) :]):
            raise DSLError(
                f"T.ClusterKernel: cluster_dims {list(dims)} spans grid dimensions the kernel does not have",
                None,
                "give the grid as many dimensions as the cluster",
            )
        self.attrs["cluster_dims"] = dims


def block_rank_in_cluster() -> PrimExpr:
    """This block's rank in its cluster (x fastest), 0 outside a cluster kernel."""
    _builder("T.block_rank_in_cluster")
    return Call("tl.block_rank_in_cluster", (), int32)


def cluster_arrive() -> None:
    """Arrive on the cluster barrier (release)."""
    _sync("cluster_arrive")


def cluster_arrive_relaxed() -> None:
    """Arrive on the cluster barrier without ordering earlier memory accesses."""
    _sync("cluster_arrive_relaxed")


def cluster_wait() -> None:
    """Wait until every thread of every block of the cluster arrived (acquire)."""
    _sync("cluster_wait")


def cluster_sync() -> None:
    """`cluster_arrive()` + `cluster_wait()`."""
    _sync("cluster_sync")


__all__ = [
    "ClusterKernel",
    "barrier_arrive",
    "barrier_wait",
    "block_rank_in_cluster",
    "cluster_arrive",
    "cluster_arrive_relaxed",
    "cluster_sync",
    "cluster_wait",
    "dec_max_nreg",
    "fence_proxy_async",
    "inc_max_nreg",
    "mbarrier_arrive",
    "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx",
    "mbarrier_wait_parity",
    "set_max_nreg",
    "sync_threads",
    "tma_copy",
    "tma_store_arrive",
    "tma_store_wait",
    "wait_wgmma",
    "wgmma_gemm",
    "ws",
    "WarpSpecialize",
]
