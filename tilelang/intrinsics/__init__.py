"""`tilelang.intrinsics`: the shared-memory layout helpers of the public API's hand-written MMA
examples (`from tilelang.intrinsics import make_mma_swizzle_layout as make_swizzle_layout`).

`get_swizzle_layout(i, j, row_size, dtype)` is the public XOR permutation of 16-byte chunks that
makes `ldmatrix` reads of an mma operand tile bank-conflict free: element (i, j) lives at chunk
`(j // v) ^ p(i)` (v elements per 16-byte chunk, `j % v` inside it), `p(i) = i % v` when a row
is a multiple of 128 bytes, `(i % v) // (32 / bits)` when it is a multiple of 64 bytes.
`make_mma_swizzle_layout(buf)` gives a tile such a bank-conflict-free layout (see its docstring
for when it is exactly that permutation).

The macro generators of the public module (`TensorCoreIntrinEmitter` and its kin, which emit
`ldmatrix`/`mma` by hand) are not provided: `T.gemm` lowers to the same instructions; asking
for one is an `UnsupportedError` that says so.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..ir.dtype import DataType
from ..ir.expr import PrimExpr, binary, const_int
from ..layout import Layout, make_linear_layout, make_swizzled_layout

CHUNK_BITS = 128  # one 16-byte ldmatrix row segment

_HAND_WRITTEN_MMA = frozenset(
    """TensorCoreIntrinEmitter TensorCoreIntrinEmitterWithLadderTransform WGMMATensorCoreIntrinEmitter
    TCGEN05TensorCoreIntrinEmitter MatrixCoreIntrinEmitter mma_store_index_map get_ldmatrix_offset
    make_mfma_swizzle_layout""".split()
)


def get_swizzle_layout(row_idx: Any, col_idx: Any, row_size: Any, dtype: Any) -> tuple[PrimExpr, PrimExpr]:
    """(row, column) where element (row_idx, col_idx) of a tile with `row_size`-element rows of
    `dtype` is stored under the mma operand swizzle (module docstring)."""
    dt = DataType(dtype)
    per_chunk = CHUNK_BITS // dt.bits
    cols = row_size if isinstance(row_size, int) else const_int(row_size)
    if cols is None:
        raise UnsupportedError(f"the mma swizzle needs a constant row size, got {row_size}", None,
                               "use tiles with compile-time shapes")  # fmt: skip
    row_bits = cols * dt.bits
    outer = binary("floordiv", col_idx, per_chunk)
    inner = binary("floormod", col_idx, per_chunk)
    phase = binary("floormod", row_idx, per_chunk)
    if row_bits % 1024 == 0:
        permuted = binary("bitxor", outer, phase)
    elif row_bits % 512 == 0:
        permuted = binary("bitxor", outer, binary("floordiv", phase, 32 // dt.bits))
    else:
        raise UnsupportedError(
            f"the mma swizzle needs rows of a multiple of 64 bytes; a row of {row_size} {dt} is {row_bits // 8} bytes",
            None,
            "use make_mma_swizzle_layout(buf), which keeps such tiles unswizzled",
        )
    return row_idx, binary("add", binary("mul", permuted, per_chunk), inner)


def make_mma_swizzle_layout(shared_buf: Any, is_smooth: bool = False) -> Layout:
    """A bank-conflict-free layout for an mma operand tile in shared memory; the identity with
    `is_smooth`. Where the public permutation (`get_swizzle_layout`) is one of the hardware
    swizzles our gemm paths address (128-byte rows: 128B; 64-byte rows: 64B) it is that
    permutation; otherwise — rows wider than 128 bytes, which the public helper permutes within
    each 128-byte segment of a row — it is the swizzle `make_swizzled_layout` picks for the tile,
    equally free of bank conflicts for `ldmatrix` and addressable by mma.sync, wgmma and TMA.
    (Where a tile lives in shared memory is not observable by the program: only its speed.)"""
    if is_smooth:
        return make_linear_layout(shared_buf)
    return make_swizzled_layout(shared_buf)


def __getattr__(name: str) -> Any:
    if name in _HAND_WRITTEN_MMA:
        raise UnsupportedError(
            f"tilelang.intrinsics.{name} (hand-written MMA macro generation) is not provided",
            None,
            "write the product with T.gemm: it lowers to the same ldmatrix / mma.sync / wgmma instructions",
        )
    raise AttributeError(f"module 'tilelang.intrinsics' has no attribute {name!r}")


__all__ = ["get_swizzle_layout", "make_mma_swizzle_layout"]
