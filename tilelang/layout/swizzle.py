"""Shared-memory layouts: XOR swizzles compatible with TMA and wgmma, padding, identity.

The swizzles are the hardware's own (CUDA `CU_TENSOR_MAP_SWIZZLE_{32,64,128}B`,
PTX wgmma/tcgen05 descriptor swizzle modes). Over the tile's *byte address*
`a` (relative to a base aligned to the pattern's repeat, see
`SwizzleMode.smem_alignment`), mode S ∈ {32, 64, 128} keeps every 16-byte
chunk whole and moves it within its S-byte row segment:

    a' = a ^ (((a >> 7) & (S/16 - 1)) << 4)

i.e. address bits [4, 4+log2(S/16)) are XORed with bits [7, ...): the 16-byte
chunk index inside a 128/64/32-byte segment is XORed with the row index
(rows 0-7 for 128B; row//2 for 64B; row//4 for 32B). The pattern repeats
every 1024/512/256 bytes.

A buffer `(*lead, R, C)` whose rows are W = C·elem bytes is swizzled in
*panels*: the row is cut into W/S segments of S bytes; panel p holds columns
[p·S/elem, (p+1)·S/elem) of all R rows, stored one after another (panel-major,
then row, then column), then the swizzle above is applied to the byte offset.
This is exactly what a TMA box of inner size S bytes writes (one box per
panel) and what a wgmma K-major/MN-major descriptor with that swizzle mode
reads (8-row × S-byte atoms, stride-byte-offset = 8·S between row groups),
and the same layout makes ldmatrix reads (8 rows × 16 B per phase) and 16-byte
cp.async writes bank-conflict free (see `bank.py`).
"""

from __future__ import annotations

import enum
from typing import Any

from ..ir.buffer import Buffer, BufferRegion
from ..ir.dtype import DataType
from ..ir.expr import BufferLoad, IntImm, PrimExpr, Var, binary, const_int
from .layout import Layout, default_var_names, prod, row_major_strides


class SwizzleMode(enum.Enum):
    """Swizzle patterns; values equal the `CUtensorMapSwizzle` enum."""

    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3

    def swizzle_byte_size(self) -> int:
        """Width S of the row segment whose 16-byte chunks are permuted (0 for NONE)."""
        return {0: 0, 1: 32, 2: 64, 3: 128}[self.value]

    def repeat_bytes(self) -> int:
        """The pattern repeats every 8 segments: 256/512/1024 bytes (16 for NONE)."""
        return 8 * self.swizzle_byte_size() or 16

    def smem_alignment(self) -> int:
        """Required alignment of the buffer's shared-memory base: the pattern
        repeat (so the layout's relative offsets agree with the hardware's
        absolute-address swizzle); 128 for NONE (TMA destinations)."""
        return 8 * self.swizzle_byte_size() or 128

    def wgmma_layout_type(self) -> int:
        """sm_90 wgmma matrix-descriptor swizzle field (bits 62-63)."""
        return {0: 0, 1: 3, 2: 2, 3: 1}[self.value]

    def tcgen05_layout_type(self) -> int:
        """sm_100 tcgen05 shared-memory descriptor swizzle field (bits 61-63)."""
        return {0: 0, 1: 6, 2: 4, 3: 2}[self.value]

    def cu_tensor_map_swizzle(self) -> str:
        return "CU_TENSOR_MAP_SWIZZLE_" + ("NONE" if self is SwizzleMode.NONE else f"{self.swizzle_byte_size()}B")

    @property
    def label(self) -> str:
        return "none" if self is SwizzleMode.NONE else f"{self.swizzle_byte_size()}B"

    @classmethod
    def from_bytes(cls, nbytes: int) -> SwizzleMode:
        return {0: cls.NONE, 32: cls.SWIZZLE_32B, 64: cls.SWIZZLE_64B, 128: cls.SWIZZLE_128B}[nbytes]


# --------------------------------------------------------------------------
# Input normalisation
# --------------------------------------------------------------------------


def shape_and_dtype(buffer: Any, dtype: Any = None) -> tuple[tuple, DataType]:
    """(static shape, dtype) of a Buffer, BufferRegion, BufferLoad or a shape + `dtype`."""
    if isinstance(buffer, BufferLoad):
        buffer = buffer.buffer
    if isinstance(buffer, Buffer):
        shape, dt = buffer.shape, buffer.dtype
    elif isinstance(buffer, BufferRegion):
        shape, dt = buffer.extents, buffer.buffer.dtype
    elif isinstance(buffer, (tuple, list, int)):
        if dtype is None:
            raise TypeError(
                "a layout factory given a shape also needs dtype=... (the element type sets the byte width)"
            )
        shape, dt = (buffer,) if isinstance(buffer, int) else tuple(buffer), dtype
    else:
        raise TypeError(f"expected a Buffer, BufferRegion or shape, got {type(buffer).__name__}")
    dims = tuple(const_int(d) for d in shape)
    if any(d is None for d in dims):
        raise ValueError(f"shared-memory layouts need a static shape, got {[str(d) for d in shape]}")
    return dims, DataType(dtype if dtype is not None else dt)  # type: ignore[return-value]


