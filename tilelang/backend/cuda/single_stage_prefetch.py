"""Single-stage prefetch: the `T.Pipelined(..., num_stages=1)` form of inject_pipeline on sm_80+.

Requires: a `_Pipeline` of inject_pipeline.py (one `T.Pipelined` loop, depth 1, no explicit
`stage`/`order`) and its producers — global → shared copies; `tma=True` when they can all be TMA
loads (`backend/cuda/tma_lower.py`, never inside `T.ws` regions), else they become cp.async.

Guarantees: with one stage there is no room for a second copy of a buffer, but its next tile can
still be in flight while the rest of the iteration runs. Producers are grouped by the shared
buffer they fill; group g gets its own mbarrier `full[g]` (one arrival) and

    tl::mbarrier_init_block(full, G, 1)
    if 0 < n: loads of group g for iteration 0 (every g)       # expect_tx, TMA loads, arrive
    for k:
        ...                                                    # statements before g's copy
        tl::mbarrier_wait(full[g], k % 2)                      # where g's first copy was
        ...                                                    # statements reading g's buffer
        T.tl.sync_threads()                                    # after the *last* one: WAR
        if k + 1 < n: loads of group g for iteration k + 1     # refill, overlapping the rest
        ...
    tl::mbarrier_invalidate_block(full, G)

so in FlashAttention the next K tile loads during softmax and P·V, and the next V tile during
the next Q·Kᵀ and softmax. Group g completes one phase per iteration, so iteration k waits for
phase k (parity k % 2); the refill of iteration k + 1 is issued only after every thread passed
the barrier behind the last reader of iteration k's data. No load is in flight after the loop
(the refill of the last trip is guarded off), so the ring is invalidated there and a re-executed
loop (an enclosing loop) initialises it afresh. Buffers keep their shape, with a stage dimension
of 1 (like every multi-buffered pipeline buffer).

cp.async form: the same schedule with commit groups instead of mbarriers. Every refill point
commits a group (empty on the last trip, so counts stay uniform) and the prologue commits the
groups in the order of their refill points, so at group g's wait the groups committed after g's
data are the same in every iteration: those refilled after g's refill point, plus those refilled
before g's wait. The wait is `T.tl.cp_async_wait(that count)` and a block barrier (each thread
waits for its own copies; the barrier publishes everyone's).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.expr import BufferLoad, IntImm, binary, compare
from ...ir.stmt import Allocate, SeqStmt, Stmt


def single_stage_prefetch(p: Any, producers: dict, tma: bool) -> Stmt:
    """The loop of `_Pipeline` `p` in the form above; `producers`: slot index -> distance (0)."""
    from ...transform.inject_pipeline import (
        COMMIT_OP,
        SYNC_OP,
        WAIT_OP,
        SlotIndexer,
        element_address,
        header_call_stmt,
        intrinsic_stmt,
    )

    loop, span, n = p.loop, p.loop.span, p.loop.extent
    bmap = p.multi_buffer(producers)
    groups: dict = {}  # destination Buffer -> producer slot indices, in body order
    for i in sorted(producers):
        groups.setdefault(p.slots[i].dst.buffer, []).append(i)
    order = list(groups)
    full = p.barrier_ring("full", len(order))  # one barrier per buffer
    zero = IntImm(0)

    def loads(g: int, it: Any) -> list:
        members = groups[order[g]]
        if tma:
            return p.tma_group(members, it, zero, bmap, BufferLoad(full, (IntImm(g),), full.dtype, span))
        return [p.producer(p.slots[i], it, zero, bmap) for i in members]  # async=True: cp.async copies

    # where each group waits (its first copy) and refills (after its buffer's last reader)
    wait_at = {groups[x][0]: g for g, x in enumerate(order)}
    refill_after: dict = {}
    for g, x in enumerate(order):
        readers = [
            j
            for j in range(len(p.slots))
            if j not in producers and x in (p.acc[j].buffers_read() | p.acc[j].buffers_written())
        ]
        refill_after.setdefault(max(readers) if readers else groups[x][0], []).append(g)

    # cp.async: commit points in body order (one per refill point); groups committed after g's
    refill_points = sorted(refill_after)
    group_commit = {g: refill_points.index(j) for j, gs in refill_after.items() for g in gs}

    def pending_after(g: int, wait_slot: int) -> int:
        later = len(refill_points) - 1 - group_commit[g]
        return later + sum(1 for j in refill_points if j < wait_slot)

    k = p.iter_index()
    with p.loop_scope():
        nxt = p.offset(k, 1)
        refills = {g: p.guard(compare("lt", nxt, n), loads(g, nxt)) for g in range(len(order))}
    parity = binary("floormod", k, 2)
    body: list = [s for s in p.items if not any(s is x for x in p.slots)]
    for j, s in enumerate(p.slots):
        if j in wait_at:
            g = wait_at[j]
            if tma:
                body.append(header_call_stmt("tl::mbarrier_wait", (element_address(full, IntImm(g)), parity), span))
            else:
                body += [
                    intrinsic_stmt(WAIT_OP, (IntImm(pending_after(g, j)),), span),
                    intrinsic_stmt(SYNC_OP, (), span),
                ]
        if j not in producers:
            body.append(SlotIndexer(bmap, zero).visit(s))
        if j in refill_after:
            body.append(intrinsic_stmt(SYNC_OP, (), span))
            for g in refill_after[j]:
                body.extend(refills[g])
            if not tma:
                body.append(intrinsic_stmt(COMMIT_OP, (), span))

    steady = replace(loop, kind="serial", body=SeqStmt(tuple(body), span),
                     annotations=p.rest.set(tma_pipeline=True) if tma else p.rest)  # fmt: skip
    if not tma:
        head = []
        for j in refill_points:  # prologue groups in the order of their refill points
            for g in refill_after[j]:
                head.extend(p.guard(compare("lt", zero, n), loads(g, zero)))
            head.append(intrinsic_stmt(COMMIT_OP, (), span))
        return SeqStmt((*head, steady), span)
    head = [
        Allocate(full, span=span),
        header_call_stmt("tl::mbarrier_init_block", (element_address(full, zero), IntImm(len(order)), IntImm(1)), span),
    ]
    for g in range(len(order)):
        head.extend(p.guard(compare("lt", zero, n), loads(g, zero)))
    inval = header_call_stmt("tl::mbarrier_invalidate_block", (element_address(full, zero), IntImm(len(order))), span)
    return SeqStmt((*head, steady, inval), span)
