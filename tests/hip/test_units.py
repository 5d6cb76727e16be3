"""The MFMA register layouts of layout/mfma.py and the HIP target facts, without a compiler.

The instruction maps (which lane holds which operand / result element) are AMD's, as the ISA
documents them; what is tested here is ours: every accumulator / operand fragment is a
bijection between the tile and (thread, register), and issuing each instruction transposed
(A_i = B^T, B_i = A^T) computes C = A B in the accumulator map — checked by executing the
documented instruction on numpy operands built lane by lane, the way the gemm lowers."""

from __future__ import annotations

import numpy as np
import pytest

from tilelang.backend import target as T
from tilelang.backend.arch_limits import arch_limits
from tilelang.layout.mfma import (
    INSTRUCTIONS,
    WAVE,
    make_mfma_fragment,
    mfma_grid,
    mfma_instruction,
    operand_slot,
    result_slot,
)


@pytest.mark.parametrize("rows,cols,grid", [(16, 16, (1, 1)), (64, 64, (2, 1)), (128, 64, (2, 2)), (32, 96, (1, 2))])
def test_accumulator_fragment_is_a_bijection_onto_thread_register_pairs(rows, cols, grid):
    F = make_mfma_fragment(rows, cols, grid)
    seen = {}
    for i in range(rows):
        for j in range(cols):
            t, r = F.locate(i, j)
            assert (t, r) not in seen, f"({i},{j}) and {seen[(t, r)]} share thread {t} register {r}"
            seen[(t, r)] = (i, j)
    waves = grid[0] * grid[1]
    per_thread = rows * cols // (waves * WAVE)
    assert set(seen) == {(t, r) for t in range(waves * WAVE) for r in range(per_thread)}  # covers, no holes
    assert F.locals_per_thread() == per_thread


def test_accumulator_block_layout_is_the_transposed_instruction_result():
    F = make_mfma_fragment(16, 16, (1, 1))
    for lane in range(WAVE):
        for e in range(4):
            i, j = result_slot(lane, e)  # D = C^T: D[i][j] = C[j][i]
            assert F.locate(j, i) == (lane, e)


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=lambda i: i.name)
def test_operand_maps_cover_each_operand_once(ins):
    slots = {operand_slot(lane, e, ins.per_lane) for lane in range(WAVE) for e in range(ins.per_lane)}
    assert slots == {(r, k) for r in range(16) for k in range(ins.k)}
    assert len({result_slot(lane, e) for lane in range(WAVE) for e in range(4)}) == 256


def _issue(ins, A, B):
    """One transposed instruction on a 16 x K_i block, lane by lane as backend/hip/gemm.py issues
    it; returns C in the accumulator map's registers, read back to a 16 x 16 matrix."""
    P = ins.per_lane
    src0 = np.zeros((WAVE, P))  # A_i = B^T: lane l, element e holds B[k][n] for (n, k) = operand_slot
    src1 = np.zeros((WAVE, P))  # B_i = A^T: lane l, element e holds A[m][k] for (m, k) = operand_slot
    for lane in range(WAVE):
        for e in range(P):
            row, k = operand_slot(lane, e, P)
            src0[lane, e] = B[k, row]
            src1[lane, e] = A[row, k]
    # the instruction as the ISA defines it: rebuild A_i (16 x K) and B_i (K x 16) from the lanes
    Ai, Bi = np.zeros((16, ins.k)), np.zeros((ins.k, 16))
    for lane in range(WAVE):
        for e in range(P):
            i, k = operand_slot(lane, e, P)
            Ai[i, k] = src0[lane, e]
            Bi[k, i] = src1[lane, e]
    D = Ai @ Bi
    acc = np.zeros((WAVE, 4))
    for lane in range(WAVE):
        for e in range(4):
            i, j = result_slot(lane, e)
            acc[lane, e] = D[i, j]
    F = make_mfma_fragment(16, 16, (1, 1))
    C = np.zeros((16, 16))
    for m in range(16):
        for n in range(16):
            t, r = F.locate(m, n)
            C[m, n] = acc[t, r]
    return C


@pytest.mark.parametrize("ins", INSTRUCTIONS, ids=lambda i: i.name)
def test_transposed_issue_computes_a_times_b_in_the_accumulator_map(ins):
    rng = np.random.default_rng(7)
    A = rng.integers(-4, 5, (16, ins.k)).astype(np.float64)
    B = rng.integers(-4, 5, (ins.k, 16)).astype(np.float64)
    np.testing.assert_array_equal(_issue(ins, A, B), A @ B)


def test_register_a_operand_has_the_accumulator_map():
    # FlashAttention: P = cast(S) feeds the next gemm as A without moving between lanes
    S = make_mfma_fragment(64, 64, (4, 1))
    P = make_mfma_fragment(64, 64, (4, 1), "float16", "operand A")
    assert all(S.locate(i, j) == P.locate(i, j) for i in range(64) for j in range(64))


def test_instruction_choice_per_dtype_and_arch():
    assert mfma_instruction("float16", "gfx90a").builtin == "__builtin_amdgcn_mfma_f32_16x16x16f16"
    assert mfma_instruction("bfloat16", "gfx940").builtin.endswith("16x16x16bf16_1k")
    assert mfma_instruction("float32", "gfx90a").k == 4
    assert mfma_instruction("int8", "gfx90a").k == 16 and mfma_instruction("int8", "gfx940").k == 32
    with pytest.raises(ValueError, match="no 16x16 MFMA"):
        mfma_instruction("float64", "gfx90a")


def test_wave_grids_follow_the_warp_policies():
    assert mfma_grid(128, 128, 4, "Square") == (2, 2)
    assert mfma_grid(128, 128, 4, "FullRow") == (4, 1)
    assert mfma_grid(128, 128, 4, "FullCol") == (1, 4)
    assert mfma_grid(64, 64, 2, "Square", rows_only=True) == (2, 1)
    with pytest.raises(ValueError, match="cannot split"):
        mfma_grid(16, 16, 2)


def test_hip_target_facts():
    assert T.parse("hip") == T.Target("hip", "gfx90a")
    assert T.parse({"kind": "hip", "arch": "gfx90a"}).arch == "gfx90a"
    assert T.parse("gfx940").arch == "gfx940" and T.parse("hip -mcpu=gfx942").arch == "gfx942"
    assert T.hip_offload_arch(T.parse("gfx942")) == "gfx940" and T.hip_offload_arch(T.parse("hip")) == "gfx90a"
    with pytest.raises(ValueError, match="unknown HIP processor"):
        T.parse({"kind": "hip", "arch": "gfx1100"})
    for arch in T.HIP_ARCHES:
        lim = arch_limits(f"hip:{arch}")
        assert (lim.warp_size, lim.smem_per_block, lim.max_threads_per_block) == (64, 64 * 1024, 1024)
        assert T.parse({"kind": "hip", "arch": arch}).limits is lim
    assert T.wave_size(T.parse("hip")) == 64 and T.wave_size(T.parse("cuda -arch=sm_80")) == 32


def test_an_amd_processor_without_mfma_is_refused_at_the_kernel():
    from seeds import seed_kernels as S

    import tilelang
    from tilelang.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="unsupported on HIP: AMD processor gfx1100"):
        tilelang.lower(S.vector_add.get_tir(M=100), target=T.Target("hip", "gfx1100"), enable_device_compile=False)
