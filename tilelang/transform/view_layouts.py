"""view_layouts: a shared buffer and its views get one storage layout.

Requires: tile-level IR after `infer_layout` (`attrs["layout_map"]`), before anything
lowers shared accesses through layouts (`lower_threads`, `flatten_shared`).

Guarantees (the input is never modified): for every shared buffer with views
(`view_alias.py`), either no member of the group has a layout other than row-major, or
they all get the same layout: a swizzle that layout inference chose for one member (a
gemm operand, an annotated layout) is given to every member of the same shape and element
width (an int8 tile and its float8_e4m3fn view are the same bytes in the same order).
When members of different shapes or widths would need a swizzle, no one layout can serve
them all, and the pass stops with an `unsupported` error at the view.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..ir.expr import structural_equal
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate
from ..ir.visitor import collect
from ..layout import Layout
from .view_alias import alias_roots, storage_groups

SHARED_SCOPES = ("shared", "shared.dyn")


def view_layouts(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    roots = {v: r for v, r in alias_roots(func.body, func.params).items() if v.scope in SHARED_SCOPES}
    if not roots:
        return func
    layouts = dict(func.attrs.get("layout_map", {}) or {})
    spans = {a.buffer: a.span for a in collect(func.body, lambda n: isinstance(n, Allocate))}
    changed = False
    for root, views in storage_groups(roots).items():
        members = [root, *views]
        laid = [(m, layouts[m]) for m in members if isinstance(layouts.get(m), Layout) and not _row_major(layouts[m])]
        if not laid:
            continue
        owner, lay = laid[0]
        for m in members:
            if m is owner:
                continue
            if _same_storage(m, owner) and (m not in dict(laid) or layouts[m].is_equal(lay)):
                if layouts.get(m) is not lay:
                    layouts[m] = lay
                    changed = True
                continue
            view = m if m is not root else owner
            how = f"a {lay.meta['swizzle']} swizzle" if lay.meta.get("swizzle") else "a non-row-major layout"
            raise UnsupportedError(
                f"shared view `{view.name}` of `{root.name}`: `{owner.name}` is laid out with {how} (for a gemm "
                f"or an annotation), which `{m.name}` {list(map(str, m.shape))} {m.dtype} cannot share",
                spans.get(view, view.span),
                "give the view the same shape and element width as its base, or copy between separate buffers",
            )
    return func.with_attrs(layout_map=layouts) if changed else func


def _row_major(lay: Layout) -> bool:
    try:
        return lay.is_equal(Layout(tuple(lay.shape)))
    except Exception:  # noqa: BLE001 - a layout that cannot be compared is treated as a real one
        return False


def _same_storage(a, b) -> bool:
    return (
        a.dtype.bits * a.dtype.lanes == b.dtype.bits * b.dtype.lanes
        and len(a.shape) == len(b.shape)
        and all(structural_equal(x, y) for x, y in zip(a.shape, b.shape))
    )
