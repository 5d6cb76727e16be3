"""Thread-level programming: the thread and block indices of the current `T.Kernel`,
`T.thread_binding` loops, cross-thread all-reduce (`T.tvm_thread_allreduce` under
`T.attr(T.comm_reducer(...), "reduce_scope", ...)`, as TVMScript spells it) and warp shuffles.

Only builders live here. What the IR means: a thread index is a `Var` bound at the top of
the kernel body to `Call("tl.thread_index", (dim, extent))` (x, y, z; the linear thread `t`
of the block is `x + X * (y + Y * z)`); `transform/uniformity.py` counts it per-thread, and
each backend maps it onto its threads (`backend/cuda/thread_level.py`,
`backend/c/thread_level.py`). Statements outside `T.Parallel` run in every thread
(`transform/thread_level.py` says which must).
An all-reduce is a store whose value is `Call("tl.thread_allreduce", (op, value, dim...))`;
a shuffle is `Call("tl.shfl_<kind>", (value, lane, width, mask))`.
"""

from __future__ import annotations

from typing import Any

from ..errors import DSLError, UnsupportedError
from ..frontend.builder import Builder
from ..ir.dtype import int32, uint32
from ..ir.expr import (
    BinaryOp,
    BufferLoad,
    Call,
    IntImm,
    PrimExpr,
    StringImm,
    Var,
    as_expr,
    binary,
    cast,
    compare,
    const_int,
)
from ..ir.stmt import BufferStore, IfThenElse, LetStmt, seq
from ..transform.thread_level import ALLREDUCE_OP, THREAD_INDEX
from .loops import LoopSpec, _range

_AXES = "xyz"


def _kernel(what: str) -> Any:
    b = Builder.require(what)
    b.require_kernel(what)
    for f in reversed(b.frames):
        if f.kind == "kernel":
            return f.data
    raise DSLError(f"{what} must be used inside `with T.Kernel(...)`", b.span_here())  # pragma: no cover


def _dim(dim: Any, what: str) -> int:
    if isinstance(dim, IntImm):
        dim = dim.value
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= 2:
        raise DSLError(f"{what}: dim must be 0, 1 or 2, got {dim!r}", None, "0 is x, 1 is y, 2 is z")
    return dim


def kernel_thread_var(k: Any, d: int) -> Var:
    """The kernel frame's thread index `d` (a Var, created on first use; the kernel's body
    starts with `LetStmt(var, Call(THREAD_INDEX, (d, extent)))`, see `thread_index_lets`)."""
    tv = k.__dict__.setdefault("thread_vars", {})
    v = tv.get(d)
    if v is None:
        v = tv[d] = Var(f"t{_AXES[d]}", int32)
    return v


def thread_index(d: int, extent: int) -> Call:
    """`threadIdx.<x|y|z>` of a block with `extent` threads along that axis."""
    return Call(THREAD_INDEX, (IntImm(d), IntImm(extent)), int32)


def thread_index_lets(k: Any) -> list:
    tv = k.__dict__.get("thread_vars") or {}
    return [LetStmt(v, thread_index(d, k.threads[d]), k.span) for d, v in sorted(tv.items())]


def get_thread_binding(dim: int = 0) -> Var:
    """`threadIdx.<x|y|z>` of the current kernel (dim 0, 1, 2)."""
    d = _dim(dim, "T.get_thread_binding")
    return kernel_thread_var(_kernel("T.get_thread_binding"), d)


def get_thread_bindings() -> list:
    """`[threadIdx.x, threadIdx.y, threadIdx.z]` of the current kernel."""
    k = _kernel("T.get_thread_bindings")
    return [kernel_thread_var(k, d) for d in range(3)]


def get_block_binding(dim: int = 0) -> Any:
    """`blockIdx.<x|y|z>` of the current kernel (0 for a grid dimension it does not have)."""
    d = _dim(dim, "T.get_block_binding")
    k = _kernel("T.get_block_binding")
    return k.vars[d] if d < len(k.vars) else IntImm(0)


def get_block_bindings() -> list:
    """`[blockIdx.x, blockIdx.y, blockIdx.z]` of the current kernel (0 for missing grid dimensions)."""
    k = _kernel("T.get_block_bindings")
    return [k.vars[d] if d < len(k.vars) else IntImm(0) for d in range(3)]


