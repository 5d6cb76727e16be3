"""Swizzled shared layouts: hardware pattern facts, bank conflicts, detection."""

import itertools
import math

import pytest

from tilelang.ir import make_buffer
from tilelang.layout import (
    Layout,
    SwizzleMode,
    bank_conflict_stats,
    bank_conflicts,
    choose_swizzle_mode,
    detect_swizzle_mode,
    is_vectorizable,
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
)

BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "float8_e4m3fn": 1}
MAKERS = {
    SwizzleMode.SWIZZLE_128B: make_full_bank_swizzled_layout,
    SwizzleMode.SWIZZLE_64B: make_half_bank_swizzled_layout,
    SwizzleMode.SWIZZLE_32B: make_quarter_bank_swizzled_layout,
}


def byte_addr(layout, idx, dtype):
    return layout.linear_offset(*idx) * BYTES[dtype]


# -- the hardware pattern, stated as in the CUDA driver / PTX docs ------------------


@pytest.mark.parametrize(
    "mode,period", [(SwizzleMode.SWIZZLE_128B, 1), (SwizzleMode.SWIZZLE_64B, 2), (SwizzleMode.SWIZZLE_32B, 4)]
)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_chunk_of_row_is_xored_with_row_bits(mode, period, dtype):
    """With rows exactly S bytes wide, the 16-byte chunk c of row r is stored as
    chunk c ^ ((r // period) % (S / 16)) of the same row, and bytes inside a
    chunk keep their order (TMA SWIZZLE_{S}B; address bits [4..] ^= [7..])."""
    S, b = mode.swizzle_byte_size(), BYTES[dtype]
    cols, rows = S // b, 32
    lay = MAKERS[mode]((rows, cols), dtype=dtype)
    for r, c in itertools.product(range(rows), range(cols)):
        chunk, inner = divmod(c * b, 16)
        want = r * S + (chunk ^ ((r // period) % (S // 16))) * 16 + inner
        assert byte_addr(lay, (r, c), dtype) == want
    assert detect_swizzle_mode(lay, dtype) is mode


@pytest.mark.parametrize("mode", list(MAKERS))
def test_swizzle_atoms_are_closed_8_rows_by_span(mode):
    """PTX swizzle atoms (K-major: 8 rows × 128/64/32 bytes) map onto themselves,
    and the pattern repeats every 8·S bytes (1024/512/256)."""
    S = mode.swizzle_byte_size()
    lay = MAKERS[mode]((64, S // 2), dtype="float16")
    for r0 in range(0, 64, 8):
        addrs = {byte_addr(lay, (r, c), "float16") // 16 for r in range(r0, r0 + 8) for c in range(0, S // 2, 8)}
        assert addrs == set(range(r0 * S // 16, (r0 + 8) * S // 16))
    assert mode.repeat_bytes() == 8 * S == mode.smem_alignment()
    first = [byte_addr(lay, (r, c), "float16") for r in range(8) for c in range(S // 2)]
    second = [byte_addr(lay, (r + 8, c), "float16") - 8 * S for r in range(8) for c in range(S // 2)]
    assert first == second


def test_wide_rows_are_split_into_panels_like_tma_boxes():
    """32×128 fp16 (256-byte rows) under 128B: two 64-column panels of 32 rows,
    panel-major — one TMA box of 64 columns each, each a wgmma K-major operand."""
    lay = make_swizzled_layout((32, 128), dtype="float16")
    assert lay.meta["swizzle"] == "128B" and lay.meta["panels"] == 2
    assert lay.get_output_shape() == [64, 64]
    panel1 = make_full_bank_swizzled_layout((32, 64), dtype="float16")
    for r, c in itertools.product(range(32), range(64)):
        assert lay.linear_offset(r, c) == panel1.linear_offset(r, c)
        assert lay.linear_offset(r, 64 + c) == 32 * 64 + panel1.linear_offset(r, c)


def test_pipeline_stages_keep_the_pattern():
    base = make_swizzled_layout((64, 64), dtype="float16")
    staged = make_swizzled_layout((3, 64, 64), dtype="float16")
    assert staged.is_equal(base.expand((3,)))
    for s, r, c in itertools.product(range(3), range(64), range(0, 64, 8)):
        assert staged.linear_offset(s, r, c) == s * 4096 + base.linear_offset(r, c)
    assert detect_swizzle_mode(staged, "float16") is SwizzleMode.SWIZZLE_128B


# -- bank conflicts ---------------------------------------------------------------

GEMM_TILES = [
    ((128, 32), "float16", SwizzleMode.SWIZZLE_64B),
    ((32, 128), "float16", SwizzleMode.SWIZZLE_128B),
    ((64, 64), "float16", SwizzleMode.SWIZZLE_128B),
    ((128, 64), "float16", SwizzleMode.SWIZZLE_128B),
    ((64, 64), "bfloat16", SwizzleMode.SWIZZLE_128B),
    ((128, 32), "bfloat16", SwizzleMode.SWIZZLE_64B),
    ((128, 32), "float32", SwizzleMode.SWIZZLE_128B),  # tf32 operand, K=32
    ((64, 16), "float32", SwizzleMode.SWIZZLE_64B),
    ((32, 8), "float32", SwizzleMode.SWIZZLE_32B),
    ((128, 128), "int8", SwizzleMode.SWIZZLE_128B),
    ((128, 64), "int8", SwizzleMode.SWIZZLE_64B),
    ((64, 32), "int8", SwizzleMode.SWIZZLE_32B),
    ((2, 64, 64), "float16", SwizzleMode.SWIZZLE_128B),
]


@pytest.mark.parametrize("shape,dtype,mode", GEMM_TILES)
def test_swizzle_is_conflict_free_for_ldmatrix_and_cp_async(shape, dtype, mode):
    lay = make_swizzled_layout(shape, dtype=dtype)
    ident = make_linear_layout(shape, dtype=dtype)
    assert detect_swizzle_mode(lay, dtype) is mode
    stats = bank_conflict_stats(lay, dtype, "ldmatrix")
    assert stats["phases"] > 0 and stats["conflicts"] == 0 and stats["worst_ways"] == 1
    assert bank_conflicts(lay, dtype, "cp.async") == 0  # 16-byte writes, row-major thread order
    assert is_vectorizable(lay, dtype, 16)  # 16-byte chunks stay whole and aligned
    worst = bank_conflict_stats(ident, dtype, "ldmatrix")
    assert worst["conflicts"] > 0
    row_chunks = shape[-1] * BYTES[dtype] // 16  # rows start gcd(row_chunks, 8)-fold on the same banks
    assert worst["worst_ways"] == math.gcd(row_chunks, 8)


def test_identity_conflicts_for_a_known_case():
    # 64x64 fp16: rows are 128 B, so the 8 row addresses of each ldmatrix phase share banks: 8-way
    ident = make_linear_layout((64, 64), dtype="float16")
    s = bank_conflict_stats(ident, "float16")
    assert s["phases"] == 8 * 8 and s["wavefronts"] == 8 * 64 and s["conflicts"] == 7 * 64


def test_conflict_model_counts_broadcast_once():
    lay = make_linear_layout((8, 64), dtype="float16")
    same_word = [[((0, 0), 4) for _ in range(8)]]  # 8 threads read the same word
    assert bank_conflicts(lay, "float16", same_word) == 0
    column = [[((r, 0), 4) for r in range(8)]]  # a column of a 128-byte-row tile: 8 words, one bank
    assert bank_conflicts(lay, "float16", column) == 7


def test_odd_and_unaligned_rows():
    # 48-byte rows (odd multiple of 16): row-major is already conflict-free
    lay = make_swizzled_layout((64, 24), dtype="float16")
    assert lay.meta["swizzle"] == "none" and bank_conflicts(lay, "float16") == 0
    # 72-byte rows: padded to 80 bytes (odd multiple of 16) when allowed
    pad = make_swizzled_layout((64, 36), dtype="float16")
    assert pad.meta.get("padded") and pad.get_output_shape() == [64, 40]
    assert (
        bank_conflicts(pad, "float16") == 0 < bank_conflicts(make_linear_layout((64, 36), dtype="float16"), "float16")
    )
    assert detect_swizzle_mode(pad, "float16") is SwizzleMode.NONE
    assert make_swizzled_layout((64, 36), allow_pad=False, dtype="float16").get_output_shape() == [64, 36]


# -- factories and inputs ------------------------------------------------------------


def test_accepts_buffer_region_and_shape():
    buf = make_buffer("B_shared", (3, 64, 64), "bfloat16", "shared.dyn")
    a = make_swizzled_layout(buf)
    b = make_swizzled_layout(buf[0, 0:64, 0:64])  # BufferRegion: its extents (1, 64, 64)
    c = make_swizzled_layout((3, 64, 64), dtype="bfloat16")
    assert a.is_equal(c) and b.get_input_shape() == [1, 64, 64]
    assert a.meta["k_major"] is True and make_swizzled_layout(buf, k_major=False).meta["k_major"] is False
    with pytest.raises(TypeError, match="dtype"):
        make_swizzled_layout((64, 64))


def test_explicit_factories_reject_narrow_rows():
    with pytest.raises(ValueError, match="not a multiple of the 128-byte swizzle span"):
        make_full_bank_swizzled_layout((64, 32), dtype="float16")
    assert choose_swizzle_mode((64, 32), "float16") is SwizzleMode.SWIZZLE_64B
    assert choose_swizzle_mode((64, 8), "float16") is SwizzleMode.NONE
    assert choose_swizzle_mode((64,), "float16") is SwizzleMode.NONE


def test_swizzle_mode_constants():
    M = SwizzleMode
    assert [m.value for m in (M.NONE, M.SWIZZLE_32B, M.SWIZZLE_64B, M.SWIZZLE_128B)] == [0, 1, 2, 3]
    assert [m.swizzle_byte_size() for m in M] == [0, 32, 64, 128]
    assert [m.wgmma_layout_type() for m in M] == [0, 3, 2, 1]
    assert [m.tcgen05_layout_type() for m in M] == [0, 6, 4, 2]
    assert M.SWIZZLE_128B.cu_tensor_map_swizzle() == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert M.from_bytes(64) is M.SWIZZLE_64B


# -- detection round trips --------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("mode", list(MAKERS))
def test_detect_round_trip(mode, dtype):
    S, b = mode.swizzle_byte_size(), BYTES[dtype]
    for shape in [(16, S // b), (64, 2 * S // b), (2, 8, S // b)]:
        assert detect_swizzle_mode(MAKERS[mode](shape, dtype=dtype), dtype) is mode
        assert detect_swizzle_mode(make_linear_layout(shape, dtype=dtype), dtype) is SwizzleMode.NONE


def test_detect_hand_written_layouts():
    hand = Layout((64, 64), lambda i, j: [i, ((j // 8) ^ (i % 8)) * 8 + j % 8])  # T.Layout written by a user
    assert detect_swizzle_mode(hand, "float16") is SwizzleMode.SWIZZLE_128B
    wrong = Layout((64, 64), lambda i, j: [i, ((j // 8) ^ (i % 4)) * 8 + j % 8])
    assert detect_swizzle_mode(wrong, "float16") is None
    # the same index map means a different byte pattern for 4-byte elements
    assert detect_swizzle_mode(hand, "float32") is None
    transposed = Layout((64, 64), lambda i, j: [j, i])
    assert detect_swizzle_mode(transposed, "float16") is None


def test_swizzled_layouts_invert():
    for shape, dtype, _ in GEMM_TILES:
        lay = make_swizzled_layout(shape, dtype=dtype)
        inv = lay.inverse()
        for idx in itertools.product(*(range(d) for d in shape)):
            assert inv(*lay(*idx)) == idx
