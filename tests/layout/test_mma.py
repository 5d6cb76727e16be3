"""mma.sync / wgmma fragments against the PTX ISA fragment tables, warp
partitions, and the FlashAttention register-reuse condition.

The reference functions below transcribe the PTX ISA "Matrix Fragments for
mma.m16n8k{8,16,32}" formulas literally (groupID = lane >> 2,
threadID_in_group = lane % 4, conditions on the register index i), so they
are independent of the expressions in tilelang/layout/gemm.py."""

import pytest
from layout_checks import assert_valid_fragment

from tilelang.layout import (
    gemm_warp_partition,
    is_register_compatible,
    make_mma_accumulator_fragment,
    make_mma_atom,
    make_mma_operand_a_fragment,
    make_mma_operand_b_fragment,
    make_wgmma_accumulator_fragment,
    mma_k,
)


def gt(lane):
    return lane >> 2, lane % 4


def ptx_c(lane, i):  # accumulators C/D, 16x8: c0..c3
    g, t = gt(lane)
    row = g if i < 2 else g + 8
    return row, t * 2 + (i & 0x1)


def ptx_a_f16(lane, i):  # m16n8k16 .f16/.bf16 A: a0..a7
    g, t = gt(lane)
    row = g if (0 <= i < 2 or 4 <= i < 6) else g + 8
    col = t * 2 + (i & 0x1) + (8 if i >= 4 else 0)
    return row, col


def ptx_b_f16(lane, i):  # m16n8k16 .f16/.bf16 B: b0..b3 (row = k, col = n)
    g, t = gt(lane)
    return t * 2 + (i & 0x1) + (8 if i >= 2 else 0), g


def ptx_a_i8(lane, i):  # m16n8k32 .s8/.u8/.e4m3/.e5m2 A: a0..a15
    g, t = gt(lane)
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    col = t * 4 + (i & 0x3) + (16 if i >= 8 else 0)
    return row, col


def ptx_b_i8(lane, i):  # m16n8k32 B: b0..b7
    g, t = gt(lane)
    return t * 4 + (i & 0x3) + (16 if i >= 4 else 0), g


def ptx_a_tf32(lane, i):  # m16n8k8 .tf32 A: a0..a3
    g, t = gt(lane)
    row = g if i in (0, 2) else g + 8
    col = t if i in (0, 1) else t + 4
    return row, col


def ptx_b_tf32(lane, i):  # m16n8k8 .tf32 B: b0, b1
    g, t = gt(lane)
    return (t if i == 0 else t + 4), g


ATOMS = [
    ("C", "float32", (16, 8), 4, ptx_c),
    ("C", "int32", (16, 8), 4, ptx_c),
    ("A", "float16", (16, 16), 8, ptx_a_f16),
    ("A", "bfloat16", (16, 16), 8, ptx_a_f16),
    ("B", "float16", (16, 8), 4, ptx_b_f16),
    ("A", "int8", (16, 32), 16, ptx_a_i8),
    ("A", "float8_e4m3fn", (16, 32), 16, ptx_a_i8),
    ("B", "int8", (32, 8), 8, ptx_b_i8),
    ("A", "float32", (16, 8), 4, ptx_a_tf32),
    ("B", "tfloat32", (8, 8), 2, ptx_b_tf32),
]


@pytest.mark.parametrize("operand,dtype,shape,regs,ref", ATOMS)
def test_atoms_match_ptx_tables(operand, dtype, shape, regs, ref):
    atom = make_mma_atom(operand, dtype)
    assert atom.get_input_shape() == list(shape)
    assert atom.get_thread_size() == 32 and atom.locals_per_thread() == regs
    for lane in range(32):
        for i in range(regs):
            row, col = ref(lane, i)
            assert atom.locate(row, col) == (lane, i), (operand, dtype, lane, i)
    assert_valid_fragment(atom)


def test_lane0_accumulator_fact():
    atom = make_mma_atom("C")
    assert [e for _, e in atom.thread_elements(0)] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert [e for _, e in atom.thread_elements(5)] == [(1, 2), (1, 3), (9, 2), (9, 3)]


def test_instruction_k():
    assert (mma_k("float16"), mma_k("bfloat16"), mma_k("int8"), mma_k("float8_e5m2"), mma_k("float32")) == (
        16,
        16,
        32,
        32,
        8,
    )
    with pytest.raises(ValueError, match="no mma.sync shape"):
        mma_k("float64")


# -- warp partitions ---------------------------------------------------------


def test_partitions_128x128_4_warps():
    assert gemm_warp_partition(128, 128, 4, "Square") == (2, 2)
    assert gemm_warp_partition(128, 128, 4, "FullRow") == (4, 1)
    assert gemm_warp_partition(128, 128, 4, "FullCol") == (1, 4)


