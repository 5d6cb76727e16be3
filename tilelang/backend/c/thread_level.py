"""simulate_threads: thread-level code on the CPU, where a thread block runs on one CPU thread.

Requires: tile-level IR after `verify` (tile ops still present; `lower_tile_ops` runs
after this pass). Kernels without thread-level code (`transform.thread_level.uses_thread_level`)
are returned unchanged — their statements mean the same run once as run by thread 0.

Guarantees, for a kernel with thread-level code (a thread index, a thread all-reduce
or a shuffle), the GPU meaning made explicit for one CPU thread:

* the kernel's threads are simulated: its block-level statements are cut into
  *phases* at barriers (`T.sync_threads()` and the barriers `inject_sync` places, run here
  first as in the GPU pipelines)
  and collectives; each phase's per-thread statements run in a loop over the linear
  thread index `t` (`for t in range(threads)`), in which thread indices are
  `thread_index_value(dim, threads, t)`;
* every `T.alloc_local` / `T.alloc_var` buffer and every block-level `LetStmt`
  variable is per-thread: an array with a leading dimension of `threads` (allocated
  once at the top of the kernel), indexed by `t`;
* a store / atomic / print to global, shared or fragment memory whose operands and
  control are the same in every thread (`BlockControl.one_thread_enough`) runs in
  thread 0 only, as on the GPU; one that depends on the thread runs in each;
* tile operators on shared / fragment / global tiles and `T.Parallel` loops run once
  per block, between the thread loops (they read a private value only when it is the
  same in every thread: thread 0's copy; anything else is an `UnsupportedError`);
  a tile operator on thread-private data or with per-thread operands (`T.clear(acc)`,
  `T.atomic_add(s[tx], v)`, every `T.reducer_update`: each thread combines into its replica,
  the one array here) runs in each thread (lowered by the reference rules here);
* a loop or branch holding a barrier or collective keeps its control outside the thread
  loops; its control must be the same in every thread, else a `TileLangError` at it
  (a barrier there would be reached by some threads only);
* `T.tvm_thread_allreduce`: each thread's value is staged, combined over its group in
  ascending thread order, and the result given to every member; a shuffle reads the
  staged value of its source lane (`mask` has no effect: every lane takes part).
New nodes carry the span of the statement they replace.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import TileLangError, UnsupportedError
from ...ir.buffer import Buffer, BufferRegion, Range
from ...ir.dtype import int32
from ...ir.expr import BufferLoad, Call, IntImm, PrimExpr, Var, binary, compare, select
from ...ir.function import PrimFunc
from ...ir.stmt import (
    Allocate,
    Break,
    BufferStore,
    Continue,
    Evaluate,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    ReducerUpdate,
    SeqStmt,
    Stmt,
    TileOp,
    While,
    flat_stmts,
    seq,
)
from ...ir.visitor import Mutator, Visitor, collect, free_vars_of
from ...tileop.base import LowerContext, combine, op_span
from ...transform.thread_level import (
    ALLREDUCE_OP,
    THREAD_INDEX,
    BlockControl,
    collectives_in,
    is_collective,
    thread_index_value,
    thread_strides,
    uses_thread_level,
)
from ...transform.uniformity import PRIVATE_SCOPES, own_jump

_BARRIERS = ("tl.sync_threads", "sync_threads", "__syncthreads", "tl.sync_warp", "tl.sync_grid")
# (a `local.reducer` is not among them: every thread combines into its own replica, as on the GPU)
_SIDE_EFFECT_SCOPES = ("global", "shared", "shared.dyn", "local.fragment")


def simulate_threads(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    if not uses_thread_level(func.body):
        return func
    # the barriers the GPU pipeline places between shared-memory accesses of different
    # threads are phase boundaries here (and a divergent one is the same error)
    from ...transform.inject_sync import inject_sync

    func = inject_sync(func, ctx)

    class _K(Mutator):
        def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
            if not uses_thread_level(k.body):
                return k
            with op_span(k.span):
                return _Sim(k, func).run()

    body = _K().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _is_barrier(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op in _BARRIERS


class _Sim:
    def __init__(self, k: KernelLaunch, func: PrimFunc) -> None:
        self.k = k
        self.threads = tuple(k.threads)
        self.T = k.num_threads
        self.t = Var("tl_t", int32)
        self.bc = BlockControl(k.body)
        self.priv: dict = {}  # private Buffer -> per-thread Buffer (threads, *shape)
        self.lets: dict = {}  # LetStmt Var -> per-thread Buffer (threads, 1)
        self.tidx: dict = {}  # thread-index Var -> its dim
        self.head: list = []  # Allocates of the per-thread buffers
        self.lctx = LowerContext("c", func)
        self.lctx.block_vars, self.lctx.threads = k.block_vars, self.threads
        self.n_stage = 0

    # -- setup -----------------------------------------------------------------------
    def run(self) -> Stmt:
        self._scan(self.k.body)
        body = seq(*self.segment(flat_stmts(self.k.body)))
        return replace(self.k, body=seq(*self.head, body))

    def _scan(self, body: Stmt) -> None:
        sim = self

        class _S(Visitor):
            def visit_For(self, n: For) -> None:
                if n.kind != "parallel":  # inside T.Parallel: per-iteration values, not per-thread
                    self.generic_visit(n)

            def visit_Allocate(self, n: Allocate) -> None:
                if n.buffer.scope in PRIVATE_SCOPES:
                    sim.privatize(n.buffer)
                else:
                    sim.lctx.allocations[n.buffer] = n

            def visit_LetStmt(self, n: LetStmt) -> None:
                v = n.value
                if isinstance(v, Call) and v.op == THREAD_INDEX:
                    sim.tidx[n.var] = int(v.args[0].value)
                else:
                    b = Buffer(n.var.name, (IntImm(1),), n.var.dtype, "local", None, n.span)
                    sim.lets[n.var] = sim.privatize(b)

        _S().visit(body)

    def privatize(self, b: Buffer) -> Buffer:
        p = self.priv.get(b)
        if p is None:
            p = Buffer(b.name, (IntImm(self.T), *b.shape), b.dtype, "local", None, b.span)
            self.priv[b] = p
            self.head.append(Allocate(p, None, span=b.span))
        return p

    def stage(self, name: str, dtype: Any) -> Buffer:
        """A fresh per-thread buffer (threads, 1) for a staged collective operand."""
        self.n_stage += 1
        p = Buffer(f"{name}{self.n_stage}", (IntImm(self.T), IntImm(1)), dtype, "local")
        self.head.append(Allocate(p))
        return p

    # -- classification -------------------------------------------------------------------
    def per_thread_op(self, op: TileOp) -> bool:
        if isinstance(op, ReducerUpdate):
            return True  # each thread's contribution (finalize_reducer combines them)
        touched = [r.buffer for r in collect(op, lambda n: isinstance(n, BufferRegion))]
        return any(b.scope in PRIVATE_SCOPES for b in touched) or not self.bc.uni.uniform(op)

    def phased(self, s: Stmt) -> bool:
        """`s` holds a barrier, a collective or a once-per-block statement: its control stays outside."""
        for n in collect(s, lambda n: isinstance(n, (Stmt, Call))):
            if n is s and isinstance(s, (For, While, IfThenElse)):
                continue
            if isinstance(n, Call):
                if is_collective(n):
                    return True
            elif _is_barrier(n) or (isinstance(n, For) and n.kind == "parallel"):
                return True
            elif isinstance(n, TileOp) and not self.per_thread_op(n):
                return True
            elif isinstance(n, Allocate) and n.buffer.scope not in PRIVATE_SCOPES:
                return True
        return False

    # -- phases ------------------------------------------------------------------------------
    def segment(self, stmts: list) -> list:
        out: list = []
        group: list = []

        def flush() -> None:
            if group:
                out.append(self.thread_loop(list(group)))
                group.clear()

        for s in stmts:
            if isinstance(s, SeqStmt):
                stmts2 = self.segment(flat_stmts(s))  # in line (scopes of Allocate / LetStmt run on)
                flush()
                out.extend(stmts2)
                continue
            if _is_barrier(s):
                flush()
                continue
            if isinstance(s, LetStmt) and s.var in self.tidx:
                continue  # a thread index: an expression of t wherever it is read
            if isinstance(s, Allocate) and s.buffer.scope in PRIVATE_SCOPES:
                if s.init is not None:
                    group.append(BufferStore(s.buffer, tuple(IntImm(0) for _ in s.buffer.shape), s.init, s.span))
                continue
            if isinstance(s, (Break, Continue)):
                flush()
                out.append(s)
                continue
            if isinstance(s, BufferStore) and collectives_in(s.value):
                flush()
                out.extend(self.collective(s, group))
                continue
            if isinstance(s, TileOp):
                if self.per_thread_op(s):
                    group.append(s)
                else:
                    flush()
                    out.append(self.once(s))
                continue
            if isinstance(s, For) and s.kind == "parallel" or isinstance(s, Allocate):
                flush()
                out.append(self.once(s))
                continue
            if isinstance(s, (For, While, IfThenElse)) and (self.phased(s) or own_jump(s) is not None):
                flush()
                out.append(self.control(s))
                continue
            if collectives_in(s):
                raise UnsupportedError(
                    "a warp shuffle / thread all-reduce must be the value of a store outside T.Parallel "
                    "on the C backend",
                    s.span,
                    "assign it to a T.alloc_local element first",
                )
            group.append(s)
        flush()
        return out

    def thread_loop(self, stmts: list) -> Stmt:
        body = _PerThread(self).visit(seq(*stmts))
        return For(self.t, IntImm(0), IntImm(self.T), "serial", body, span=stmts[0].span)

    def once(self, s: Stmt) -> Stmt:
        """A statement the block runs once: private values it reads are thread 0's."""
        # what it reads from outside: free variables, and the per-thread buffers (their whole arrays)
        outside = (
            tuple(free_vars_of(s)),
            tuple(
                BufferLoad(n.buffer, ())
                for n in collect(s, lambda n: isinstance(n, BufferLoad))
                if n.buffer in self.priv
            ),
        )
        if not isinstance(s, Allocate) and (not self.bc.uni.uniform(outside) or collectives_in(s)):
            why = self.bc.uni.why(outside) or "a warp shuffle / thread all-reduce"
            raise UnsupportedError(
                f"on the C backend, a tile operation or T.Parallel loop in a kernel with thread-level code "
                f"may read only values that are the same in every thread; this one reads {why}",
                s.span,
                "compute it per thread outside T.Parallel, or pass the value through shared memory",
            )
        for st in collect(s, lambda n: isinstance(n, BufferStore)):
            if st.buffer in self.priv:
                raise UnsupportedError(
                    f"on the C backend, T.Parallel writing the per-thread buffer `{st.buffer.name}` in a kernel with "
                    "thread-level code is not supported",
                    st.span,
                    "write it with a T.serial / T.vectorized loop (each thread its own copy)",
                )
        return _Thread0(self).visit(s)

    def control(self, s: Stmt) -> Stmt:
        bc = self.bc
        uniform = bc.uni.uniform(s.cond) if isinstance(s, IfThenElse) else bc.uni.loop_uniform(s)
        if not uniform:
            why = (
                bc.uni.why(s.cond if not isinstance(s, For) else (s.start, s.extent, s.step))
                or bc.uni.jump_why(s)
                or "a per-thread value"
            )
            raise TileLangError(
                f"this {type(s).__name__ if not isinstance(s, IfThenElse) else 'branch'}'s control may differ between "
                f"the threads of the block ({why}), but it holds a barrier, a thread collective (all-reduce, "
                "shuffle), a break / continue of a loop with barriers, or a tile operation every thread "
                "takes part in; some threads would not reach it",
                s.span,
                "compute the condition only from block indices, kernel arguments and values that are the same "
                "in every thread, or move the barrier / collective out of it",
            )
        r = _Thread0(self)
        bc.push(s)
        try:
            if isinstance(s, IfThenElse):
                els = None if s.else_body is None else seq(*self.segment(flat_stmts(s.else_body)))
                return IfThenElse(r.visit(s.cond), seq(*self.segment(flat_stmts(s.then_body))), els, s.span)
            body = seq(*self.segment(flat_stmts(s.body)))
            if isinstance(s, While):
                return While(r.visit(s.cond), body, s.span)
            return replace(s, start=r.visit(s.start), extent=r.visit(s.extent), body=body,
                           kind="serial" if s.kind == "pipelined" else s.kind)  # fmt: skip
        finally:
            bc.pop()

    # -- collectives ------------------------------------------------------------------------------
    def collective(self, s: BufferStore, group: list) -> list:
        if not self.bc.control_uniform():
            raise TileLangError(
                "a warp shuffle / thread all-reduce must be reached by every thread of the block, but it is "
                f"under control that may differ between threads ({self.bc.control_why()})",
                s.span,
                "move it out of the thread-dependent branch or loop",
            )
        calls = collectives_in(s.value)
        for c in calls:
            if any(collectives_in(a) for a in c.args):
                raise UnsupportedError("a shuffle / all-reduce of a shuffle / all-reduce value", s.span,
                                       "assign the inner one to a T.alloc_local element first")  # fmt: skip
        t = self.t
        # phase 1: every thread stages its operands
        staged, stage_stmts = [], []
        for c in calls:
            value = c.args[1] if c.op == ALLREDUCE_OP else c.args[0]
            buf = self.stage("tl_stage", value.dtype)
            staged.append(buf)
            stage_stmts.append(BufferStore(buf, (_T_MARK, IntImm(0)), value, s.span))
        out = [self.thread_loop(stage_stmts)]
        mapping: dict = {}
        for c, buf in zip(calls, staged):
            if c.op == ALLREDUCE_OP:
                res = self.stage("tl_allreduce", buf.dtype)
                out.append(self.fold(c, buf, res, s.span))
                mapping[id(c)] = BufferLoad(res, (t, IntImm(0)), buf.dtype)
            else:
                mapping[id(c)] = BufferLoad(buf, (self.shfl_source(c), IntImm(0)), buf.dtype)
        group.append(replace(s, value=_ReplaceCalls(mapping).visit(s.value)))
        return out

    def fold(self, c: Call, buf: Buffer, res: Buffer, span: Any) -> Stmt:
        """res[t] = the combination of buf over t's group, in ascending thread order."""
        kind = c.args[0].value
        dims = sorted({int(d.value) for d in c.args[2:]})
        t = self.t
        strides = thread_strides(self.threads)
        base: PrimExpr = t
        for d in dims:
            base = binary("sub", base, binary("mul", thread_index_value(d, self.threads, t), strides[d]))
        members = [(strides[d], self.threads[d]) for d in dims]
        count = 1
        for _, n in members:
            count *= n
        j = Var("tl_j", int32)
        off: PrimExpr = IntImm(0)
        rem: PrimExpr = j
        for k, (st, n) in enumerate(members):
            x = binary("floormod", rem, n) if k < len(members) - 1 else rem
            off = binary("add", off, binary("mul", x, st))
            rem = binary("floordiv", rem, n)
        acc = BufferLoad(res, (t, IntImm(0)), res.dtype)
        first = BufferStore(res, (t, IntImm(0)), BufferLoad(buf, (base, IntImm(0)), buf.dtype), span)
        step = BufferStore(
            res, (t, IntImm(0)), combine(kind, acc, BufferLoad(buf, (binary("add", base, off), IntImm(0)), buf.dtype)),
            span,
        )  # fmt: skip
        rest = For(j, IntImm(1), IntImm(count - 1), "serial", step, span=span) if count > 1 else None
        return For(t, IntImm(0), IntImm(self.T), "serial", seq(first, *([rest] if rest else [])), span=span)

    def shfl_source(self, c: Call) -> PrimExpr:
        """The linear thread whose staged value a shuffle in thread t reads (itself where CUDA gives its own)."""
        t = self.t
        kind = c.op.rsplit("_", 1)[1]
        lane_arg, width = _PerThread(self).visit(c.args[1]), int(c.args[2].value)
        pos = binary("floormod", t, width)
        start = binary("sub", t, pos)
        if kind == "xor":
            x = binary("bitxor", pos, lane_arg)
            src = select(compare("lt", x, width), binary("add", start, x), t)
        elif kind == "down":
            x = binary("add", pos, lane_arg)
            src = select(compare("lt", x, width), binary("add", t, lane_arg), t)
        elif kind == "up":
            x = binary("sub", pos, lane_arg)
            src = select(compare("ge", x, 0), binary("sub", t, lane_arg), t)
        else:
            src = binary("add", start, binary("floormod", lane_arg, width))
        return select(compare("lt", src, self.T), src, t)


