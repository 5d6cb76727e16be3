"""lower_hopper_c: the explicit Hopper constructs on the CPU backend.

Requires: a verified tile-level PrimFunc (before `lower_tile_ops`).

Guarantees: an equivalent PrimFunc (the input is never modified) for a block
program executed in program order by one host thread per block, with no
`WarpSpecialize`, no mbarrier `SyncOp` and no `tl.block_rank_in_cluster` left:

* `with T.ws(...)` regions execute in program order (their bodies are spliced in);
* each `T.alloc_barrier` buffer becomes a per-block state array (arrive count,
  pending arrivals, completed phases per mbarrier); `T.mbarrier_arrive` counts one
  arrival per thread that executes it (the region's threads, or the block's),
  completing the phase when the pending count reaches zero (`T.mbarrier_arrive_expect_tx`
  is one thread's arrival, as on the GPU);
  `T.mbarrier_wait_parity(b, p)` passes when the phase of parity `p` has completed
  and otherwise stops the launch with an error: in program order nothing could
  complete it any more, so the protocol needs the real concurrency of sm_90a
  (the same for more arrivals than the barrier expects, a bug on the GPU too);
  expect-tx byte counts are ignored (a TMA copy has landed when the next
  statement runs);
* `T.block_rank_in_cluster()` becomes the block's rank from its block indices
  and the kernel's `cluster_dims` (x fastest, as %cluster_ctarank), 0 without;
* arriving on another CTA's barrier (`T.mbarrier_arrive(b, cta_id)`) is an
  `UnsupportedError` ("needs sm_90a"): blocks of a cluster do not share memory
  on the CPU.
The remaining `TmaCopy` / stateless `SyncOp` are lowered by `lower_tile_ops`
(tilelang/tileop/hopper.py: a copy, and no-ops). New nodes carry the span of
the statement they replace.
"""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.dtype import int32
from ...ir.expr import BufferLoad, Call, IntImm, StringImm, binary, compare
from ...ir.function import PrimFunc
from ...ir.node import FrozenDict
from ...ir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    IfThenElse,
    KernelLaunch,
    Stmt,
    SyncOp,
    WarpSpecialize,
    seq,
)
from ...ir.visitor import SplicingMutator
from ...transform.context import CompileContext

BARRIER_SCOPE = "shared.barrier"
# fields of one mbarrier's state
_COUNT, _PENDING, _PHASES, _FIELDS = 0, 1, 2, 3


def lower_hopper_c(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    body = _Lower().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _fail(message: str, span) -> Evaluate:
    where = f"{span.file}:{span.line}" if span.line else "<unknown>"
    return Evaluate(Call("tl.assert_fail", (StringImm(f"{where}: {message}"),), int32), span)


class _Lower(SplicingMutator):
    def __init__(self) -> None:
        super().__init__()
        self.kernel: KernelLaunch | None = None
        self.threads = 1  # threads executing the current statement
        self.state: dict = {}  # barrier Buffer -> its state Buffer

    def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
        outer = (self.kernel, self.threads)
        self.kernel, self.threads = k, k.num_threads
        try:
            return self.generic_visit(k)
        finally:
            self.kernel, self.threads = outer

    def visit_WarpSpecialize(self, s: WarpSpecialize) -> Stmt:
        outer = self.threads
        self.threads = s.thread_range[1]
        try:
            return self.visit(s.body)
        finally:
            self.threads = outer

    def visit_Allocate(self, a: Allocate) -> Stmt:
        b = a.buffer
        if b.scope != BARRIER_SCOPE:
            return self.generic_visit(a)
        counts = tuple(int(c) for c in a.annotations.get("arrive_counts", ()))
        st = Buffer(f"{b.name}_state", (IntImm(_FIELDS * len(counts)),), int32, "local", None, b.span)
        self.state[b] = st
        init = []
        for i, c in enumerate(counts):
            for field, v in ((_COUNT, c), (_PENDING, c), (_PHASES, 0)):
                init.append(BufferStore(st, (IntImm(_FIELDS * i + field),), IntImm(v), a.span))
        return seq(Allocate(st, None, FrozenDict(), a.span), *init)

    def visit_Call(self, c: Call):
        if c.op != "tl.block_rank_in_cluster":
            return self.generic_visit(c)
        k = self.kernel
        dims = tuple(k.attrs.get("cluster_dims", (1, 1, 1))) if k is not None else (1, 1, 1)
        rank = IntImm(0)
        stride = 1
        for v, d in zip(k.block_vars if k is not None else (), dims):
            if d > 1:
                rank = binary("add", rank, binary("mul", binary("floormod", v, d), stride))
            stride *= d
        return rank

    def visit_SyncOp(self, s: SyncOp) -> Stmt:
        if s.kind not in ("mbarrier_wait_parity", "mbarrier_arrive", "mbarrier_expect_tx", "mbarrier_arrive_expect_tx"):
            return self.generic_visit(s)
        bar = s.args[0]
        if s.kind == "mbarrier_arrive" and len(s.args) > 1:
            raise UnsupportedError(
                "T.mbarrier_arrive on another CTA's barrier (cta_id=...) needs sm_90a: the CPU backend runs the "
                "blocks of a cluster without shared memory between them",
                s.span,
                "compile this kernel for an sm_90a CUDA target",
            )
        if s.kind == "mbarrier_expect_tx":
            return seq()  # bytes of TMA copies: they have landed when the next statement runs
        st = self.state.get(bar.buffer)
        if st is None:
            raise UnsupportedError(f"mbarrier `{bar.buffer.name}` is used before T.alloc_barrier", s.span)
        base = binary("mul", self.visit(bar.indices[0]), _FIELDS)

        def field(k: int) -> BufferLoad:
            return BufferLoad(st, (binary("add", base, k),), int32)

        def at(k: int) -> tuple:
            return (binary("add", base, k),)

        if s.kind == "mbarrier_wait_parity":
            parity = self.visit(s.args[1])
            blocked = compare("eq", binary("bitand", field(_PHASES), 1), binary("bitand", parity, 1))
            return IfThenElse(
                blocked,
                _fail(
                    f"T.mbarrier_wait_parity on `{bar.buffer.name}` waits for a phase that has not completed when "
                    "the block runs in program order (the CPU backend executes T.ws regions one after another); "
                    "this barrier protocol needs sm_90a — or arrive on the barrier earlier in program order",
                    s.span,
                ),
                None,
                s.span,
            )
        # an arrival of every thread executing this statement (arrive_expect_tx: one thread's)
        arrivals = 1 if s.kind == "mbarrier_arrive_expect_tx" else self.threads
        pending = binary("sub", field(_PENDING), arrivals)
        over = _fail(
            f"T.{s.kind} by {arrivals} thread(s) on `{bar.buffer.name}` exceeds the arrivals its phase expects "
            "(the arrive count given to T.alloc_barrier)",
            s.span,
        )
        complete = seq(
            IfThenElse(compare("lt", field(_PENDING), 0), over, None, s.span),
            BufferStore(st, at(_PENDING), field(_COUNT), s.span),
            BufferStore(st, at(_PHASES), binary("add", field(_PHASES), 1), s.span),
        )
        return seq(
            BufferStore(st, at(_PENDING), pending, s.span),
            IfThenElse(compare("le", field(_PENDING), 0), complete, None, s.span),
        )