@pytest.mark.parametrize(
    "M,N,W,policy,expected",
    [
        (64, 128, 8, "FullRow", (4, 2)),  # only 4 row bands of 16 fit
        (128, 16, 4, "FullCol", (2, 2)),  # only 2 column bands of 8 fit
        (256, 64, 8, "Square", (8, 1)),  # 32x64 and 64x32 tie -> more warps on M
        (64, 256, 8, "Square", (2, 4)),  # 64x32 (1x8) and 32x64 (2x4) tie -> more warps on M
        (16, 256, 4, "Square", (1, 4)),
        (128, 128, 1, "Square", (1, 1)),
        (128, 128, 8, "Square", (4, 2)),
    ],
)
def test_partition_policies(M, N, W, policy, expected):
    wm, wn = gemm_warp_partition(M, N, W, policy)
    assert (wm, wn) == expected
    assert wm * wn == W and M % (wm * 16) == 0 and N % (wn * 8) == 0


def test_partition_accepts_enum_like_and_ints():
    class P:
        name = "FullRow"

    assert gemm_warp_partition(128, 128, 4, P()) == (4, 1)
    assert gemm_warp_partition(128, 128, 4, 2) == (1, 4)
    assert gemm_warp_partition(128, 128, 4, "fullrow") == (4, 1)
    with pytest.raises(ValueError, match="unknown gemm warp policy"):
        gemm_warp_partition(128, 128, 4, "Diagonal")


@pytest.mark.parametrize(
    "args,msg",
    [
        ((100, 128, 4), "M=100 is not a multiple of 16 — make block_M a multiple of 16"),
        ((128, 60, 4), "N=60 is not a multiple of 8"),
        ((128, 128, 3), r"3 does not factor as warps_m×warps_n .* use warp counts in \[1, 2, 4, 8, 16, 32\]"),
        ((16, 8, 4), "at most 1 warp fit"),
        ((128, 128, 0), "positive int num_warps"),
    ],
)
def test_partition_errors_say_what_and_how(args, msg):
    with pytest.raises(ValueError, match=msg):
        gemm_warp_partition(*args, "Square")


# -- block-level fragments ---------------------------------------------------


