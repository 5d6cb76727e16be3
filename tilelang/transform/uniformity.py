"""Block-uniformity of values and control flow in tile-level IR (used by `inject_sync`).

A barrier may only sit where every thread of the block reaches it, so a loop or
branch may hold one only when its control (condition, trip count, and every
`break` / `continue` that leaves or shortens it) is the same in all threads.

How tile-level IR runs on a GPU decides what is uniform. Outside `T.Parallel`,
every statement is executed by every thread of the block: a store to a `local`
array or a `local.var` scalar happens in each thread, with each thread's own
values (`lower_threads` lowers it per thread; only stores to global / shared
memory with block-uniform operands and control are narrowed to thread 0). Inside `T.Parallel` (and vectorized /
thread-bound loops) each iteration belongs to some thread, so its loop variables,
and whatever it writes into thread-private buffers, differ between threads.

Thread-varying, therefore, are: the variables of those loops (and of loops and
LetStmts nested in them); loads of `local.fragment` / `local.reducer` elements
(each held by some threads); thread-index-like calls (`thread`, `lane`, `warp`,
shuffles, random numbers, atomics' results); loads from a global buffer the
kernel also writes (one thread's store is not visible to the others without a
barrier that the sync pass does not place for global memory); and everything
computed from them. A thread-private buffer (`local`, `local.var`) is uniform
when every write to it is a tile-level `BufferStore` (or an allocation's
initial value) whose indices and value are uniform and that runs under uniform
control — enclosing conditions, loop bounds, and the conditions of the `break`s
/ `continue`s of the enclosing loops (a tile-level `T.fill` counts too: each
thread fills the whole region); any other write (inside `T.Parallel`, another
tile operator's destination, an escaping `address_of`, inside a `T.ws` region,
which only some warpgroups run — there it is uniform for the region's own threads
only, `for_region`) makes it varying. Loads from shared memory or
from read-only global memory at a uniform address are uniform: every thread
reads the same word (the sync pass orders the shared reads of conditions like
any other read). Variables and buffers depend on each other, so the sets are a
fixed point: start from "everything uniform", mark what is forced varying, and
repeat until nothing changes (marking only ever grows, so this terminates and
ends at the greatest sound solution).

`Uniformity(body, block_values=True)` answers a different question, the one
thread-level lowering asks (`thread_level.py`): which statements *outside*
`T.Parallel` compute per-thread values and so must run in every thread rather than
in one. There a fragment element, a global load and a tile operator's result are one
value of the block (the lowering stages a fragment element to every thread), and a
vectorized loop is one thread's vector: only thread indices, `T.Parallel` / thread
loops and what is computed from them (or under their control) vary.
"""

from __future__ import annotations

from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import BufferLoad, Call, Var
from ..ir.node import child_fields
from ..ir.stmt import (
    Allocate,
    Break,
    BufferStore,
    Continue,
    Evaluate,
    Fill,
    For,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    SeqStmt,
    Stmt,
    WarpSpecialize,
    While,
)
from ..ir.visitor import Visitor

# Loops whose iterations run on different threads (or lanes).
SPMD_LOOPS = ("parallel", "vectorized", "thread")
PRIVATE_SCOPES = ("local", "local.var")
_VARYING_CALLS = ("thread", "lane", "warp", "shfl", "rand", "atomic", "clock", "timer", "smid")


def thread_dependent_call(op: str) -> bool:
    """A call whose value may differ between the threads of a block."""
    return any(k in op for k in _VARYING_CALLS)


class _Region:
    """Stands in the condition stack for a `T.ws` region: control that only the region's
    threads take — uniform for them (`Uniformity.for_region`), never for the whole block."""

    __slots__ = ("threads",)

    def __init__(self, threads: tuple) -> None:
        self.threads = threads


class _LoopFrame:
    """The conditions under which the `break`s / `continue`s of one loop execute."""

    __slots__ = ("depth", "jump_conds")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.jump_conds: list = []


