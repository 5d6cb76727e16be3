"""CUDA lowering of the explicit Hopper constructs (tilelang/language/hopper.py).

Called from `lower_threads` (the `ThreadCtx` of one kernel is `tc`) and
registered as the "cuda" rules of tilelang/tileop/hopper.py. Requires:
`infer_layout` laid out every `T.ws` region over the region's own threads
(`_domain_inferences`), and `inject_sync` planned barriers inside regions
without crossing them.

Guarantees:

* `with T.ws(g0, ..., gk)` → `if (tx in [128 g0, 128 (gk + 1))) { const int
  ws_tx = tx - 128 g0; body }`: while the body is lowered, `tc.tx` is `ws_tx` and
  `tc.threads` the region's thread count, so tile ops, `T.Parallel` nests,
  staging and "thread 0" statements use the region's threads only (the same
  thread numbering infer_layout used); block barriers inside the region become
  named barriers of the region (`bar.sync 8 + g0, count`, ids 8..15 are reserved
  for regions; cross-warp reductions use the same id); shared scratch is per
  warpgroup range, so concurrent regions never share it; wgmma gemms get the
  region's first thread as THREAD_BASE; an mma.sync gemm in a region that does not
  start at a multiple of its size (whose warp numbering gemm.h would get wrong) is an
  `UnsupportedError`;
* `T.alloc_barrier(counts)` → thread 0 initialises every mbarrier with its
  arrive count (+ `fence.mbarrier_init` on sm_90), then a barrier of the threads
  that allocate it;
* mbarrier ops → tl/mbarrier.h (wait / arrive by every executing thread;
  expect-tx by the region's thread 0, whose `arrive_expect_tx` is one arrival);
  `T.tma_copy` → `tma_copy_stmt` of tma_lower.py; `T.wait_wgmma(n)` →
  `wgmma.wait_group n`; `T.set_max_nreg` → setmaxnreg (the kernel gets
  `__launch_bounds__(threads, 1)` through `attrs["min_blocks_per_sm"]`); fences,
  TMA-store waits, named barriers and cluster barriers → tl/sync.h, tl/tma.h;
* a kernel with `cluster_dims` keeps them in its attrs (launched with the cluster
  attribute by runtime.py);
* TMA, wgmma, setmaxnreg, expect-tx, proxy fences and clusters on a target other
  than sm_90a are an `UnsupportedError` that says "needs sm_90a". (mbarrier wait /
  arrive and `T.ws` itself also work on sm_80.)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import UnsupportedError
from ...ir.dtype import int32
from ...ir.expr import BufferLoad, Call, IntImm, StringImm, Var, binary, compare, logical_and
from ...ir.stmt import (
    Allocate,
    Evaluate,
    IfThenElse,
    LetStmt,
    Stmt,
    SyncOp,
    TmaCopy,
    WarpSpecialize,
    seq,
)
from ...ir.visitor import Mutator
from ...tileop import hopper as hopper_ops
from .lower_threads import SYNC, ThreadCtx, address_of, sync_stmt, tl_call

REGION_BARRIER_BASE = 8  # named barrier ids 8..15: one per T.ws warpgroup range (by its first warpgroup)
_SM90A_ONLY = (
    "mbarrier_expect_tx",
    "mbarrier_arrive_expect_tx",
    "fence_proxy_async",
    "tma_store_arrive",
    "tma_store_wait",
    "wait_wgmma",
    "set_max_nreg",
    "cluster_arrive",
    "cluster_arrive_relaxed",
    "cluster_wait",
    "cluster_sync",
)


def require_sm90a(tc: ThreadCtx, what: str, span: Any) -> None:
    arch = str(getattr(tc.target, "arch", "") or "")
    if arch != "sm_90a":
        raise UnsupportedError(
            f"{what} needs sm_90a (Hopper); this kernel is compiled for {arch or 'an unknown architecture'}",
            span,
            'compile for target {"kind": "cuda", "arch": "sm_90a"} (an H100/H200), or use the CPU backend',
        )


def _region(tc: ThreadCtx) -> tuple | None:
    return getattr(tc, "ws_region", None)


def lower_block_stmt(s: Stmt, tc: ThreadCtx) -> Stmt:
    """The block-level statements lower_threads hands over: T.ws regions and mbarrier allocations."""
    if isinstance(s, WarpSpecialize):
        return lower_warp_specialize(s, tc)
    return init_barriers(s, tc)


# --------------------------------------------------------------------------
# T.ws
# --------------------------------------------------------------------------


def lower_warp_specialize(s: WarpSpecialize, tc: ThreadCtx) -> Stmt:
    first, count = s.thread_range
    if _region(tc) is not None:
        raise UnsupportedError("T.ws regions cannot be nested", s.span, "close the outer region first")
    if tc.in_nest:
        raise UnsupportedError("T.ws inside a T.Parallel loop is not supported", s.span, "put T.Parallel inside T.ws")
    if first + count > tc.threads:
        raise UnsupportedError(
            f"T.ws({', '.join(map(str, s.warpgroups))}) needs threads [{first}, {first + count}) but the kernel has "
            f"{tc.threads}",
            s.span,
            "launch more threads",
        )
    _check_mma_sync_gemms(s, tc)
    block_tx = tc.tx
    ws_tx = Var(f"ws{s.warpgroups[0]}_tx", int32)
    scratch_by_range = tc.__dict__.setdefault("ws_scratch", {})
    saved = (tc.tx, tc.threads, tc._inv, tc._scratch)
    tc.tx, tc.threads, tc._inv = ws_tx, count, {}
    tc._scratch = scratch_by_range.setdefault((first, count), {})
    barrier_id = REGION_BARRIER_BASE + s.warpgroups[0]
    tc.ws_region = (first, count, barrier_id)
    try:
        body = tc.block(s.body)
    finally:
        tc.tx, tc.threads, tc._inv, tc._scratch = saved
        tc.ws_region = None
    body = _RegionBarriers(barrier_id, count).visit(body)
    if first == 0:
        cond = compare("lt", block_tx, count)
    else:
        cond = logical_and(compare("ge", block_tx, first), compare("lt", block_tx, first + count))
    offset = block_tx if first == 0 else binary("sub", block_tx, first)
    return IfThenElse(cond, seq(LetStmt(ws_tx, offset, s.span), body), None, s.span)


def _check_mma_sync_gemms(s: WarpSpecialize, tc: ThreadCtx) -> None:
    """The mma.sync gemm of gemm.h numbers warps from thread 0 of the block, periodic in
    the warp grid: a region whose first warp is not a multiple of its warp count would
    get another region's accumulator rows (wgmma gemms take the region's first thread)."""
    from ...ir.stmt import Gemm
    from ...ir.visitor import collect
    from ...transform.infer_layout import wgmma_plan_of

    first, count = s.thread_range
    if first % count == 0:
        return
    for g in collect(s.body, lambda n: isinstance(n, Gemm)):
        if wgmma_plan_of(tc.layouts.get(g.C.buffer)) is None:
            raise UnsupportedError(
                f"T.gemm on the mma.sync path inside T.ws({', '.join(map(str, s.warpgroups))}) needs the region to "
                f"start at a multiple of its {count} threads",
                g.span,
                "use T.ws(0, 1) / T.ws(2, 3) style ranges, or a tile the wgmma path takes (sm_90a)",
            )


class _RegionBarriers(Mutator):
    """Block barriers inside a region → the region's named barrier (a `__syncthreads()`
    there would wait for threads that never reach it)."""

    def __init__(self, barrier_id: int, count: int) -> None:
        super().__init__()
        self.call = tl_call(f"tl::named_barrier_sync<{barrier_id}, {count}>")

    def visit_Evaluate(self, n: Evaluate) -> Any:
        if isinstance(n.value, Call) and n.value.op == SYNC:
            return Evaluate(self.call, n.span)
        return self.generic_visit(n)


def region_first_thread(tc: ThreadCtx) -> int:
    """The block thread that is thread 0 of the enclosing T.ws region (0 outside regions)."""
    r = _region(tc)
    return 0 if r is None else r[0]


def all_reduce_barrier(tc: ThreadCtx) -> tuple[int, int, int]:
    """The thread range and barrier of a reduction across warps: inside a T.ws region its
    first thread, thread count and named barrier; (0, 0, 1) at block level (the whole block,
    `__syncthreads()`)."""
    r = _region(tc)
    return (0, 0, 1) if r is None else (r[0], r[1], r[2])


# --------------------------------------------------------------------------
# mbarriers
# --------------------------------------------------------------------------


def init_barriers(a: Allocate, tc: ThreadCtx) -> Stmt:
    b = a.buffer
    counts = tuple(int(c) for c in a.annotations.get("arrive_counts", ()))
    inits = [
        Evaluate(tl_call("tl::mbarrier_init", address_of(b, (IntImm(i),)), IntImm(c)), a.span)
        for i, c in enumerate(counts)
    ]
    if getattr(tc.target, "sm", 0) >= 90:
        inits.append(Evaluate(tl_call("tl::fence_barrier_init"), a.span))
    if a.annotations.get("cluster"):  # T.alloc_cluster_barrier: initialised in every block before any arrives
        require_sm90a(tc, "T.alloc_cluster_barrier", a.span)
        return seq(a, tc.only_thread0(seq(*inits)), Evaluate(tl_call("tl::cluster_sync"), a.span))
    return seq(a, tc.only_thread0(seq(*inits)), replace(sync_stmt(), span=a.span))


def _bar(e: BufferLoad) -> Call:
    return address_of(e.buffer, e.indices)


def sync_cuda(op: SyncOp, tc: ThreadCtx) -> Stmt:
    k, args, span = op.kind, op.args, op.span
    if k in _SM90A_ONLY or (k == "mbarrier_arrive" and len(args) > 1):
        require_sm90a(tc, f"T.{k}", span)
    x = [tc.block_expr(a) for a in args]

    def call(name: str, *xs: Any) -> Stmt:
        return Evaluate(tl_call(name, *xs), span)

    if k == "mbarrier_wait_parity":  # PTX wants the parity bit itself
        return call("tl::mbarrier_wait", _bar(x[0]), binary("bitand", x[1], 1))
    if k == "mbarrier_arrive":
        if len(x) > 1:
            return call("tl::mbarrier_arrive_cluster", _bar(x[0]), x[1])
        return call("tl::mbarrier_arrive", _bar(x[0]))
    if k == "mbarrier_expect_tx":
        return tc.only_thread0(call("tl::mbarrier_expect_tx", _bar(x[0]), x[1]))
    if k == "mbarrier_arrive_expect_tx":
        return tc.only_thread0(call("tl::mbarrier_arrive_expect_tx", _bar(x[0]), x[1]))
    if k == "fence_proxy_async":
        return call("tl::fence_proxy_async")
    if k == "tma_store_arrive":
        return tc.only_thread0(call("tl::tma_store_arrive"))
    if k == "tma_store_wait":
        return tc.only_thread0(call(f"tl::tma_store_wait<{int(args[0].value)}>"))
    if k == "wait_wgmma":
        return call(f"tl::wgmma_wait<{int(args[0].value)}>")
    if k == "set_max_nreg":
        n, inc = int(args[0].value), int(args[1].value)
        tc.__dict__.setdefault("extra_attrs", {})["min_blocks_per_sm"] = 1
        return call(f"tl::warpgroup_reg_{'alloc' if inc else 'dealloc'}<{n}>")
    if k == "named_barrier_sync":
        return call(f"tl::named_barrier_sync<{int(args[0].value)}, {int(args[1].value)}>")
    if k in ("cluster_arrive", "cluster_arrive_relaxed", "cluster_wait", "cluster_sync"):
        return call(f"tl::{k}")
    raise UnsupportedError(f"T.{k} has no CUDA lowering", span)  # pragma: no cover - SYNC_KINDS is closed


# --------------------------------------------------------------------------
# T.tma_copy
# --------------------------------------------------------------------------


def tma_copy_cuda(op: TmaCopy, tc: ThreadCtx) -> Stmt:
    require_sm90a(tc, "T.tma_copy", op.span)
    from .tma_lower import tma_copy_stmt

    bar = tc.block_expr(op.barrier) if op.barrier is not None else None
    return tma_copy_stmt(op.src, op.dst, bar, tc, op.span)


# --------------------------------------------------------------------------
# Clusters and the launch
# --------------------------------------------------------------------------


def check_kernel(tc: ThreadCtx) -> None:
    """Kernel-level requirements: a cluster kernel needs sm_90a."""
    if tc.kernel.attrs.get("cluster_dims") is not None:
        require_sm90a(tc, "T.ClusterKernel", tc.kernel.span)


def cluster_dims_of(func: Any) -> tuple | None:
    """The `cluster_dims` of the function's kernel (None: an ordinary launch)."""
    from ...ir.stmt import KernelLaunch
    from ...ir.visitor import collect

    for k in collect(func.body, lambda n: isinstance(n, KernelLaunch)):
        dims = k.attrs.get("cluster_dims")
        if dims is not None:
            return tuple(int(d) for d in dims)
    return None


def cluster_rank_expr(has_cluster: bool) -> str:
    """C++ for `T.block_rank_in_cluster()` (0 in a kernel launched without clusters)."""
    return "(int)tl::cluster_ctarank()" if has_cluster else "0"


hopper_ops.RULES_TMA["cuda"] = tma_copy_cuda
hopper_ops.RULES_SYNC["cuda"] = sync_cuda

_ = StringImm
