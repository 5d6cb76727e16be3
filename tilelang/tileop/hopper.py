"""Explicit Hopper statements as tile operators: `T.tma_copy` (`TmaCopy`) and the
synchronisation / scheduling statements of `T.mbarrier_*`, `T.set_max_nreg`,
`T.cluster_*`, ... (`SyncOp`).

Reference ("c") semantics, for a block program executed in program order by one
host thread: a TMA copy is an ordinary copy (it has completed when the next
statement runs); fences, register re-allocation, wgmma / TMA-store waits and
cluster barriers have nothing to order and do nothing. mbarrier operations keep
state (arrivals, phases) that depends on the enclosing `T.ws` region, so the C
pipeline lowers them before this module sees them (tilelang/backend/c/hopper.py);
reaching one here means that pass did not run.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..ir.stmt import Copy, Stmt, SyncOp, TmaCopy, seq
from . import copy
from .base import LowerContext, dispatch

STATEFUL_KINDS = ("mbarrier_wait_parity", "mbarrier_arrive", "mbarrier_expect_tx", "mbarrier_arrive_expect_tx")


def tma_copy_c(op: TmaCopy, lctx: LowerContext) -> Stmt:
    return copy.lower_c(Copy(op.src, op.dst, span=op.span), lctx)


def sync_c(op: SyncOp, lctx: LowerContext) -> Stmt:
    if op.kind in STATEFUL_KINDS:
        raise UnsupportedError(
            f"T.{op.kind} reached the generic C lowering; the C pipeline lowers mbarriers first",
            op.span,
            "lower with tilelang.backend.c.pipeline.lower (it runs lower_hopper_c before lower_tile_ops)",
        )
    return seq()


RULES_TMA = {"c": tma_copy_c}
RULES_SYNC = {"c": sync_c}


def lower(op, lctx: LowerContext) -> Stmt:
    if isinstance(op, TmaCopy):
        return dispatch(RULES_TMA, op, lctx)
    return dispatch(RULES_SYNC, op, lctx)
