"""The explicit Hopper examples lowered for CUDA: built by nvcc for sm_90a (and
rejected with "needs sm_90a" for sm_80); the generated code of T.ws regions, mbarriers,
setmaxnreg, clusters and region-local barriers has the structure the design promises."""

from __future__ import annotations

import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from catalog import _example

import tilelang
import tilelang.language as T
from tilelang.backend.target import nvcc_path
from tilelang.errors import LayoutError, UnsupportedError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hopper_kernels import cluster_ranks, sync_ops  # noqa: E402

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


def _cases() -> dict:
    def ex(rel, attr, *args):
        return lambda: getattr(_example(f"hopper/{rel}"), attr).get_tir(*args)

    return {
        "ws_gemm": ex("ws_gemm.py", "matmul_ws", 200, 136, 160, 128, 128, 64),
        "ws_gemm_ring": ex("ws_gemm_pipelined.py", "matmul_ws_ring", 200, 136, 224, 128, 128, 64, 3),
        "tma_double_buffer": ex("tma_double_buffer.py", "qk_scores", 2, 2, 300, 64, 64, 64),
        "persistent_ws": ex("persistent_ws_gemm.py", "matmul_persistent_ws", 300, 272, 256, 128, 128, 64, 4, 2),
        "cluster": lambda: cluster_ranks.get_tir(64, 200),
        "sync_ops": lambda: sync_ops.get_tir(True),
    }


SM90 = {"kind": "cuda", "arch": "sm_90a"}


def _source(func, arch: str = "sm_90a") -> str:
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch}, enable_device_compile=False).kernel_source


@pytest.fixture(scope="module")
def builds():
    funcs = {name: make() for name, make in _cases().items()}

    def one(name):
        try:
            return name, tilelang.lower(funcs[name], target=SM90)
        except Exception as err:  # noqa: BLE001 - reported by the test of this kernel
            return name, err

    with ThreadPoolExecutor(max_workers=int(os.environ.get("TL_TEST_NVCC_JOBS", "2"))) as ex:
        return dict(ex.map(one, funcs)), funcs


@needs_nvcc
@pytest.mark.parametrize("name", list(_cases()))
def test_builds_for_sm90a(builds, name):
    art = builds[0][name]
    if isinstance(art, Exception):
        raise art
    assert art.lib_path and os.path.getsize(art.lib_path) > 0
    assert art.meta.get("spill_bytes", 0) == 0, art.meta


@pytest.mark.parametrize("name", list(_cases()))
def test_sm80_is_rejected(builds, name):
    with pytest.raises(UnsupportedError, match="needs sm_90a"):
        _source(builds[1][name], "sm_80")


def test_ws_gemm_structure(builds):
    src = _source(builds[1]["ws_gemm"])
    # producer region: warpgroup 0, its thread 0 issues the TMA; consumer region: warpgroup 1
    assert "if (tx < 128) {" in src and "if (tx >= 128) {" in src
    assert "tl::mbarrier_init(&data_is_ready[0], 128);" in src and "tl::fence_barrier_init();" in src
    assert "tl::mbarrier_expect_tx(&data_is_ready[0]" in src and "tl::tma_load(" in src
    # the regions are ordered by the mbarriers only: no block barrier inside the k loop
    loop = src[src.index("for (int ko") :]
    loop = loop[: loop.index("\n  }\n")]
    assert "__syncthreads" not in loop and "tl::mbarrier_wait(&compute_is_done[0]" in loop
    # the consumer's wgmma counts warpgroups from the region's first thread (THREAD_BASE 128)
    assert re.search(r"tl::wgmma_gemm_ss<[^(]*, 128>\(", src), src


def test_persistent_structure(builds):
    src = _source(builds[1]["persistent_ws"])
    assert "__launch_bounds__(256, 1)" in src  # setmaxnreg needs one resident block
    assert "tl::warpgroup_reg_dealloc<40>();" in src and "tl::warpgroup_reg_alloc<240>();" in src


def test_cluster_meta(builds):
    art = tilelang.lower(builds[1]["cluster"], target=SM90, enable_device_compile=False)
    assert art.meta["cluster"] == [2, 1, 1]
    assert "tl::cluster_ctarank()" in art.kernel_source and "tl::cluster_sync();" in art.kernel_source


def region_kernel():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((64, 64), "float32")
            F = T.alloc_fragment((64, 64), "float32")
            R = T.alloc_fragment((64,), "float32")
            with T.ws(1):
                T.copy(A, S)  # written by the region's threads ...
                T.copy(S, F)  # ... and read back: a barrier of the region only
                T.reduce_max(F, R, dim=0)  # rows spread over the region's warps
                T.copy(R, B)

    return main


def test_region_barriers_are_named_barriers():
    src = _source(region_kernel())
    body = src[src.index("if (tx >= 128) {") :]
    assert "__syncthreads" not in body
    assert "tl::named_barrier_sync<9, 128>();" in body
    # a cross-warp reduction inside the region syncs with the region's named barrier
    assert re.search(r"tl::AllReduce<[^>]*, 128, 128, 9>::run", body), body


def test_fragment_shared_by_two_regions():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            F = T.alloc_fragment((64, 64), "float32")
            with T.ws(0):
                T.clear(F)
            with T.ws(1):
                T.copy(F, A)

    with pytest.raises(LayoutError, match="registers belong to the threads of one warpgroup range"):
        _source(main)