def get_thread_extent(dim: int = 0) -> int:
    """Threads of the current kernel along `dim` (blockDim.<x|y|z>)."""
    return _kernel("T.get_thread_extent").threads[_dim(dim, "T.get_thread_extent")]


def get_thread_extents() -> list:
    """Threads of the current kernel along x, y, z."""
    return list(_kernel("T.get_thread_extents").threads)


def get_block_extent(dim: int = 0) -> Any:
    """Blocks of the current kernel's grid along `dim` (gridDim.<x|y|z>; 1 for a missing dimension)."""
    k = _kernel("T.get_block_extent")
    d = _dim(dim, "T.get_block_extent")
    return k.blocks[d] if d < len(k.blocks) else IntImm(1)


def get_block_extents() -> list:
    """The current kernel's grid along x, y, z."""
    k = _kernel("T.get_block_extents")
    return [k.blocks[d] if d < len(k.blocks) else IntImm(1) for d in range(3)]


def _linear_thread(what: str) -> PrimExpr:
    """The block's linear thread index x + X * (y + Y * z), from the kernel's thread indices."""
    k = _kernel(what)
    strides = (1, k.threads[0], k.threads[0] * k.threads[1])
    e: PrimExpr = IntImm(0)
    for d in range(3):
        if k.threads[d] > 1:
            e = binary("add", e, binary("mul", kernel_thread_var(k, d), strides[d]))
    return e


def _warp(warp_size: Any) -> int:
    w = 32 if warp_size is None else const_int(warp_size)
    if w is None or w < 1:
        raise DSLError(f"warp_size must be a positive compile-time integer, got {warp_size!r}", None)
    return w


def get_lane_idx(warp_size: Any = None) -> PrimExpr:
    """The thread's lane in its warp (linear thread index % warp size)."""
    return binary("floormod", _linear_thread("T.get_lane_idx"), _warp(warp_size))


def get_warp_idx(warp_size: Any = None) -> PrimExpr:
    """The thread's warp in the block (linear thread index // warp size)."""
    return binary("floordiv", _linear_thread("T.get_warp_idx"), _warp(warp_size))


def get_warp_idx_sync(warp_size: Any = None) -> PrimExpr:
    """As `get_warp_idx` (the same value in every lane of the warp)."""
    return binary("floordiv", _linear_thread("T.get_warp_idx_sync"), _warp(warp_size))


def get_warp_group_idx(warp_size: Any = None, warps_per_group: Any = None) -> PrimExpr:
    """The thread's warpgroup (`warps_per_group` warps, 4 by default)."""
    g = 4 if warps_per_group is None else const_int(warps_per_group)
    if g is None or g < 1:
        raise DSLError(f"warps_per_group must be a positive compile-time integer, got {warps_per_group!r}", None)
    return binary("floordiv", _linear_thread("T.get_warp_group_idx"), _warp(warp_size) * g)


def shuffle_elect(thread_extent: Any) -> PrimExpr:
    """True in one thread of every group of `thread_extent` consecutive threads (its first);
    0 means one thread of the whole block."""
    n = const_int(thread_extent)
    if n is None or n < 0:
        raise DSLError(
            f"T.shuffle_elect: thread_extent must be a compile-time integer >= 0, got {thread_extent!r}", None
        )
    t = _linear_thread("T.shuffle_elect")
    return compare("eq", t if n == 0 else binary("floormod", t, n), 0)


