"""Single-stage TMA prefetch (backend/cuda/single_stage_prefetch.py): a `num_stages=1` pipeline on
sm_90 loads each buffer's next tile as soon as its last reader is done — one mbarrier per buffer,
waited for where the copy was written (cp.async commit groups where TMA is unavailable); without
async copies the loop stays synchronous."""

from __future__ import annotations

import os
import sys

import pytest
from kernels import gemm
from tma_kernels import lower_source

from tilelang.backend.target import nvcc_path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from flash_attention import mha_fwd  # noqa: E402

# the kernel as written, not in row halves (backend/cuda/split_rows.py; its own tests cover the split form)
WHOLE_ROWS = {"tl.disable_row_split": True}


def seed_flash(causal: bool = False, seq: int = 4096):
    return mha_fwd.flashattn.get_tir(8, 32, seq, 128, causal, block_M=128, block_N=128, num_stages=1, threads=128)


def positions(src: str, *needles: str) -> list[int]:
    out, start = [], 0
    for nd in needles:
        start = src.index(nd, start)
        out.append(start)
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_prefetches_k_and_v_on_their_own_barriers(causal):
    src = lower_source(seed_flash(causal), pass_configs=WHOLE_ROWS)
    assert "tl::mbarrier_init_block(&k_full[0], 2, 1);" in src  # K and V: one barrier each
    # prologue loads both, then in the loop: wait K, Q·Kᵀ, refill K, softmax, wait V, P·V, refill V
    positions(
        src,
        "tl::tma_load(&K_tmap, &k_full[0]",
        "tl::tma_load(&V_tmap, &k_full[1]",
        "for (int k = 0;",
        "tl::mbarrier_wait(&k_full[0], k % 2);",
        "tl::gemm_ss<",  # mma.sync: its register tiles exceed 255 per thread (infer_layout)
        "__syncthreads();",
        "tl::tma_load(&K_tmap, &k_full[0], &K_shared[0], 0, by, k * 128 + 128, bz);",
        "tl::exp2(",
        "tl::mbarrier_wait(&k_full[1], k % 2);",
        "tl::gemm_rs<",
        "__syncthreads();",
        "tl::tma_load(&V_tmap, &k_full[1], &V_shared[0], 0, by, k * 128 + 128, bz);",
        "tl::mbarrier_invalidate_block(&k_full[0], 2);",
    )
    assert "copy_vec_pred<16>(&K_shared" not in src and "copy_vec_pred<16>(&V_shared" not in src


def test_single_stage_gemm_shares_nothing_between_its_operands():
    src = lower_source(gemm.get_tir(512, 512, 512, 128, 128, 64, "float16", "float32", "float16", False, False,
                                    "Square", 1, 128))  # fmt: skip
    assert "tl::mbarrier_init_block(&k_full[0], 2, 1);" in src
    wait_a, wait_b, mma = positions(src, "mbarrier_wait(&k_full[0]", "mbarrier_wait(&k_full[1]", "wgmma_gemm_ss<")
    assert wait_a < wait_b < mma


@pytest.mark.parametrize("arch, configs", [("sm_80", None), ("sm_90a", {"tl.disable_tma_lower": True, **WHOLE_ROWS})])
def test_without_tma_the_prefetch_uses_cp_async_groups(arch, configs):
    src = lower_source(seed_flash(), arch, pass_configs=configs)
    assert "mbarrier" not in src and "tma_load" not in src
    # K's group is committed before V's: at K's wait V's may still fly, and at V's wait the next K's
    positions(
        src,
        "cp_async_zfill<16>(&K_shared",
        "tl::cp_async_commit();",
        "cp_async_zfill<16>(&V_shared",
        "tl::cp_async_commit();",
        "for (int k = 0;",
        "tl::cp_async_wait<1>();",
        "gemm_",
        "cp_async_zfill<16>(&K_shared",
        "tl::cp_async_commit();",
        "tl::cp_async_wait<1>();",
        "gemm_rs<",
        "cp_async_zfill<16>(&V_shared",
        "tl::cp_async_commit();",
    )


def test_without_async_copies_single_stage_loops_stay_synchronous():
    src = lower_source(seed_flash(), "sm_80", pass_configs={"tl.enable_async_copy": False})
    assert "cp_async" not in src and "mbarrier" not in src


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
@pytest.mark.parametrize("causal", [False, True])
def test_prefetching_flash_attention_compiles_for_sm_90a(causal):
    assert "tma_load" in lower_source(seed_flash(causal, seq=1000), "sm_90a", build=True)
