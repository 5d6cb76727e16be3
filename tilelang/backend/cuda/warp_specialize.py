"""warp_specialize: a producer warpgroup for the TMA loop that `inject_pipeline` split into roles.

Requires: per-thread CUDA IR straight after `lower_threads`: a `KernelLaunch`
whose body is `For(tx, 0, T, kind="thread")`, and, as top-level statements of
that thread body, at most one `For` annotated `tl.ws_role = "producer"` (the
producer loop of `inject_pipeline`'s warp-specialized form: TMA issues elected
by `tx == 0`, waits on the "empty" ring, no block barrier) next to the
consumer loop and the rest of the kernel. Kernels without one only get
the drain below.

Guarantees: the kernel runs `T + 128` threads, `__launch_bounds__(T + 128, 1)`
(`attrs["min_blocks_per_sm"] = 1`, which `setmaxnreg` needs), and its thread body
is

    <declarations: Allocate / LetStmt, and the barrier initialisations, in order>
    if (tx >= T) {                  // the producer warpgroup (the last one)
      tl::warpgroup_reg_dealloc<40>();  // both setmaxnreg only when T + 128 > 256 (else the
                                        // launch bounds already allow 255 registers each)
                                        // and the consumers issue wgmma (so the kernel
                                        // starts with more than 40 registers), and
                                        // not after T.disable_warp_group_reg_alloc()
      if (tx == T) { producer loop, its `tx == 0` elections taken as true }
    } else {                        // the user's threads: everything else, in order
      tl::warpgroup_reg_alloc<R>(); // R: the registers the producer gave back, ≤ 240
      ... every `__syncthreads()` became `tl::named_barrier_sync(1, T)`
    }

so the consumers keep thread indices [0, T) (every layout the earlier passes
computed stays valid) and each role is one branch of one if/else. A block-wide
barrier inside the producer loop would deadlock: it raises UnsupportedError.
`tl.disable_warp_specialized` is honoured upstream (no producer loop is built).
Also in the consumer branch: `tl.fence_register_tile(name)` markers (inject_pipeline's
overlapped loops) become `tl::warpgroup_fence_operands` on that register tile; a block-wide
`tl::AllReduce` (a reduction across warps) gets the consumers' named barrier as its thread
range; and the ping-pong calls (`tl::pingpong_*`) are dropped when a block barrier or such a
reduction lies between the first and the last of them (a warpgroup would wait inside its turn
for the other, which waits for that turn).
In every kernel, a loop annotated `tl.async_accumulator` (its last wgmma group
left in flight by inject_pipeline) is followed by `tl::wgmma_wait<0>()` and a
compiler fence on the accumulator registers, before anything reads them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ...ir.expr import BufferLoad, Call, IntImm, StringImm, compare
from ...ir.function import PrimFunc
from ...ir.node import FrozenDict
from ...ir.stmt import Allocate, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, Stmt, While, flat_stmts, seq
from ...ir.visitor import Mutator, Visitor, collect, substitute
from ...transform.context import CompileContext
from ...transform.inject_pipeline import ASYNC_ACCUMULATOR, FENCE_REGISTER_TILE
from .ops import ALL_REDUCE_OP, BLOCK_BARRIER, all_reduce_call, all_reduce_fields

WARPGROUP = 128
PRODUCER_REGS = 40
REGISTER_FILE = 65536
MAX_CONSUMER_REGS = 240
NAMED_BARRIER_ID = 1  # 0 is __syncthreads()
SYNC = "tl.sync_threads"


def warp_specialize(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    body = _Kernels(bool(func.attrs.get("disable_warp_group_reg_alloc"))).visit(func.body)
    return func if body is func.body else func.with_body(body)


def _call(name: str, *args: Any) -> Evaluate:
    return Evaluate(Call("tl.call", (StringImm(name),) + args, DataType("int32")))


def _device_fn(n: Any) -> str:
    """The header-library function a `tl.call` (or a statement of one) calls; "" for anything else."""
    v = n.value if isinstance(n, Evaluate) else n
    return v.args[0].value if isinstance(v, Call) and v.op == "tl.call" and v.args else ""


def _is_barrier_init(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and _device_fn(s) == "tl::mbarrier_init_block"


def consumer_registers(consumer_threads: int) -> int:
    """Per-thread registers the consumers may raise to once the producer holds PRODUCER_REGS."""
    free = (REGISTER_FILE - WARPGROUP * PRODUCER_REGS) // consumer_threads
    return min(MAX_CONSUMER_REGS, free // 8 * 8)


def _issues_wgmma(s: Stmt) -> bool:
    """Register-hungry consumers (wgmma accumulators): a kernel this big surely starts above the
    producer's PRODUCER_REGS, which `setmaxnreg.dec` requires."""
    return bool(collect(s, lambda n: isinstance(n, Call) and "wgmma" in _device_fn(n)))


