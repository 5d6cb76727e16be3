"""Tile operators: `T.copy`, `T.gemm`, `T.reduce_*`, `T.fill`/`T.clear`, `T.cumsum`,
atomics, reducers, `T.print`, `T.device_assert`, `T.annotate_layout`, `T.use_swizzle`.

Builders only: each checks its operands (shapes, scopes) with spans and emits
one tile-op statement; lowering lives in `tilelang.tileop`.
"""

from __future__ import annotations

import enum
from typing import Any

from ..errors import DSLError, UnsupportedError
from ..frontend.builder import Builder
from ..ir.buffer import Buffer, BufferRegion
from ..ir.expr import BufferLoad, IntImm, PrimExpr, as_expr, cast, const_int
from ..ir.node import FrozenDict
from ..ir.stmt import (
    AnnotateLayout,
    Atomic,
    BufferStore,
    Copy,
    CumSum,
    DeviceAssert,
    Fill,
    FinalizeReducer,
    Gemm,
    Hint,
    Print,
    Reduce,
    ReducerInit,
    ReducerUpdate,
)
from .regions import check_same_extents as _check_same_extents
from .regions import fmt_extents as _fmt
from .regions import to_region


class GemmWarpPolicy(enum.IntEnum):
    """How `T.gemm` spreads the block's warps over the M×N tile: `Square`, `FullRow` or `FullCol`."""

    Square = 0
    FullRow = 1
    FullCol = 2


def _b(what: str) -> Builder:
    b = Builder.require(what)
    b.require_kernel(what)
    return b


def copy(
    src: Any,
    dst: Any,
    *,
    coalesced_width: Any = None,
    disable_tma: bool = False,
    eviction_policy: Any = None,
    prefer_instruction: Any = None,
    annotations: dict | None = None,
    loop_layout: Any = None,
) -> None:
    """Copy a tile from `src` to `dst` (global, shared or fragment); the compiler picks the instructions (TMA, cp.async, vector loads)."""
    b = _b("T.copy")
    if isinstance(src, BufferLoad) and isinstance(dst, BufferLoad):
        b.emit(BufferStore(dst.buffer, dst.indices, cast(src, dst.buffer.dtype)))
        return
    if isinstance(src, (int, float, PrimExpr)) and not isinstance(src, BufferLoad):
        raise DSLError("T.copy source must be a buffer or region", None, "use T.fill(dst, value) to write a constant")
    if isinstance(src, BufferLoad):
        d = to_region(dst, "T.copy")
        s = to_region(src, "T.copy", d.extents)
    else:
        s = to_region(src, "T.copy")
        d = to_region(dst, "T.copy", s.extents)
    _check_same_extents("T.copy", s, d)
    ann = dict(annotations or {})
    ann.update(
        coalesced_width=coalesced_width,
        disable_tma=disable_tma or None,
        eviction_policy=eviction_policy,
        prefer_instruction=prefer_instruction,
        loop_layout=loop_layout,
    )
    b.emit(Copy(s, d, FrozenDict({k: v for k, v in ann.items() if v is not None})))


def async_copy(src: Any, dst: Any, **kw: Any) -> None:
    """`T.copy` that may use asynchronous copies (cp.async / TMA); same arguments."""
    copy(src, dst, annotations={"async": True}, **kw)


def _mat(r: BufferRegion, what: str, name: str) -> tuple:
    ext = list(r.extents)
    while len(ext) > 2 and const_int(ext[0]) == 1:
        ext.pop(0)
    if len(ext) != 2:
        raise DSLError(
            f"{what}: operand {name} (`{r.buffer.name}`) must be a 2-D tile, got extents {_fmt(r.extents)}",
            None,
            "slice a 2-D tile",
        )
    return tuple(ext)


