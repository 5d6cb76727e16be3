"""plan_tma_stores: shared → global tile copies that become TMA stores (sm_90+).

Requires: tile-level IR after `infer_layout` (`attrs["layout_map"]`,
`attrs["layout_origin"]`); `ctx` holds the CUDA `target` and `pass_configs`.

Guarantees: an equivalent PrimFunc (the input is never modified). On sm_90+,
unless `pass_configs["tl.disable_tma_lower"]`, every `T.copy(shared → global)`
outside `T.Pipelined` loops that TMA can perform (`tma_lower.plan_tma_copy`;
not `disable_tma=True`) is annotated `tma_store=True`; its CUDA rule
(`tma_store_stmt`) then writes: every thread `tl::fence_proxy_async()` (its
ordinary shared stores become visible to the copy engine), a block barrier,
and in thread 0 the TMA store(s), `tl::tma_store_arrive()` and
`tl::tma_store_wait<0>()` (the tile may be reused or the block may exit).
A staging tile that only `T.copy` touches and that got the default row-major
layout is switched to the widest swizzle that fits (TMA needs one; the
fragment → shared copy works with any layout), recorded in `layout_origin`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...ir.decisions import CopyDecision, record
from ...ir.function import PrimFunc
from ...ir.node import FrozenDict
from ...ir.stmt import Copy, For, Stmt
from ...ir.visitor import Mutator, collect
from ...layout import SwizzleMode, choose_swizzle_mode, make_swizzled_layout
from ...pass_config import in_force
from ...transform.context import CompileContext
from ..target import target_of
from .tma_lower import tma_unsupported_reason

SHARED_SCOPES = ("shared", "shared.dyn")


def _enabled(func: PrimFunc, ctx: CompileContext) -> bool:
    cfg = in_force(func, ctx)
    if cfg.get("tl.disable_tma_lower"):
        return False
    t = target_of(func, ctx)
    return t is not None and t.kind == "cuda" and t.sm >= 90


def plan_tma_stores(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    ctx = CompileContext.of(ctx)
    if not _enabled(func, ctx):
        return func
    stores = collect(
        func.body,
        lambda n: (
            isinstance(n, Copy)
            and n.src.buffer.scope in SHARED_SCOPES
            and n.dst.buffer.scope == "global"
            and not n.annotations.get("disable_tma")
        ),
    )
    if not stores:
        return func
    in_pipelines = {
        id(c) for f in collect(func.body, lambda n: isinstance(n, For) and n.kind == "pipelined") for c in _copies(f)
    }
    layouts = dict(func.attrs.get("layout_map", {}) or {})
    origin = dict(func.attrs.get("layout_origin", {}) or {})
    chosen: set = set()
    for c in stores:
        if id(c) in in_pipelines:
            continue
        buf = c.src.buffer
        lay = layouts.get(buf)
        swizzled = _staging_swizzle(func, buf, lay, origin)
        if tma_unsupported_reason(c.src, c.dst, lay, func) is None:
            chosen.add(id(c))
        elif swizzled is not None and tma_unsupported_reason(c.src, c.dst, swizzled, func) is None:
            layouts[buf] = swizzled
            why, span = origin.get(buf, ("", c.span))
            origin[buf] = ("TMA store staging tile (swizzled)", span)
            chosen.add(id(c))
    if not chosen:
        return func
    body = _Mark(chosen).visit(func.body)
    out = func.with_body(body).with_attrs(layout_map=layouts, layout_origin=origin)
    return record(out, *(CopyDecision(c.span, "tma_store", by="plan_tma_stores") for c in stores if id(c) in chosen))


def _copies(node: Any) -> list:
    return collect(node, lambda n: isinstance(n, Copy))


def _staging_swizzle(func: PrimFunc, buf: Any, lay: Any, origin: dict) -> Any:
    """The swizzled layout for a row-major staging tile only copies touch, else None."""
    if lay is None or origin.get(buf, ("",))[0] != "row-major" or len(buf.shape) < 2:
        return None
    users = collect(func.body, lambda n: _mentions(n, buf))
    if any(not isinstance(u, Copy) for u in users):
        return None
    try:
        shape = tuple(int(d) for d in (x.value for x in buf.shape))
    except AttributeError:
        return None
    if choose_swizzle_mode(shape, buf.dtype) is SwizzleMode.NONE:
        return None
    return make_swizzled_layout(shape, dtype=buf.dtype)


def _mentions(n: Any, buf: Any) -> bool:
    """`n` is a statement (not a container) that reads or writes `buf`."""
    from ...ir.stmt import Allocate, AnnotateLayout, BufferStore, Evaluate, TileOp

    if isinstance(n, (TileOp, BufferStore, Evaluate)):
        from ...ir.expr import BufferLoad

        hits = collect(
            n, lambda x: (isinstance(x, BufferLoad) and x.buffer is buf) or getattr(x, "buffer", None) is buf
        )
        return bool(hits)
    if isinstance(n, AnnotateLayout):
        return any(b is buf for b, _ in n.layouts)
    return isinstance(n, Allocate) and False


class _Mark(Mutator):
    def __init__(self, chosen: set) -> None:
        super().__init__()
        self.chosen = chosen

    def visit_Copy(self, n: Copy) -> Stmt:
        if id(n) not in self.chosen:
            return n
        return replace(n, annotations=FrozenDict({**dict(n.annotations), "tma_store": True}))


__all__ = ["plan_tma_stores"]
