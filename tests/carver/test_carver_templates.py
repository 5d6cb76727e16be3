"""Carver templates: the GEMM search's constraints, objective and ordering, the seed's
hand-derived A100 config, Hint (de)serialisation, and the simple templates."""

import math

import pytest

from tilelang.carver import (
    CUDA,
    ElementwiseTemplate,
    GEMVTemplate,
    GeneralReductionTemplate,
    Hint,
    MatmulTemplate,
)
from tilelang.carver.roller import axis_candidates
from tilelang.ir.dtype import DataType

KB = 1024


def gemm_hints(arch, topk=10, **kw):
    args = dict(in_dtype="float16", out_dtype="float16", accum_dtype="float32")
    args.update(kw)
    return MatmulTemplate(4096, 4096, 4096, **args).with_arch(arch).recommend_hints(topk)


def check_constraints(h, arch, in_bytes=2, acc_bits=32):
    bm, bn = h.block
    bk = h.rstep[0]
    assert h.pipeline_stage * (bm + bn) * bk * in_bytes <= arch.smem_cap
    assert 2 * bm * bn * acc_bits // 32 <= arch.reg_cap
    assert bm % 16 == 0 and bn % 16 == 0 and bk % 16 == 0
    assert bm % h.warp[0] == 0 and bn % h.warp[1] == 0
    assert h.threads % 32 == 0 and 32 <= h.threads <= 1024
    assert 2 <= h.pipeline_stage <= 4


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_gemm_hints_satisfy_constraints(target):
    arch = CUDA(target)
    hints = gemm_hints(arch)
    assert len(hints) == 10
    for h in hints:
        check_constraints(h, arch)
        assert h.use_tc and h.arch is arch
    if target == "sm_90a":  # wgmma: block_M in units of 64, whole warpgroups
        assert all(h.block[0] % 64 == 0 and h.threads % 128 == 0 for h in hints)


def test_a100_hints_include_the_seed_config():
    configs = [h.to_config() for h in gemm_hints(CUDA("sm_80"))]
    assert any(
        c["block_M"] == 128
        and c["block_N"] == 128
        and c["block_K"] in (32, 64)
        and c["num_stages"] in (2, 3)
        and c["threads"] == 128
        for c in configs
    ), configs
    # an Ampere part with 100 KB of shared memory per SM gets exactly the seed's 128x128x32, 3 stages
    configs86 = [h.to_config() for h in gemm_hints(CUDA("sm_86"))]
    assert {"block_M": 128, "block_N": 128, "block_K": 32, "num_stages": 3, "threads": 128} in configs86


def test_objective_value_for_128x128_on_a100():
    h = next(h for h in gemm_hints(CUDA("sm_80")) if h.block == [128, 128])
    assert h.rstep == [64]
    tiles = (4096 // 128) ** 2
    traffic = (128 * 4096 * 2 + 4096 * 128 * 2 + 128 * 128 * 2) * tiles  # A + B reads, C write
    # registers: 2 * 128 * 128 = 32768 -> 2 blocks per SM; 1024 tiles / (2 * 108) -> 5 waves
    assert h.score == (traffic + 1) * math.ceil(tiles / (2 * 108))


def test_topk_is_ordered_by_objective_and_matches_exhaustive_search():
    t = MatmulTemplate(4096, 4096, 4096, accum_dtype="float32")
    arch = CUDA("sm_80")
    hints = t.with_arch(arch).recommend_hints(10)
    scores = [h.score for h in hints]
    assert scores == sorted(scores)
    search, _ = t.search(arch)
    every = [search.evaluate(m, n) for m in search.m_cands for n in search.n_cands]
    best = sorted(c.score for c in every if c is not None)[:10]
    assert scores == best


def test_axis_candidates_are_factors_plus_powers_of_two():
    assert axis_candidates(96, 16) == [16, 32, 48, 64, 96, 128]
    assert axis_candidates(4096, 16)[:4] == [16, 32, 64, 128]
    assert axis_candidates(8, 16) == [16]


def test_int8_uses_k_granularity_32_and_dtype_objects():
    hints = gemm_hints(CUDA("sm_80"), in_dtype=DataType("int8"), out_dtype="int32", accum_dtype=DataType("int32"))
    assert all(h.rstep[0] % 32 == 0 for h in hints)
    assert hints[0].intrin_info.shape == (16, 8, 32)


def test_odd_shapes_and_fp16_accumulation():
    hints = MatmulTemplate(100, 77, 33).with_arch("sm_80").recommend_hints(3)
    assert hints and all(h.block[0] >= 16 and h.block[1] >= 16 for h in hints)
    # fp16 accumulators halve the register proxy: 256x256 becomes feasible
    assert [256, 256] in [h.block for h in MatmulTemplate(4096, 4096, 4096).with_arch("sm_80").recommend_hints(5)]


def test_invalid_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="M must be a positive int"):
        MatmulTemplate(0, 16, 16)
    with pytest.raises(TypeError, match="K must be a positive int"):
        MatmulTemplate(16, 16, 16.0)
    with pytest.raises(TypeError, match="N must be a positive int"):
        MatmulTemplate(16, "n", 16)
    with pytest.raises(TypeError, match="in_dtype"):
        MatmulTemplate(16, 16, 16, in_dtype="float17")
    with pytest.raises(ValueError, match="with_arch"):
        MatmulTemplate(16, 16, 16).recommend_hints()
    with pytest.raises(ValueError, match="topk"):
        MatmulTemplate(16, 16, 16).with_arch("sm_80").recommend_hints(0)


