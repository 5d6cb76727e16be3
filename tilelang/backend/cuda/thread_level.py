"""Thread-level code in `lower_threads` (CUDA): the hooks it calls for a kernel that reads
a thread index or holds a thread collective (`transform.thread_level.uses_thread_level`).

Requires: what `lower_threads` requires; the tile-level statements it visits are the
ones `attach` analysed (identity matters for the loop / jump facts of `Uniformity`).

Guarantees (each `ThreadCtx` of such a kernel carries a `ThreadLevel` as `tc.tl`;
kernels without thread-level code get `tc.tl = None` and lower exactly as before):

* `Call("tl.thread_index", (d, n))` becomes threadIdx.<d> of the linear `threadIdx.x`
  (`transform.thread_level.thread_index_value`);
* a block-level store / atomic / print to global or shared memory runs in thread 0 only
  when its operands and the control around it are the same in every thread
  (`BlockControl.one_thread_enough`); otherwise in every thread that reaches it (this is
  `ThreadCtx.only_thread0`'s answer while such a statement is lowered);
* `tl.thread_allreduce` becomes one `tl::AllReduce<Op, n_d, stride_d>` per reduced
  thread axis (group sizes and strides powers of two, else an `UnsupportedError`), with the
  kernel's `red_buf` scratch when a group spans warps; it must be reached by every thread
  (uniform control), else a `TileLangError` at the statement;
* `T.reducer_update` outside T.Parallel updates every thread's replica with its own value
  (`finalize_reducer` then combines them), where each thread holds one;
* `tl.shfl_*` calls anywhere in the kernel become `tl::shfl_lane<kind>(v, lane, width, mask)`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from ...errors import TileLangError, UnsupportedError
from ...ir.expr import BufferLoad, Call, IntImm, PrimExpr, const_int
from ...ir.stmt import BufferStore, Evaluate, For, IfThenElse, ReducerUpdate, Stmt, TileOp, While
from ...ir.visitor import Mutator
from ...tileop.base import combine
from ...transform.thread_level import (
    ALLREDUCE_OP,
    SHFL_OPS,
    THREAD_INDEX,
    BlockControl,
    thread_index_value,
    thread_strides,
    uses_thread_level,
)

_SHFL_KIND = {"tl.shfl_xor": 0, "tl.shfl_down": 1, "tl.shfl_up": 2, "tl.shfl_sync": 3}
_OPS = {"sum": "tl::SumOp", "max": "tl::MaxOp", "min": "tl::MinOp", "bitand": "tl::BitAndOp",
        "bitor": "tl::BitOrOp", "bitxor": "tl::BitXorOp"}  # fmt: skip


class ThreadLevel:
    def __init__(self, tc: Any, body: Stmt) -> None:
        self.tc = tc
        self.bc = BlockControl(body)
        self.current: Stmt | None = None  # the block-level statement being lowered

    # -- per statement --------------------------------------------------------------
    def one_thread(self) -> bool:
        """Whether the statement being lowered may do its side effects in thread 0 only."""
        s = self.current
        return s is None or self.bc.one_thread_enough(s)

    def expr(self, e: Any) -> Any:
        """A block-level expression with thread indices and all-reduces lowered."""
        return _Exprs(self).visit(e)

    def allreduce(self, c: Call) -> PrimExpr:
        from .explicit_hopper import all_reduce_barrier
        from .lower_threads import address_of
        from .ops import all_reduce_call

        tc = self.tc
        span = self.current.span if self.current is not None else None
        if not self.bc.control_uniform():
            raise TileLangError(
                "T.tvm_thread_allreduce must be reached by every thread of the block, but it is under control "
                f"that may differ between threads ({self.bc.control_why()})",
                span,
                "move it out of the thread-dependent branch or loop",
            )
        kind = c.args[0].value
        value = self.expr(c.args[1])
        threads = tuple(tc.kernel.threads)
        strides = thread_strides(threads)
        for d in sorted({int(x.value) for x in c.args[2:]}):
            n, st = threads[d], strides[d]
            if n == 1:
                continue
            if n & (n - 1) or st & (st - 1):
                raise UnsupportedError(
                    f"T.tvm_thread_allreduce over thread axis {'xyz'[d]} of {n} threads (stride {st} in the block): "
                    "the CUDA backend reduces groups whose size and stride are powers of two",
                    span,
                    "choose power-of-two thread extents for the reduced axis and the axes before it",
                )
            extra = ()
            if n * st > 32:
                extra = (address_of(tc.scratch("red_buf", (tc.threads,), value.dtype), (IntImm(0),)),)
            value = all_reduce_call(_OPS[kind], n, st, all_reduce_barrier(tc), value, *extra)
        return value


class _Exprs(Mutator):
    def __init__(self, tl: ThreadLevel) -> None:
        super().__init__()
        self.tl = tl

    def visit_Call(self, n: Call) -> Any:
        if n.op == THREAD_INDEX:
            return thread_index_value(int(n.args[0].value), tuple(self.tl.tc.kernel.threads), self.tl.tc.tx)
        if n.op == ALLREDUCE_OP:
            return self.tl.allreduce(n)
        return self.generic_visit(n)


def reducer_update_in_thread(op: ReducerUpdate, tc: Any) -> Stmt | None:
    """`T.reducer_update(r[i], v)` outside T.Parallel in a thread-level kernel: every thread
    combines its own `v` into its replica of `r[i]` (finalize combines the replicas), when
    every thread holds a replica of that element at a constant index; None otherwise."""
    from .lower_threads import _flat_local

    b = op.reducer
    F = tc.fragment(b)
    ci = tuple(const_int(i) for i in op.indices)
    if any(i is None for i in ci):
        return None
    holders = {t for e, _, t, _ in F.placements() if tuple(e) == ci}
    if len(holders) < tc.threads:
        return None
    reg = tc.reg(b)
    at = (IntImm(_flat_local(F, ci)),)
    value = tc.block_expr(op.value)
    return BufferStore(reg, at, combine(tc.reducer_op(b), BufferLoad(reg, at, b.dtype), value), op.span)


def attach(tc: Any, body: Stmt) -> None:
    """Give `tc` its thread-level state (None for a kernel without thread-level code)."""
    tc.tl = ThreadLevel(tc, body) if uses_thread_level(body) else None


@contextmanager
def visiting(tc: Any, s: Stmt):
    """Around the lowering of one block-level statement: its control on the stack, and
    its side effects decided per thread or in thread 0."""
    tl = getattr(tc, "tl", None)
    if tl is None:
        yield
        return
    control = isinstance(s, (For, IfThenElse, While))
    outer = tl.current
    if control:
        tl.bc.push(s)
    elif isinstance(s, (BufferStore, Evaluate, TileOp)):
        tl.current = s
    try:
        yield
    finally:
        if control:
            tl.bc.pop()
        tl.current = outer


def finish(tc: Any, body: Stmt) -> Stmt:
    """The lowered kernel body with shuffles spelled for the header library."""
    if getattr(tc, "tl", None) is None:
        return body
    from .lower_threads import tl_call

    class _Shfl(Mutator):
        def visit_Call(self, n: Call) -> Any:
            n = self.generic_visit(n)
            if isinstance(n, Call) and n.op in SHFL_OPS:
                v, lane, width, mask = n.args
                return tl_call(f"tl::shfl_lane<{_SHFL_KIND[n.op]}>", v, lane, width, mask, dtype=n.dtype)
            return n

    return _Shfl().visit(body)


__all__ = ["ThreadLevel", "attach", "finish", "reducer_update_in_thread", "visiting"]
