"""widen_indices: index arithmetic that can reach 2^31 is computed in 64 bits.

Requires: a lowered PrimFunc (no tile ops, one `KernelLaunch`), after the target's last
`simplify` (a later rewrite could re-associate widened arithmetic back into 32 bits).
`ctx.target` names the target ("c" or a CUDA target), for the grid limits.

Guarantees: an equivalent PrimFunc (the input is never modified) in which no 32-bit integer
*index* operation can overflow:

- every variable gets the interval it ranges over: a block index `[0, grid - 1]`, a loop
  variable its loop's range, a let variable its value's, a scalar parameter its dtype's, a
  dynamic dimension `[0, 2^63 - 1]` when declared int64 and `[0, L]` when declared int32,
  where `L` is the launch limit below;
- an int32 `+ - * min max // %` whose operands are index values (no loads or calls below it)
  and whose interval leaves int32 is rebuilt in int64: its largest sub-trees that cannot
  overflow are cast to int64 (their arithmetic stays 32-bit), the rest is int64 arithmetic;
  expressions over a widened value follow it into int64 (ordinary promotion); a let or loop
  variable whose value becomes int64 becomes an int64 variable, and so does a block index
  whose grid can exceed int32;
- an index of a global buffer dimension whose extent can reach 2^31 (static, or an int64
  dynamic dimension) that reads memory (a gather: `A[idx[i] * n + j]`) is computed in int64;
- (flattening a multi-dimensional index into one offset is the code generators' job: they
  already multiply in 64 bits when the product of a buffer's extents can reach 2^31.)

Why an `L`: a dynamic dimension declared int32 (the default of `T.dynamic`) keeps 32-bit index
arithmetic, which is what fast kernels want; the price is a check at launch. The pass picks
the largest `L` of 2^31 - 1, 2^31 - 2^20 and 2^30 under which no arithmetic over the int32
dynamic dimensions needs widening (a tile that overshoots the size by up to 2^20 elements still
fits), else 2^31 - 1 with the widening done. `attrs["index_limits"]` records, per int32
dynamic dimension, `(position in dynamic_vars, name, L, parameter, axis)`; the launchers refuse
a larger size with an `IndexLimitError` (`backend/launch_limits.py`) before anything is narrowed (the ABI passes every
dynamic dimension as int64).

Grid limits: a grid dimension that is static and above the target's limit (CUDA: 2^31 - 1
blocks in x, 65535 in y and z) is a compile-time error; one that depends on dynamic
dimensions and may exceed it sets `attrs["grid_check"]`, and the CUDA launcher checks the
computed grid before launching (a grid that would be truncated to 32 bits never launches).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..arith import interval as iv
from ..arith.bound import BINARY_INTERVALS
from ..backend.launch_limits import CUDA_GRID_LIMITS
from ..errors import UnsupportedError
from ..ir.buffer import Buffer
from ..ir.dtype import DataType
from ..ir.expr import (
    BinaryOp,
    Broadcast,
    BufferLoad,
    Cast,
    Compare,
    IntImm,
    PrimExpr,
    Ramp,
    Select,
    Var,
    binary,
    cast,
    compare,
)
from ..ir.function import PrimFunc
from ..ir.stmt import BufferStore, For, KernelLaunch, LetStmt
from ..ir.visitor import Mutator, free_vars_of
from .context import CompileContext

INT32_MAX = 2**31 - 1
INT64 = DataType("int64")
INT32_RANGE = (-(2**31), INT32_MAX)
# launch limits tried for int32 dynamic dimensions, largest first
LIMITS = (INT32_MAX, 2**31 - 2**20, 2**30)
_WIDENABLE = ("add", "sub", "mul", "min", "max", "floordiv", "floormod", "div")


def widen_indices(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    """See the module docstring."""
    narrow = [v for v in func.dynamic_vars() if v.dtype.is_int and v.dtype.bits < 64]
    if not narrow:
        out, _ = _run(func, ctx, {})
        return out
    for limit in LIMITS:
        out, w = _run(func, ctx, {v: limit for v in narrow})
        if not w.dyn_widened:
            break
    else:
        limit = INT32_MAX
        out, w = _run(func, ctx, {v: limit for v in narrow})
    dyn = func.dynamic_vars()
    records = []
    for v in narrow:
        where = _first_use(func, v)
        k = next(i for i, x in enumerate(dyn) if x is v)
        records.append((k, v.name, min(limit, iv.dtype_range(v.dtype)[1]), *where))
    return out.with_attrs(index_limits=tuple(records))


def _first_use(func: PrimFunc, v: Var) -> tuple:
    for p in func.buffer_params:
        for k, d in enumerate(p.shape):
            if d is v:
                return (p.name, k)
    return ("", -1)


def _run(func: PrimFunc, ctx: CompileContext | None, limits: dict) -> tuple:
    w = _Widen(func, ctx, limits)
    body = w.visit(func.body)
    out = func if body is func.body else replace(func, body=body)
    if w.grid_check:
        out = out.with_attrs(grid_check=True)
    return out, w


def _target_kind(ctx: CompileContext | None) -> str:
    t = CompileContext.of(ctx).target
    kind = getattr(t, "kind", None)
    if kind is None:
        kind = t.get("kind") if isinstance(t, dict) else str(t or "c")
    return str(kind).split()[0]


def _fits(r: Any) -> bool:
    return r is not None and r[0] >= INT32_RANGE[0] and r[1] <= INT32_RANGE[1]


def _is_i32(dt: DataType) -> bool:
    return dt.lanes == 1 and dt.is_int and dt.bits == 32


class _Widen(Mutator):
    def __init__(self, func: PrimFunc, ctx: CompileContext | None, limits: dict) -> None:
        super().__init__()
        self.func = func
        self.cuda = _target_kind(ctx) == "cuda"
        self.env: dict[Var, tuple] = {}
        self.remap: dict[Var, Var] = {}
        self.dyn_dep: set[Var] = set(limits)  # variables whose range depends on an int32 dynamic dim
        self.dyn_widened = False
        self.grid_check = False
        self.rmemo: dict[int, Any] = {}
        for v in func.dynamic_vars():
            self.env[v] = (0, limits[v]) if v in limits else (0, iv.dtype_range(v.dtype)[1])
        for p in func.params:
            if isinstance(p, Var) and p.dtype.is_integer:
                self.env[p] = iv.dtype_range(p.dtype)
        # global buffers with a dimension that may reach 2^31 elements
        self.big_dims: dict[Buffer, tuple] = {}
        for p in func.buffer_params:
            big = tuple(self.range_of(d) is None or self.range_of(d)[1] > INT32_MAX for d in p.shape)
            if any(big):
                self.big_dims[p] = big

    # -- intervals ------------------------------------------------------------------
    def range_of(self, e: Any) -> tuple | None:
        """The interval of integer index expression `e`; None where it reads memory or is not an
        integer (loads, calls, floats)."""
        key = id(e)
        if key in self.rmemo:
            return self.rmemo[key][1]
        r = self._range(e)
        self.rmemo[key] = (e, r)  # keep `e` alive: ids must not be reused while memoised
        return r

    def _range(self, e: Any) -> tuple | None:
        if isinstance(e, IntImm):
            return (e.value, e.value)
        if isinstance(e, Var):
            return self.env.get(e)
        dt = getattr(e, "dtype", None)
        if dt is None or not dt.is_integer:
            return None
        if isinstance(e, BinaryOp):
            a, b = self.range_of(e.a), self.range_of(e.b)
            if a is None or b is None:
                return None
            fn = BINARY_INTERVALS.get(e.op)
            return fn(a, b) if fn is not None else iv.dtype_range(dt)
        if isinstance(e, Cast):
            r = self.range_of(e.value)
            lo, hi = iv.dtype_range(dt)
            return r if r is not None and r[0] >= lo and r[1] <= hi else (None if r is None else (lo, hi))
        if isinstance(e, Select):
            t, f = self.range_of(e.true_value), self.range_of(e.false_value)
            return None if t is None or f is None else iv.union(t, f)
        if isinstance(e, Broadcast):
            return self.range_of(e.value)
        if isinstance(e, Ramp):
            b, s = self.range_of(e.base), self.range_of(e.stride)
            if b is None or s is None:
                return None
            return iv.union(b, iv.add(b, iv.scale(s, e.lanes - 1)))
        return None

    def safe(self, e: Any) -> bool:
        """`e` is computed without any 32-bit overflow: every integer operation in it fits its
        dtype (a cast or a load is a leaf)."""
        if isinstance(e, BinaryOp) and e.dtype.is_integer:
            r = self.range_of(e)
            return r is not None and r[0] >= iv.dtype_range(e.dtype)[0] and r[1] <= iv.dtype_range(e.dtype)[1] \
                and self.safe(e.a) and self.safe(e.b)  # fmt: skip
        if isinstance(e, Select):
            return self.safe(e.true_value) and self.safe(e.false_value)
        return True

    def wide(self, e: PrimExpr) -> PrimExpr:
        """`e` (an int32 expression) computed in int64: its overflow-free sub-trees cast, the rest
        int64 arithmetic."""
        if e.dtype.element_of() is INT64:
            return e
        if isinstance(e, IntImm):
            return IntImm(e.value, INT64, e.span)
        if isinstance(e, BinaryOp) and e.op in _WIDENABLE and not (_fits(self.range_of(e)) and self.safe(e)):
            out = BinaryOp(e.op, self.wide(e.a), self.wide(e.b), INT64, e.span)
            self.rmemo[id(out)] = (out, self.range_of(e))
            return out
        if isinstance(e, Select) and not self.safe(e):
            return Select(e.cond, self.wide(e.true_value), self.wide(e.false_value), INT64, e.span)
        if isinstance(e, Ramp):
            return Ramp(self.wide(e.base), self.wide(e.stride), e.lanes, INT64.with_lanes(e.lanes), e.span)
        out = Cast(e, INT64, e.span)
        self.rmemo[id(out)] = (out, self.range_of(e))
        return out

    def note_widened(self, e: PrimExpr) -> None:
        if any(v in self.dyn_dep for v in free_vars_of(e)):
            self.dyn_widened = True

    def bind(self, v: Var, r: tuple | None, deps: Any) -> Var:
        """Record the range of a newly bound variable; an int32 variable whose range leaves int32
        (or whose value became int64) is replaced by an int64 one."""
        if any(x in self.dyn_dep for x in free_vars_of(deps)):
            self.dyn_dep.add(v)
        nv = v
        if _is_i32(v.dtype) and (r is None and deps.dtype.element_of() is INT64 or r is not None and not _fits(r)):
            nv = Var(v.name, INT64, v.span)
            self.remap[v] = nv
            self.note_widened(deps)
            if v in self.dyn_dep:
                self.dyn_dep.add(nv)
        if r is not None:
            self.env[nv] = r
        return nv

    # -- expressions -------------------------------------------------------------------
    def visit_Var(self, n: Var) -> PrimExpr:
        return self.remap.get(n, n)

    def visit_BinaryOp(self, n: BinaryOp) -> PrimExpr:
        a, b = self.visit(n.a), self.visit(n.b)
        out = n if (a is n.a and b is n.b) else binary(n.op, a, b)
        if isinstance(out, BinaryOp) and out.dtype.is_int and out.dtype.bits == 32 and out.op in _WIDENABLE:
            r = self.range_of(out)
            if r is not None and not _fits(r):
                if out.dtype.lanes > 1:  # never silently wrong: no 64-bit vector index forms here
                    raise UnsupportedError(
                        f"vector index arithmetic that can reach {r[1]} (beyond int32)",
                        n.span,
                        "use a scalar loop for this access, or smaller buffers",
                    )
                self.note_widened(out)
                return self.wide(out)
        return out

    def visit_Cast(self, n: Cast) -> PrimExpr:
        v = self.visit(n.value)
        if v is n.value:
            return n
        if v.dtype.element_of() is n.dtype.element_of():
            return v
        return Cast(v, n.dtype, n.span)

    def visit_Compare(self, n: Compare) -> PrimExpr:
        a, b = self.visit(n.a), self.visit(n.b)
        if a is n.a and b is n.b:
            return n
        return compare(n.op, a, b) if a.dtype is not b.dtype else replace(n, a=a, b=b)

    def visit_Select(self, n: Select) -> PrimExpr:
        c, t, f = self.visit(n.cond), self.visit(n.true_value), self.visit(n.false_value)
        if c is n.cond and t is n.true_value and f is n.false_value:
            return n
        if t.dtype is not f.dtype and t.dtype.is_integer and f.dtype.is_integer:
            t, f = cast(t, INT64), cast(f, INT64)
        return Select(c, t, f, t.dtype, n.span)

    def indices(self, buf: Buffer, idx: tuple) -> tuple:
        out = tuple(self.visit(i) for i in idx)
        big = self.big_dims.get(buf)
        if big is not None:
            out = tuple(
                self.wide(i) if k < len(big) and big[k] and _is_i32(i.dtype) and not self.provably_small(i) else i
                for k, i in enumerate(out)
            )
        return out if any(a is not b for a, b in zip(out, idx)) else idx

    def provably_small(self, e: PrimExpr) -> bool:
        return _fits(self.range_of(e)) and self.safe(e)

    def visit_BufferLoad(self, n: BufferLoad) -> PrimExpr:
        idx = self.indices(n.buffer, n.indices)
        return n if idx is n.indices else replace(n, indices=idx)

    # -- statements ----------------------------------------------------------------------
    def visit_BufferStore(self, n: BufferStore) -> Any:
        idx = self.indices(n.buffer, n.indices)
        value = self.visit(n.value)
        if value.dtype.element_of() is not n.value.dtype.element_of():
            value = Cast(value, n.value.dtype, value.span)
        if idx is n.indices and value is n.value:
            return n
        return replace(n, indices=idx, value=value)

    def visit_LetStmt(self, n: LetStmt) -> Any:
        value = self.visit(n.value)
        var = self.bind(n.var, self.range_of(value), value) if value.dtype.is_integer else n.var
        if value is n.value and var is n.var:
            return n
        if var.dtype is not value.dtype and value.dtype.is_integer:
            value = Cast(value, var.dtype, value.span)
        return replace(n, var=var, value=value)

    def visit_For(self, n: For) -> Any:
        start, extent = self.visit(n.start), self.visit(n.extent)
        step = self.visit(n.step) if n.step is not None else None
        rs, re_ = self.range_of(start), self.range_of(extent)
        rstep = (1, 1) if step is None else self.range_of(step)
        r = None
        if rs is not None and re_ is not None and rstep is not None:
            last = iv.mul(iv.sub(re_, (1, 1)), rstep)
            r = iv.union(rs, iv.add(rs, (min(0, last[0]), max(0, last[1]))))
        deps = start + extent if step is None else start + extent * step
        var = self.bind(n.var, r, deps)
        if var is not n.var:
            start = start if start.dtype is INT64 else self.wide(start)
            extent = extent if extent.dtype is INT64 else self.wide(extent)
            step = None if step is None or step.dtype is INT64 else self.wide(step)
        body = self.visit(n.body)
        if all(a is b for a, b in zip((start, extent, step, body, var), (n.start, n.extent, n.step, n.body, n.var))):
            return n
        return replace(n, var=var, start=start, extent=extent, step=step, body=body)

    def visit_KernelLaunch(self, n: KernelLaunch) -> Any:
        grid = tuple(self.visit(g) for g in n.grid)
        bvars = []
        for axis, (g, v) in enumerate(zip(grid, n.block_vars)):
            r = self.range_of(g)
            hi = r[1] if r is not None else iv.dtype_range(g.dtype)[1]
            limit = CUDA_GRID_LIMITS[axis] if self.cuda else None
            if limit is not None and hi > limit:
                if not free_vars_of(g):
                    raise UnsupportedError(
                        f"grid dimension {'xyz'[axis]} has {hi} blocks, more than CUDA's limit of {limit}",
                        n.span,
                        "use larger blocks, or put the largest grid dimension first (x allows 2^31 - 1 blocks)",
                    )
                self.grid_check = True
            bvars.append(self.bind(v, (0, max(0, hi - 1)), g))
        body = self.visit(n.body)
        bvars_t = tuple(bvars)
        same = all(a is b for a, b in zip(grid + bvars_t, n.grid + n.block_vars))
        if body is n.body and same:
            return n
        return replace(n, grid=grid, block_vars=bvars_t, body=body)