def test_hint_dict_roundtrip_and_config():
    h = gemm_hints(CUDA("sm_80"), topk=1)[0]
    d = h.to_dict()
    assert d["arch"] == "sm_80" and d["rasterization_plan"]["kind"] in ("none", "row", "column")
    back = Hint.from_dict(d)
    assert back.to_dict() == d and back.arch.sm_version == 80
    cfg = h.to_config()
    assert set(cfg) == {"block_M", "block_N", "block_K", "num_stages", "threads"}
    assert cfg["threads"] == (h.block[0] // h.warp[0]) * (h.block[1] // h.warp[1]) * 32
    with pytest.raises(ValueError, match="unknown Hint fields"):
        Hint.from_dict({"blocks": [1]})


def test_gemv_hints():
    for trans_B in (True, False):
        hints = GEMVTemplate(4096, 4096, trans_B=trans_B).with_arch("sm_80").recommend_hints()
        assert hints
        for h in hints:
            cfg = h.to_config()
            assert set(cfg) == {"block_N", "block_K", "num_stages", "threads"}
            assert cfg["threads"] % 32 == 0 and cfg["threads"] <= 1024 and 4096 % cfg["block_K"] == 0
    small = GEMVTemplate(16, 64).with_arch("sm_80").recommend_hints()
    assert all(h.threads >= 32 and h.threads % 32 == 0 for h in small)


def test_elementwise_hints():
    h = ElementwiseTemplate([1024, 1024], "float16").with_arch("sm_80").recommend_hints()[0]
    assert h.vectorize["input"] == 8 and math.prod(h.block) == h.threads * 8 and h.threads == 256
    odd = ElementwiseTemplate([3], "float32").with_arch("sm_80").recommend_hints()[0]
    assert odd.vectorize["input"] == 1 and odd.block[0] >= 3
    with pytest.raises(ValueError, match="shape"):
        ElementwiseTemplate([], "float16")


def test_reduction_hints():
    row = GeneralReductionTemplate("SR", [4096, 1024], "float32").with_arch("sm_80").recommend_hints()[0]
    assert row.reduce_thread[0] * 4 == row.rstep[0] and row.threads in (128, 256)
    col = GeneralReductionTemplate("RS", [4096, 1024], "float32").with_arch("sm_80").recommend_hints()[0]
    assert col.block[0] == col.thread[0] * 4 and 1024 // col.block[0] >= 4 and col.threads % 32 == 0
    mixed = GeneralReductionTemplate("SRR", [8, 7, 5], "float32").with_arch("gfx942").recommend_hints()
    assert mixed and all(h.threads >= 1 for h in mixed)
    with pytest.raises(ValueError, match="'S'/'R'"):
        GeneralReductionTemplate("SX", [4, 4])
    with pytest.raises(ValueError, match="no reduce axis"):
        GeneralReductionTemplate("SS", [4, 4])
    with pytest.raises(ValueError, match="one extent per"):
        GeneralReductionTemplate("SR", [4])
