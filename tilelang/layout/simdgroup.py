"""Register layouts of `T.gemm` tiles on Metal's 8×8 `simdgroup_matrix` (backend/metal/gemm.py).

Apple documents what `simdgroup_load` / `simdgroup_multiply_accumulate` compute, not which lane
holds which element of a `simdgroup_matrix`, so these layouts say where the elements live in
*our* registers between gemms — a true statement the editor can show — and the gemm moves each
8×8 block through a per-SIMD-group threadgroup staging tile into the instruction's matrices.

The tile is cut into 8×8 blocks; SIMD-group (sm, sn) of a grid gm × gn owns the block rows
[sm·R, (sm+1)·R) and block columns [sn·Cb, (sn+1)·Cb) (R = M/8/gm, Cb = N/8/gn); inside a
block, element (r, c) is held by lane (8r + c) // 2 at its `e = (8r + c) % 2`-th slot, so every
lane holds 2 elements per block and a block is staged by its own SIMD-group (no threadgroup
barrier). A register A operand (M×K) uses the same map with gn = 1: the SIMD-group that
accumulates a row band holds that band of A."""

from __future__ import annotations

from typing import Any

from ..ir.dtype import DataType
from ..ir.expr import Var, binary
from .fragment import Fragment

SIMD = 32
BLOCK = 8


def simdgroup_grid(block_m: int, block_n: int, groups: int, rows_only: bool = False) -> tuple:
    """(gm, gn): the most SIMD-groups along M that divide the block rows, the rest along N.
    ValueError when the 8×8 blocks cannot be shared out evenly (or, `rows_only`, not by rows)."""
    if block_m % BLOCK or block_n % BLOCK:
        raise ValueError(f"a simdgroup_matrix gemm tile is cut into 8×8 blocks; {block_m}×{block_n} is not")
    bm, bn = block_m // BLOCK, block_n // BLOCK
    for gm in range(min(groups, bm), 0, -1):
        if groups % gm or bm % gm:
            continue
        gn = groups // gm
        if bn % gn == 0 and (gn == 1 or not rows_only):
            return gm, gn
    how = "block rows" if rows_only else "8×8 blocks"
    raise ValueError(
        f"{groups} SIMD-groups cannot share the {how} of a {block_m}×{block_n} tile evenly; "
        "use threads = 32 × a divisor of the tile's 8-row blocks"
    )


def make_simdgroup_fragment(
    rows: int, cols: int, grid: tuple, dtype: Any = "float32", what: str = "accumulator"
) -> Fragment:
    """The `rows`×`cols` tile over SIMD-group grid `grid` = (gm, gn) (see the module doc)."""
    DataType(dtype)
    gm, gn = grid
    R, Cb = rows // BLOCK // gm, cols // BLOCK // gn
    i, j = Var("i"), Var("j")
    tm, tn = binary("floordiv", i, BLOCK), binary("floordiv", j, BLOCK)
    idx = binary("add", binary("mul", binary("floormod", i, BLOCK), BLOCK), binary("floormod", j, BLOCK))
    lane, e = binary("floordiv", idx, 2), binary("floormod", idx, 2)
    group = binary("add", binary("mul", binary("floordiv", tm, R), gn), binary("floordiv", tn, Cb))
    thread = binary("add", binary("mul", group, SIMD), lane)
    block = binary("add", binary("mul", binary("floormod", tm, R), Cb), binary("floormod", tn, Cb))
    local = binary("add", binary("mul", block, 2), e)
    meta = {"origin": f"simdgroup_matrix 8x8 {what}", "simdgroup_grid": (gm, gn)}
    return Fragment.from_exprs((rows, cols), (i, j), thread, (local,), meta=meta)


def simdgroup_grid_of(layout: Any) -> tuple | None:
    """The SIMD-group grid recorded on a simdgroup_matrix fragment (None: another layout)."""
    meta = getattr(layout, "meta", None) or {}
    return meta.get("simdgroup_grid")
