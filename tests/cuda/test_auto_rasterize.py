"""auto_rasterize: large GEMM grids get an L2-friendly block order unless the author chose one,
and kernels whose blocks may depend on scheduling order never do."""

from __future__ import annotations

import pytest
from kernels import gemm
from tma_kernels import lower_source

import tilelang
import tilelang.language as T
from tilelang.backend.target import nvcc_path

RASTER = "tl::rasterize2d_row<8>()"


@tilelang.jit(out_idx=[-1])
def gemm_128(M, N, K, swizzle=None, atomic_out=False):
    """128x128x32 tiles in 3 stages. `swizzle`: (panel, enable) of a column `T.use_swizzle`;
    `atomic_out`: the tile is added to C atomically (an order-sensitive kernel)."""
    out_dtype = "float32" if atomic_out else "float16"

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 32), "float16")
            B_s = T.alloc_shared((32, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            if swizzle is not None:
                T.use_swizzle(swizzle[0], "column", enable=swizzle[1])
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=3):
                T.copy(A[by * 128, k * 32], A_s)
                T.copy(B[k * 32, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            if atomic_out:
                T.atomic_add(C[by * 128 : by * 128 + 128, bx * 128 : bx * 128 + 128], C_l)
            else:
                T.copy(C_l, C[by * 128, bx * 128])

    return main


def seed_gemm(size: int, bn: int = 128, threads: int = 128):
    return gemm.get_tir(size, size, size, 128, bn, 32, "float16", "float32", "float16", False, False, "Square", 3,
                        threads)  # fmt: skip


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_large_gemm_grid_is_rasterized(arch):
    assert RASTER in lower_source(seed_gemm(8192), arch)  # 64 x 64 blocks


def test_small_grids_keep_launch_order():
    assert "tl::rasterize" not in lower_source(seed_gemm(4096, bn=256, threads=256))  # 16 x 32 blocks
    assert "tl::rasterize" not in lower_source(seed_gemm(1024))


def test_pass_config_turns_it_off():
    src = lower_source(seed_gemm(8192), pass_configs={"tl.disable_rasterization": True})
    assert "tl::rasterize" not in src


def test_the_authors_choice_wins():
    assert "tl::rasterize2d_column<4>()" in lower_source(gemm_128.get_tir(8192, 8192, 256, swizzle=(4, True)))
    assert "tl::rasterize" not in lower_source(gemm_128.get_tir(8192, 8192, 256, swizzle=(4, False)))


def test_order_sensitive_kernels_are_left_alone():
    assert "tl::rasterize" not in lower_source(gemm_128.get_tir(8192, 8192, 256, atomic_out=True))


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
def test_rasterized_gemm_compiles_for_sm_90a():
    assert RASTER in lower_source(seed_gemm(8192), "sm_90a", build=True)
