"""The `T.im2col` tile operator's IR node (semantics and lowering: `tileop/im2col.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from .buffer import BufferRegion
from .expr import PrimExpr
from .node import EMPTY, FrozenDict, span_field
from .span import Span
from .stmt import TileOp


@dataclass(frozen=True, eq=False)
class Im2Col(TileOp):
    """`T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)`: tile
    (`nhw_step`, `c_step`) of the im2col matrix of the NHWC image `img` into `col`
    (block_M × block_K); `kernel`, `stride`, `dilation`, `pad` are square (one int each)."""

    img: BufferRegion
    col: BufferRegion
    nhw_step: PrimExpr
    c_step: PrimExpr
    kernel: PrimExpr
    stride: PrimExpr
    dilation: PrimExpr
    pad: PrimExpr
    annotations: FrozenDict = EMPTY
    span: Span = span_field()

    # A global → shared load like `T.copy`: passes that schedule loads (inject_pipeline's
    # producers) read its source and destination under a copy's names.
    @property
    def src(self) -> BufferRegion:
        return self.img

    @property
    def dst(self) -> BufferRegion:
        return self.col
