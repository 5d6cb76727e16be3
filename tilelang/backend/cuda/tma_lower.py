"""TMA copies (sm_90+): when a tile copy can go through the copy engine, and the per-thread code that issues it.

Contract of `tma_copy_stmt(src, dst, barrier, tc, span) -> Stmt` (used by the
explicit `T.tma_copy`, the automatic pipelines of `inject_pipeline` and TMA
store epilogues):

* global → shared (a load): thread 0 of the block (`tc.tx == 0`) executes
  `tl::mbarrier_expect_tx(barrier, bytes)` — `bytes` is the whole region, out of
  bounds parts included (they arrive as zeros) — followed by one
  `tl::tma_load(map, barrier, smem, coords...)` per box. No wait, no arrive:
  the caller owns the barrier's arrival count and phases. `barrier` is a
  `BufferLoad` of a `shared.barrier` element.
* shared → global (a store): thread 0 issues `tl::tma_store` per box and
  `tl::tma_store_arrive()` (commit of one bulk group). `barrier` must be None.
  The caller makes the shared data visible to the async proxy first (every
  writing thread: `tl::fence_proxy_async()`, then a block barrier) and waits
  (`tl::tma_store_wait<0>()` in thread 0) before the tile is overwritten or the
  block exits.
* `tc` is the `ThreadCtx` of `lower_threads.py`: its layouts decide the
  swizzle, `tc.func` the kernel parameter the tensor map describes, `tc.tx`
  the elected thread.
* When TMA cannot do the copy, `UnsupportedError(reason, span, hint)`.
  `tma_unsupported_reason(...)` answers the same question without raising (the
  automatic paths fall back to cp.async on a reason).

When TMA fits (`plan_tma_copy`): the global tensor is a kernel parameter with
the default contiguous strides, every stride but the innermost provably a
multiple of 16 bytes, the innermost start index provably 16-byte aligned (the
hardware raises "illegal instruction" otherwise), rank ≤ 5, a dtype TMA moves; the innermost dimensions of
both regions correspond; the shared region is whole dimensions of its buffer
(unit dimensions may select an index, e.g. a pipeline stage); the shared layout
is one of the hardware swizzles of `layout/swizzle.py` (32/64/128 B) with the
row count a multiple of 8. Those "panel" layouts are exactly what a box of
S bytes inner size writes: one box per S-byte panel of the rows (and per index
of the outer dimensions when there are several panels), each ≤ 256 elements per
dimension. A row-major shared tile has no alignment guarantee beyond 16 bytes
in our shared-memory plan, so it falls back.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from ...arith import Analyzer
from ...errors import UnsupportedError
from ...ir.buffer import Buffer, BufferRegion
from ...ir.dtype import int32
from ...ir.expr import BufferLoad, IntImm, PrimExpr, binary, cast, compare, const_int
from ...ir.span import Span
from ...ir.stmt import Evaluate, IfThenElse, Stmt, seq
from ...layout import SwizzleMode, detect_swizzle_mode
from .tensor_map import MAX_BOX, MAX_RANK, TensorMapSpec, data_type_enum, tensor_map_ref

SHARED_SCOPES = ("shared", "shared.dyn")
MAX_BOXES = 32  # more boxes than this per copy: the issuing thread would serialise too much


class TmaUnfit(Exception):
    """Why TMA cannot perform a copy (internal; surfaces as a reason string or an UnsupportedError)."""


@dataclass(frozen=True)
class TmaPlan:
    spec: TensorMapSpec
    boxes: tuple  # ((shared index tuple, coords innermost-first), ...)
    bytes: int  # all boxes together
    shared: Buffer
    is_load: bool


def _fail(msg: str) -> None:
    raise TmaUnfit(msg)


def _row_major_strides(shape: tuple) -> list:
    out, acc = [], None
    for d in reversed(shape[1:]):
        acc = d if acc is None else binary("mul", acc, d)
        out.append(acc)
    return list(reversed(out))  # stride (elements) of dims 0 .. rank-2


def plan_tma_copy(glob: BufferRegion, shared: BufferRegion, layout: Any, func: Any, is_load: bool = True) -> TmaPlan:
    """The tensor map and boxes of a copy between `glob` and `shared`; raises TmaUnfit."""
    gb, sb = glob.buffer, shared.buffer
    if gb.scope != "global" or sb.scope not in SHARED_SCOPES:
        _fail(f"TMA copies between global and shared memory, not {gb.scope} and {sb.scope}")
    if gb.dtype is not sb.dtype:
        _fail(f"the copy converts {gb.dtype} to {sb.dtype}")
    if data_type_enum(gb.dtype) is None:
        _fail(f"TMA cannot move elements of dtype {gb.dtype}")
    params = [i for i, p in enumerate(func.params) if p is gb]
    if not params:
        _fail(f"`{gb.name}` is not a tensor parameter of the kernel")
    if gb.strides is not None:
        _fail(f"`{gb.name}` has explicit strides")
    rank = len(gb.shape)
    if not 1 <= rank <= MAX_RANK:
        _fail(f"`{gb.name}` has rank {rank} (TMA handles 1 to {MAX_RANK})")
    elem = gb.dtype.bytes
    an = Analyzer()
    for d, st in enumerate(_row_major_strides(tuple(gb.shape))):
        if const_int(an.simplify(binary("floormod", binary("mul", st, elem), 16))) != 0:
            _fail(
                f"the stride of dimension {d} of `{gb.name}` ({st} elements of {elem} bytes) is not provably a "
                "multiple of 16 bytes"
            )
    # the hardware traps ("illegal instruction") on a box whose innermost start is not 16-byte aligned
    inner = glob.region[rank - 1].begin
    if const_int(an.simplify(binary("floormod", binary("mul", inner, elem), 16))) != 0:
        _fail(f"the innermost start index `{inner}` of the copy from `{gb.name}` is not provably 16-byte aligned")
    # shared region: unit dims (any index) or whole dims
    sshape = tuple(const_int(x) for x in sb.shape)
    if any(x is None for x in sshape):
        _fail(f"shared buffer `{sb.name}` has a dynamic shape")
    for r, n in zip(shared.region, sshape):
        e = const_int(r.extent)
        if e != 1 and not (const_int(r.begin) == 0 and e == n):
            _fail(f"the shared region of `{sb.name}` is not made of whole dimensions")
    gdims = [d for d, r in enumerate(glob.region) if const_int(r.extent) != 1]
    sdims = [d for d, r in enumerate(shared.region) if const_int(r.extent) != 1]
    if len(gdims) != len(sdims) or any(const_int(glob.region[g].extent) != sshape[s] for g, s in zip(gdims, sdims)):
        _fail("the global and shared regions do not have the same non-unit extents")
    if not sdims:
        _fail("a single-element copy")
    if sdims[-1] != len(sshape) - 1 or gdims[-1] != rank - 1:
        _fail("the innermost dimensions of the two regions do not correspond")
    # the shared layout must be a hardware swizzle of the per-index tile
    if layout is None:
        _fail(f"shared buffer `{sb.name}` has no layout")
    if layout.meta.get("padded"):
        _fail(f"shared buffer `{sb.name}` has padded rows")
    mode = detect_swizzle_mode(layout, sb.dtype)
    if mode is None or mode is SwizzleMode.NONE:
        _fail(f"shared buffer `{sb.name}` is not laid out in a 32/64/128-byte TMA swizzle")
    S = mode.swizzle_byte_size()
    if len(sshape) < 2 or sshape[-2] % 8:
        _fail(f"shared buffer `{sb.name}` needs a multiple of 8 rows for its {S}-byte swizzle")
    C = sshape[-1]
    s = S // elem  # elements per panel row
    panels = C // s
    s_to_g = dict(zip(sdims, gdims))
    # dims of the shared buffer a box spans whole; with several panels, outer dims are one box per index
    lead = [d for d in sdims[:-1] if d != len(sshape) - 2]
    split = lead if panels > 1 else []
    nboxes = panels * math.prod(sshape[d] for d in split)
    if nboxes > MAX_BOXES:
        _fail(f"the copy needs {nboxes} TMA boxes (at most {MAX_BOXES})")
    box_g = [1] * rank
    for sd, gd in s_to_g.items():
        box_g[gd] = 1 if sd in split else (s if sd == len(sshape) - 1 else sshape[sd])
    if any(b > MAX_BOX for b in box_g):
        _fail(f"a box dimension exceeds {MAX_BOX} elements ({box_g})")
    spec = TensorMapSpec(params[0], gb.name, str(gb.dtype), tuple(reversed(box_g)), mode.value)
    boxes = []
    for combo in itertools.product(range(panels), *(range(sshape[d]) for d in split)):
        p, idx = combo[0], dict(zip(split, combo[1:]))
        sidx = [r.begin for r in shared.region]
        coords = [r.begin for r in glob.region]
        sidx[-1] = IntImm(p * s)
        coords[rank - 1] = binary("add", coords[rank - 1], p * s) if p else coords[rank - 1]
        for d, i in idx.items():
            sidx[d] = IntImm(i)
            coords[s_to_g[d]] = binary("add", coords[s_to_g[d]], i) if i else coords[s_to_g[d]]
        boxes.append((tuple(sidx), tuple(_i32(c) for c in reversed(coords))))
    total = elem
    for n in (sshape[d] for d in sdims):
        total *= n
    return TmaPlan(spec, tuple(boxes), total, sb, is_load)


def _i32(e: PrimExpr) -> PrimExpr:
    return e if e.dtype is int32 else cast(e, int32)


def _regions(src: BufferRegion, dst: BufferRegion) -> tuple:
    if src.buffer.scope == "global":
        return src, dst, True
    return dst, src, False


def tma_unsupported_reason(src: BufferRegion, dst: BufferRegion, layout: Any, func: Any) -> str | None:
    """None when `T.copy(src, dst)` can be one TMA copy with the shared layout `layout`, else why not."""
    glob, shared, _ = _regions(src, dst)
    try:
        plan_tma_copy(glob, shared, layout, func)
    except TmaUnfit as e:
        return str(e)
    return None


def _call(name: str, *args: Any) -> Evaluate:
    from .lower_threads import tl_call

    return Evaluate(tl_call(name, *args))


def tma_copy_stmt(src: BufferRegion, dst: BufferRegion, barrier: PrimExpr | None, tc: Any, span: Span) -> Stmt:
    """Per-thread code of one TMA copy (see the module docstring for the contract)."""
    from .lower_threads import address_of

    glob, shared, is_load = _regions(src, dst)
    try:
        plan = plan_tma_copy(glob, shared, tc.shared_layout(shared.buffer), tc.func, is_load)
    except TmaUnfit as e:
        raise UnsupportedError(
            f"this copy cannot use TMA: {e}",
            span,
            "use T.copy (cp.async) instead, or a shared tile in a TMA swizzle "
            "(T.annotate_layout with make_swizzled_layout) and 16-byte aligned global strides",
        ) from None
    tmap = tensor_map_ref(plan.spec)
    body: list = []
    if is_load:
        if not isinstance(barrier, BufferLoad) or barrier.buffer.scope != "shared.barrier":
            raise UnsupportedError(
                "a TMA load needs `barrier=` an element of a T.alloc_barrier buffer", span, "pass barrier=bars[i]"
            )
        bar = address_of(barrier.buffer, barrier.indices)
        body.append(_call("tl::mbarrier_expect_tx", bar, IntImm(plan.bytes)))
        for sidx, coords in plan.boxes:
            body.append(_call("tl::tma_load", tmap, bar, address_of(plan.shared, sidx), *coords))
    else:
        if barrier is not None:
            raise UnsupportedError("a TMA store (shared → global) takes no barrier", span, "drop barrier=")
        for sidx, coords in plan.boxes:
            body.append(_call("tl::tma_store", tmap, address_of(plan.shared, sidx), *coords))
        body.append(_call("tl::tma_store_arrive"))
    return IfThenElse(compare("eq", tc.tx, 0), seq(*[_at(s, span) for s in body]), None, span)


def _at(s: Evaluate, span: Span) -> Evaluate:
    return Evaluate(s.value, span)


def pipeline_tma_copy(op: Any, tc: Any) -> Stmt:
    """A producer `Copy` of `inject_pipeline`'s TMA ring (annotations `tma_barrier`, and
    `tma_arrive` on the last producer of an iteration): the loads, then thread 0's one
    arrival on the barrier (its arrival count is 1) after every expect_tx of the iteration."""
    stmt = tma_copy_stmt(op.src, op.dst, op.annotations["tma_barrier"], tc, op.span)
    if not op.annotations.get("tma_arrive"):
        return stmt
    from .lower_threads import address_of

    bar = op.annotations["tma_barrier"]
    arrive = Evaluate(_call("tl::mbarrier_arrive", address_of(bar.buffer, bar.indices)).value, op.span)
    return IfThenElse(stmt.cond, seq(stmt.then_body, arrive), None, op.span)


def tma_store_stmt(op: Any, tc: Any) -> Stmt:
    """A `T.copy(shared → global)` marked `tma_store` (tma_store.py): fence + barrier in every
    thread, then thread 0 stores, commits and waits until the tile has been read — unless the
    copy is also marked `tma_store_async` (auto_persistent's staged epilogue), whose program
    waits itself, before it next writes the tile and before the block exits."""
    from .lower_threads import sync_stmt

    store = tma_copy_stmt(op.src, op.dst, None, tc, op.span)
    issue = store.then_body
    if not op.annotations.get("tma_store_async"):
        issue = seq(issue, Evaluate(_call("tl::tma_store_wait<0>").value, op.span))
    return seq(
        Evaluate(_call("tl::fence_proxy_async").value, op.span),
        sync_stmt(),
        IfThenElse(store.cond, issue, None, op.span),
    )


__all__ = [
    "TmaPlan",
    "TmaUnfit",
    "pipeline_tma_copy",
    "plan_tma_copy",
    "tma_copy_stmt",
    "tma_store_stmt",
    "tma_unsupported_reason",
]