class _NamedBarriers(Mutator):
    """`__syncthreads()` → a barrier of the consumer threads only."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads

    def visit_Call(self, n: Call) -> Any:
        if n.op == SYNC:
            return Call("tl.call", (StringImm("tl::named_barrier_sync"), IntImm(NAMED_BARRIER_ID),
                                    IntImm(self.threads)), DataType("int32"), span=n.span)  # fmt: skip
        if _block_all_reduce(n):
            # a reduction across warps: its two barriers become the consumers' named barrier
            op_class, threads, scale, _ = all_reduce_fields(n)
            values = tuple(self.visit(a) for a in n.args[6:])
            return all_reduce_call(op_class, threads, scale, (0, self.threads, NAMED_BARRIER_ID), *values)
        return self.generic_visit(n)


def _block_all_reduce(n: Any) -> bool:
    """A `tl::AllReduce` over the whole block (no T.ws region's thread range of its own)."""
    return isinstance(n, Call) and n.op == ALL_REDUCE_OP and all_reduce_fields(n)[3] == BLOCK_BARRIER


def _barrier_inside_turns(s: Stmt) -> bool:
    """A block barrier (or a reduction across warps) lies between the first and the last
    ping-pong call: a warpgroup reaching it inside its turn would wait for the other, which
    waits for that turn to end."""
    events: list = []

    class _V(Visitor):
        def visit_Call(self, n: Call) -> None:
            name = _device_fn(n)
            if n.op == SYNC or _block_all_reduce(n) and _spans_warps(n):
                events.append("barrier")
            elif name.startswith("tl::pingpong_"):
                events.append("turn")
            self.generic_visit(n)

    _V().visit(s)
    turns = [i for i, e in enumerate(events) if e == "turn"]
    return bool(turns) and "barrier" in events[turns[0] : turns[-1]]


def _spans_warps(all_reduce: Call) -> bool:
    _, threads, scale, _ = all_reduce_fields(all_reduce)
    return threads * scale > 32


class _DropTurns(Mutator):
    """Removes the ping-pong calls (the overlap they order stays correct without them)."""

    def visit_Evaluate(self, n: Evaluate) -> Any:
        return seq() if _device_fn(n).startswith("tl::pingpong_") else n


def _fence(regs: Any) -> Evaluate:
    """A compiler fence on every register of the per-thread array `regs` (asm operands: no
    access to them moves across it)."""
    first = Call("address_of", (BufferLoad(regs, (IntImm(0),), regs.dtype),), DataType("handle"))
    return _call(f"tl::warpgroup_fence_operands<{int(regs.shape[0].value)}>", first)


def _is_hoisted(s: Stmt) -> bool:
    return (isinstance(s, Allocate) and bool(s.annotations.get("tl.ws_hoist"))) or _is_barrier_init(s)


class _Remove(Mutator):
    """Drops the given statements (by identity) wherever they are."""

    def __init__(self, drop: set) -> None:
        super().__init__()
        self.drop = drop

    def visit_SeqStmt(self, n: SeqStmt) -> Any:
        out = [self.visit(s) for s in n.stmts if id(s) not in self.drop]
        if len(out) == len(n.stmts) and all(a is b for a, b in zip(out, n.stmts)):
            return n  # unchanged subtrees keep their identity (the producer loop is found by it)
        return replace(n, stmts=tuple(out))


def _producer_slice(s: Stmt, producer: For) -> Stmt | None:
    """The control flow leading to `producer` (serial loops, branches, scalar lets) around it."""
    if s is producer:
        return s
    if isinstance(s, SeqStmt):
        kept = []
        for x in s.stmts:
            y = _producer_slice(x, producer)
            if y is not None:
                kept.append(y)
            elif isinstance(x, LetStmt):
                kept.append(x)
        return seq(*kept) if any(not isinstance(x, LetStmt) for x in kept) else None
    if isinstance(s, For) and s.kind in ("serial", "unrolled"):
        body = _producer_slice(s.body, producer)
        return None if body is None else replace(s, body=body)
    if isinstance(s, IfThenElse):
        then = _producer_slice(s.then_body, producer)
        other = _producer_slice(s.else_body, producer) if s.else_body is not None else None
        return None if then is None and other is None else replace(s, then_body=then or seq(), else_body=other)
    return None


class _DrainAsyncGemm(Mutator):
    """After a loop that leaves its last wgmma group in flight (`tl.async_accumulator`):
    wait for it, and fence the accumulator registers so no read moves above the wait. And
    `tl.fence_register_tile(name)` (inject_pipeline's overlapped loops, after their waits) →
    the same fence on that register tile."""

    def __init__(self, regs: dict) -> None:
        super().__init__()
        self.regs = regs

    def visit_For(self, n: For) -> Any:
        body = self.visit(n.body)
        loop = n if body is n.body else replace(n, body=body)
        name = n.annotations.get(ASYNC_ACCUMULATOR)
        if name is None:
            return loop
        out = [loop, _call("tl::wgmma_wait<0>")]
        acc = self.regs.get(name)
        if acc is not None:
            out.append(_fence(acc))
        return seq(*out)

    def visit_Evaluate(self, n: Evaluate) -> Any:
        if _device_fn(n) != FENCE_REGISTER_TILE:
            return n
        return _fence(self.regs[n.value.args[1].value])


class _Kernels(Mutator):
    def __init__(self, no_reg_alloc: bool = False) -> None:
        super().__init__()
        self.no_reg_alloc = no_reg_alloc  # T.disable_warp_group_reg_alloc(): never setmaxnreg

    def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
        loop = k.body
        if not (isinstance(loop, For) and loop.kind == "thread"):
            return k
        producers = collect(loop.body, lambda n: isinstance(n, For) and n.annotations.get("tl.ws_role") == "producer")
        regs = {a.buffer.name: a.buffer for a in collect(loop.body, lambda n: isinstance(n, Allocate))
                if a.buffer.scope == "local"}  # fmt: skip
        if not producers:  # a plain TMA ring may still leave its last wgmma group in flight
            body = _DrainAsyncGemm(regs).visit(loop.body)
            return k if body is loop.body else replace(k, body=replace(loop, body=body))
        if len(producers) > 1:
            raise UnsupportedError("automatic warp specialization handles one pipelined loop per kernel", k.span,
                                   "set pass config tl.disable_warp_specialized")  # fmt: skip
        producer = producers[0]
        if collect(producer, lambda n: isinstance(n, Call) and n.op == SYNC):
            raise UnsupportedError("the producer loop of a warp-specialized pipeline needs a block barrier",
                                   producer.span, "set pass config tl.disable_warp_specialized")  # fmt: skip
        T, tx = k.num_threads, loop.var
        hoisted = collect(loop.body, _is_hoisted)
        body = _Remove({id(s) for s in hoisted}).visit(loop.body)
        path = _producer_slice(body, producer)
        if path is None or collect(path, lambda n: isinstance(n, While)):
            raise UnsupportedError("the warp-specialized loop is not reachable through plain loops and branches",
                                   producer.span, "set pass config tl.disable_warp_specialized")  # fmt: skip
        consumer_body = _Remove({id(producer)}).visit(body)
        decls, rest = [], []
        for s in flat_stmts(consumer_body):  # top-level declarations stay visible to both roles
            (decls if isinstance(s, (Allocate, LetStmt)) else rest).append(s)
        consumers = _DrainAsyncGemm(regs).visit(seq(*rest))
        if _barrier_inside_turns(consumers):
            consumers = _DropTurns().visit(consumers)
        consumers = _NamedBarriers(T).visit(consumers)
        issue = substitute(path, {tx: IntImm(0, tx.dtype)})  # the elected thread plays thread 0
        elected = IfThenElse(compare("eq", tx, T), issue, None, producer.span)
        rebalance = REGISTER_FILE // (T + WARPGROUP) < MAX_CONSUMER_REGS and _issues_wgmma(consumers)
        if rebalance and not self.no_reg_alloc:
            producer_branch = seq(_call(f"tl::warpgroup_reg_dealloc<{PRODUCER_REGS}>"), elected)
            consumer_branch = seq(_call(f"tl::warpgroup_reg_alloc<{consumer_registers(T)}>"), consumers)
        else:  # one consumer warpgroup already may use 255 registers
            producer_branch, consumer_branch = elected, consumers
        split = IfThenElse(compare("ge", tx, T), producer_branch, consumer_branch, producer.span)
        new_loop = replace(loop, extent=IntImm(T + WARPGROUP), body=seq(*hoisted, *decls, split))
        attrs = dict(k.attrs)
        attrs["min_blocks_per_sm"] = 1
        attrs["warp_specialized"] = (T, WARPGROUP)
        return replace(k, threads=(T + WARPGROUP, 1, 1), body=new_loop, attrs=FrozenDict(attrs))


__all__ = ["consumer_registers", "warp_specialize"]
