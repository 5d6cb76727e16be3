"""A Target that knows itself (architecture as a number, features, limits, SM count) and the frozen
compile context every pass receives (#19 item 2)."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest
from kernels import gemm

import tilelang
from tilelang.backend.target import DEFAULT_SM_COUNTS, Target, parse
from tilelang.cache.kernel_cache import cache_key
from tilelang.transform.context import CompileContext

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))


def test_arch_parsing_and_features():
    h = parse({"kind": "cuda", "arch": "sm_90a"})
    assert h.sm == 90 and h.features == {"tma", "clusters", "wgmma"}
    assert parse("cuda -arch=sm_90").features == {"tma", "clusters"}  # no `a`: no wgmma
    b = Target("cuda", "sm_100a")
    assert b.sm == 100 and "tcgen05" in b.features and "wgmma" not in b.features
    a = Target("cuda", "sm_80")
    assert a.features == frozenset() and a.limits.smem_per_block == 163 * 1024
    assert b.limits.name == "sm_90a"  # numbers, not strings: sm_100a is newer than sm_90
    assert parse("c").limits.name == "c" and parse("c").sm_count is None


def test_sm_count_forms_and_defaults():
    want = Target("cuda", arch="sm_90a", sm_count=114)
    assert parse("cuda -arch=sm_90a -sm_count=114") == want
    assert parse({"kind": "cuda", "arch": "sm_90a", "sm_count": 114}) == want
    assert parse(want.to_dict()) == want  # round trip
    if "torch" not in sys.modules or not __import__("torch").cuda.is_available():
        assert Target("cuda", "sm_90a").sm_count == DEFAULT_SM_COUNTS[90] == 132
        assert Target("cuda", "sm_80").sm_count == 108
    for bad in ("cuda -arch=sm_90a -sm_count=0", {"kind": "cuda", "arch": "sm_90a", "sm_count": "x"}):
        with pytest.raises(ValueError, match="sm_count"):
            parse(bad)
    with pytest.raises(ValueError, match="CUDA targets only"):
        parse({"kind": "c", "sm_count": 4})


def test_sm_count_is_part_of_the_cache_key_and_sizes_the_persistent_grid():
    f = gemm.get_tir(8192, 8192, 8192, 128, 256, 64, "float16", "float32", "float16", False, False, "Square", 3, 256)
    k132 = cache_key(f, Target("cuda", "sm_90a", sm_count=132), {}, "")
    k114 = cache_key(f, Target("cuda", "sm_90a", sm_count=114), {}, "")
    assert k132 != k114
    src = tilelang.lower(f, target="cuda -arch=sm_90a -sm_count=114", enable_device_compile=False).kernel_source
    assert "Launch: grid (114), block (384)" in src


def test_compile_context_is_frozen_and_accepts_the_old_dict_keys():
    ctx = CompileContext.of({"target": "sm_90a", "pass_configs": {"tl.disable_tma_lower": True}, "build_dir": "/x"})
    assert ctx.target == Target("cuda", "sm_90a") and ctx.pass_configs["tl.disable_tma_lower"] is True
    assert ctx.build_dir == "/x" and CompileContext.of(ctx) is ctx and CompileContext.of(None).target is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.target = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        ctx.pass_configs["tl.disable_tma_lower"] = False  # type: ignore[index]
    with pytest.raises(TypeError, match="unknown compile-context keys"):
        CompileContext.of({"targte": "c"})
    assert ctx.with_(target="c").target.kind == "c" and ctx.target.kind == "cuda"