def _elem_bytes(dt: DataType) -> int:
    b = dt.bits * dt.lanes // 8
    if dt.bits * dt.lanes % 8 or b == 0:
        raise ValueError(f"cannot lay out sub-byte dtype {dt} in shared memory by element")
    return b


# --------------------------------------------------------------------------
# Factories
# --------------------------------------------------------------------------


def make_linear_layout(buffer: Any, dtype: Any = None) -> Layout:
    """Row-major identity layout."""
    shape, dt = shape_and_dtype(buffer, dtype)
    return Layout(shape, meta={"swizzle": "none", "dtype": str(dt)})


def swizzle_fits(shape: tuple, dtype: Any, mode: SwizzleMode) -> str | None:
    """None if `mode` applies to a tile of `shape`, else the reason it does not."""
    if mode is SwizzleMode.NONE:
        return None
    b = _elem_bytes(DataType(dtype))
    S = mode.swizzle_byte_size()
    if len(shape) < 2:
        return "swizzling needs at least 2 dimensions (rows × columns)"
    if b > 16:
        return f"elements of {b} bytes exceed a 16-byte chunk"
    if shape[-1] * b % S:
        return f"rows of {shape[-1]} × {b} B = {shape[-1] * b} B are not a multiple of the {S}-byte swizzle span"
    return None


