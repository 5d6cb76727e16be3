"""auto_persistent: on sm_90a a warp-specialized GEMM with more tiles than SMs runs as one resident
block per SM walking the tiles in panels, its epilogue staged through shared memory (TMA stores).
The rewritten tile program computes exactly what the launched one did (tile interpreter), and
kernels it must not touch are left alone."""

from __future__ import annotations

import os
import sys

import pytest
import torch
from kernels import gemm
from tma_kernels import lower_source

import tilelang
import tilelang.language as T
from tilelang.backend.cuda import auto_persistent as ap
from tilelang.backend.target import nvcc_path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from tests.transform.tile_interp import run  # noqa: E402

SM90A = {"kind": "cuda", "arch": "sm_90a"}


def big_gemm(M, N, K, bm=128, bn=256, bk=64, stages=3, threads=256, dtype="float16"):
    return gemm.get_tir(M, N, K, bm, bn, bk, dtype, "float32", dtype, False, False, "Square", stages, threads)


@tilelang.jit(out_idx=[-1])
def gemm_bias_relu(M, N, K, bm, bn, bk, stages, panel):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), bias: T.Tensor((N,), "float32"),
             C: T.Tensor((M, N), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            if panel:
                T.use_swizzle(panel)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            for i, j in T.Parallel(bm, bn):
                acc[i, j] = T.max(acc[i, j] + bias[bx * bn + j], 0.0)
            T.copy(acc, C[by * bm, bx * bn])

    return main


def persistent(func, sms: int, monkeypatch):
    monkeypatch.setattr(ap, "_sm_count", lambda target: sms)
    monkeypatch.setattr(ap, "_fills_the_sm", lambda k, stages, alias_one=False: True)  # small tiles, to interpret
    return ap.auto_persistent(func, {"target": SM90A})


def test_the_rewrite_computes_what_the_launch_did(monkeypatch):
    # 5 x 4 tiles of 32 x 32 (odd edges) over 3 resident blocks, panels of 2 block rows
    f = gemm_bias_relu.get_tir(100, 150, 70, 32, 32, 16, 2, 2)
    g = persistent(f, 3, monkeypatch)
    assert g is not f and "for wave in T.serial(7)" in g.script()
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(100, 70, generator=gen).half()
    b = torch.randn(70, 150, generator=gen).half()
    bias = torch.randn(150, generator=gen)
    want, got = torch.zeros(100, 150), torch.zeros(100, 150)
    run(f, a, b, bias, want, race_check=False)
    run(g, a, b, bias, got, race_check=False)
    assert torch.equal(got, want)
    torch.testing.assert_close(want, torch.relu(a.float() @ b.float() + bias), atol=1e-2, rtol=1e-2)


def test_smem_bound_gemm_becomes_persistent_with_a_tma_store_epilogue():
    src = lower_source(big_gemm(8192, 8192, 8192))
    assert "Launch: grid (132), block (384)" in src
    assert "for (int wave = 0; wave < 16; ++wave)" in src
    assert "k_ring_pos" in src  # the warp-specialized ring runs on across tiles
    assert src.count("tl::tma_store(&C_tmap, &C_l_out[") == 4
    assert "tl::rasterize" not in src  # the tile walk already orders blocks in panels


def test_the_epilogue_store_drains_while_the_next_tile_computes():
    """Thread 0 issues the TMA stores and moves on; the wait for them to read the staging tile
    comes before the next tile writes it, and after the block's last tile (before it exits)."""
    src = lower_source(big_gemm(8192, 8192, 8192))
    issue = src[src.index("tl::tma_store(&C_tmap") :]
    assert "tl::tma_store_arrive();\n        }" in issue, "no wait right after the stores"
    first_write = src.index("C_l_out[co")
    assert src.rfind("tl::tma_store_wait<0>();", 0, first_write) > src.index("tl::wgmma_wait<0>();")
    assert src.rfind("tl::named_barrier_sync(1, 256);", 0, first_write) > src.rfind(
        "tl::tma_store_wait<0>();", 0, first_write
    )
    consumer_end = src[src.rindex("tl::tma_store_arrive();") :]
    assert consumer_end.count("tl::tma_store_wait<0>();") == 1  # once, after the wave loop
    assert consumer_end.index("}\n    }\n") < consumer_end.index("tl::tma_store_wait<0>();")


def test_odd_sizes_keep_the_partial_tiles():
    src = lower_source(big_gemm(3000, 2100, 1000))  # 24 x 9 tiles, both edges partial
    assert "Launch: grid (132)" in src and "for (int wave = 0; wave < 2; ++wave)" in src
    assert "< 216)" in src


@pytest.mark.parametrize(
    "func, arch, configs",
    [
        (lambda: big_gemm(8192, 8192, 8192), "sm_80", None),
        (lambda: big_gemm(8192, 8192, 8192), "sm_90a", {"tl.disable_auto_persistent": True}),
        (lambda: big_gemm(8192, 8192, 8192), "sm_90a", {"tl.disable_warp_specialized": True}),
        (lambda: big_gemm(8192, 8192, 8192), "sm_90a", {"tl.disable_tma_lower": True}),
        (lambda: big_gemm(1024, 1024, 1024), "sm_90a", None),  # 32 tiles: fewer than SMs
        (lambda: big_gemm(8192, 8192, 8192, 128, 128, 32, 3, 128), "sm_90a", None),  # 2 blocks per SM
        (lambda: gemm_bias_relu.get_tir(8192, 8192, 256, 128, 128, 64, 1, 0), "sm_90a", None),  # 1 stage
    ],
)
def test_left_alone(func, arch, configs):
    src = lower_source(func(), arch, pass_configs=configs)
    assert "wave" not in src and "C_l_out" not in src


def test_a_row_panel_swizzle_sets_the_panel_and_a_column_one_keeps_the_launch(monkeypatch):
    f = persistent(gemm_bias_relu.get_tir(8192, 8192, 256, 128, 256, 64, 3, 4), 132, monkeypatch)
    assert "tile_id // 128 * 4" in f.script() or "(tile_id // 128) * 4" in f.script()


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
def test_persistent_gemm_compiles_for_sm_90a():
    assert "wave" in lower_source(big_gemm(3000, 2100, 1000), "sm_90a", build=True)


@pytest.mark.parametrize("bm, bn, bk, stages", [(128, 256, 64, 3), (128, 256, 64, 4), (256, 128, 64, 3)])
def test_the_staged_epilogue_only_uses_shared_memory_that_exists(bm, bn, bk, stages):
    import re

    src = lower_source(big_gemm(8192, 8192, 8192, bm, bn, bk, stages))
    smem = int(re.search(r"dynamic shared memory (\d+) bytes", src).group(1))
    assert "for (int wave" in src and smem <= 227 * 1024
    staged = "C_l_out" in src
    assert staged == (stages * (bm * bk + bk * bn) * 2 + bm * bn * 2 <= 226 * 1024)


@tilelang.jit(out_idx=[-1])
def gemm_3d_grid(M, N, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, 256), T.ceildiv(M, 128), 1, threads=256) as (bx, by, bz):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 256), "float16")
            acc = T.alloc_fragment((128, 256), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * 128 + bz, k * 64], A_s)
                T.copy(B[k * 64, bx * 256], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 128 + bz * 7, bx * 256])

    return main


