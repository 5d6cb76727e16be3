"""`T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)`: one tile of the
im2col matrix of a 2-D convolution.

Semantics (the public API's; one unit of knowledge for every target). `img` is an NHWC
tensor (N, H, W, C), `col` a (block_M, block_K) tile; the convolution has a square window
`kernel` × `kernel`, and `stride`, `dilation`, `pad` on both spatial dimensions, so the
output is OH × OW with `OH = (H + 2*pad - dilation*(kernel-1) - 1) // stride + 1` (OW
likewise). The im2col matrix has a row per output pixel, `m = (n*OH + oh)*OW + ow`, and a
column per window element, `k = (kh*kernel + kw)*C + c` (channels fastest, the layout of a
(KH, KW, C, F) weight viewed as (KH*KW*C, F)). The op writes

    col[i, j] = img[n, oh*stride + kh*dilation - pad, ow*stride + kw*dilation - pad, c]
        for m = nhw_step*block_M + i, k = c_step*block_K + j,

and 0 where that position lies in the padding or the row / column lies past the matrix
(m ≥ N*OH*OW or k ≥ kernel*kernel*C): a tile at the matrix's edge is zero-filled, so a
gemm over it adds nothing.

Accesses: reads `img` (anywhere: a gather), writes all of `col`. Layout constraints: none
of its own; `col` keeps whatever layout its consumers (a gemm) give it. Scheduling: in a
`T.Pipelined` loop it is a producer like a global → shared `T.copy` (`inject_pipeline`
multi-buffers `col` and issues it ahead, annotated `async`). Lowering: the reference ("c")
rule here is the loop nest above; CUDA's (`backend/cuda/im2col.py`) loads runs of channels
with predicated vector loads, as cp.async with zero fill when the op is `async`.
"""

from __future__ import annotations

from typing import Any

from ..ir.conv import Im2Col
from ..ir.expr import PrimExpr, binary, compare, const_int, logical_and, select
from ..ir.stmt import Stmt
from .base import LowerContext, dispatch, load, loop_nest, store


def geometry(op: Im2Col) -> dict:
    """The convolution's sizes as ints where static (N, H, W, C, OH, OW, K, S, D, P, BM, BK)."""
    n, h, w, c = op.img.buffer.shape
    k, s, d, p = (const_int(x) for x in (op.kernel, op.stride, op.dilation, op.pad))
    bm, bk = (const_int(x) for x in tile_extents(op))

    def out(x: Any) -> Any:
        return binary("add", binary("floordiv", binary("add", x, 2 * p - d * (k - 1) - 1), s), 1)

    return {"N": n, "H": h, "W": w, "C": c, "OH": out(h), "OW": out(w), "K": k, "S": s, "D": d, "P": p,
            "BM": bm, "BK": bk}  # fmt: skip


def tile_extents(op: Im2Col) -> tuple:
    """(block_M, block_K): the last two extents of `col`'s region (a multi-buffered tile has a
    leading stage index, `inject_pipeline`)."""
    return tuple(op.col.extents[-2:])


def col_index(op: Im2Col, i: PrimExpr, j: PrimExpr) -> tuple:
    """The index of element (i, j) of the tile in `col`'s buffer."""
    b = op.col.begins
    return tuple(b[:-2]) + (binary("add", b[-2], i), binary("add", b[-1], j))


def patch(op: Im2Col, i: PrimExpr, j: PrimExpr) -> tuple[PrimExpr, tuple]:
    """(valid, img indices) of `col[i, j]`."""
    g = geometry(op)
    m = binary("add", binary("mul", op.nhw_step, g["BM"]), i)
    kk = binary("add", binary("mul", op.c_step, g["BK"]), j)
    ohw = binary("mul", g["OH"], g["OW"])
    n = binary("floordiv", m, ohw)
    oh = binary("floordiv", binary("floormod", m, ohw), g["OW"])
    ow = binary("floormod", m, g["OW"])
    kc = g["K"]
    kh = binary("floordiv", kk, binary("mul", kc, g["C"]))
    kw = binary("floormod", binary("floordiv", kk, g["C"]), kc)
    c = binary("floormod", kk, g["C"])
    h = binary("sub", binary("add", binary("mul", oh, g["S"]), binary("mul", kh, g["D"])), g["P"])
    w = binary("sub", binary("add", binary("mul", ow, g["S"]), binary("mul", kw, g["D"])), g["P"])
    rows = binary("mul", g["N"], ohw)
    cols = binary("mul", kc * kc, g["C"])
    conds = [
        compare("lt", m, rows),
        compare("lt", kk, cols),
        compare("ge", h, 0),
        compare("lt", h, g["H"]),
        compare("ge", w, 0),
        compare("lt", w, g["W"]),
    ]
    valid = conds[0]
    for x in conds[1:]:
        valid = logical_and(valid, x)
    return valid, (n, h, w, c)


def lower_c(op: Im2Col, lctx: LowerContext) -> Stmt:
    img, col = op.img.buffer, op.col.buffer

    def body(iv: list) -> Stmt:
        valid, idx = patch(op, iv[0], iv[1])
        return store(col, col_index(op, iv[0], iv[1]), select(valid, load(img, idx), 0))

    return loop_nest(list(tile_extents(op)), body, "parallel")


RULES = {"c": lower_c}


def lower(op: Im2Col, lctx: LowerContext) -> Stmt:
    return dispatch(RULES, op, lctx)