class thread_binding(LoopSpec):  # noqa: N801 - TVMScript name
    """`for tx in T.thread_binding(0, 128, thread="threadIdx.x"):` inside a `T.Kernel`: the
    loop variable is that thread index plus the start (`T.get_thread_binding`), and the body
    runs in the threads whose index is below the extent — it is traced as
    `LetStmt(var, start + index)` (under `if index < extent` when the extent is smaller than
    the kernel's thread count along that axis), not as a loop."""

    kind = "thread"

    def __init__(self, start: Any, stop: Any = None, thread: Any = None, *, annotations: dict | None = None) -> None:
        if not isinstance(thread, str) or thread not in ("threadIdx.x", "threadIdx.y", "threadIdx.z"):
            raise DSLError(
                f"T.thread_binding(thread={thread!r}): expected 'threadIdx.x', 'threadIdx.y' or 'threadIdx.z'",
                None,
                "use T.Kernel's grid for blockIdx; thread= names the thread axis",
            )
        self.axis = _AXES.index(thread[-1])
        super().__init__([_range(start, stop, None)], annotations)

    def __tl_loop__(self, b: Any, names: tuple) -> Any:
        k = _kernel("T.thread_binding")
        span = b.span_here()
        start, extent, _ = self.levels[0]
        n = const_int(extent)
        have = k.threads[self.axis]
        if n is None or n > have or n < 1:
            raise DSLError(
                f"T.thread_binding over {extent} threads along {'xyz'[self.axis]}, but the kernel has {have}",
                span,
                f"give T.Kernel threads= at least {extent} along that axis, or bind fewer",
            )
        tv = kernel_thread_var(k, self.axis)
        var = Var(names[0] if names else "t", int32)
        b.push("for")
        ok = False
        try:
            yield var
            ok = True
        finally:
            fr = b.pop("for")
            if ok:
                body = seq(LetStmt(var, binary("add", start, tv), span), fr.body())
                if n < have:
                    body = IfThenElse(compare("lt", tv, n), body, None, span)
                b.emit(body)


# --------------------------------------------------------------------------
# Cross-thread reduction, TVMScript spelling
# --------------------------------------------------------------------------

_COMBINERS = {"add": "sum", "max": "max", "min": "min", "bitand": "bitand", "bitor": "bitor", "bitxor": "bitxor"}


class CommReducer:
    """`T.comm_reducer(lambda x, y: x + y, [identity])`: the combiner, recognised as one of
    sum / max / min / bitand / bitor / bitxor (the ones every target has a reduction for)."""

    def __init__(self, combiner: Any, identity: Any) -> None:
        ids = list(identity) if isinstance(identity, (list, tuple)) else [identity]
        if len(ids) != 1:
            raise UnsupportedError(
                f"T.comm_reducer with {len(ids)} values: only single-value reducers are supported", None
            )
        self.identity = as_expr(ids[0])
        dt = self.identity.dtype
        x, y = Var("x", dt), Var("y", dt)
        r = combiner(x, y)
        op = None
        if isinstance(r, BinaryOp) and {id(r.a), id(r.b)} == {id(x), id(y)}:
            op = _COMBINERS.get(r.op)
        if op is None:
            raise UnsupportedError(
                f"T.comm_reducer: the combiner `{r}` is not one of x + y, max(x, y), min(x, y), x & y, x | y, x ^ y",
                None,
                "write the reduction with one of those combiners",
            )
        self.op = op


def comm_reducer(combiner: Any, identity: Any) -> CommReducer:
    """The reducer of a `T.tvm_thread_allreduce`: `combiner(x, y)` (sum, max, min, &, |, ^) and its identity."""
    return CommReducer(combiner, identity)


class _ReduceScope:
    def __init__(self, reducer: CommReducer) -> None:
        self.reducer = reducer

    def __enter__(self) -> None:
        b = Builder.require("T.attr")
        b.__dict__.setdefault("reduce_scopes", []).append(self.reducer)

    def __exit__(self, *exc: Any) -> None:
        Builder.require("T.attr").reduce_scopes.pop()


def reduce_scope(node: Any) -> _ReduceScope:
    """The body of `with T.attr(T.comm_reducer(...), "reduce_scope", ...):` (language/extern.attr
    dispatches here): the reducer of the `T.tvm_thread_allreduce` calls inside."""
    if isinstance(node, CommReducer):
        return _ReduceScope(node)
    raise UnsupportedError(
        f"T.attr(..., 'reduce_scope', ...) needs a T.comm_reducer(...), not {type(node).__name__}", None
    )


class _AllReduce:
    """What `T.tvm_thread_allreduce` returns: `T.evaluate` of it emits the reduction."""

    def __init__(self, stmt: BufferStore) -> None:
        self.stmt = stmt