def make_swizzle_layout(buffer: Any, mode: SwizzleMode, dtype: Any = None) -> Layout:
    """The panelled `mode` swizzle of a `(*lead, R, C)` tile (see module docstring)."""
    shape, dt = shape_and_dtype(buffer, dtype)
    why = swizzle_fits(shape, dt, mode)
    if why is not None:
        raise ValueError(f"{mode.label} swizzle does not fit a {list(shape)} {dt} tile: {why}")
    if mode is SwizzleMode.NONE:
        return make_linear_layout(shape, dt)
    b, S = _elem_bytes(dt), mode.swizzle_byte_size()
    *lead, R, C = shape
    s, q, n = S // b, 16 // b, S // 16  # elements per segment, per chunk; chunks per segment
    P = C // s  # panels
    fv = tuple(Var(x) for x in default_var_names(len(shape)))
    lv, i, j = fv[:-2], fv[-2], fv[-1]
    lead_flat: PrimExpr = IntImm(0)
    for v, st in zip(lv, row_major_strides(tuple(lead))):
        lead_flat = binary("add", lead_flat, binary("mul", v, st))
    p = binary("floordiv", j, s)
    row = binary("add", binary("add", binary("mul", lead_flat, P * R), binary("mul", p, R)), i)
    chunk = binary("floordiv", binary("floormod", j, s), q)
    xor_src = binary("floormod", binary("floordiv", row, 128 // S), n)
    col = binary("add", binary("mul", binary("bitxor", chunk, xor_src), q), binary("floormod", j, q))
    index = tuple(lv) + (binary("add", binary("mul", p, R), i), col)
    meta = {"swizzle": mode.label, "dtype": str(dt), "panels": P}
    return Layout.from_exprs(shape, fv, index, tuple(lead) + (P * R, s), meta)


def make_full_bank_swizzled_layout(buffer: Any, dtype: Any = None) -> Layout:
    """128-byte swizzle (rows a multiple of 128 B)."""
    return make_swizzle_layout(buffer, SwizzleMode.SWIZZLE_128B, dtype)


def make_half_bank_swizzled_layout(buffer: Any, dtype: Any = None) -> Layout:
    """64-byte swizzle (rows a multiple of 64 B)."""
    return make_swizzle_layout(buffer, SwizzleMode.SWIZZLE_64B, dtype)


def make_quarter_bank_swizzled_layout(buffer: Any, dtype: Any = None) -> Layout:
    """32-byte swizzle (rows a multiple of 32 B)."""
    return make_swizzle_layout(buffer, SwizzleMode.SWIZZLE_32B, dtype)


def choose_swizzle_mode(shape: tuple, dtype: Any) -> SwizzleMode:
    """The widest swizzle whose span divides the row width (NONE if none does)."""
    for mode in (SwizzleMode.SWIZZLE_128B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_32B):
        if swizzle_fits(shape, dtype, mode) is None:
            return mode
    return SwizzleMode.NONE


def make_padded_layout(buffer: Any, dtype: Any = None) -> Layout:
    """Rows stored with a stride that is an odd multiple of 16 bytes (identity
    inside each row, padding after it): 16-byte aligned rows whose 8-row
    ldmatrix phases hit 8 distinct bank groups. Storage = prod(output_shape)."""
    shape, dt = shape_and_dtype(buffer, dtype)
    b = _elem_bytes(dt)
    if len(shape) < 2 or b > 16:
        return make_linear_layout(shape, dt)
    *lead, R, C = shape
    units = -(-C * b // 16)
    units += 1 - units % 2  # odd number of 16-byte units
    cp = units * 16 // b
    return Layout(shape, output_shape=tuple(lead) + (R, cp), meta={"padded": True, "swizzle": "none", "dtype": str(dt)})


def make_swizzled_layout(buffer: Any, k_major: bool = True, allow_pad: bool = True, dtype: Any = None) -> Layout:
    """The default bank-conflict-free shared layout of a gemm operand tile.

    Picks 128B, 64B or 32B swizzling by the row width in bytes (the widest
    span dividing it). Rows that are an odd multiple of 16 bytes are already
    conflict-free and stay row-major; rows that are not a multiple of 16 bytes
    get a padded row stride when `allow_pad` (so 16-byte vectors and ldmatrix
    become possible), else stay row-major. The swizzle is always along the
    buffer's contiguous (last) dimension; `k_major` (which operand dimension
    that is) does not change the pattern — TMA and the wgmma descriptor read
    K-major and MN-major tiles with the same swizzle — and is kept in `meta`."""
    shape, dt = shape_and_dtype(buffer, dtype)
    mode = choose_swizzle_mode(shape, dt) if len(shape) >= 2 else SwizzleMode.NONE
    if mode is not SwizzleMode.NONE:
        return make_swizzle_layout(shape, mode, dt).with_meta(k_major=bool(k_major))
    b = _elem_bytes(dt)
    if allow_pad and len(shape) >= 2 and shape[-2] > 1 and b <= 16 and (shape[-1] * b) % 16:
        return make_padded_layout(shape, dt).with_meta(k_major=bool(k_major))
    return make_linear_layout(shape, dt).with_meta(k_major=bool(k_major))


# --------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------


def swizzled_byte_offsets(shape: tuple, dtype: Any, mode: SwizzleMode) -> list:
    """Reference byte offsets of every element (row-major logical order) under
    `mode`, computed directly from the address formula (independent of Layout)."""
    b = _elem_bytes(DataType(dtype))
    S = mode.swizzle_byte_size()
    n = prod(shape)
    if mode is SwizzleMode.NONE:
        return [k * b for k in range(n)]
    *lead, R, C = shape
    s = S // b
    P = C // s
    out = []
    for flat in range(n):
        j, rest = flat % C, flat // C
        i, lf = rest % R, rest // R
        a = ((lf * P + j // s) * R + i) * S + (j % s) * b
        out.append(a ^ (((a >> 7) & (S // 16 - 1)) << 4))
    return out


def detect_swizzle_mode(layout: Layout, dtype: Any) -> SwizzleMode | None:
    """Which hardware pattern `layout` implements for elements of `dtype`:
    NONE for row-major (padded rows included), a SWIZZLE_* mode if its physical offsets equal that
    swizzle's (as `make_*_swizzled_layout` builds it), None otherwise.
    Decided by comparing offsets element by element, so layouts written by
    hand with `T.Layout(...)` are recognised too."""
    shape = tuple(layout.shape)
    if not layout.is_static:
        return None
    b = _elem_bytes(DataType(dtype))
    if (
        layout.meta.get("dtype") == str(DataType(dtype))
        and layout.meta.get("swizzle")
        and not layout.meta.get("padded")
    ):
        label = layout.meta["swizzle"]  # built by this module for this dtype: trust the record
        return SwizzleMode.NONE if label == "none" else SwizzleMode.from_bytes(int(label[:-1]))
    if list(layout.table()) == _row_major_points(shape):
        return SwizzleMode.NONE  # identity map (row padding allowed)
    got = [o * b for o in layout.offsets()]
    for mode in (SwizzleMode.SWIZZLE_128B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_32B):
        if swizzle_fits(shape, dtype, mode) is None and got == swizzled_byte_offsets(shape, dtype, mode):
            return mode
    return None


def _row_major_points(shape: tuple) -> list:
    import itertools

    return list(itertools.product(*(range(d) for d in shape)))