_T_MARK = Var("tl_t_mark", int32)  # stands for the current thread in staging stores


class _ReplaceCalls(Mutator):
    def __init__(self, mapping: dict) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_Call(self, n: Call) -> Any:
        hit = self.mapping.get(id(n))
        return hit if hit is not None else self.generic_visit(n)


class _Privates(Mutator):
    """Rewrites private buffers, let variables and thread indices for thread `self.thread`."""

    def __init__(self, sim: _Sim, thread: PrimExpr) -> None:
        super().__init__()
        self.sim = sim
        self.thread = thread

    def visit_Var(self, n: Var) -> Any:
        sim = self.sim
        if n is _T_MARK:
            return self.thread
        d = sim.tidx.get(n)
        if d is not None:
            return thread_index_value(d, sim.threads, self.thread)
        b = sim.lets.get(n)
        if b is not None:
            return BufferLoad(b, (self.thread, IntImm(0)), n.dtype)
        return n

    def visit_Call(self, n: Call) -> Any:
        if n.op == THREAD_INDEX:
            return thread_index_value(int(n.args[0].value), self.sim.threads, self.thread)
        return self.generic_visit(n)

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        idx = self.visit(n.indices)
        p = self.sim.priv.get(n.buffer)
        if p is not None:
            return BufferLoad(p, (self.thread, *idx), n.dtype, n.span)
        return n if idx is n.indices else replace(n, indices=idx)

    def visit_BufferRegion(self, n: BufferRegion) -> Any:
        region = self.visit(n.region)
        p = self.sim.priv.get(n.buffer)
        if p is not None:
            return BufferRegion(p, (Range(self.thread, IntImm(1)), *region), n.span)
        return n if region is n.region else replace(n, region=region)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        idx, value = self.visit(n.indices), self.visit(n.value)
        p = self.sim.priv.get(n.buffer)
        if p is not None:
            return BufferStore(p, (self.thread, *idx), value, n.span)
        return BufferStore(n.buffer, idx, value, n.span)

    def visit_LetStmt(self, n: LetStmt) -> Any:
        if n.var in self.sim.tidx:
            return seq()
        b = self.sim.lets[n.var]
        return BufferStore(b, (self.thread, IntImm(0)), self.visit(n.value), n.span)


