"""Vector atomics on the CUDA backend without a GPU: which atomics become
`tl::atomic_add_x2` / `_x4` (generated source), that misaligned or non-add atomics stay
scalar, the numerics of the lowered IR in the simulator (sim.py), and nvcc builds for
sm_80 (per-element fallback for float vectors) and sm_90a."""

from __future__ import annotations

import re

import atomic_kernels as AK
import pytest
import torch
from sim import simulate

import tilelang
from tilelang.backend.target import nvcc_path

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


def atomic_lines(func, arch: str = "sm_90a") -> list[str]:
    src = tilelang.lower(func, target={"kind": "cuda", "arch": arch}, enable_device_compile=False).kernel_source
    return [line.strip() for line in src.splitlines() if re.search(r"tl::atomic_\w+\(", line)]


@pytest.mark.parametrize("dtype,vector", [("float16", "x2"), ("bfloat16", "x2"), ("float32", "x2")])
def test_split_k_accumulator_pairs_become_vector_atomics(dtype, vector):
    lines = atomic_lines(AK.splitk_gemm.get_tir(256, 256, 512, 4, out_dtype=dtype))
    assert lines and all(f"tl::atomic_add_{vector}(" in x for x in lines), lines


def test_parallel_element_atomics_vectorize():
    half = atomic_lines(AK.column_atomic_sum.get_tir(64, 256, "float16"))
    assert len(half) == 4 and all("tl::atomic_add_x2(" in x for x in half), half  # 8 halves per thread
    single = atomic_lines(AK.column_atomic_sum.get_tir(64, 256, "float32"))
    assert len(single) == 1 and "tl::atomic_add_x4(" in single[0], single


def test_region_atomic_from_shared_vectorizes():
    lines = atomic_lines(AK.tile_atomic_from_shared.get_tir(128, 256))
    assert lines and all("tl::atomic_add_x2(" in x for x in lines), lines


def test_unprovable_alignment_stays_scalar():
    # a row of 250 halves: row starts are not 4-byte aligned
    lines = atomic_lines(AK.column_atomic_sum.get_tir(64, 250, "float16"))
    assert lines and all("tl::atomic_add(" in x for x in lines), lines
    lines = atomic_lines(AK.splitk_gemm.get_tir(250, 250, 512, 4))
    assert lines and all("tl::atomic_add(" in x for x in lines), lines


def test_float32_into_shared_memory_stays_scalar():
    # float2/float4 atomics exist for global memory only
    import tilelang.language as T

    @T.prim_func
    def main(x: T.Tensor((64, 64), "float32"), y: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float32")
            T.copy(x, s)
            T.atomic_add(s, x)
            T.copy(s, y)

    lines = atomic_lines(main)
    assert lines and all("tl::atomic_add(" in x for x in lines), lines


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_split_k_numerics_in_the_simulator(dtype):
    tdt = getattr(torch, dtype)
    M, N, K, split = 64, 64, 128, 2
    a, b = torch.randn(M, K).to(tdt), torch.randn(K, N).to(tdt)
    c = torch.zeros(M, N, dtype=tdt)
    lowered = simulate(AK.splitk_gemm.get_tir(M, N, K, split, out_dtype=dtype, in_dtype=dtype), [a, b, c])
    assert "tl.atomic_add_x2" in lowered.script()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.25, rtol=2e-2)


def test_parallel_atomic_numerics_in_the_simulator():
    x = torch.randn(40, 64).half()
    out = torch.zeros(64, dtype=torch.float16)
    simulate(AK.column_atomic_sum.get_tir(40, 64, "float16"), [x, out])
    torch.testing.assert_close(out.float(), x.float().sum(0), atol=2e-2, rtol=2e-2)
    x32 = torch.randn(40, 64)
    out32 = torch.zeros(64)
    simulate(AK.column_atomic_sum.get_tir(40, 64, "float32"), [x32, out32])
    torch.testing.assert_close(out32, x32.sum(0), atol=1e-4, rtol=1e-4)


@needs_nvcc
@pytest.mark.parametrize(
    "arch,make",
    [
        ("sm_80", lambda: AK.column_atomic_sum.get_tir(64, 256, "float32")),
        ("sm_90a", lambda: AK.splitk_gemm.get_tir(256, 256, 512, 4, out_dtype="bfloat16")),
    ],
)
def test_vector_atomics_compile(arch, make):
    art = tilelang.lower(make(), target={"kind": "cuda", "arch": arch})
    assert art.lib_path and "tl::atomic_add_x" in art.kernel_source


def test_ordered_atomics_stay_scalar():
    # an acquire/release atomic orders the accesses around it: it is not moved out of the loop
    import tilelang.language as T

    @T.prim_func
    def main(x: T.Tensor((64, 256), "float16"), out: T.Tensor((256,), "float16")):
        with T.Kernel(4, threads=128) as bx:
            for i, j in T.Parallel(16, 256):
                T.atomic_add(out[j], x[bx * 16 + i, j], memory_order="release")

    lines = atomic_lines(main)
    assert lines and all("tl::atomic_add(" in x and x.endswith(", 3);") for x in lines), lines