class Uniformity:
    """Which expressions and loops have the same value / control in every thread (see module doc)."""

    def __init__(self, body: Stmt, block_values: bool = False) -> None:
        self.block_values = block_values
        self.region: tuple | None = None  # uniform over the threads of this T.ws region (None: the block)
        self.bad_vars: set = set()
        self.bad_bufs: set = set()
        self.written_globals: set = set()
        self._loop_jumps: dict = {}  # id(loop) -> (loop, _LoopFrame)
        self._regions: dict = {}
        self._collect(body)
        self._seeds = (set(self.bad_vars), set(self.bad_bufs))
        self._solve()

    def for_region(self, threads: tuple) -> Uniformity:
        """The same analysis for the threads of one `T.ws` region: what they run under the
        region's own control counts as uniform among them (its barriers are the region's)."""
        threads = tuple(threads)
        hit = self._regions.get(threads)
        if hit is None:
            hit = object.__new__(Uniformity)
            hit.__dict__.update(self.__dict__)
            hit.region = threads
            hit.bad_vars, hit.bad_bufs = set(self._seeds[0]), set(self._seeds[1])
            hit._regions = {}
            hit._solve()
            self._regions[threads] = hit
        return hit

    # -- collection ------------------------------------------------------------------
    def _collect(self, body: Stmt) -> None:
        from .inject_sync import collect_accesses

        uni = self
        lets: list = []  # (var, value, conds, frames)
        loops: list = []  # (var, (start, step), conds, frames)
        stores: list = []  # (buffer, exprs, conds, frames)
        self._lets, self._loops, self._stores = lets, loops, stores

        def written_by(s: Any) -> None:
            acc = collect_accesses(s)
            for a in acc.writes + acc.async_writes:
                b = a.buffer
                if b.scope in PRIVATE_SCOPES:
                    uni.bad_bufs.add(b)
                elif b.scope == "global":
                    uni.written_globals.add(b)

        class _Sites(Visitor):
            def __init__(self) -> None:
                self.spmd = 0
                self.conds: list = []
                self.frames: list = []

            def ctx(self) -> tuple:
                return tuple(self.conds), tuple(self.frames)

            def visit_KernelLaunch(self, n: KernelLaunch) -> None:
                self.visit(n.body)

            def visit_SeqStmt(self, n: SeqStmt) -> None:
                self.visit(n.stmts)

            def visit_Allocate(self, n: Allocate) -> None:
                b = n.buffer
                if b.scope in PRIVATE_SCOPES and (self.spmd or n.init is not None):
                    if self.spmd:
                        uni.bad_bufs.add(b)
                    else:
                        stores.append((b, (n.init,), *self.ctx()))

            def visit_For(self, n: For) -> None:
                spmd = n.kind in SPMD_LOOPS and not (uni.block_values and n.kind == "vectorized")
                if spmd or self.spmd:
                    uni.bad_vars.add(n.var)
                else:
                    loops.append((n.var, (n.start, n.step), *self.ctx()))
                self.spmd += spmd
                self.loop(n, (n.start, n.extent, n.step))
                self.spmd -= spmd

            def visit_While(self, n: While) -> None:
                self.loop(n, n.cond)

            def loop(self, n: For | While, control: Any) -> None:
                frame = _LoopFrame(len(self.conds) + 1)
                uni._loop_jumps[id(n)] = (n, frame)
                self.conds.append(control)
                self.frames.append(frame)
                self.visit(n.body)
                self.frames.pop()
                self.conds.pop()

            def visit_IfThenElse(self, n: IfThenElse) -> None:
                self.conds.append(n.cond)
                self.visit(n.then_body)
                if n.else_body is not None:
                    self.visit(n.else_body)
                self.conds.pop()

            def visit_WarpSpecialize(self, n: WarpSpecialize) -> None:
                self.conds.append(_Region(tuple(n.thread_range)))
                self.visit(n.body)
                self.conds.pop()

            def jump(self) -> None:
                if self.frames:
                    f = self.frames[-1]
                    f.jump_conds.extend(self.conds[f.depth :])

            def visit_Break(self, n: Break) -> None:
                self.jump()

            def visit_Continue(self, n: Continue) -> None:
                self.jump()

            def visit_LetStmt(self, n: LetStmt) -> None:
                if self.spmd:
                    uni.bad_vars.add(n.var)
                else:
                    lets.append((n.var, n.value, *self.ctx()))
                written_by(n)

            def visit_BufferStore(self, n: BufferStore) -> None:
                b = n.buffer
                if b.scope in PRIVATE_SCOPES:
                    if self.spmd:
                        uni.bad_bufs.add(b)
                    else:
                        stores.append((b, (n.indices, n.value), *self.ctx()))
                elif b.scope == "global":
                    uni.written_globals.add(b)
                written_by(n.indices)
                written_by(n.value)

            def visit_Fill(self, n: Fill) -> None:
                b = n.dst.buffer
                if b.scope in PRIVATE_SCOPES and not self.spmd:
                    # lowered per thread over the whole region (`fill_cuda`): a tile-level store
                    region = tuple((r.begin, r.extent) for r in n.dst.region)
                    stores.append((b, (n.value, region), *self.ctx()))
                    written_by(n.value)
                else:
                    self.generic_visit(n)

            def generic_visit(self, n: Any) -> None:  # tile ops, Evaluate, ...: atomic here
                if isinstance(n, Stmt):
                    if uni.block_values and not self.spmd and not isinstance(n, (Evaluate, WarpSpecialize)):
                        # a tile op at block level: its private destinations get one value of the block
                        acc = collect_accesses(n)
                        # its operands, and a stand-in load of every private buffer it reads
                        what = (n, *(BufferLoad(a.buffer, ()) for a in acc.reads if a.buffer.scope in PRIVATE_SCOPES))
                        for a in acc.writes:
                            if a.buffer.scope in PRIVATE_SCOPES:
                                stores.append((a.buffer, what, *self.ctx()))
                        return
                    written_by(n)
                    for name in child_fields(type(n)):
                        v = getattr(n, name)
                        if isinstance(v, Stmt):
                            self.visit(v)

        _Sites().visit(body)

    def _solve(self) -> None:
        changed = True
        while changed:
            changed = False
            # a loop variable or a LetStmt is in scope only where it is bound: the threads that
            # get there agree on it when its value does (their control is checked elsewhere)
            for v, value, _, _ in self._lets + self._loops:
                if v not in self.bad_vars and not self.uniform(value):
                    self.bad_vars.add(v)
                    changed = True
            for b, what, conds, frames in self._stores:
                if b not in self.bad_bufs and not self._under_uniform(what, conds, frames):
                    self.bad_bufs.add(b)
                    changed = True

    def _under_uniform(self, what: Any, conds: tuple, frames: tuple) -> bool:
        if not self.uniform(what) or not self.uniform(conds):
            return False
        return all(self.uniform(tuple(f.jump_conds)) for f in frames)

    # -- queries -----------------------------------------------------------------------
    def uniform(self, e: Any) -> bool:
        """Whether `e` (an expression, or a tuple / list of them) has one value in every thread."""
        ok = True
        uni = self

        class _U(Visitor):
            def visit(self, node: Any) -> None:
                nonlocal ok
                if isinstance(node, _Region):
                    ok = ok and node.threads == uni.region
                elif ok:
                    super().visit(node)

            def visit_Var(self, n: Var) -> None:
                nonlocal ok
                if n in uni.bad_vars:
                    ok = False

            def visit_BufferLoad(self, n: BufferLoad) -> None:
                nonlocal ok
                b: Buffer = n.buffer
                if b.scope in ("shared", "shared.dyn"):
                    pass
                elif b.scope == "global":
                    ok = ok and (uni.block_values or b not in uni.written_globals)
                elif b.scope in PRIVATE_SCOPES:
                    ok = ok and b not in uni.bad_bufs
                elif not (uni.block_values and b.scope in ("local.fragment", "local.reducer")):
                    ok = False  # fragments, reducers, barriers, unknown scopes
                self.visit(n.indices)

            def visit_Call(self, n: Call) -> None:
                nonlocal ok
                if thread_dependent_call(n.op):
                    ok = False
                self.generic_visit(n)

        _U().visit(e)
        return ok

    def why(self, e: Any) -> str | None:
        """What makes `e` thread-varying, in words (None if it is uniform)."""
        found: list = []
        uni = self

        class _W(Visitor):
            def visit(self, node: Any) -> None:
                if isinstance(node, _Region):
                    if node.threads != uni.region:
                        found.append("the `T.ws` region it is in, which only some warpgroups run")
                elif not found:
                    super().visit(node)

            def visit_Var(self, n: Var) -> None:
                if n in uni.bad_vars:
                    found.append(f"`{n.name}`, a per-thread value")

            def visit_BufferLoad(self, n: BufferLoad) -> None:
                b = n.buffer
                if b.scope in ("shared", "shared.dyn"):
                    pass
                elif b.scope == "global":
                    if b in uni.written_globals:
                        found.append(f"`{b.name}`, a global buffer this kernel also writes")
                elif b.scope in PRIVATE_SCOPES:
                    if b in uni.bad_bufs:
                        found.append(
                            f"`{b.name}`, a {b.scope} buffer written with per-thread values or under per-thread "
                            "control (inside T.Parallel or a T.ws region, by a tile operator, or from a fragment / per-thread value)"
                        )
                else:
                    found.append(f"`{b.name}`, a {b.scope} buffer whose elements belong to different threads")
                if not found:
                    self.visit(n.indices)

            def visit_Call(self, n: Call) -> None:
                if thread_dependent_call(n.op):
                    found.append(f"`{n.op}`, a per-thread value")
                else:
                    self.generic_visit(n)

        _W().visit(e)
        return found[0] if found else None

    def jump_why(self, loop: For | While) -> str | None:
        """What makes a `break` / `continue` of `loop` thread-dependent (None if nothing)."""
        hit = self._loop_jumps.get(id(loop))
        return None if hit is None else self.why(tuple(hit[1].jump_conds))

    def same_loop(self, new: For | While, old: For | While) -> None:
        """`new` is `old` rebuilt (barriers inserted): it has the same jumps."""
        hit = self._loop_jumps.get(id(old))
        if hit is not None and new is not old:
            self._loop_jumps[id(new)] = (new, hit[1])

    def jumps_uniform(self, loop: For | While) -> bool:
        """Every `break` / `continue` of `loop` runs under block-uniform conditions (a loop this
        analysis never saw is proven only when it has no jumps of its own)."""
        hit = self._loop_jumps.get(id(loop))
        if hit is None:
            return own_jump(loop.body) is None
        return self.uniform(tuple(hit[1].jump_conds))

    def loop_uniform(self, loop: For | While) -> bool:
        """Every thread runs the same trips of `loop` (its control and its jumps are uniform)."""
        control = loop.cond if isinstance(loop, While) else (loop.start, loop.extent, loop.step)
        return self.uniform(control) and self.jumps_uniform(loop)


def own_jump(body: Stmt) -> Stmt | None:
    """A `break` / `continue` in `body` of the loop around it (none of a loop nested in it)."""
    found: list = []

    class _J(Visitor):
        def visit(self, node: Any) -> None:
            if not found:
                super().visit(node)

        def visit_For(self, n: For) -> None:
            pass

        def visit_While(self, n: While) -> None:
            pass

        def visit_Break(self, n: Break) -> None:
            found.append(n)

        def visit_Continue(self, n: Continue) -> None:
            found.append(n)

    _J().visit(body)
    return found[0] if found else None


__all__ = ["Uniformity", "own_jump", "thread_dependent_call", "SPMD_LOOPS", "PRIVATE_SCOPES"]