class _Thread0(_Privates):
    """A statement the block runs once: it sees thread 0's private values."""

    def __init__(self, sim: _Sim) -> None:
        super().__init__(sim, IntImm(0))


class _PerThread(_Privates):
    """The body of `for t in range(threads)`: private data indexed by t; side effects that
    are the same in every thread done by thread 0 only; per-thread tile ops lowered here."""

    def __init__(self, sim: _Sim) -> None:
        super().__init__(sim, sim.t)

    def visit(self, node: Any) -> Any:
        if isinstance(node, TileOp):
            from ... import tileop

            with op_span(node.span):
                lowered = tileop.lower(node, self.sim.lctx)
            if self.sim.bc.one_thread_enough(node) and _side_effect(lowered):
                return self.thread0(self.visit(lowered), node.span)
            return self.visit(lowered)
        return super().visit(node)

    def thread0(self, s: Stmt, span: Any) -> Stmt:
        return IfThenElse(compare("eq", self.sim.t, 0), s, None, span)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        out = super().visit_BufferStore(n)
        if n.buffer.scope in _SIDE_EFFECT_SCOPES and self.sim.bc.one_thread_enough(n.indices, n.value):
            return self.thread0(out, n.span)
        return out

    def visit_Evaluate(self, n: Evaluate) -> Any:
        out = self.generic_visit(n)
        v = n.value
        if isinstance(v, Call) and (v.op.startswith("tl.atomic") or v.op == "tl.print"):
            if self.sim.bc.one_thread_enough(*v.args):
                return self.thread0(out, n.span)
        return out

    def visit_IfThenElse(self, n: IfThenElse) -> Any:
        self.sim.bc.push(n)
        try:
            return self.generic_visit(n)
        finally:
            self.sim.bc.pop()

    def visit_For(self, n: For) -> Any:
        self.sim.bc.push(n)
        try:
            out = self.generic_visit(n)
        finally:
            self.sim.bc.pop()
        if out.kind in ("pipelined", "parallel"):
            out = replace(out, kind="serial")
        return out

    def visit_While(self, n: While) -> Any:
        self.sim.bc.push(n)
        try:
            return self.generic_visit(n)
        finally:
            self.sim.bc.pop()

    def visit_Allocate(self, n: Allocate) -> Any:
        if n.buffer in self.sim.priv:
            if n.init is None:
                return seq()
            p = self.sim.priv[n.buffer]
            return BufferStore(p, (self.thread, *(IntImm(0) for _ in n.buffer.shape)), self.visit(n.init), n.span)
        return n


def _side_effect(s: Stmt) -> bool:
    """`s` writes memory other threads see (global / shared / fragments), atomically or not."""
    for n in collect(s, lambda n: isinstance(n, (BufferStore, Evaluate))):
        if isinstance(n, BufferStore) and n.buffer.scope in _SIDE_EFFECT_SCOPES:
            return True
        if isinstance(n, Evaluate) and isinstance(n.value, Call) and n.value.op.startswith(("tl.atomic", "tl.print")):
            return True
    return False


__all__ = ["simulate_threads"]