def tvm_thread_allreduce(size: Any, value: Any, cond: Any, dst: Any, *reduce_vars: Any, dtype: Any = None) -> Any:
    """Combine `value` over the threads that differ only in the thread indices `reduce_vars`;
    every one of them gets the result in `dst` (a buffer element)."""
    b = Builder.require("T.tvm_thread_allreduce")
    k = _kernel("T.tvm_thread_allreduce")
    scopes = b.__dict__.get("reduce_scopes")
    if not scopes:
        raise DSLError(
            "T.tvm_thread_allreduce needs a reducer",
            b.span_here(),
            'wrap it in `with T.attr(T.comm_reducer(lambda x, y: x + y, [T.Cast(dtype, 0)]), "reduce_scope", '
            'T.reinterpret(T.uint64(0), dtype="handle")):`',
        )
    n = size.value if isinstance(size, IntImm) else size
    if n != 1:
        raise UnsupportedError(f"T.tvm_thread_allreduce of {n} values: only one value is supported", b.span_here())
    if not (cond is True or (isinstance(cond, IntImm) and cond.value == 1)):
        raise UnsupportedError("T.tvm_thread_allreduce with a condition other than True", b.span_here())
    if not isinstance(dst, BufferLoad):
        raise DSLError("T.tvm_thread_allreduce: the destination must be a buffer element, e.g. red[0]", b.span_here())
    tv = k.__dict__.get("thread_vars") or {}
    dims = []
    for v in reduce_vars:
        hit = [d for d, w in tv.items() if w is v]
        if not hit:
            raise DSLError(
                f"T.tvm_thread_allreduce reduces over thread indices; `{v}` is not one",
                b.span_here(),
                "pass variables from T.get_thread_binding(dim)",
            )
        dims.append(hit[0])
    if not dims:
        raise DSLError("T.tvm_thread_allreduce needs at least one thread index to reduce over", b.span_here())
    v = as_expr(value)
    call = Call(ALLREDUCE_OP, (StringImm(scopes[-1].op), v, *(IntImm(d) for d in sorted(set(dims)))), v.dtype)
    return _AllReduce(BufferStore(dst.buffer, dst.indices, cast(call, dst.buffer.dtype)))


# --------------------------------------------------------------------------
# Warp shuffles
# --------------------------------------------------------------------------


def _shfl(kind: str, value: Any, lane: Any, width: Any, mask: Any) -> PrimExpr:
    v = as_expr(value)
    w = 32 if width is None else width
    w = w.value if isinstance(w, IntImm) else w
    if isinstance(w, bool) or not isinstance(w, int) or w not in (1, 2, 4, 8, 16, 32):
        raise DSLError(f"T.shfl_{kind}: width must be a power of two up to 32, got {width!r}", None)
    m = 0xFFFFFFFF if mask is None else mask
    return Call(
        f"tl.shfl_{kind}", (v, cast(as_expr(lane), int32), IntImm(w), cast(as_expr(m, uint32), uint32)), v.dtype
    )


def shfl_xor(value: Any, delta: Any, width: Any = None, mask: Any = None) -> PrimExpr:
    """The value of lane `lane ^ delta` (within groups of `width` lanes)."""
    return _shfl("xor", value, delta, width, mask)


def shfl_down(value: Any, delta: Any, width: Any = None, mask: Any = None) -> PrimExpr:
    """The value of lane `lane + delta`; lanes past the group's end keep their own."""
    return _shfl("down", value, delta, width, mask)


def shfl_up(value: Any, delta: Any, width: Any = None, mask: Any = None) -> PrimExpr:
    """The value of lane `lane - delta`; lanes before the group's start keep their own."""
    return _shfl("up", value, delta, width, mask)


def shfl_sync(value: Any, src_lane: Any, width: Any = None, mask: Any = None) -> PrimExpr:
    """The value of lane `src_lane` of the group."""
    return _shfl("sync", value, src_lane, width, mask)


__all__ = [
    "CommReducer",
    "comm_reducer",
    "get_block_binding",
    "get_block_bindings",
    "get_block_extent",
    "get_block_extents",
    "get_thread_binding",
    "get_thread_bindings",
    "get_thread_extent",
    "get_thread_extents",
    "get_lane_idx",
    "get_warp_group_idx",
    "get_warp_idx",
    "get_warp_idx_sync",
    "shuffle_elect",
    "shfl_down",
    "shfl_sync",
    "shfl_up",
    "shfl_xor",
    "thread_binding",
    "tvm_thread_allreduce",
]
