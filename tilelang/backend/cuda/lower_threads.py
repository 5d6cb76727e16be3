"""lower_threads: block-level tile IR → per-thread IR for the CUDA code generator.

Requires: `infer_layout` ran (`attrs["layout_map"]`, loop layouts on every
`T.Parallel` nest), then `inject_pipeline` and `inject_sync` (tile level).
`ctx.target` is the CUDA `Target`.

Guarantees: an equivalent PrimFunc (the input is never modified) whose
`KernelLaunch` has `attrs["thread_var"]` (a Var meaning `threadIdx.x`,
multi-dimensional `threads=` linearised) and whose body contains no tile op
and no `parallel` loop:

* every `local.fragment` / `local.reducer` buffer became a per-thread register
  array (`local` scope, `locals_per_thread` elements; element `e` of the tile
  lives in thread `F.thread(e)` at register `F.local(e)`);
* every `T.Parallel` nest with loop layout `L` became, in each thread, an
  `unrolled` loop over the thread's iterations `c`: the iteration is
  `L⁻¹(tx, c)` (simplified with `tx ∈ [0, threads)`, `c ∈ [0, n)`, so register
  indices are compile-time constants once unrolled); when the innermost `v`
  steps of `c` walk `v` contiguous elements of the last loop dimension the loop
  is split into `co` (unrolled) × `lane` (`vectorized`, see vectorize.py);
  iterations in a layout's padding and threads beyond its extent are guarded
  off; in a replicated layout only replica 0 performs global / shared stores,
  atomics and prints;
* fragment reads in a nest that the executing thread does not hold are staged
  through shared memory (registers → shared, barrier, read, barrier); such
  writes are a `LayoutError`;
* tile ops are replaced by their "cuda" rules (`tilelang/backend/cuda/ops.py`);
  inside a nest, tile ops on thread-private data use the reference ("c")
  rules per thread;
* block-level (outside any nest) stores to global / shared memory, atomics and
  prints run in thread 0 only — unless they read a thread index or a value
  computed from one, or run under such control (thread-level code:
  `thread_level.py`), then in every thread that reaches them; block-level reads
  of a fragment element that not every thread holds are staged through shared memory;
* `T.use_swizzle` became `attrs["rasterize"] = (panel, order)` on the kernel (none for panel <= 0).
New nodes carry the span of the statement they replace.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import LayoutError, UnsupportedError
from ...ir import node as _node
from ...ir.buffer import Buffer
from ...ir.decisions import decisions_of, record
from ...ir.dtype import DataType, int32
from ...ir.expr import (
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    Var,
    as_expr,
    binary,
    cast,
    compare,
    const_int,
    logical_and,
    structural_equal,
)
from ...ir.function import PrimFunc
from ...ir.node import FrozenDict
from ...ir.span import NO_SPAN, Span
from ...ir.stmt import (
    Allocate,
    Atomic,
    Break,
    BufferStore,
    Continue,
    Copy,
    DeviceAssert,
    Evaluate,
    For,
    Hint,
    IfThenElse,
    KernelLaunch,
    LetStmt,
    Print,
    ReducerUpdate,
    SeqStmt,
    Stmt,
    TileOp,
    WarpSpecialize,
    While,
    flat_stmts,
    seq,
)
from ...ir.visitor import Mutator, Visitor, collect, free_vars_of, substitute
from ...layout import Fragment, Layout
from ...layout._expr import compile_map, normalize, parse_digits
from ...layout._expr import simplify as lsimplify
from ...layout._expr import substitute as lsub
from ...layout.layout import ENUM_LIMIT, prod, row_major_strides
from ...pass_config import in_force
from ...tileop.base import LowerContext, combine, op_span
from ...transform.context import CompileContext
from ...transform.infer_layout import LOOP_DEPTH, LOOP_LAYOUT, _struct_equal, perfect_nest
from ...transform.nest_access import access_perm, implied, loop_from_fragment
from ...transform.uniformity import own_jump
from ..target import wave_size
from . import thread_level
from .copy_records import copy_record
from .sink_guards import sink_guards

FRAGMENT_SCOPES = ("local.fragment", "local.reducer")
SHARED_SCOPES = ("shared", "shared.dyn")
SYNC = "tl.sync_threads"


def sync_stmt() -> Evaluate:
    return Evaluate(Call(SYNC, (), int32))


def tl_call(name: str, *args: Any, dtype: Any = int32) -> Call:
    """A call of a device function of our header library: `name` may carry template arguments."""
    from ...ir.expr import StringImm

    return Call("tl.call", (StringImm(name),) + tuple(as_expr(a) for a in args), DataType(dtype))


def address_of(buf: Buffer, idx: tuple) -> Call:
    return Call("address_of", (BufferLoad(buf, tuple(as_expr(i) for i in idx), buf.dtype),), DataType("handle"))


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# --------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------


def lower_threads(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    from . import explicit_hopper, ops  # noqa: F401 - register the "cuda" tile-op rules

    ctx = CompileContext.of(ctx)
    kernels = _Kernels(func, ctx)
    body = kernels.visit(func.body)
    if body is func.body:
        return func
    return record(func.with_body(body).with_attrs(layout_map=kernels.layouts), *kernels.records)


class _Kernels(Mutator):
    def __init__(self, func: PrimFunc, ctx: CompileContext) -> None:
        super().__init__()
        self.func = func
        self.ctx = ctx
        self.layouts: dict = dict(func.attrs.get("layout_map", {}) or {})
        self.records: list = []

    def visit_KernelLaunch(self, k: KernelLaunch) -> Stmt:
        tc = ThreadCtx(self.ctx.target, self.func, k)
        tc.vector_copies = not in_force(self.func, self.ctx).get("tirx.disable_vectorize")
        from .explicit_hopper import check_kernel

        check_kernel(tc)
        thread_level.attach(tc, k.body)  # thread indices, per-thread stores, all-reduce, shuffles
        with op_span(k.span):
            body = thread_level.finish(tc, tc.block(k.body))
            head = list(tc.head)
            inner = seq(*head, body) if head else body
            loop = For(
                tc.tx, IntImm(0), IntImm(tc.threads), "thread", inner, None, FrozenDict({"thread": "threadIdx.x"})
            )
        self.layouts.update(tc.layouts)
        self.records += tc.copy_records
        attrs = dict(k.attrs)
        attrs.update(getattr(tc, "extra_attrs", {}))  # e.g. min_blocks_per_sm (explicit_hopper.py)
        attrs["thread_var"] = tc.tx
        if tc.rasterize is not None:
            attrs["rasterize"] = tc.rasterize
        return replace(k, body=loop, attrs=FrozenDict(attrs))


# --------------------------------------------------------------------------
# Context shared with the op rules
# --------------------------------------------------------------------------


class NestInfo:
    """What the per-thread rewrite of one nest needs."""

    def __init__(self, L: Fragment, vars_: tuple, extents: tuple) -> None:
        self.L = L
        self.vars = vars_
        self.extents = extents
        self.rep: PrimExpr | None = None  # replica number of the executing thread (replicated layouts)


class ThreadCtx(LowerContext):
    """Lowering state of one kernel; the "cuda" op rules receive it as `lctx`."""

    def __init__(self, target: Any, func: PrimFunc, kernel: KernelLaunch) -> None:
        super().__init__(target if target is not None else "cuda", func)
        # the tile-op rules of this target: Metal and HIP register their own sets
        # (backend/metal/ops.py, backend/hip/ops.py), built on the CUDA rules; every other
        # thread-level target uses the CUDA rules
        kind = getattr(target, "kind", None)
        self.kind = kind if kind in ("metal", "hip") else "cuda"
        self.wave = wave_size(target)  # lanes that exchange registers by shuffles (64 on AMD)
        self.kernel = kernel
        self.threads = kernel.num_threads
        self.tx = Var("tx", int32)
        self.block_vars = kernel.block_vars
        self.layouts: dict = dict(func.attrs.get("layout_map", {}) or {})
        self.regs: dict = {}  # fragment Buffer -> register array Buffer
        self.copy_records: list = []  # CopyDecision of each global -> shared copy (copy_records.py)
        self.head: list = []  # Allocates hoisted to the top of the kernel (scratch)
        self.rasterize: tuple | None = None
        self._inv: dict = {}
        self._scratch: dict = {}
        self.stage_id = 0
        self.vector_copies = True  # False (tirx.disable_vectorize): synchronous T.copy element by element
        self.in_nest = 0
        self.tl = None  # thread_level.ThreadLevel of a kernel with thread-level code
        self._pending: list = []  # staging statements needed before the current block statement

    # -- layouts --------------------------------------------------------------------
    def fragment(self, b: Buffer) -> Fragment:
        F = self.layouts.get(b)
        if not isinstance(F, Fragment):
            raise LayoutError(f"no register layout was inferred for `{b.name}`", b.span, "run infer_layout first")
        return F

    def shared_layout(self, b: Buffer) -> Layout | None:
        return self.layouts.get(b)

    def reg(self, b: Buffer) -> Buffer:
        r = self.regs.get(b)
        if r is None:
            F = self.fragment(b)
            r = Buffer(b.name, (IntImm(F.locals_per_thread()),), b.dtype, "local", None, b.span)
            self.regs[b] = r
        return r

    def inverse(self, L: Fragment) -> tuple:
        """`(T_L, n, iter exprs of (tx, c), rep expr | None, c)` for layout L (cached)."""
        hit = self._inv.get(id(L))
        if hit is not None and hit[0] is L:
            T_L, n, iters, rep, c = hit[1]
            c2 = Var("c", int32)
            m = {c: c2}
            return (T_L, n, tuple(lsub(e, m) for e in iters), None if rep is None else lsub(rep, m), c2)
        inv = L.inverse()
        ivars = inv.get_forward_vars()
        n = L.locals_per_thread()
        T_L = L.get_thread_size()
        c = Var("c", int32)
        oshape = tuple(L.output_shape)
        m = {ivars[0]: self.tx}
        rem: PrimExpr = c
        strides = row_major_strides(oshape)
        for k, (v, st) in enumerate(zip(ivars[1:], strides)):
            x = binary("floordiv", rem, st) if st > 1 else rem
            if k > 0:
                x = binary("floormod", x, oshape[k])
            m[v] = x
        ext = {self.tx: T_L, c: n}
        exprs = [lsimplify(lsub(e, m), ext) for e in inv.index]
        nd = L.ndim
        iters = tuple(exprs[:nd])
        rep = exprs[nd] if L.replicate_size > 1 else None
        res = (T_L, n, iters, rep, c)
        self._inv[id(L)] = (L, res)
        return res

    def scratch(self, name: str, shape: tuple, dtype: Any) -> Buffer:
        """A shared buffer for this kernel's own use (allocated once at the top)."""
        key = (name, tuple(shape), str(dtype))
        b = self._scratch.get(key)
        if b is None:
            b = Buffer(name, tuple(IntImm(s) for s in shape), DataType(dtype), "shared.dyn")
            self._scratch[key] = b
            self.head.append(Allocate(b))
            self.layouts[b] = Layout(tuple(shape))
        return b

    def new_stage_buffer(self, frag: Buffer) -> Buffer:
        self.stage_id += 1
        shape = tuple(self.fragment(frag).shape)
        b = Buffer(f"{frag.name}_stage{self.stage_id}", tuple(IntImm(s) for s in shape), frag.dtype, "shared.dyn")
        self.head.append(Allocate(b))
        self.layouts[b] = Layout(shape)
        return b

    # -- block level ---------------------------------------------------------------------
    def block(self, s: Stmt | None) -> Stmt | None:
        """Lower a statement executed by every thread of the block."""
        if s is None:
            return None
        with op_span(s.span), thread_level.visiting(self, s):
            outer, self._pending = self._pending, []
            try:
                out = self._block(s)
                pending = self._pending
            finally:
                self._pending = outer
            if pending:
                out = seq(*pending, sync_stmt(), out, sync_stmt())
            return out

    def _block(self, s: Stmt) -> Stmt:
        if isinstance(s, SeqStmt):
            out = [self.block(x) for x in s.stmts]
            return seq(*[x for x in out if x is not None and not (isinstance(x, SeqStmt) and not x.stmts)])
        if isinstance(s, WarpSpecialize) or (isinstance(s, Allocate) and s.annotations.get("arrive_counts")):
            from .explicit_hopper import lower_block_stmt  # T.ws regions, T.alloc_barrier initialisation

            return lower_block_stmt(s, self)
        if isinstance(s, Allocate):
            b = s.buffer
            self.allocations[b] = s
            if b.scope in FRAGMENT_SCOPES:
                return Allocate(self.reg(b), None, s.annotations, s.span)
            if s.init is not None:
                return replace(s, init=self.block_expr(s.init))
            return s
        if isinstance(s, For):
            if s.kind == "parallel":
                return self.nest_from_loop(s)
            body = self.block(s.body)
            return replace(s, kind="serial" if s.kind == "pipelined" else s.kind, body=body,
                           start=self.block_expr(s.start), extent=self.block_expr(s.extent))  # fmt: skip
        if isinstance(s, IfThenElse):
            return IfThenElse(self.block_expr(s.cond), self.block(s.then_body), self.block(s.else_body), s.span)
        if isinstance(s, While):
            return While(self.block_expr(s.cond), self.block(s.body), s.span)
        if isinstance(s, (Break, Continue)):
            return s  # of a serial / while loop at block level: every thread takes it (inject_sync proved it uniform
            # wherever the loop holds barriers)
        if isinstance(s, LetStmt):
            return LetStmt(s.var, self.block_expr(s.value), s.span)
        if isinstance(s, Hint):
            if s.name == "use_swizzle":
                panel = int(s.args.get("panel_size", 8))
                self.rasterize = (panel, str(s.args.get("order", "row"))) if panel > 0 else None
            return seq()
        if isinstance(s, TileOp):
            from ... import tileop

            out = tileop.lower(s, self)
            if isinstance(s, Copy):  # bytes per access, for the decision record
                rec = copy_record(s, out, decisions_of(self.func))
                self.copy_records += [rec] if rec is not None else []
            return out
        if isinstance(s, BufferStore):
            b = s.buffer
            value = self.block_expr(s.value)
            idx = tuple(self.block_expr(i) for i in s.indices)
            if b.scope in FRAGMENT_SCOPES:
                return self.block_fragment_store(b, idx, value, s.span)
            st = BufferStore(b, idx, value, s.span)
            if b.scope == "global" or b.scope in SHARED_SCOPES:
                return self.only_thread0(st)
            return st
        if isinstance(s, Evaluate):
            v = self.block_expr(s.value)
            ev = Evaluate(v, s.span)
            if isinstance(v, Call) and (v.op.startswith("tl.atomic") or v.op == "tl.print"):
                return self.only_thread0(ev)
            return ev
        raise UnsupportedError(f"the CUDA backend cannot lower {type(s).__name__} here", s.span)

    def only_thread0(self, s: Stmt) -> Stmt:
        if self.tl is not None and not self.tl.one_thread():
            return s  # a per-thread statement (thread_level.py): every thread does its own
        return IfThenElse(compare("eq", self.tx, 0), s, None, s.span)

    def block_expr(self, e: Any) -> Any:
        """Rewrite fragment reads in an expression evaluated by every thread."""
        if e is None or not isinstance(e, PrimExpr):
            return e
        if self.tl is not None:
            e = self.tl.expr(e)
        loads = collect(e, lambda n: isinstance(n, BufferLoad) and n.buffer.scope in FRAGMENT_SCOPES)
        if not loads:
            return e
        mapping: dict = {}
        staged: dict = {}
        for ld in loads:
            b = ld.buffer
            F = self.fragment(b)
            idx = tuple(const_int(i) for i in ld.indices)
            if F.replicate_size >= self.threads and all(i is not None for i in idx):
                flat = _flat_local(F, idx)
                mapping[id(ld)] = BufferLoad(self.reg(b), (IntImm(flat),), b.dtype, ld.span)
                continue
            sb = staged.get(b)
            if sb is None:
                sb = staged[b] = self.new_stage_buffer(b)
                self._pending.append(self.stage_out(b, sb))
            mapping[id(ld)] = BufferLoad(sb, tuple(self.block_expr(i) for i in ld.indices), b.dtype, ld.span)
        return _ReplaceLoads(mapping).visit(e)

    def block_fragment_store(self, b: Buffer, idx: tuple, value: PrimExpr, span: Span) -> Stmt:
        F = self.fragment(b)
        ci = tuple(const_int(i) for i in idx)
        if any(i is None for i in ci):
            raise UnsupportedError(
                f"a store to fragment `{b.name}` outside T.Parallel needs constant indices", span,
                "write the fragment inside a T.Parallel loop",
            )  # fmt: skip
        holders = sorted({t for e, _, t, _ in F.placements() if tuple(e) == ci})
        st = BufferStore(self.reg(b), (IntImm(_flat_local(F, ci)),), value, span)
        if len(holders) >= self.threads:
            return st
        cond = None
        for t in holders:
            c = compare("eq", self.tx, t)
            cond = c if cond is None else cond | c
        if cond is None:
            return seq()
        return IfThenElse(cond, st, None, span)

    # -- nests ------------------------------------------------------------------------------
    def nest_from_loop(self, loop: For) -> Stmt:
        jump = own_jump(loop.body)
        if jump is not None:
            raise UnsupportedError(
                f"`{type(jump).__name__.lower()}` in a T.Parallel loop: its iterations run in different "
                "threads at once, there is no next iteration to skip to",
                jump.span if jump.span.line else loop.span,
                "use a serial loop (T.serial / range over an IR value) for a loop that breaks or continues, "
                "or guard the iteration's body with an `if`",
            )
        depth = int(loop.annotations.get(LOOP_DEPTH, 0) or 0)
        L = loop.annotations.get(LOOP_LAYOUT)
        loops, body = perfect_nest(loop)
        if depth:
            loops = loops[:depth]
            body = loops[-1].body
        extents = tuple(const_int(x.extent) for x in loops)
        if any(e is None for e in extents):
            return self.lower_dynamic_nest(loops, body, loop.span)
        if L is None:
            raise LayoutError("T.Parallel loop without a loop layout reached the CUDA lowering", loop.span,
                              "run infer_layout first")  # fmt: skip
        return self.lower_nest(tuple(x.var for x in loops), extents, body, L, loop.span)

    def lower_dynamic_nest(self, loops: tuple, body: Stmt, span: Span) -> Stmt:
        """A `T.Parallel` nest with a dynamic extent (it has no loop layout): its iterations,
        numbered row-major (last dim fastest, so neighbouring threads touch neighbouring
        elements), are dealt out round-robin — thread tx runs iterations tx, tx + threads, ...
        in a serial loop, each behind the guard `iteration < product of the extents`.
        Register fragments need static layouts and a barrier would be reached by some threads
        only, so the body may use neither."""
        for x in collect(body, lambda n: isinstance(n, (BufferLoad, BufferStore))):
            if x.buffer.scope in FRAGMENT_SCOPES:
                raise UnsupportedError(
                    f"T.Parallel over a dynamic extent cannot access the register fragment `{x.buffer.name}`",
                    span,
                    "use a compile-time extent for loops over fragments, or stage the data in shared memory",
                )
        self.in_nest += 1
        try:
            body1 = _ExpandOps(self).visit(body)
        finally:
            self.in_nest -= 1
        if collect(body1, lambda n: isinstance(n, Call) and n.op == "tl.sync_threads"):
            raise UnsupportedError("a barrier inside T.Parallel over a dynamic extent is not supported", span,
                                   "split the loop at the barrier")  # fmt: skip
        extents = [x.extent for x in loops]
        total = extents[0]
        for e in extents[1:]:
            total = binary("mul", total, e)
        it = Var("it", int32)
        flat = binary("add", binary("mul", it, self.threads), self.tx)
        index: dict = {}
        stride: Any = IntImm(1)
        for k in reversed(range(len(loops))):
            i = binary("floordiv", flat, stride) if k < len(loops) - 1 else flat
            if k > 0:
                i = binary("floormod", i, extents[k])
            index[loops[k].var] = binary("add", loops[k].start, i)
            stride = binary("mul", stride, extents[k])
        guarded = IfThenElse(compare("lt", flat, total), substitute(body1, index), None, span)
        trips = binary("floordiv", binary("add", total, self.threads - 1), self.threads)
        return For(it, IntImm(0), self.block_expr(trips), "serial", guarded, span=span)

    def lower_nest(self, vars_: tuple, extents: tuple, body: Stmt, L: Fragment, span: Span,
                   vector: int | None = None) -> Stmt:  # fmt: skip
        """Per-thread loops running `body` for every iteration of the nest `vars_` ∈ `extents`
        with loop layout L (see the module docstring)."""
        with op_span(span):
            return self._lower_nest(vars_, extents, body, L, span, vector)

    def _lower_nest(
        self, vars_: tuple, extents: tuple, body: Stmt, L: Fragment, span: Span, vector: int | None
    ) -> Stmt:
        if len(L.shape) != len(extents) or any(a < b for a, b in zip(L.shape, extents)):
            raise LayoutError(f"loop layout over {list(L.shape)} does not cover the loop {list(extents)}", span)
        T_L, n, iters, rep, c = self.inverse(L)
        if T_L > self.threads:
            raise LayoutError(f"the loop layout needs {T_L} threads but the kernel has {self.threads}", span)
        info = NestInfo(L, vars_, extents)
        self.in_nest += 1
        try:
            body1 = _ExpandOps(self).visit(body)
        finally:
            self.in_nest -= 1
        # vectorisation: the innermost v steps of c walk the last loop dim contiguously
        v = self.vector_width(body1, iters, n, c, L, vector)
        if v > 1:
            co, lane = Var("co", int32), Var("lane", int32)
            ext = {self.tx: T_L, co: n // v, lane: v}
            cexpr = binary("add", binary("mul", co, v), lane)
        else:
            co, lane = c, None
            ext = {self.tx: T_L, c: n}
            cexpr = c
        its = tuple(lsimplify(lsub(e, {c: cexpr}), ext) for e in iters)
        if rep is not None:
            info.rep = lsimplify(lsub(rep, {c: cexpr}), ext)
        decisions = self.locality(body1, info)
        prologue, epilogue = [], []
        staged: dict = {}
        for b, ok in decisions.items():
            if ok:
                continue
            sb = self.new_stage_buffer(b)
            staged[b] = sb
            prologue.append(self.stage_out(b, sb))
        if staged:
            prologue.append(sync_stmt())
            epilogue.append(sync_stmt())
        body2 = substitute(body1, dict(zip(vars_, its)))
        body3 = _NestRewriter(self, info, ext, staged).visit(body2)
        guard = None
        for e, lim, full in zip(its, extents, L.shape):
            if full > lim:
                g = compare("lt", e, lim)
                guard = g if guard is None else logical_and(guard, g)
        outer = compare("lt", self.tx, T_L) if T_L < self.threads else None
        if guard is None and outer is None:
            body3 = _uniform_syncs(body3, self)
        elif v == 1 and _has_uniform_shared_loop(body3, self.tx):
            # every thread must reach the per-trip barriers of such a loop: the guards go
            # around the loop's statements instead of around the loop (sink_guards.py)
            cond = guard if outer is None else (outer if guard is None else logical_and(outer, guard))
            sunk = sink_guards(body3, cond, self.tx)
            if sunk is not None:
                body3, guard, outer = _uniform_syncs(sunk, self), None, None
        if guard is not None:
            body3 = IfThenElse(guard, body3, None, span)
        if v > 1:
            inner = For(lane, IntImm(0), IntImm(v), "vectorized", body3)
            loop = For(co, IntImm(0), IntImm(n // v), "unrolled", inner)
        else:
            loop = For(c, IntImm(0), IntImm(n), "unrolled", body3) if n > 1 else substitute(body3, {c: IntImm(0)})
        if outer is not None:
            loop = IfThenElse(outer, loop, None, span)
        return seq(*prologue, loop, *epilogue)

    def vector_width(self, body: Stmt, iters: tuple, n: int, c: Var, L: Fragment, forced: int | None) -> int:
        widest = 0
        for x in collect(body, lambda x: isinstance(x, (BufferLoad, BufferStore))):
            if x.buffer.scope == "global" or x.buffer.scope in SHARED_SCOPES:
                widest = max(widest, x.buffer.dtype.bytes)
        if widest == 0 and not forced:
            return 1
        cap = forced if forced else max(1, 16 // widest)
        v = cap
        while v > 1:
            if n % v == 0 and self.contiguous(iters, c, v, L):
                return v
            v //= 2
        return 1

    def contiguous(self, iters: tuple, c: Var, v: int, L: Fragment) -> bool:
        co, lane = Var("co"), Var("lane")
        T_L = L.get_thread_size()
        n = L.locals_per_thread()
        ext = {self.tx: T_L, co: n // v, lane: v}
        ce = binary("add", binary("mul", co, v), lane)
        for k, e in enumerate(iters):
            full = lsimplify(lsub(e, {c: ce}), ext)
            base = lsimplify(lsub(e, {c: binary("mul", co, v)}), ext)
            if k == len(iters) - 1:
                if not structural_equal(lsimplify(binary("add", base, lane), ext), full):
                    return False
                # the run must start at a multiple of v (aligned vectors)
                dg = parse_digits(base, ext, atoms=False)
                if dg is None or normalize(dg).const % v or any(f.coef % v for f in normalize(dg).fields):
                    return False
            elif any(x is lane for x in free_vars_of(full)):
                return False
        return True

    # -- locality of fragment accesses -------------------------------------------------------
    def locality(self, body: Stmt, info: NestInfo) -> dict:
        """Fragment Buffer -> True (every access is held by the executing thread) / False."""
        out: dict = {}
        writes: dict = {}
        for acc in _fragment_accesses(body):
            b, idx, is_write = acc
            ok = out.get(b, True) and self.is_local(b, idx, info)
            out[b] = ok
            if is_write:
                writes.setdefault(b, []).append(idx)
        for b, ok in out.items():
            if not ok and b in writes:
                raise LayoutError(
                    f"a T.Parallel loop writes elements of fragment `{b.name}` that the executing threads do not hold",
                    self.kernel.span if not b.span.line else b.span,
                    "index the fragment by the loop variables in the layout its producer (e.g. a T.gemm) gives it",
                )
        return out

    def is_local(self, b: Buffer, idx: tuple, info: NestInfo) -> bool:
        F = self.fragment(b)
        L = info.L
        shape = tuple(const_int(d) for d in b.shape)
        perm = access_perm(idx, info.vars, info.extents, shape)
        if perm is not None:
            derived = loop_from_fragment(F, perm, info.extents)
            if derived is not None and _struct_equal(derived, L):
                return True
        imp = implied(L, idx, info.vars, info.extents, tuple(F.shape))
        if imp is not None and _struct_equal(imp, F):
            return True
        if any(not any(v is w for w in info.vars) for i in idx for v in free_vars_of(i)):
            return False
        if prod(L.shape) * L.replicate_size > ENUM_LIMIT:
            return False
        fn = compile_map(info.vars, tuple(idx))
        holders: dict = {}
        for e, _, t, _ in F.placements():
            holders.setdefault(tuple(e), set()).add(t)
        for it, _, t, _ in L.placements():
            if any(x >= m for x, m in zip(it, info.extents)):
                continue
            e = tuple(fn(*it))
            h = holders.get(e)
            if h is None:
                continue  # outside the tile (legalisation keeps it out of memory)
            if t not in h:
                return False
        return True

    def stage_out(self, frag: Buffer, sb: Buffer) -> Stmt:
        """Every thread writes the fragment elements it holds into the shared copy `sb`."""
        F = self.fragment(frag)
        T_L, n, iters, rep, c = self.inverse(F)
        reg = self.reg(frag)
        st: Stmt = BufferStore(sb, iters, BufferLoad(reg, (c,), frag.dtype))
        shape = tuple(const_int(d) for d in frag.shape)
        guard = None
        for e, lim, full in zip(iters, shape, F.shape):
            if full > lim:
                g = compare("lt", e, lim)
                guard = g if guard is None else logical_and(guard, g)
        if rep is not None:
            g = compare("eq", rep, 0)
            guard = g if guard is None else logical_and(guard, g)
        if guard is not None:
            st = IfThenElse(guard, st, None)
        loop = For(c, IntImm(0), IntImm(n), "unrolled", st)
        if T_L < self.threads:
            loop = IfThenElse(compare("lt", self.tx, T_L), loop, None)
        return loop

    # -- register helpers used by the op rules -----------------------------------------------
    def reg_index(self, b: Buffer, idx: tuple, ext: dict) -> PrimExpr:
        F = self.fragment(b)
        m = dict(zip(F.get_forward_vars(), idx))
        flat: PrimExpr = IntImm(0)
        for e, st in zip(F.index, row_major_strides(tuple(F.output_shape))):
            flat = binary("add", flat, binary("mul", lsub(e, m), st))
        return lsimplify(flat, ext)


def _flat_local(F: Fragment, idx: tuple) -> int:
    loc = F._eval_fn()(*idx)
    return sum(v * s for v, s in zip(loc, row_major_strides(tuple(F.output_shape))))


class _ReplaceLoads(Mutator):
    def __init__(self, mapping: dict) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        hit = self.mapping.get(id(n))
        return hit if hit is not None else self.generic_visit(n)


def _fragment_accesses(body: Any) -> list:
    out: list = []

    class _V(Visitor):
        def visit_BufferLoad(self, n: BufferLoad) -> None:
            if n.buffer.scope in FRAGMENT_SCOPES:
                out.append((n.buffer, n.indices, False))
            self.visit(n.indices)

        def visit_BufferStore(self, n: BufferStore) -> None:
            if n.buffer.scope in FRAGMENT_SCOPES:
                out.append((n.buffer, n.indices, True))
            self.visit(n.indices)
            self.visit(n.value)

    _V().visit(body)
    return out


class _ExpandOps(Mutator):
    """Inside a nest: tile ops become per-thread code (before substitution)."""

    def __init__(self, tc: ThreadCtx) -> None:
        super().__init__()
        self.tc = tc

    def visit(self, node: Any) -> Any:
        if isinstance(node, TileOp):
            return self.visit(self.tc.thread_op(node))
        return super().visit(node)

    def visit_For(self, n: For) -> Any:
        body = self.visit(n.body)
        kind = "serial" if n.kind in ("parallel", "pipelined", "vectorized") else n.kind
        if body is n.body and kind == n.kind:
            return n
        return replace(n, body=body, kind=kind)


class _NestRewriter(Mutator):
    """Per-thread rewrite of a nest body: fragments → registers / staged copies;
    side effects of replicated layouts only in replica 0."""

    def __init__(self, tc: ThreadCtx, info: NestInfo, ext: dict, staged: dict) -> None:
        super().__init__()
        self.tc = tc
        self.info = info
        self.ext = dict(ext)
        self.staged = staged

    def visit_For(self, n: For) -> Any:
        e = const_int(n.extent)
        s = const_int(n.start)
        if e is not None and s == 0 and (n.step is None or const_int(n.step) == 1):
            self.ext[n.var] = e
        out = self.generic_visit(n)
        self.ext.pop(n.var, None)
        return out

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        idx = tuple(self.visit(i) for i in n.indices)
        b = n.buffer
        if b.scope in FRAGMENT_SCOPES:
            sb = self.staged.get(b)
            if sb is not None:
                return BufferLoad(sb, idx, b.dtype, n.span)
            return BufferLoad(self.tc.reg(b), (self.tc.reg_index(b, idx, self.ext),), b.dtype, n.span)
        return n if all(a is b2 for a, b2 in zip(idx, n.indices)) else replace(n, indices=idx)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        idx = tuple(self.visit(i) for i in n.indices)
        value = self.visit(n.value)
        b = n.buffer
        if b.scope in FRAGMENT_SCOPES:
            st = BufferStore(self.tc.reg(b), (self.tc.reg_index(b, idx, self.ext),), value, n.span)
            if b.scope == "local.reducer" and self.info.rep is not None:
                # replicas of a replicated loop run the same iterations: only one may contribute
                return IfThenElse(compare("eq", self.info.rep, 0), st, None, n.span)
            return st
        st = BufferStore(b, idx, value, n.span)
        if self.info.rep is not None and (b.scope == "global" or b.scope in SHARED_SCOPES):
            return IfThenElse(compare("eq", self.info.rep, 0), st, None, n.span)
        return st

    def visit_Evaluate(self, n: Evaluate) -> Any:
        v = self.visit(n.value)
        ev = n if v is n.value else Evaluate(v, n.span)
        if self.info.rep is not None and isinstance(v, Call) and (v.op.startswith("tl.atomic") or v.op == "tl.print"):
            return IfThenElse(compare("eq", self.info.rep, 0), ev, None, n.span)
        return ev


def _uniform_syncs(body: Stmt, tc: ThreadCtx) -> Stmt:
    """Serial loops inside a nest that write shared memory at thread-independent
    places (every thread stores the same values, e.g. a shared vector all
    iterations read) get a barrier at the start of each trip, so one thread's
    next trip cannot overwrite what another thread still reads."""

    class _S(Mutator):
        def visit_IfThenElse(self, n: IfThenElse) -> Any:
            return n  # a thread-dependent branch: a barrier inside it would deadlock

        def visit_For(self, n: For) -> Any:
            if n.kind == "serial" and _writes_shared_uniformly(n.body, tc.tx):
                jump = own_jump(n.body)
                if jump is not None:  # its trips may differ between threads: no barrier fits
                    raise UnsupportedError(
                        "a serial loop inside T.Parallel that writes shared memory at the same place in every "
                        f"thread needs a barrier in each trip, but its `{type(jump).__name__.lower()}` may end "
                        "trips differently in different threads",
                        jump.span if jump.span.line else n.span,
                        "move the loop out of the T.Parallel loop, or write shared memory per thread",
                    )
                return replace(n, body=seq(sync_stmt(), *_settled(n.body, tc.tx)))
            return self.generic_visit(n)

    return _S().visit(body)


def _settled(body: Stmt, tx: Var) -> list:
    """The statements of a trip, with a barrier after each one that stores shared memory at
    thread-independent places when a later one of the trip touches shared memory: every thread
    stores the same values there, and no thread may read them while another still stores them
    (harmless for the values, but a race for the memory model and compute-sanitizer)."""
    stmts, out = flat_stmts(body), []
    for k, st in enumerate(stmts):
        out.append(st)
        rest = stmts[k + 1 :]
        if rest and _writes_shared_uniformly(st, tx) and _touches_shared(rest):
            out.append(sync_stmt())
    return out


def _touches_shared(stmts: list) -> bool:
    return bool(collect(stmts, lambda x: isinstance(x, (BufferLoad, BufferStore)) and x.buffer.scope in SHARED_SCOPES))


def _has_uniform_shared_loop(body: Stmt, tx: Var) -> bool:
    """Some serial loop in `body` writes shared memory at thread-independent places."""
    return any(
        _writes_shared_uniformly(n.body, tx) for n in collect(body, lambda x: isinstance(x, For) and x.kind == "serial")
    )


def _writes_shared_uniformly(body: Stmt, tx: Var) -> bool:
    """Some shared store inside `body` does not depend on the thread."""
    for st in collect(body, lambda x: isinstance(x, BufferStore) and x.buffer.scope in SHARED_SCOPES):
        if not any(v is tx for i in st.indices for v in free_vars_of(i)):
            return True
    return False


# --------------------------------------------------------------------------
# Per-thread tile ops (inside nests)
# --------------------------------------------------------------------------


def _thread_op(self: ThreadCtx, op: TileOp) -> Stmt:
    from ... import tileop
    from . import ops

    with op_span(op.span):
        if isinstance(op, ReducerUpdate):
            buf = op.reducer
            return BufferStore(
                buf, op.indices, combine(self.reducer_op(buf), BufferLoad(buf, op.indices, buf.dtype), op.value)
            )
        if isinstance(op, Atomic):
            return ops.atomic_elementwise(op, self)
        if isinstance(op, (Print, DeviceAssert)):
            return ops.debug_in_thread(op, self)
        for r in _regions_of(op):
            if r.buffer.scope in SHARED_SCOPES or r.buffer.scope in FRAGMENT_SCOPES:
                if r.buffer.scope in FRAGMENT_SCOPES or not _scalar_region(r):
                    raise UnsupportedError(
                        f"{tileop.base.op_name(op)} on `{r.buffer.name}` ({r.buffer.scope}) inside T.Parallel is not "
                        "supported on CUDA",
                        op.span,
                        "move the tile operation out of the T.Parallel loop",
                    )
        lc = LowerContext("c", self.func)
        lc.allocations = self.allocations
        return tileop.lower(op, lc)


ThreadCtx.thread_op = _thread_op  # type: ignore[attr-defined]


def _regions_of(op: Any) -> list:
    from ...ir.buffer import BufferRegion

    out = []
    for f in ("src", "dst", "A", "B", "C", "value"):
        r = getattr(op, f, None)
        if isinstance(r, BufferRegion):
            out.append(r)
    return out


def _scalar_region(r: Any) -> bool:
    return all(const_int(x.extent) == 1 for x in r.region)


# silence "imported but unused" for names re-exported to ops.py
_ = (cast, DataType, NO_SPAN, _node)
