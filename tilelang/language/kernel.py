"""`T.Kernel`, `T.prim_func`, `T.macro` and buffer allocation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import DSLError
from ..frontend.builder import Builder
from ..ir.buffer import Buffer, make_buffer
from ..ir.dtype import DataType
from ..ir.expr import IntImm, Var, as_expr
from ..ir.node import FrozenDict
from ..ir.stmt import Allocate, KernelLaunch, seq
from .sizes import size


class Kernel:
    """`with T.Kernel(gx[, gy[, gz]], threads=128) as (bx, by, bz):` — one thread block's program."""

    def __init__(self, *blocks: Any, threads: Any = None, prelude: str | None = None, **attrs: Any) -> None:
        if not 1 <= len(blocks) <= 3:
            raise DSLError(
                f"T.Kernel takes 1 to 3 grid dimensions, got {len(blocks)}", None, "e.g. T.Kernel(gx, gy, threads=128)"
            )
        self.blocks = tuple(as_expr(size(g, f"grid dimension {k} of T.Kernel")) for k, g in enumerate(blocks))
        if threads is None:
            threads = 128
        if not isinstance(threads, (tuple, list)):
            threads = (threads,)
        if not 1 <= len(threads) <= 3:
            raise DSLError(f"invalid threads={threads}", None, "threads is a positive int or a tuple of up to 3")
        threads = tuple(_thread_count(t, k) for k, t in enumerate(threads))
        self.threads = threads + (1,) * (3 - len(threads))
        self.attrs = dict(attrs)
        if prelude:
            self.attrs["prelude"] = prelude

    def __enter__(self):
        b = Builder.require("T.Kernel")
        # several T.Kernel blocks in sequence are launched in program order (transform/split_kernels.py)
        if b.in_kernel():
            raise DSLError("T.Kernel cannot be nested", b.span_here())
        names = ("bx", "by", "bz")
        self.vars = tuple(Var(names[i]) for i in range(len(self.blocks)))
        self.span = b.span_here()
        b.push("kernel", self)
        return self.vars[0] if len(self.vars) == 1 else self.vars

    def __exit__(self, exc_type, *rest: Any) -> None:
        b = Builder.require("T.Kernel")
        fr = b.pop("kernel")
        if exc_type is None:
            from .thread import thread_index_lets  # T.get_thread_binding's variables, bound first

            body = seq(*thread_index_lets(self), fr.body())
            b.emit(KernelLaunch(self.blocks, self.vars, self.threads, body, FrozenDict(self.attrs), self.span))


def _thread_count(t: Any, k: int) -> int:
    n = size(t, f"threads[{k}] of T.Kernel", minimum=1)
    if isinstance(n, IntImm):
        return n.value
    if not isinstance(n, int):
        raise DSLError(f"threads[{k}] of T.Kernel is `{n}`; the block size must be a compile-time integer", None)
    return n


def _alloc(
    shape: Any, dtype: Any, scope: str, init: Any = None, annotations: dict | None = None, what: str = ""
) -> Buffer:
    b = Builder.require(what)
    b.require_kernel(what)
    if isinstance(shape, list):
        shape = tuple(shape)
    buf = make_buffer("buf", shape, DataType(dtype), scope)
    if buf.static_shape is not None and any(d <= 0 for d in buf.static_shape):
        raise DSLError(f"{what}: every dimension must be positive, got {list(buf.static_shape)}", b.span_here())
    b.unnamed.add(id(buf))
    b.emit(Allocate(buf, None if init is None else as_expr(init, buf.dtype), FrozenDict(annotations or {})))
    return buf


def alloc_global(shape: Any, dtype: Any, scope: str = "global") -> Buffer:
    """Scratch in global memory for the kernels of this function: written by one `T.Kernel`,
    read by a later one. The host wrapper allocates it for each call (torch's caching allocator
    on the kernels' device and stream; host memory on the CPU backend) and frees it after. Inside
    a `T.Kernel` it is the same: one buffer for the call, shared by every block."""
    b = Builder.require("T.alloc_global")
    if scope != "global":
        raise DSLError(f"T.alloc_global: scope must be 'global', got {scope!r}", b.span_here())
    if isinstance(shape, list):
        shape = tuple(shape)
    buf = make_buffer("buf", shape, DataType(dtype), "global")
    if buf.static_shape is not None and any(d < 0 for d in buf.static_shape):
        raise DSLError(f"T.alloc_global: dimensions must be >= 0, got {list(buf.static_shape)}", b.span_here())
    b.unnamed.add(id(buf))
    b.emit(Allocate(buf, None, FrozenDict()))
    return buf


def alloc_shared(shape: Any, dtype: Any, scope: str = "shared.dyn") -> Buffer:
    """A shared-memory tile of `shape` and `dtype`, visible to every thread of the block."""
    if DataType(dtype).is_bool:
        scope = "shared"
    return _alloc(shape, dtype, scope, what="T.alloc_shared")


def alloc_fragment(shape: Any, dtype: Any, scope: str = "local.fragment") -> Buffer:
    """A register tile of `shape` and `dtype`, distributed over the block's threads by layout inference."""
    return _alloc(shape, dtype, scope, what="T.alloc_fragment")