def gemm(
    A: Any,
    B: Any,
    C: Any,
    transpose_A: bool = False,
    transpose_B: bool = False,
    policy: Any = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    mbar: Any = None,
    annotations: dict | None = None,
    wg_wait: int = 0,
) -> None:
    """`C += A @ B` on tiles (A, B in shared memory or registers, C a fragment), with tensor-core instructions where the target has them."""
    b = _b("T.gemm")
    ra, rb, rc = to_region(A, "T.gemm"), to_region(B, "T.gemm"), to_region(C, "T.gemm")
    (a0, a1), (b0, b1), (c0, c1) = _mat(ra, "T.gemm", "A"), _mat(rb, "T.gemm", "B"), _mat(rc, "T.gemm", "C")
    m, ka = (a1, a0) if transpose_A else (a0, a1)
    kb, n = (b1, b0) if transpose_B else (b0, b1)
    dims = [const_int(x) for x in (m, ka, kb, n, c0, c1)]
    M, KA, KB, N, CM, CN = dims
    problems = []
    if KA is not None and KB is not None and KA != KB:
        problems.append(f"K of A is {KA} but K of B is {KB}")
    if M is not None and CM is not None and M != CM:
        problems.append(f"M of A is {M} but C has {CM} rows")
    if N is not None and CN is not None and N != CN:
        problems.append(f"N of B is {N} but C has {CN} columns")
    if problems:
        raise DSLError(
            f"T.gemm operand shapes disagree: A {_fmt(ra.extents)}{' (transposed)' if transpose_A else ''}, "
            f"B {_fmt(rb.extents)}{' (transposed)' if transpose_B else ''}, C {_fmt(rc.extents)}: "
            + "; ".join(problems),
            None,
            "A is (M, K) (or (K, M) with transpose_A), B is (K, N) (or (N, K) with transpose_B), C is (M, N)",
        )
    if not (rc.buffer.is_fragment or rc.buffer.scope == "local"):
        raise DSLError(
            f"T.gemm accumulator `{rc.buffer.name}` must be a fragment (T.alloc_fragment), not {rc.buffer.scope}", None
        )
    for nm, r in (("A", ra), ("B", rb)):
        if r.buffer.scope == "global":
            raise DSLError(
                f"T.gemm operand {nm} (`{r.buffer.name}`) is in global memory",
                None,
                "T.copy it into T.alloc_shared first",
            )
    pol = GemmWarpPolicy(int(policy)).name if not isinstance(policy, str) else policy
    ann = dict(annotations or {})
    if mbar is not None:
        ann["mbar"] = mbar
    b.emit(Gemm(ra, rb, rc, bool(transpose_A), bool(transpose_B), pol, bool(clear_accum), int(k_pack), FrozenDict(ann)))


def _reduce(
    kind: str,
    buffer: Any,
    out: Any,
    dim: int,
    clear: bool,
    nan_propagate: bool = False,
    annotations: dict | None = None,
    batch: int = 1,
) -> None:
    b = _b(f"T.reduce_{kind}")
    src, dst = to_region(buffer, f"T.reduce_{kind}"), to_region(out, f"T.reduce_{kind}")
    nd = len(src.extents)
    d = dim + nd if dim < 0 else dim
    if not 0 <= d < nd:
        raise DSLError(f"T.reduce_{kind}: dim={dim} is out of range for a {nd}-D input", None, f"use 0..{nd - 1} or -1")
    want_drop = [e for i, e in enumerate(src.extents) if i != d]
    want_keep = [IntImm(1) if i == d else e for i, e in enumerate(src.extents)]
    got = list(dst.extents)

    def same(x: list, y: list) -> bool:
        return len(x) == len(y) and all(
            const_int(p) is None or const_int(q) is None or const_int(p) == const_int(q) for p, q in zip(x, y)
        )

    ok = same(got, want_drop) or same(got, want_keep) or (not want_drop and [const_int(e) for e in got] == [1])
    if not ok:
        raise DSLError(
            f"T.reduce_{kind}: output `{dst.buffer.name}` has shape {_fmt(dst.extents)} but reducing "
            f"{_fmt(src.extents)} along dim {d} gives {_fmt(tuple(want_drop)) if want_drop else '[1]'}",
            None,
            f"allocate the output with the input's shape without dim {d} (or with it set to 1)",
        )
    ann = dict(annotations or {})
    if batch != 1:
        ann["batch"] = batch
    b.emit(Reduce(kind, src, dst, d, bool(clear), bool(nan_propagate), FrozenDict(ann)))


def reduce(
    buffer: Any,
    out: Any,
    reduce_type: str,
    dim: int,
    clear: bool,
    batch: int = 1,
    nan_propagate: bool = False,
    annotations: dict | None = None,
) -> None:
    """Reduce `buffer` along `dim` into `out` with `reduce_type` (sum, max, min, ...)."""
    _reduce(reduce_type, buffer, out, dim, clear, nan_propagate, annotations, batch)


def reduce_sum(
    buffer: Any, out: Any, dim: int = -1, clear: bool = True, batch: int = 1, annotations: dict | None = None
) -> None:
    """Sum of `buffer` along `dim`, written to `out` (added to it when `clear=False`)."""
    _reduce("sum", buffer, out, dim, clear, False, annotations, batch)


def reduce_max(
    buffer: Any,
    out: Any,
    dim: int = -1,
    clear: bool = True,
    batch: int = 1,
    nan_propagate: bool = False,
    annotations: dict | None = None,
) -> None:
    """Maximum of `buffer` along `dim`, written to `out` (combined with it when `clear=False`)."""
    _reduce("max", buffer, out, dim, clear, nan_propagate, annotations, batch)


