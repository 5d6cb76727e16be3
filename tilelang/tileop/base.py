"""Shared machinery of tile-operator lowering.

Every op family module (`copy.py`, `gemm.py`, ...) has a `RULES` dict that maps
a target kind ("c", later "cuda", "hip", "metal") to a function
`rule(op, lctx) -> Stmt`. `dispatch` picks the rule for the current target or
raises `UnsupportedError` at the op's span. Adding a CUDA lowering is adding a
function and one `RULES` entry next to the reference one.

The "c" rules are the *reference semantics*: plain loop nests over the tile
that say exactly what the op means (out-of-bounds global accesses are left to
`legalize_memory_access`, which guards them).

Helpers here build those loop nests. Every node created while an op is being
lowered carries the op's span (`op_span`), so spans survive lowering.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import UnsupportedError
from ..ir import node as _node
from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import DataType, int32
from ..ir.expr import (
    BufferLoad,
    Call,
    FloatImm,
    IntImm,
    PrimExpr,
    Var,
    as_expr,
    binary,
    call,
    cast,
    compare,
    const_int,
    logical_and,
    select,
)
from ..ir.node import FrozenDict
from ..ir.span import Span
from ..ir.stmt import Allocate, BufferStore, For, Stmt, seq

TARGET_ALIASES = {"c": "c", "cpu": "c", "llvm": "c", "cuda": "cuda", "hip": "hip", "rocm": "hip", "metal": "metal"}

# Annotation put on a loop nest whose global accesses the lowering has already
# proven (by a run-time test around it) to be in bounds.
IN_BOUNDS = "tl.in_bounds"


def target_kind(target: Any) -> str:
    """ "c" / "cuda" / ... from a Target, a string, a dict or None (None means "c")."""
    if target is None:
        return "c"
    kind = getattr(target, "kind", None)
    if isinstance(kind, str):
        return TARGET_ALIASES.get(kind, kind)
    if isinstance(target, dict):
        k = str(target.get("kind", ""))
        return TARGET_ALIASES.get(k, k)
    if isinstance(target, str):
        head = target.strip().split()[0] if target.strip() else "c"
        if head.startswith("{") or head == "auto":
            from ..backend.target import parse

            return parse(target).kind
        if head.startswith("sm_"):
            return "cuda"
        return TARGET_ALIASES.get(head, head)
    return str(target)


class LowerContext:
    """What a lowering rule may know besides the op itself."""

    def __init__(self, target: Any = None, func: Any = None) -> None:
        self.target = target
        self.kind = target_kind(target)
        self.func = func
        self.allocations: dict[Buffer, Allocate] = {}  # buffers allocated so far (reducers need their op)
        self.block_vars: tuple = ()  # of the enclosing KernelLaunch
        self.threads: tuple = (1, 1, 1)  # its thread block shape (GPU lowerings map tiles onto it)
        self.layout_map = dict(func.attrs.get("layout_map", {}) or {}) if func is not None else {}

    def reducer_op(self, buf: Buffer) -> str:
        alloc = self.allocations.get(buf)
        op = alloc.annotations.get("op") if alloc is not None else None
        return str(op) if op else "sum"


Rule = Callable[[Any, LowerContext], Stmt]


def dispatch(rules: dict[str, Rule], op: Any, lctx: LowerContext) -> Stmt:
    rule = rules.get(lctx.kind)
    if rule is None:
        have = ", ".join(sorted(rules)) or "none"
        raise UnsupportedError(
            f"{op_name(op)} has no lowering for target '{lctx.kind}'",
            op.span,
            f"targets with a lowering for it: {have}",
        )
    with op_span(op.span):
        return rule(op, lctx)


def op_name(op: Any) -> str:
    names = {
        "Copy": "T.copy",
        "Gemm": "T.gemm",
        "Fill": "T.fill",
        "CumSum": "T.cumsum",
        "Print": "T.print",
        "DeviceAssert": "T.device_assert",
        "ReducerInit": "T.reducer_init",
        "ReducerUpdate": "T.reducer_update",
        "FinalizeReducer": "T.finalize_reducer",
        "Im2Col": "T.im2col",
    }
    n = type(op).__name__
    if n == "Reduce":
        return f"T.reduce_{op.kind}"
    if n == "Atomic":
        return f"T.atomic_{op.kind}"
    return names.get(n, n)


@contextlib.contextmanager
def op_span(span: Span) -> Iterator[None]:
    """Give every IR node created inside the block `span` (unless given one)."""
    old = _node.set_span_provider(lambda: span)
    try:
        yield
    finally:
        _node.set_span_provider(old)


# --------------------------------------------------------------------------
# Regions and loop nests
# --------------------------------------------------------------------------


def is_one(e: Any) -> bool:
    return const_int(e) == 1


def nonunit_dims(region: BufferRegion) -> list[int]:
    """Dimensions of `region` whose extent is not the constant 1."""
    return [d for d, r in enumerate(region.region) if not is_one(r.extent)]


def extent_mismatch(a: tuple, b: tuple) -> str | None:
    """Why two regions of extents `a` and `b` cannot pair element by element (None: they
    can). The rule of the public API: dimensions of extent 1 are dropped from both and
    what is left pairs in order (`A[bx, 0:N]`, a 1×N region, pairs with a buffer of shape
    (N,)). Extents are simplified first (`(bx + 1) - bx` is a unit dimension), and only a
    provable difference is a mismatch: extents the analyzer cannot tell apart pair."""
    from ..arith import Analyzer

    an = Analyzer()

    def squeeze(ext: tuple) -> list:
        out = []
        for e in ext:
            e = e if isinstance(e, IntImm) else an.simplify(e)
            if const_int(e) != 1:
                out.append(e)
        return out

    ea, eb = squeeze(a), squeeze(b)
    if len(ea) != len(eb):
        return f"{len(ea)} against {len(eb)} non-unit dimension(s)"
    for k, (x, y) in enumerate(zip(ea, eb)):
        if an.can_prove(compare("ne", x, y)):
            return f"non-unit dimension {k}: {x} against {y}"
    return None


def pick_extent(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """Of two extents that must be equal, the more constant one."""
    return a if const_int(a) is not None or const_int(b) is None else b


def loop_nest(
    extents: list,
    body: Callable[[list], Stmt],
    kind: str = "parallel",
    names: str = "ijklmn",
    annotations: dict | None = None,
) -> Stmt:
    """`for v0 in kind(e0): for v1 in kind(e1): ... body([v0, v1, ...])`.

    Loop variables take the extent's integer dtype. `annotations` go on the
    outermost loop. With no extents this is just `body([])`."""
    vars_ = [Var(names[k % len(names)] if k < len(names) else f"i{k}", _idx_dtype(e)) for k, e in enumerate(extents)]
    stmt = body(vars_)
    for k in reversed(range(len(extents))):
        ann = FrozenDict(annotations or {}) if k == 0 else FrozenDict()
        stmt = For(vars_[k], IntImm(0, vars_[k].dtype), extents[k], kind, stmt, None, ann)
    return stmt


def _idx_dtype(e: PrimExpr) -> DataType:
    return e.dtype if getattr(e, "dtype", None) is not None and e.dtype.is_integer else int32


def region_indices(region: BufferRegion, dims: list[int], ivars: list) -> tuple:
    """Indices into `region.buffer` for loop variables `ivars` that walk the dims `dims`
    of the region (other dims stay at their begin)."""
    idx = list(region.begins)
    for d, v in zip(dims, ivars):
        idx[d] = _add(idx[d], v)
    return tuple(idx)


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if const_int(a) == 0:
        return b if b.dtype == a.dtype else cast(b, a.dtype)
    return binary("add", a, b)


def load(buf: Buffer, idx: tuple) -> BufferLoad:
    return BufferLoad(buf, tuple(as_expr(i) for i in idx), buf.dtype)


def store(buf: Buffer, idx: tuple, value: Any) -> BufferStore:
    v = as_expr(value, buf.dtype)
    return BufferStore(buf, tuple(as_expr(i) for i in idx), v if v.dtype is buf.dtype else cast(v, buf.dtype))


def address_of(buf: Buffer, idx: tuple) -> PrimExpr:
    """Pointer to `buf[idx]` (an intrinsic every backend understands)."""
    return Call("address_of", (load(buf, idx),), DataType("handle"))


def region_in_bounds(region: BufferRegion) -> PrimExpr | None:
    """A condition that holds when the whole `region` lies inside its buffer
    (None when that is evident from constants)."""
    conds: list[PrimExpr] = []
    for r, dim in zip(region.region, region.buffer.shape):
        b, e, n = const_int(r.begin), const_int(r.extent), const_int(dim)
        if not (b is not None and b >= 0):
            conds.append(compare("ge", r.begin, 0))
        if not (b is not None and e is not None and n is not None and b + e <= n):
            conds.append(compare("le", binary("add", r.begin, r.extent), dim))
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = logical_and(out, c)
    return out


def scalar_var(name: str, dtype: DataType, init: PrimExpr | None) -> tuple[Buffer, Stmt]:
    """A `local.var` scalar (a C local variable on the CPU) and its Allocate."""
    buf = Buffer(name, (IntImm(1),), DataType(dtype), "local.var")
    return buf, Allocate(buf, init)


def temp_buffer(name: str, shape: tuple, dtype: Any, scope: str = "local") -> tuple[Buffer, Stmt]:
    buf = Buffer(name, tuple(as_expr(s) for s in shape), DataType(dtype), scope)
    return buf, Allocate(buf, None)


# --------------------------------------------------------------------------
# Combiners shared by reductions, scans, atomics and reducers
# --------------------------------------------------------------------------


def identity(kind: str, dtype: DataType) -> PrimExpr:
    """The identity element of combiner `kind` in `dtype`."""
    dtype = DataType(dtype)
    if kind in ("sum", "abssum", "absmax", "bitor", "bitxor", "add"):
        return FloatImm(0.0, dtype) if dtype.is_float else IntImm(0, dtype)
    if kind == "bitand":
        return IntImm(-1 if dtype.is_int else (1 << dtype.bits) - 1, dtype)
    if kind in ("max", "min"):
        sign = -1 if kind == "max" else 1
        if dtype.is_float:
            return FloatImm(sign * math.inf, dtype)
        if dtype.is_bool:
            return IntImm(0 if kind == "max" else 1, dtype)
        if dtype.is_int:
            lo, hi = -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
        else:
            lo, hi = 0, (1 << dtype.bits) - 1
        return IntImm(lo if kind == "max" else hi, dtype)
    raise ValueError(f"no identity for combiner {kind!r}")


def combine(kind: str, acc: PrimExpr, x: PrimExpr, nan_propagate: bool = False) -> PrimExpr:
    """`acc (kind) x` in acc's dtype. `x` is cast to acc's dtype first (abs- kinds
    take |x| before that). Float max/min ignore NaN unless `nan_propagate`."""
    dt = acc.dtype
    if kind in ("absmax", "abssum"):
        x = call("abs", x)
    x = x if x.dtype is dt else cast(x, dt)
    if kind in ("sum", "abssum", "add"):
        return binary("add", acc, x)
    if kind in ("max", "min", "absmax"):
        op = "min" if kind == "min" else "max"
        r = binary(op, acc, x)
        if nan_propagate and dt.is_float:
            r = select(compare("ne", x, x), x, r)
            r = select(compare("ne", acc, acc), acc, r)
        return r
    if kind in ("bitand", "bitor", "bitxor"):
        return binary(kind, acc, x)
    raise ValueError(f"unknown combiner {kind!r}")


def seq_of(*stmts: Stmt | None) -> Stmt:
    return seq(*[s for s in stmts if s is not None])


def __getattr__(name: str) -> Any:
    # `tilelang.tileop.base.GemmWarpPolicy` (public path) is the very enum `T.GemmWarpPolicy`;
    # resolved lazily because the language layer imports the IR this module lowers
    if name == "GemmWarpPolicy":
        from ..language.ops import GemmWarpPolicy

        return GemmWarpPolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
