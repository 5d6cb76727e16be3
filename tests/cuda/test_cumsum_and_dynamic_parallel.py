"""T.cumsum on register fragments and T.Parallel over a dynamic extent on the CUDA backend,
without a GPU: the lowered per-thread IR runs in the simulator (sim.py) against torch, at
sizes that are not tile multiples; plus the generated source's shape and an nvcc build."""

from __future__ import annotations

import cumsum_kernels as CK
import pytest
import torch
from sim import simulate

import tilelang
from tilelang.backend.target import nvcc_path
from tilelang.errors import UnsupportedError

torch.manual_seed(0)


def tiled_cumsum(x: torch.Tensor, bm: int, bn: int, dim: int, reverse: bool) -> torch.Tensor:
    out = torch.empty_like(x)
    for i in range(0, x.shape[0], bm):
        for j in range(0, x.shape[1], bn):
            t = x[i : i + bm, j : j + bn]
            out[i : i + bm, j : j + bn] = t.flip(dim).cumsum(dim).flip(dim) if reverse else t.cumsum(dim)
    return out


@pytest.mark.parametrize(
    "dim,reverse,in_place", [(0, False, True), (1, False, False), (1, True, True), (0, True, False)]
)
def test_fragment_cumsum_matches_torch(dim, reverse, in_place):
    x = torch.randn(40, 70)
    y = torch.zeros_like(x)
    simulate(CK.fragment_cumsum.get_tir(40, 70, dim, reverse, in_place=in_place), [x, y])
    torch.testing.assert_close(y, tiled_cumsum(x, 32, 64, dim, reverse), atol=1e-5, rtol=1e-5)


def test_cumsum_of_a_gemm_accumulator():
    a, b = torch.randn(64, 32).half(), torch.randn(32, 64).half()
    c = torch.zeros(64, 64)
    simulate(CK.cumsum_of_gemm.get_tir(64, 64, 32), [a, b, c])
    torch.testing.assert_close(c, (a.float() @ b.float()).cumsum(1), atol=1e-3, rtol=1e-3)


def test_fragment_cumsum_source_stages_through_shared_memory():
    src = tilelang.lower(
        CK.fragment_cumsum.get_tir(64, 64, 1), target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=False
    ).kernel_source
    assert "a_stage" in src and src.count("__syncthreads()") >= 3


@pytest.mark.parametrize("n", [1, 37, 300])
def test_dynamic_parallel_extent(n):
    x = torch.randn(10, n)
    y = torch.zeros_like(x)
    simulate(CK.dynamic_parallel_scale.get_tir(10), [x, y])
    torch.testing.assert_close(y, 2 * x + 1)


def test_dynamic_parallel_with_atomics():
    x = torch.randn(5, 131)
    out = torch.zeros(131)
    simulate(CK.dynamic_parallel_atomic.get_tir(5), [x, out])
    torch.testing.assert_close(out, x.sum(0), atol=1e-5, rtol=1e-5)


def test_dynamic_parallel_over_a_fragment_is_a_clear_error():
    import tilelang.language as T

    @T.prim_func
    def main(x: T.Tensor((T.dynamic("n"),), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(x.shape[0]):
                f[i % 128] = x[i]

    with pytest.raises(UnsupportedError, match="dynamic extent"):
        tilelang.lower(main, target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=False)


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
def test_builds_for_sm_90a():
    art = tilelang.lower(CK.dynamic_parallel_scale.get_tir(64), target={"kind": "cuda", "arch": "sm_90a"})
    assert art.lib_path
    art = tilelang.lower(CK.fragment_cumsum.get_tir(256, 256, 0, True), target={"kind": "cuda", "arch": "sm_90a"})
    assert art.lib_path
