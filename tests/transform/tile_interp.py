"""A tiny reference interpreter of tile-level IR, for testing scheduling passes.

It executes a PrimFunc block by block (blocks in sequence) with torch tensors:
tile ops as whole-tile tensor operations, `T.Parallel` nests vectorised over
index grids. What makes it useful for `inject_pipeline` / `inject_sync` is
that it models what the block's threads could observe:

* asynchronous copies (`Copy` annotated `async=True`) join the current
  cp.async group; `tl.cp_async_commit` closes the group and
  `tl.cp_async_wait(N)` lands every committed group but the newest N. Until a
  copy lands its destination elements are *in flight*: touching them is an
  error, and so is finishing the kernel with copies in flight;
* a data-race detector at element granularity: each execution of a tile-level
  statement is one "instance" (run by many threads), `tl.sync_threads` starts
  a new epoch, and two different instances touching one shared element in the
  same epoch, at least one writing, is a race (RAW, WAR, WAW). An async copy
  writes when it lands (at the wait), and must not follow unsynchronised reads;
* shared and fragment buffers start as NaN, so reading a stage slot before
  it was filled poisons the result.

Global accesses out of bounds read 0 and drop writes (what the lowering's
guards do). `race_check=False` runs programs without barriers (the input of
`inject_sync`) for reference results.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from tilelang.ir import (
    Allocate,
    And,
    Atomic,
    BinaryOp,
    Broadcast,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    Compare,
    Copy,
    Evaluate,
    Fill,
    FloatImm,
    For,
    Gemm,
    IfThenElse,
    IntImm,
    KernelLaunch,
    LetStmt,
    Not,
    Or,
    Reduce,
    Select,
    SeqStmt,
    Var,
)


class InterpError(AssertionError):
    pass


class RaceError(InterpError):
    pass


def _tdt(dtype) -> torch.dtype:
    return dtype.as_torch()


def _is_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


def _t(x: Any) -> torch.Tensor:
    return x if _is_tensor(x) else torch.tensor(x)


_UNARY = {
    "exp": torch.exp,
    "exp2": torch.exp2,
    "log": torch.log,
    "log2": torch.log2,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "abs": torch.abs,
}


class _Shared:
    """Race / in-flight bookkeeping of one shared buffer."""

    def __init__(self, shape: tuple) -> None:
        z = lambda v: torch.full(shape, v, dtype=torch.int64)  # noqa: E731
        self.wep, self.wid, self.rep, self.rid, self.rmulti, self.pend = z(-1), z(-1), z(-1), z(-1), z(0), z(-1)


class Interp:
    def __init__(self, func, race_check: bool = True) -> None:
        self.func = func
        self.race_check = race_check
        self.stats = {"syncs": 0, "async_copies": 0, "waits": 0, "races_checked": 0}

    # ------------------------------------------------------------------ run
    def run(self, *tensors: torch.Tensor) -> None:
        f = self.func
        bufs = f.buffer_params
        if len(bufs) != len(tensors):
            raise InterpError(f"expected {len(bufs)} tensors, got {len(tensors)}")
        self.env: dict = {}
        self.mem: dict = {}
        for b, t in zip(bufs, tensors):
            self.mem[b] = t
            for d, n in zip(b.shape, t.shape):
                if isinstance(d, Var):
                    self.env[d] = int(n)
        self.exec(f.body)

    # ----------------------------------------------------------- statements
    def exec(self, s) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise InterpError(f"interpreter: unsupported statement {type(s).__name__}")
        m(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        for x in s.stmts:
            self.exec(x)

    def s_KernelLaunch(self, s: KernelLaunch) -> None:
        grid = [int(self.ev(g)) for g in s.grid]
        import itertools

        for idx in itertools.product(*[range(g) for g in reversed(grid)]):
            for v, i in zip(s.block_vars, reversed(idx)):
                self.env[v] = i
            self.shared: dict = {}
            self.epoch = 0
            self.instance = 0
            self.groups: list = []  # committed groups: lists of pending copies
            self.open_group: list = []
            self.exec(s.body)
            pending = sum(len(g) for g in self.groups) + len(self.open_group)
            if pending:
                raise InterpError(f"{pending} async copies still in flight at the end of the kernel")

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        shape = tuple(int(self.ev(d)) for d in b.shape)
        dt = _tdt(b.dtype)
        fill = float("nan") if dt.is_floating_point else 0
        self.mem[b] = torch.full(shape, fill, dtype=dt)
        if s.init is not None:
            self.mem[b].fill_(self.ev(s.init))
        if b.scope in ("shared", "shared.dyn"):
            self.shared[b] = _Shared(shape)

    def s_LetStmt(self, s: LetStmt) -> None:
        self.env[s.var] = self.ev(s.value)

    def s_For(self, s: For) -> None:
        if s.kind == "parallel":
            self.instance += 1
            self.parallel(s)
            return
        start, n = self.ev(s.start), self.ev(s.extent)
        step = 1 if s.step is None else self.ev(s.step)
        for k in range(int(n)):
            self.env[s.var] = start + k * step
            self.exec(s.body)

    def s_IfThenElse(self, s: IfThenElse) -> None:
        c = self.ev(s.cond)
        if _is_tensor(c):
            raise InterpError("tile-level `if` with a per-element condition outside T.Parallel")
        if c:
            self.exec(s.then_body)
        elif s.else_body is not None:
            self.exec(s.else_body)

    def s_Evaluate(self, s: Evaluate) -> None:
        v = s.value
        if isinstance(v, Call) and v.op == "tl.sync_threads":
            self.epoch += 1
            self.stats["syncs"] += 1
        elif isinstance(v, Call) and v.op == "tl.cp_async_commit":
            self.groups.append(self.open_group)
            self.open_group = []
        elif isinstance(v, Call) and v.op == "tl.cp_async_wait":
            keep = int(self.ev(v.args[0]))
            self.stats["waits"] += 1
            while len(self.groups) > keep:
                for rec in self.groups.pop(0):  # FIFO: the oldest group lands first
                    self.land(rec)
        elif isinstance(v, Call) and v.op == "tl.call" and str(v.args[0].value).startswith("tl::tma_store_wait"):
            pass  # stores are synchronous here: nothing is left to wait for
        else:
            self.ev(v)

    def s_BufferStore(self, s: BufferStore) -> None:
        self.instance += 1
        self.store(s.buffer, [self.ev(i) for i in s.indices], self.ev(s.value), None)

    def s_AnnotateLayout(self, s) -> None:
        pass

    def s_Hint(self, s) -> None:
        pass

    def s_Print(self, s) -> None:
        pass

    # -------------------------------------------------------------- tile ops
    def s_Fill(self, s: Fill) -> None:
        self.instance += 1
        idx, shape = self.region(s.dst)
        self.store(s.dst.buffer, idx, torch.full(shape, float(self.ev(s.value))), None, shape)

    def s_Copy(self, s: Copy) -> None:
        self.instance += 1
        src_idx, src_shape = self.region(s.src)
        dst_idx, dst_shape = self.region(s.dst)
        data = self.load(s.src.buffer, src_idx, src_shape)
        data = data.reshape(dst_shape) if data.numel() == math.prod(dst_shape) else data
        if s.annotations.get("async"):
            self.issue_async(s, dst_idx, dst_shape, data)
        else:
            self.store(s.dst.buffer, dst_idx, data, None, dst_shape)

    def s_Gemm(self, s: Gemm) -> None:
        self.instance += 1

        def mat(r):
            idx, shape = self.region(r)
            t = self.load(r.buffer, idx, shape)
            return t.reshape([d for d in shape if d != 1] or [1]), idx, shape

        a, _, _ = mat(s.A)
        b, _, _ = mat(s.B)
        c, cidx, cshape = mat(s.C)
        a = a.float().T if s.transpose_A else a.float()
        b = b.float().T if s.transpose_B else b.float()
        acc = a @ b
        if not s.clear_accum:
            acc = acc + c.float()
        self.store(s.C.buffer, cidx, acc.reshape(cshape), None, cshape)

    def s_Reduce(self, s: Reduce) -> None:
        self.instance += 1
        sidx, sshape = self.region(s.src)
        x = self.load(s.src.buffer, sidx, sshape).double()
        didx, dshape = self.region(s.dst)
        k = s.kind
        if k == "sum":
            r = x.sum(s.dim)
        elif k == "max":
            r = x.amax(s.dim)
        elif k == "min":
            r = x.amin(s.dim)
        elif k == "absmax":
            r = x.abs().amax(s.dim)
        elif k == "abssum":
            r = x.abs().sum(s.dim)
        else:
            raise InterpError(f"reduce kind {k}")
        r = r.reshape(dshape)
        if not s.clear:
            old = self.load(s.dst.buffer, didx, dshape).double()
            r = {
                "sum": old + r,
                "abssum": old + r,
                "max": torch.maximum(old, r),
                "absmax": torch.maximum(old, r),
                "min": torch.minimum(old, r),
            }[k]
        self.store(s.dst.buffer, didx, r, None, dshape)

    def s_Atomic(self, s: Atomic, mask=None) -> None:
        if mask is None:
            self.instance += 1
        idx, shape = self.region(s.dst)
        val = self.ev(s.value) if not hasattr(s.value, "region") else self.load(s.value.buffer, *self.region(s.value))
        buf = s.dst.buffer
        if s.kind != "add":
            raise InterpError("only atomic_add is modelled")
        t = self.mem[buf]
        full = torch.broadcast_shapes(
            *[_t(i).shape for i in idx], _t(val).shape, *(() if mask is None else (mask.shape,))
        )
        ii = [_t(i).expand(full).reshape(-1) for i in idx]
        vv = _t(val).to(t.dtype).expand(full).reshape(-1)
        ok = self.in_bounds(buf, ii)
        if mask is not None:
            ok = ok & mask.expand(full).reshape(-1)
        t.index_put_(tuple(i[ok] for i in ii), vv[ok], accumulate=True)

    # -------------------------------------------------------------- parallel
    def parallel(self, s: For) -> None:
        loops = [s]
        body = s.body
        while isinstance(body, For) and body.kind == "parallel":
            loops.append(body)
            body = body.body
        n = len(loops)
        for d, lp in enumerate(loops):
            ext = int(self.ev(lp.extent))
            shape = [1] * n
            shape[d] = ext
            self.env[lp.var] = (self.ev(lp.start) + torch.arange(ext)).reshape(shape)
        self.vexec(body, None)

    def vexec(self, s, mask) -> None:
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.vexec(x, mask)
        elif isinstance(s, BufferStore):
            self.store(s.buffer, [self.ev(i) for i in s.indices], self.ev(s.value), mask)
        elif isinstance(s, LetStmt):
            self.env[s.var] = self.ev(s.value)
        elif isinstance(s, IfThenElse):
            c = _t(self.ev(s.cond)).bool()
            self.vexec(s.then_body, c if mask is None else mask & c)
            if s.else_body is not None:
                self.vexec(s.else_body, ~c if mask is None else mask & ~c)
        elif isinstance(s, For) and s.kind != "parallel":
            for k in range(int(self.ev(s.extent))):
                self.env[s.var] = self.ev(s.start) + k
                self.vexec(s.body, mask)
        elif isinstance(s, Atomic):
            self.s_Atomic(s, mask if mask is not None else torch.tensor(True))
        elif isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == "tl.sync_threads":
            raise InterpError("a barrier inside a T.Parallel loop")
        else:
            raise InterpError(f"interpreter: unsupported statement in T.Parallel: {type(s).__name__}")

    # ---------------------------------------------------------------- memory
    def region(self, r) -> tuple:
        """Index tensors (broadcast over the region's non-unit extents) and that shape."""
        exts = [int(self.ev(g.extent)) for g in r.region]
        shape = tuple(e for e in exts if e != 1)
        idx = []
        axis = 0
        for g, e in zip(r.region, exts):
            b = self.ev(g.begin)
            if e == 1:
                idx.append(b)
            else:
                if _is_tensor(b):
                    raise InterpError("per-element region begin with a non-unit extent")
                view = [1] * len(shape)
                view[axis] = e
                idx.append(b + torch.arange(e).reshape(view))
                axis += 1
        return idx, shape

    def in_bounds(self, buf, idx: list) -> torch.Tensor:
        t = self.mem[buf]
        ok = torch.tensor(True)
        for i, n in zip(idx, t.shape):
            ok = ok & (_t(i) >= 0) & (_t(i) < n)
        return ok

    def _grid(self, idx: list, extra: list) -> tuple:
        full = torch.broadcast_shapes(*[_t(i).shape for i in idx], *[x.shape for x in extra])
        return [_t(i).expand(full) for i in idx], full

    def load(self, buf, idx: list, shape: tuple | None = None) -> torch.Tensor:
        t = self.mem.get(buf)
        if t is None:
            raise InterpError(f"buffer {buf.name} used outside its allocation")
        ii, full = self._grid(idx, [])
        if buf.scope == "global":
            ok = self.in_bounds(buf, ii).expand(full)
            clamped = [torch.clamp(i, 0, n - 1) for i, n in zip(ii, t.shape)]
            v = t[tuple(clamped)]
            return torch.where(ok, v, torch.zeros((), dtype=t.dtype))
        if not bool(self.in_bounds(buf, ii).all()):
            raise InterpError(f"out-of-bounds read of {buf.name}")
        if buf in self.shared:
            self.track(buf, ii, None, write=False)
        return t[tuple(ii)]

    def store(self, buf, idx: list, value: Any, mask, shape: tuple | None = None) -> None:
        t = self.mem.get(buf)
        if t is None:
            raise InterpError(f"buffer {buf.name} used outside its allocation")
        val = _t(value)
        extra = [val] + ([mask] if mask is not None else [])
        ii, full = self._grid(idx, extra)
        val = val.to(t.dtype).expand(full)
        ok = torch.ones(full, dtype=torch.bool) if mask is None else mask.expand(full)
        if buf.scope == "global":
            ok = ok & self.in_bounds(buf, ii).expand(full)
        elif not bool(self.in_bounds(buf, [i[ok] for i in ii]).all()):
            raise InterpError(f"out-of-bounds write of {buf.name}")
        sel = tuple(i[ok] for i in ii)
        if buf in self.shared:
            self.track(buf, list(sel), None, write=True)
        t[sel] = val[ok]

    # -------------------------------------------------------- race tracking
    def track(self, buf, idx: list, _unused, write: bool, who: int | None = None, check_only: bool = False) -> None:
        sh: _Shared = self.shared[buf]
        me = self.instance if who is None else who
        sel = tuple(i.reshape(-1) if _is_tensor(i) else torch.tensor([i]) for i in idx)
        n = max(x.numel() for x in sel) if sel else 1
        sel = tuple(x.expand(n) if x.numel() == 1 else x for x in sel)
        if bool((sh.pend[sel] >= 0).any()):
            raise RaceError(
                f"{'write to' if write else 'read of'} `{buf.name}` while an async copy into it is in flight"
            )
        if not self.race_check:
            return
        self.stats["races_checked"] += 1
        ep = self.epoch
        raw_or_waw = (sh.wep[sel] == ep) & (sh.wid[sel] != me)
        if bool(raw_or_waw.any()):
            kind = "write after write" if write else "read after write"
            raise RaceError(f"{kind} on `{buf.name}` without a barrier in between")
        if write:
            war = (sh.rep[sel] == ep) & ((sh.rid[sel] != me) | (sh.rmulti[sel] != 0))
            if bool(war.any()):
                raise RaceError(f"write after read on `{buf.name}` without a barrier in between")
            if not check_only:
                sh.wep[sel] = ep
                sh.wid[sel] = me
        else:
            multi = ((sh.rep[sel] == ep) & ((sh.rid[sel] != me) | (sh.rmulti[sel] != 0))).long()
            sh.rmulti[sel] = multi
            sh.rep[sel] = ep
            sh.rid[sel] = me

    def issue_async(self, s: Copy, idx: list, shape: tuple, data: torch.Tensor) -> None:
        buf = s.dst.buffer
        if buf.scope not in ("shared", "shared.dyn") or s.src.buffer.scope != "global":
            raise InterpError("async copies must go from global to shared memory")
        self.stats["async_copies"] += 1
        ii, full = self._grid(idx, [data])
        sel = tuple(i.reshape(-1) for i in ii)
        self.track(buf, list(sel), None, write=True, check_only=True)  # WAR / WAW at issue
        self.shared[buf].pend[sel] = 1
        self.open_group.append((buf, sel, data.expand(full).reshape(-1).to(self.mem[buf].dtype), self.instance))

    def land(self, rec) -> None:
        buf, sel, vals, who = rec
        sh = self.shared[buf]
        sh.pend[sel] = -1
        self.track(buf, list(sel), None, write=True, who=who)
        self.mem[buf][sel] = vals

    # ----------------------------------------------------------- expressions
    def ev(self, e: Any) -> Any:
        if isinstance(e, IntImm):
            return bool(e.value) if e.dtype.is_bool else e.value
        if isinstance(e, FloatImm):
            return e.value
        if isinstance(e, Var):
            try:
                return self.env[e]
            except KeyError:
                raise InterpError(f"unbound variable {e.name}") from None
        if isinstance(e, BinaryOp):
            return self.binop(e)
        if isinstance(e, Compare):
            a, b = self.ev(e.a), self.ev(e.b)
            return {
                "eq": lambda: a == b,
                "ne": lambda: a != b,
                "lt": lambda: a < b,
                "le": lambda: a <= b,
                "gt": lambda: a > b,
                "ge": lambda: a >= b,
            }[e.op]()
        if isinstance(e, And):
            a, b = self.ev(e.a), self.ev(e.b)
            return (_t(a) & _t(b)) if _is_tensor(a) or _is_tensor(b) else (a and b)
        if isinstance(e, Or):
            a, b = self.ev(e.a), self.ev(e.b)
            return (_t(a) | _t(b)) if _is_tensor(a) or _is_tensor(b) else (a or b)
        if isinstance(e, Not):
            a = self.ev(e.a)
            return ~_t(a).bool() if _is_tensor(a) else not a
        if isinstance(e, Cast):
            v = self.ev(e.value)
            dt = e.dtype
            if _is_tensor(v):
                if dt.is_integer:
                    return (v.trunc() if v.dtype.is_floating_point else v).to(torch.int64)
                return v.to(_tdt(dt))
            if dt.is_integer:
                return int(v)
            if dt.is_bool:
                return bool(v)
            return float(torch.tensor(float(v)).to(_tdt(dt)).item())
        if isinstance(e, Select):
            c, t, f = self.ev(e.cond), self.ev(e.true_value), self.ev(e.false_value)
            if any(_is_tensor(x) for x in (c, t, f)):
                return torch.where(_t(c).bool(), _t(t), _t(f))
            return t if c else f
        if isinstance(e, Call):
            args = [self.ev(a) for a in e.args]
            if e.op in _UNARY:
                return _UNARY[e.op](_t(args[0]).float() if not _is_tensor(args[0]) else args[0])
            if e.op == "pow":
                return _t(args[0]) ** _t(args[1])
            raise InterpError(f"interpreter: unsupported call {e.op}")
        if isinstance(e, BufferLoad):
            return self.load(e.buffer, [self.ev(i) for i in e.indices])
        if isinstance(e, Broadcast):
            return self.ev(e.value)
        raise InterpError(f"interpreter: unsupported expression {type(e).__name__}")

    def binop(self, e: BinaryOp) -> Any:
        a, b = self.ev(e.a), self.ev(e.b)
        op = e.op
        tens = _is_tensor(a) or _is_tensor(b)
        integer = e.dtype.is_integer
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            if integer:
                return torch.div(_t(a), _t(b), rounding_mode="trunc") if tens else int(a / b) if b else 0
            return a / b
        if op == "floordiv":
            return a // b
        if op == "floormod":
            return a % b
        if op in ("min", "max"):
            if tens:
                fn = torch.minimum if op == "min" else torch.maximum
                ta, tb = _t(a), _t(b)
                dt = torch.promote_types(ta.dtype, tb.dtype)
                return fn(ta.to(dt), tb.to(dt))
            return min(a, b) if op == "min" else max(a, b)
        if op == "bitand":
            return a & b
        if op == "bitor":
            return a | b
        if op == "bitxor":
            return a ^ b
        if op == "shl":
            return a << b
        if op == "shr":
            return a >> b
        raise InterpError(f"binary op {op}")


def run(func, *tensors, race_check: bool = True) -> dict:
    """Execute `func` on `tensors` (outputs are written in place); returns statistics."""
    it = Interp(func, race_check)
    it.run(*tensors)
    return it.stats


__all__ = ["Interp", "InterpError", "RaceError", "run"]
