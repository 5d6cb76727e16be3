"""`T.im2col` (and its deprecated alias `T.c2d_im2col`): one tile of a 2-D convolution's
im2col matrix. Builder only; semantics and lowering: `tileop/im2col.py`."""

from __future__ import annotations

from typing import Any

from ..errors import DSLError
from ..frontend.builder import Builder
from ..ir.buffer import Buffer
from ..ir.conv import Im2Col
from ..ir.expr import IntImm, PrimExpr, as_expr, const_int
from ..ir.node import FrozenDict

EVICTION_POLICIES = ("evict_normal", "evict_first", "evict_last")


def _param(x: Any, name: str, minimum: int, span: Any) -> IntImm:
    v = x.value if isinstance(x, IntImm) else x
    if isinstance(v, bool) or not isinstance(v, int):
        raise DSLError(
            f"T.im2col: `{name}` must be a compile-time integer (one value for both spatial dimensions), got {x!r}",
            span,
            f"pass a Python int, e.g. {name}={max(minimum, 1)}",
        )
    if v < minimum:
        raise DSLError(f"T.im2col: `{name}` must be ≥ {minimum}, got {v}", span)
    return IntImm(v)


def im2col(
    img: Any,
    col: Any,
    nhw_step: Any,
    c_step: Any,
    kernel: int,
    stride: int,
    dilation: int,
    pad: int,
    eviction_policy: str | None = None,
    annotations: dict | None = None,
) -> None:
    """Load tile (`nhw_step`, `c_step`) of the im2col matrix of `img` (N, H, W, C) into `col`
    (block_M, block_K): `col[i, j] = img[n, oh*stride + kh*dilation - pad, ow*stride + kw*dilation - pad, c]`
    for row `m = nhw_step*block_M + i` = (n, oh, ow) of the output and column
    `k = c_step*block_K + j` = (kh, kw, c) of the kernel window (channels fastest), zero where
    the window leaves the image or the tile leaves the matrix."""
    b = Builder.require("T.im2col")
    b.require_kernel("T.im2col")
    span = b.span_here()
    if not isinstance(img, Buffer) or img.scope != "global" or img.ndim != 4:
        raise DSLError(
            f"T.im2col: `img` must be a 4-D global tensor (N, H, W, C), got {img!r}",
            span,
            "pass the NHWC input tensor itself",
        )
    if not isinstance(col, Buffer) or col.scope not in ("shared", "shared.dyn") or col.ndim != 2:
        raise DSLError(
            f"T.im2col: `col` must be a 2-D shared tile (block_M, block_K), got {col!r}",
            span,
            "allocate it with T.alloc_shared((block_M, block_K), dtype)",
        )
    if col.static_shape is None:
        raise DSLError(f"T.im2col: `col` needs a compile-time shape, got {list(map(str, col.shape))}", span)
    if eviction_policy is not None and eviction_policy not in EVICTION_POLICIES:
        raise DSLError(
            f"T.im2col: eviction_policy must be one of {', '.join(EVICTION_POLICIES)}, got {eviction_policy!r}", span
        )
    if eviction_policy is not None:
        from ..pass_config import warn_once

        warn_once(
            "im2col.eviction_policy",
            "T.im2col: eviction_policy is a cache hint of the TMA im2col load; this compiler loads the tile "
            "with ordinary (vector) loads and does not apply it",
            UserWarning,
        )
    steps = []
    for name, v in (("nhw_step", nhw_step), ("c_step", c_step)):
        e = as_expr(v)
        if not isinstance(e, PrimExpr) or not e.dtype.is_integer:
            raise DSLError(f"T.im2col: `{name}` must be an integer (a tile index), got {v!r}", span)
        c = const_int(e)
        if c is not None and c < 0:
            raise DSLError(f"T.im2col: `{name}` must be ≥ 0, got {c}", span)
        steps.append(e)
    op = Im2Col(
        img.full_region(),
        col.full_region(),
        steps[0],
        steps[1],
        _param(kernel, "kernel", 1, span),
        _param(stride, "stride", 1, span),
        _param(dilation, "dilation", 1, span),
        _param(pad, "pad", 0, span),
        FrozenDict(dict(annotations or {})),
        span,
    )
    b.emit(op)


def c2d_im2col(
    img: Any,
    col: Any,
    nhw_step: Any,
    c_step: Any,
    kernel: int,
    stride: int,
    dilation: int,
    pad: int,
    eviction_policy: str | None = None,
    annotations: dict | None = None,
) -> None:
    """Deprecated alias of `T.im2col`."""
    im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy, annotations)