def test_a_unit_z_grid_keeps_its_block_index_bound(monkeypatch):
    f = persistent(gemm_3d_grid.get_tir(4096, 4096, 256), 132, monkeypatch)
    assert "bz: int32 = 0" in f.script(), f.script()
    src = lower_source(gemm_3d_grid.get_tir(4096, 4096, 256), build=nvcc_path() is not None)
    assert "for (int wave" in src


def attention(causal: bool, batch=8, heads=32, seq=4096, block_n=128, stages=2):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from flash_attention import mha_fwd

    return mha_fwd.flashattn.get_tir(batch, heads, seq, 128, causal, block_M=128, block_N=block_n,
                                     num_stages=stages, threads=256)  # fmt: skip


@pytest.mark.parametrize("causal", [False, True])
def test_attention_rewrite_computes_what_the_launch_did(causal, monkeypatch):
    """FlashAttention-shaped (reductions in registers, P·V able to run one trip late): 8 tiles
    of 64 rows (200: the last partial) over 3 resident blocks, in launch order."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from flash_attention import mha_fwd

    f = mha_fwd.flashattn.get_tir(1, 2, 200, 64, causal, block_M=64, block_N=64, num_stages=2, threads=128)
    g = persistent(f, 3, monkeypatch)
    assert g is not f and "for wave in T.serial(3)" in g.script()
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 200, 2, 64, generator=gen).half() for _ in range(3))
    want, got = torch.zeros(1, 200, 2, 64).half(), torch.zeros(1, 200, 2, 64).half()
    run(f, q, k, v, want, race_check=False)
    run(g, q, k, v, got, race_check=False)
    assert torch.equal(got, want)
    torch.testing.assert_close(want.float(), mha_fwd.reference(q, k, v, causal), atol=2e-3, rtol=2e-3)


def test_attention_walks_its_tiles_in_launch_order_with_q_from_the_producer():
    src = lower_source(attention(False))
    assert "Launch: grid (132), block (384)" in src
    assert "for (int wave = 0; wave < 63; ++wave)" in src and "if (wave * 132 + block_id < 8192)" in src
    producer = src[src.index("if (tx == 256)") : src.index("warpgroup_reg_alloc")]
    # x fastest (the blocks of one head share its K/V tiles), then heads, then batches
    q_load = "tl::tma_load(&Q_tmap, &k_lead_full[0], &Q_shared[0], 0, ((wave * 132 + block_id) / 32) % 32, "
    assert q_load + "(wave * 132 + block_id) % 32 * 128, ((wave * 132 + block_id) / 1024) % 8);" in producer
    # the next tile's Q waits until the consumers are done with this one's
    assert producer.index("tl::mbarrier_wait(&k_lead_empty[0]") < producer.index("&Q_tmap")
    consumer = src[src.index("warpgroup_reg_alloc") :]
    assert "Q_shared[" not in consumer[: consumer.index("tl::wgmma_gemm_ss<")]  # no consumer copies Q
    # the epilogue's O tile drains by TMA while the next tile runs; the block waits before it exits
    assert "tl::tma_store_wait<0>();\n  }\n}" in src


def test_causal_attention_walks_longest_tiles_first_in_alternating_directions():
    src = lower_source(attention(True))
    assert "Launch: grid (132), block (384)" in src
    # odd waves run block_id's tiles from the other end: each block pairs long and short tiles
    assert "wave * 132 + wave % 2 * 131 + block_id" in src
    assert "3968 - tl::floormod<int>(wave * 132 + wave % 2 * 131 + block_id" in src  # bx reversed


@pytest.mark.parametrize(
    "func, configs",
    [
        (lambda: attention(False), {"tl.disable_auto_persistent": True}),
        (lambda: attention(False, batch=1, heads=4), None),  # 128 tiles: fewer than SMs
        (lambda: attention(False, block_n=64), None),  # 96 KB with O over Q: two blocks per SM
        # 3 stages: 256 KB side by side, no warp specialization; launched, O shares Q's storage
        (lambda: attention(False, stages=3), None),
    ],
)
def test_attention_left_alone(func, configs):
    assert "wave" not in lower_source(func(), pass_configs=configs)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
@pytest.mark.parametrize("causal", [False, True])
def test_persistent_attention_compiles_for_sm_90a(causal):
    assert "wave" in lower_source(attention(causal, batch=4, heads=16, seq=1000), "sm_90a", build=True)
