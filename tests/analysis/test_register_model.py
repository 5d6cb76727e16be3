"""The register-pressure model (`analysis/register_model.py`) on a few reference kernels, without
nvcc: what it counts at the peak point is what the per-thread IR says (test_estimate.py compares
the resulting estimate with ptxas where nvcc exists)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from tilelang.analysis import analyze_traced
from tilelang.analysis import register_model as M
from tilelang.analysis import resources as R
from tilelang.analysis.compiled import run_pipeline_for_analysis

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402


def per_thread(name: str, arch: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = run_pipeline_for_analysis(catalog.all_funcs()[name](), arch)
    return compiled.after("plan_shared_memory")


def test_array_elements_die_at_their_last_use():
    # kz.cast_copy: a float32 tile loaded into `a`, converted pairwise into the float16 `b`, staged
    # through shared memory: `a` dies while `b` fills, so the peak is below both arrays together
    low = per_thread("kz.cast_copy", "sm_80")
    declared = sum(w for _, w in R.register_arrays(low))
    got = M.pressure(low)
    assert got.arrays < declared, (got, declared)


def test_accumulator_and_operand_fragments_at_the_gemm():
    # seed.matmul at sm_80: tl::gemm_ss<64, 64, 32, 2, 2> in the K loop; each warp holds 2 m16 A atoms
    # and 4 n8 B atoms per K-step (16 words), double-buffered, and one ldmatrix address per x4
    # load of each of the 2 K-steps (2 A + 2 B): 32 + 8 on top of the 32-word accumulator; the K
    # loop (3 iterations) is unrolled by nvcc, so the epilogue's 32 guarded stores keep their
    # guards live through the gemm (200 x 136 is not a multiple of the 64 x 64 tile)
    got = M.pressure(per_thread("seed.matmul", "sm_80"))
    assert got.gemm_family == "mma.sync" and "C_local" in got.live
    assert (got.arrays, got.transient) == (32, 40 + 32)


def test_a_gemm_outside_a_loop_folds_its_addresses():
    # kz.column_sum_of_gemm: one gemm, no K loop: one K-step's fragments (8 A + 8 B words), no
    # address registers (the shared base plus constants)
    got = M.pressure(per_thread("kz.column_sum_of_gemm", "sm_80"))
    assert got.gemm_family == "mma.sync" and got.transient == 16


def test_wgmma_keeps_operands_in_shared_memory():
    got = M.pressure(per_thread("seed.matmul", "sm_90a"))
    assert got.gemm_family == "wgmma" and got.transient == M.WGMMA_WORDS


def test_run_time_strides_keep_64_bit_addresses_through_the_k_loop():
    # seed.matmul_dynamic: the K loop's copies index A (M, K) and B (K, N) with the run-time
    # strides k and n: every instance's 64-bit address and row predicate stay live through it (at
    # least the 2 + 2 vector copies of a stage), on top of what the same gemm holds with static sizes
    dynamic = M.pressure(per_thread("seed.matmul_dynamic", "sm_90a"))
    static = M.pressure(per_thread("seed.matmul", "sm_90a"))
    assert dynamic.peak >= static.peak + 4 * M.WIDE_ADDRESS_WORDS


def test_a_run_time_stride_whose_row_stays_keeps_an_advancing_pointer_too():
    # seed.matmul_dynamic's fallback copies: A[row(c), k_1 * 32 + col] (the row does not move with
    # the K loop) and B[k_1 * 32 + row(c), col] (it does), 16 instances each at sm_90a (wgmma)
    dynamic = M.pressure(per_thread("seed.matmul_dynamic", "sm_90a"))
    assert dynamic.transient >= M.WGMMA_WORDS + 16 * (M.INVARIANT_ROW_ADDRESS_WORDS + M.WIDE_ADDRESS_WORDS)


def test_wgmma_in_an_unrolled_k_loop_holds_the_next_staged_copies():
    # seed.matmul_splitk at sm_90a: a two-iteration K loop (nvcc unrolls it) whose copies go through
    # registers (tl::copy_vec_pred<16>: 2 for A + 2 for B, 4 words each) under the wgmma
    got = M.pressure(per_thread("seed.matmul_splitk", "sm_90a"))
    assert got.gemm_family == "wgmma" and got.transient == M.WGMMA_WORDS + 16


def test_an_all_reduce_across_warps_holds_its_scratch_state():
    # seed.layer_norm: 64 threads per row reduce through shared scratch; the in-warp reduction of
    # seed.reduction_op (4 threads) does not
    from tilelang.ir.expr import Call
    from tilelang.ir.visitor import collect

    def reduces(name):
        f = per_thread(name, "sm_80")
        return [
            M.cross_warp_reduce(c) for c in collect(f.body, lambda n: isinstance(n, Call) and n.op == "tl.all_reduce")
        ]

    assert reduces("seed.layer_norm") and all(reduces("seed.layer_norm"))
    assert reduces("seed.reduction_op") and not any(reduces("seed.reduction_op"))


def test_a_printf_kernel_has_the_abi_floor():
    est = R.estimate_registers(per_thread("kz.debug_print_assert", "sm_80"))
    assert est >= M.CALL_REGISTERS


@pytest.mark.parametrize("name", ["seed.vector_add", "ex.quickstart"])
def test_the_report_says_estimate_until_measured(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = analyze_traced(catalog.all_funcs()[name](), "sm_90a", None, measured=False)
    res = info.resources
    assert not res.measured and res.regs_per_thread is not None and res.regs_per_thread >= R.REG_FLOOR
    pytest.importorskip("pygls")
    from dataclasses import asdict

    from tilelang_lsp import render

    assert render.kernel_label(asdict(res)).endswith(f"~{res.regs_per_thread} regs (estimate)")
