"""`tilelang.intrinsics` as the public examples use it: `make_mma_swizzle_layout` on gemm operand
tiles (C backend numerics at sizes that are not tile multiples, CUDA sm_80 / sm_90a lowering),
`get_swizzle_layout` as a permutation that spreads each 8-row ldmatrix phase over distinct
16-byte bank groups, and a clear error for the hand-written MMA emitters."""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.errors import UnsupportedError
from tilelang.intrinsics import get_swizzle_layout
from tilelang.intrinsics import make_mma_swizzle_layout as make_swizzle_layout
from tilelang.ir.expr import Var
from tilelang.layout import Layout


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float", smooth=False):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.annotate_layout(
                {A_shared: make_swizzle_layout(A_shared, is_smooth=smooth), B_shared: make_swizzle_layout(B_shared)}
            )
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


@pytest.mark.parametrize("block_K", [16, 32, 64])
def test_swizzled_operands_gemm_matches_torch_on_the_cpu(block_K):
    kernel = tilelang.compile(matmul(100, 72, 130, 64, 64, block_K), out_idx=-1, target="c")
    a, b = torch.randn(100, 130).half(), torch.randn(130, 72).half()
    torch.testing.assert_close(kernel(a, b).float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cuda -arch=sm_90a"])
@pytest.mark.parametrize("block_K,smooth", [(32, False), (64, False), (32, True)])
def test_swizzled_operands_lower_for_cuda(target, block_K, smooth):
    art = tilelang.lower(matmul(1000, 720, 1300, 128, 128, block_K, smooth=smooth), target=target,
                         enable_device_compile=False)  # fmt: skip
    assert "tl::gemm" in art.kernel_source or "wgmma" in art.kernel_source, art.kernel_source[:400]


@pytest.mark.parametrize(
    "cols,dtype", [(64, "float16"), (128, "float16"), (32, "float16"), (32, "float32"), (128, "int8")]
)
def test_public_permutation_is_bank_conflict_free_per_ldmatrix_phase(cols, dtype):
    nbytes = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    layout = Layout((8, cols), lambda i, j: get_swizzle_layout(i, j, cols, dtype))
    offsets = layout.offsets()  # row-major order of the logical elements
    assert sorted(offsets) == list(range(8 * cols))  # a permutation
    # the first 16-byte chunk of each of 8 rows (one ldmatrix phase) lands in its own bank group;
    # the public permutation cycles over v = 16 / element-bytes rows, so fp32 spreads over 4
    groups = {(offsets[i * cols] * nbytes // 16) % 8 for i in range(8)}
    assert len(groups) == min(8, 16 // nbytes), groups


def test_rows_narrower_than_64_bytes_are_refused_by_the_permutation():
    with pytest.raises(UnsupportedError, match="multiple of 64 bytes"):
        get_swizzle_layout(Var("i"), Var("j"), 16, "float16")


def test_hand_written_mma_emitters_are_a_clear_error():
    import tilelang.intrinsics as intrinsics

    with pytest.raises(UnsupportedError, match="T.gemm"):
        intrinsics.TensorCoreIntrinEmitter  # noqa: B018
    with pytest.raises(AttributeError):
        intrinsics.no_such_name  # noqa: B018
