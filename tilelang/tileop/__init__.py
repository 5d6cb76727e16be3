"""Tile operators: their semantics and per-target lowering rules.

One module per op family — `copy`, `fill`, `gemm`, `reduce`, `cumsum`,
`atomic`, `reducer`, `print` (T.print / T.device_assert), `annotate`
(T.annotate_layout / hints), `hopper` (T.tma_copy and the explicit barrier /
fence / setmaxnreg / cluster statements). Each has `RULES` dicts keyed by target kind
whose functions map `(op, LowerContext) -> Stmt`, and a `lower(op, lctx)`
that dispatches on `lctx.kind` (raising `UnsupportedError` at the op's span
when the target has no rule). The "c" rules are the reference semantics.
"""

from __future__ import annotations

from ..ir.conv import Im2Col
from ..ir.stmt import (
    AnnotateLayout,
    Atomic,
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
    Stmt,
    SyncOp,
    TileOp,
    TmaCopy,
)
from . import annotate, atomic, copy, cumsum, fill, gemm, hopper, im2col, reduce, reducer
from . import print as print_ops
from .base import IN_BOUNDS, LowerContext, target_kind

FAMILIES = {
    Copy: copy,
    Fill: fill,
    Gemm: gemm,
    Reduce: reduce,
    CumSum: cumsum,
    Atomic: atomic,
    ReducerInit: reducer,
    ReducerUpdate: reducer,
    FinalizeReducer: reducer,
    Print: print_ops,
    DeviceAssert: print_ops,
    AnnotateLayout: annotate,
    Hint: annotate,
    TmaCopy: hopper,
    SyncOp: hopper,
    Im2Col: im2col,
}


def lower(op: TileOp, lctx: LowerContext) -> Stmt:
    """The lowering of one tile op for `lctx.target`."""
    family = FAMILIES.get(type(op))
    if family is None:
        from ..errors import UnsupportedError

        raise UnsupportedError(f"no lowering is known for tile op {type(op).__name__}", op.span)
    return family.lower(op, lctx)


__all__ = ["FAMILIES", "IN_BOUNDS", "LowerContext", "lower", "target_kind"]


def __getattr__(name: str):
    if name == "GemmWarpPolicy":  # the public `tilelang.tileop.GemmWarpPolicy`: the enum `T.GemmWarpPolicy`
        from ..language.ops import GemmWarpPolicy

        return GemmWarpPolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