def alloc_local(shape: Any, dtype: Any, scope: str = "local") -> Buffer:
    """A per-thread array of `shape` and `dtype` in registers (each thread has its own copy)."""
    return _alloc(shape, dtype, scope, what="T.alloc_local")


def alloc_buffer(shape: Any, dtype: Any = "float32", scope: str = "local") -> Buffer:
    """A buffer of `shape` and `dtype` in `scope` (default per-thread `local`)."""
    return _alloc(shape, dtype, scope, what="T.alloc_buffer")


allocate = alloc_buffer


def alloc_var(dtype: Any, *args: Any, scope: str = "local.var", init: Any = None) -> Buffer:
    """A mutable scalar; reads give its value, `x = v` stores into it."""
    for a in args:
        if isinstance(a, str):
            scope = a
        else:
            init = a
    return _alloc((1,), dtype, scope, init=init, what="T.alloc_var")


def alloc_reducer(shape: Any, dtype: Any, op: str = "sum", replication: Any = None) -> Buffer:
    """A register tile that many threads combine into with `op` (sum/max/min/bit ops); read it after `T.finalize_reducer`."""
    ops = ("sum", "max", "min", "bitand", "bitor", "bitxor")
    if op not in ops:
        raise DSLError(f"unknown reducer op {op!r}", None, f"use one of {', '.join(ops)}")
    return _alloc(shape, dtype, "local.reducer", annotations={"op": op}, what="T.alloc_reducer")


def alloc_barrier(arrive_count: Any) -> Buffer:
    """Shared-memory mbarriers, one per entry of `arrive_count`, each expecting that many arrivals per phase."""
    counts = list(arrive_count) if isinstance(arrive_count, (list, tuple)) else [arrive_count]
    # an mbarrier counts 1 .. 2^20 - 1 arrivals per phase, fixed when it is initialised
    if not counts or any(isinstance(c, bool) or not isinstance(c, int) or not 0 < c < 1 << 20 for c in counts):
        raise DSLError(
            f"T.alloc_barrier: arrive counts must be integers in [1, 2^20), got {arrive_count!r}",
            None,
            "e.g. T.alloc_barrier(arrive_count=128) or T.alloc_barrier([128, 128])",
        )
    return _alloc(
        (len(counts),), "uint64", "shared.barrier", annotations={"arrive_counts": tuple(counts)}, what="T.alloc_barrier"
    )


def alloc_cluster_barrier(arrive_count: Any) -> Buffer:
    """`T.alloc_barrier` whose mbarriers the other blocks of the cluster may arrive on
    (`T.mbarrier_arrive(bar, cta_id)`): on CUDA every block of the cluster initialises its
    barriers before any block uses them (a cluster barrier after the initialisation). Only in
    a `T.ClusterKernel` (sm_90a); the CPU backend runs the local protocol and rejects remote
    arrivals."""
    b = Builder.require("T.alloc_cluster_barrier")
    b.require_kernel("T.alloc_cluster_barrier")
    k = next(f.data for f in reversed(b.frames) if f.kind == "kernel")
    if k.attrs.get("cluster_dims") is None:
        raise DSLError(
            "T.alloc_cluster_barrier outside a cluster kernel: no other block can reach it",
            b.span_here(),
            "launch with T.ClusterKernel(..., cluster_dims=...) (sm_90a), or use T.alloc_barrier",
        )
    buf = alloc_barrier(arrive_count)
    fr = b.frames[-1]  # mark the Allocate alloc_barrier just emitted
    a = fr.stmts[-1]
    fr.stmts[-1] = Allocate(a.buffer, a.init, FrozenDict({**a.annotations, "cluster": True}), a.span)
    return buf


def prim_func(func: Callable | None = None, *, eager_jit: bool = False) -> Any:
    """Trace a kernel whose parameters are annotated `T.Tensor(shape, dtype)` into a PrimFunc."""
    import sys

    from ..frontend.trace import trace_prim_func

    if func is None:
        return lambda f: prim_func(f, eager_jit=eager_jit)
    # The defining scope (the factory), for `from __future__ import annotations` files whose
    # parameter annotations are strings naming factory locals.
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tilelang.language"):
        frame = frame.f_back
    return trace_prim_func(func, dict(frame.f_locals) if frame is not None else None)


class Macro:
    """`@T.macro`: a helper inlined into the kernel that calls it."""

    def __init__(self, func: Callable) -> None:
        self.func = func
        self.__name__ = getattr(func, "__name__", "macro")
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..frontend.trace import rewritten_callable

        b = Builder.require(f"macro `{self.__name__}`")
        fn, codes = rewritten_callable(self.func)
        b.user_codes |= codes
        return fn(*args, **kwargs)


def macro(func: Callable | None = None, **_: Any) -> Any:
    """Decorator: a helper whose body is inlined into the kernel that calls it."""
    if func is None:
        return lambda f: Macro(f)
    return Macro(func)


class Ref:
    """Annotation marking a macro parameter passed by reference (accepted for compatibility)."""