def reference_tiling(M, N, wm, wn, atom_m, atom_n, regs, ref, rows_of=None):
    """Forward generation from the instruction's point of view: for every warp,
    atom, lane and register, which element it holds."""
    tm, tn = M // wm, N // wn
    nt = tn // atom_n
    out = {}
    for w in range(wm * wn):
        a, b = w % wm, w // wm  # warps numbered down M first
        for mi in range(tm // atom_m):
            for ni in range(nt):
                for lane in range(32):
                    for i in range(regs):
                        r, c = ref(lane, i)
                        out[(a * tm + mi * atom_m + r, b * tn + ni * atom_n + c)] = (
                            32 * w + lane,
                            (mi * nt + ni) * regs + i,
                        )
    return out


@pytest.mark.parametrize(
    "M,N,W,policy",
    [
        (128, 128, 4, "Square"),
        (128, 128, 4, "FullRow"),
        (128, 128, 4, "FullCol"),
        (64, 256, 8, "Square"),
        (16, 8, 1, "Square"),
        (256, 128, 8, "FullRow"),
    ],
)
def test_accumulator_matches_forward_generation(M, N, W, policy):
    frag = make_mma_accumulator_fragment(M, N, W, policy)
    wm, wn = gemm_warp_partition(M, N, W, policy)
    ref = reference_tiling(M, N, wm, wn, 16, 8, 4, ptx_c)
    assert len(ref) == M * N
    for (i, j), (t, r) in ref.items():
        assert frag.locate(i, j) == (t, r)
    assert frag.get_thread_size() == 32 * W and frag.locals_per_thread() == M * N // (32 * W)
    assert frag.meta["warp_grid"] == (wm, wn)
    assert_valid_fragment(frag)


@pytest.mark.parametrize(
    "dtype,regs,ref,k", [("float16", 8, ptx_a_f16, 16), ("int8", 16, ptx_a_i8, 32), ("float32", 4, ptx_a_tf32, 8)]
)
def test_operand_a_fragment(dtype, regs, ref, k):
    M, N, K, W = 64, 64, 64, 4
    frag = make_mma_operand_a_fragment(M, N, K, W, "Square", dtype)  # warps 2x2: A replicated over 2 column warps
    assert frag.replicate_size == 2 and frag.get_thread_size() == 128
    wm = 2
    tm = M // wm
    for i in range(M):
        for j in range(K):
            for rep in range(2):
                t, r = frag.locate(i, j, rep=rep)
                warp, lane = divmod(t, 32)
                assert warp % wm == i // tm and warp // wm == rep  # row band, copy per column warp
                mi, ki, ai = r // ((K // k) * regs), (r // regs) % (K // k), r % regs
                assert ref(lane, ai) == (i % tm - 16 * mi, j - k * ki)
    assert_valid_fragment(frag)


def test_operand_b_fragment_replicated_over_row_warps():
    frag = make_mma_operand_b_fragment(64, 64, 32, 4, "Square", "float16")
    assert frag.get_input_shape() == [32, 64] and frag.replicate_size == 2
    for k in range(32):
        for n in range(64):
            warps = sorted(frag.map_forward_thread((k, n), r) // 32 for r in range(2))
            assert warps == [2 * (n // 32), 2 * (n // 32) + 1]  # both row warps of column band n // 32
            t, r = frag.locate(k, n)
            assert ptx_b_f16(t % 32, r % 4) == (k % 16, n % 8)
    assert_valid_fragment(frag)


def test_operand_tile_errors():
    with pytest.raises(ValueError, match="block_K=24 is not a multiple of the instruction's 16"):
        make_mma_operand_a_fragment(64, 64, 24, 4, "Square", "float16")


# -- FlashAttention ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("dim", [128, 64])
def test_flash_attention_acc_to_operand_a_is_register_local(dtype, dim):
    block_M, block_N, W = 128, 128, 4
    # GEMM1: S = Q K^T  (block_M x block_N), FullRow -> every warp owns 32 full rows
    acc_s = make_mma_accumulator_fragment(block_M, block_N, W, "FullRow", "float32")
    assert acc_s.meta["warp_grid"] == (4, 1)
    # GEMM2: O = P V with P = cast(acc_s) from registers: M=block_M, N=dim, K=block_N
    p_frag = make_mma_operand_a_fragment(block_M, dim, block_N, W, "FullRow", dtype)
    assert p_frag.replicate_size == 1
    assert acc_s.is_equal(p_frag) and is_register_compatible(acc_s, p_frag)
    for i in range(block_M):
        for j in range(block_N):
            assert acc_s.locate(i, j) == p_frag.locate(i, j)
    acc_o = make_mma_accumulator_fragment(block_M, dim, W, "FullRow")
    assert_valid_fragment(acc_s)
    assert_valid_fragment(acc_o)
    # row statistics (max / sum) of a row live in one quad of one warp: 4 threads
    for i in range(block_M):
        holders = {acc_s.map_forward_thread((i, j)) for j in range(block_N)}
        assert len(holders) == 4 and len({t // 32 for t in holders}) == 1 and len({t // 4 for t in holders}) == 1


def test_flash_attention_incompatible_cases_are_detected():
    acc_sq = make_mma_accumulator_fragment(128, 128, 4, "Square")  # warps 2x2 split the rows' K range
    p_frag = make_mma_operand_a_fragment(128, 128, 128, 4, "FullRow")
    assert not is_register_compatible(acc_sq, p_frag)
    assert acc_sq.mismatch(p_frag).startswith("element [0, 64]")
    acc = make_mma_accumulator_fragment(128, 128, 4, "FullRow", "int32")
    assert not is_register_compatible(acc, make_mma_operand_a_fragment(128, 128, 128, 4, "FullRow", "int8"))
    assert not is_register_compatible(acc, make_mma_operand_a_fragment(128, 128, 128, 4, "FullRow", "float32"))


# -- wgmma ----------------------------------------------------------------------


def ptx_wgmma_d(tid, i):
    """wgmma m64nNk* D: warp w = tid // 32 of the warpgroup owns rows 16w..16w+15;
    within it every 8 columns repeat the m16n8 C pattern (d_i: chunk i // 4)."""
    w, lane = divmod(tid, 32)
    r, c = ptx_c(lane, i % 4)
    return 16 * w + r, 8 * (i // 4) + c


@pytest.mark.parametrize("N", [8, 64, 256])
def test_wgmma_single_warpgroup_matches_ptx(N):
    frag = make_wgmma_accumulator_fragment(64, N, 4, "Square")
    assert frag.get_thread_size() == 128 and frag.locals_per_thread() == N // 2
    for tid in range(128):
        for i in range(N // 2):
            assert frag.locate(*ptx_wgmma_d(tid, i)) == (tid, i)
    assert_valid_fragment(frag)


@pytest.mark.parametrize(
    "M,N,W,policy,groups",
    [
        # Square on wgmma = fewest warpgroups along N (least shared-operand traffic, m64n256)
        (128, 256, 8, "Square", (2, 1)),
        (128, 256, 8, "FullCol", (1, 2)),
        (128, 128, 8, "FullRow", (2, 1)),
        (256, 128, 8, "Square", (2, 1)),
        (64, 256, 8, "Square", (1, 2)),
    ],
)
def test_wgmma_block_fragments(M, N, W, policy, groups):
    frag = make_wgmma_accumulator_fragment(M, N, W, policy)
    assert frag.meta["warpgroup_grid"] == groups
    gm, gn = groups
    tm, tn = M // gm, N // gn
    for i in range(0, M, 7):
        for j in range(0, N, 3):
            t, r = frag.locate(i, j)
            g, tid = divmod(t, 128)
            assert (g % gm, g // gm) == (i // tm, j // tn)
            a = (i % tm) // 64  # m64 atom inside the warpgroup tile
            assert r // (tn // 2) == a
            assert ptx_wgmma_d(tid, r % (tn // 2)) == (i % 64, j % tn)
    assert_valid_fragment(frag)


def test_wgmma_needs_whole_warpgroups():
    with pytest.raises(ValueError, match="not a multiple of 4"):
        make_wgmma_accumulator_fragment(128, 128, 6)
    with pytest.raises(ValueError, match="multiple of 64 rows"):
        make_wgmma_accumulator_fragment(32, 128, 4)