def reduce_min(
    buffer: Any,
    out: Any,
    dim: int = -1,
    clear: bool = True,
    batch: int = 1,
    nan_propagate: bool = False,
    annotations: dict | None = None,
) -> None:
    """Minimum of `buffer` along `dim`, written to `out` (combined with it when `clear=False`)."""
    _reduce("min", buffer, out, dim, clear, nan_propagate, annotations, batch)


def reduce_absmax(
    buffer: Any,
    out: Any,
    dim: int = -1,
    clear: bool = True,
    batch: int = 1,
    nan_propagate: bool = False,
    annotations: dict | None = None,
) -> None:
    """Maximum absolute value of `buffer` along `dim`, written to `out`."""
    _reduce("absmax", buffer, out, dim, clear, nan_propagate, annotations, batch)


def reduce_abssum(buffer: Any, out: Any, dim: int = -1, batch: int = 1, annotations: dict | None = None) -> None:
    """Sum of absolute values of `buffer` along `dim`, written to `out`."""
    _reduce("abssum", buffer, out, dim, True, False, annotations, batch)


def reduce_bitand(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> None:
    """Bitwise AND of `buffer` along `dim`, written to `out`."""
    _reduce("bitand", buffer, out, dim, clear)


def reduce_bitor(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> None:
    """Bitwise OR of `buffer` along `dim`, written to `out`."""
    _reduce("bitor", buffer, out, dim, clear)


def reduce_bitxor(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> None:
    """Bitwise XOR of `buffer` along `dim`, written to `out`."""
    _reduce("bitxor", buffer, out, dim, clear)


def reduce_mean(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> None:
    """Mean of `buffer` along `dim`, written to `out`."""
    raise UnsupportedError(
        "T.reduce_mean is not provided", None, "use T.reduce_sum and divide by the extent in a T.Parallel loop"
    )


def fill(buffer: Any, value: Any, annotations: dict | None = None) -> None:
    """Set every element of the tile `buffer` to `value`."""
    b = _b("T.fill")
    r = to_region(buffer, "T.fill")
    b.emit(Fill(r, cast(as_expr(value, r.dtype), r.dtype), FrozenDict(annotations or {})))


def clear(buffer: Any, annotations: dict | None = None) -> None:
    """Set every element of the tile `buffer` to zero."""
    fill(buffer, 0, annotations)


def cumsum(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False, annotations: dict | None = None) -> None:
    """Inclusive prefix sum of `src` along `dim` (reversed when `reverse=True`), into `dst` (default: in place)."""
    b = _b("T.cumsum")
    s = to_region(src, "T.cumsum")
    d = s if dst is None else to_region(dst, "T.cumsum")
    _check_same_extents("T.cumsum", s, d)
    nd = len(s.extents)
    dd = dim + nd if dim < 0 else dim
    if not 0 <= dd < nd:
        raise DSLError(f"T.cumsum: dim={dim} out of range for a {nd}-D input", None)
    b.emit(CumSum(s, d, dd, bool(reverse), "sum", FrozenDict(annotations or {})))


def _atomic(kind: str, dst: Any, value: Any, memory_order: Any, return_prev: bool) -> None:
    b = _b(f"T.atomic_{kind}")
    if return_prev:
        raise UnsupportedError(
            f"T.atomic_{kind}(..., return_prev=True) is not supported yet", None, "read the value separately"
        )
    if isinstance(value, (Buffer, BufferRegion)):
        v = to_region(value, f"T.atomic_{kind}")
        d = to_region(dst, f"T.atomic_{kind}", v.extents)
        _check_same_extents(f"T.atomic_{kind}", v, d)
        b.emit(Atomic(kind, d, v, memory_order))
        return
    if isinstance(dst, BufferLoad):
        d = to_region(dst, f"T.atomic_{kind}")
        b.emit(Atomic(kind, d, cast(as_expr(value, dst.buffer.dtype), dst.buffer.dtype), memory_order))
        return
    raise DSLError(f"T.atomic_{kind}: destination must be an element `C[i, j]` or, with a tile value, a region", None)


def atomic_add(
    dst: Any,
    value: Any,
    memory_order: Any = None,
    return_prev: bool = False,
    use_tma: bool = False,
    annotations: dict | None = None,
) -> None:
    """Atomically add `value` (a scalar or a tile) to `dst`; with `return_prev=True` returns the old value."""
    _atomic("add", dst, value, memory_order, return_prev)


def atomic_max(
    dst: Any, value: Any, memory_order: Any = None, return_prev: bool = False, annotations: dict | None = None
) -> None:
    """Atomically set `dst` to the maximum of itself and `value`."""
    _atomic("max", dst, value, memory_order, return_prev)


def atomic_min(
    dst: Any, value: Any, memory_order: Any = None, return_prev: bool = False, annotations: dict | None = None
) -> None:
    """Atomically set `dst` to the minimum of itself and `value`."""
    _atomic("min", dst, value, memory_order, return_prev)


def atomic_addx2(dst: Any, value: Any, return_prev: bool = False) -> None:
    """Atomic add of two adjacent 16-bit values (one packed 32-bit atomic)."""
    _atomic("add", dst, value, None, return_prev)


atomic_addx4 = atomic_addx2


def _reducer_buffer(x: Any, what: str) -> Buffer:
    buf = x.buffer if isinstance(x, BufferLoad) else x
    if not isinstance(buf, Buffer) or buf.scope != "local.reducer":
        raise DSLError(f"{what} expects a buffer from T.alloc_reducer", None)
    return buf


def reducer_init(reducer: Any, init: Any = None) -> None:
    """Reset a `T.alloc_reducer` tile to its operation's identity (or to `init`)."""
    b = _b("T.reducer_init")
    b.emit(ReducerInit(_reducer_buffer(reducer, "T.reducer_init")))


def reducer_update(target: Any, value: Any) -> None:
    """Combine `value` into a reducer element `target` with the reducer's operation."""
    b = _b("T.reducer_update")
    if not isinstance(target, BufferLoad):
        raise DSLError("T.reducer_update expects an element of a reducer, e.g. acc[i]", None)
    buf = _reducer_buffer(target, "T.reducer_update")
    b.emit(ReducerUpdate(buf, target.indices, cast(as_expr(value, buf.dtype), buf.dtype)))


def finalize_reducer(reducer: Any, dst: Any = None, batch: int = 1, annotations: dict | None = None) -> None:
    """Combine the per-thread copies of a reducer so that every thread reads the total (into `dst` if given)."""
    b = _b("T.finalize_reducer")
    buf = _reducer_buffer(reducer, "T.finalize_reducer")
    out = buf if dst is None else dst
    if not isinstance(out, Buffer):
        raise DSLError("T.finalize_reducer destination must be a buffer (T.alloc_fragment)", None)
    b.emit(FinalizeReducer(buf, out))


def print(obj: Any = None, msg: str = "", warp_group_id: int = 0, warp_id: int = 0) -> None:  # noqa: A001
    """Print `obj` (a buffer or a value) with `msg` from the device, once per block."""
    b = _b("T.print")
    if obj is not None and not isinstance(obj, (Buffer, PrimExpr)):
        obj = as_expr(obj)
    b.emit(Print(obj, str(msg), FrozenDict({"warp_group_id": warp_group_id, "warp_id": warp_id})))


def device_assert(condition: Any, msg: str = "", no_stack_info: bool = False) -> None:
    """Stop the kernel with `msg` when `condition` is false on any thread."""
    b = _b("T.device_assert")
    c = as_expr(condition)
    if not c.dtype.is_bool:
        c = c != 0
    b.emit(DeviceAssert(c, str(msg)))


def annotate_layout(layout_map: dict) -> None:
    """Fix the layout of buffers: `{buffer: layout}`; layout inference keeps these."""
    b = _b("T.annotate_layout")
    pairs = []
    for buf, lay in layout_map.items():
        if not isinstance(buf, Buffer):
            raise DSLError("T.annotate_layout keys must be buffers", None)
        if callable(lay) and not hasattr(lay, "get_forward_index"):
            from ..layout import Layout

            lay = Layout(buf.static_shape or buf.shape, lay)
        pairs.append((buf, lay))
    b.emit(AnnotateLayout(tuple(pairs)))


def use_swizzle(panel_size: int = 8, order: str = "row", enable: bool = True) -> None:
    """Reorder the blocks in panels of `panel_size` for L2 reuse (block rasterization)."""
    b = _b("T.use_swizzle")
    if order not in ("row", "column", "mlx"):
        raise DSLError(f"T.use_swizzle order must be 'row', 'column' or 'mlx', got {order!r}", None)
    # enable=False is recorded too (panel 0, the identity order): it opts out of auto_rasterize
    b.emit(Hint("use_swizzle", FrozenDict(panel_size=int(panel_size) if enable else 0, order=order)))


def annotate_pass_configs(configs: dict) -> None:
    """Per-kernel compiler switches set from inside the kernel (`{key: value}`, as `pass_configs=`)."""
    b = Builder.require("T.annotate_pass_configs")
    b.attrs["pass_configs"] = {**b.attrs.get("pass_configs", {}), **configs}


def annotate_compile_flags(flags: Any) -> None:
    """Extra compiler flags for this kernel (nvcc / cc)."""
    b = Builder.require("T.annotate_compile_flags")
    flags = [flags] if isinstance(flags, str) else list(flags)
    b.attrs["compile_flags"] = tuple(b.attrs.get("compile_flags", ())) + tuple(flags)
