"""GPU twin of tests/conformance/test_unit_dims.py: the row kernels (RMSNorm, LayerNorm,
online softmax) with block_M in {1, 2, 4}, the unit-extent slice copy and the copies whose
extents differ only by unit dimensions, compiled for the GPU at hand and compared with
float64 torch. Marked `cuda`: skipped without a GPU."""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from conformance import unit_dims_kernels as K  # noqa: E402

import tilelang  # noqa: E402

DEV = "cuda"
SIZES = ((37, 300), (2053, 1000))  # rows and columns that are not multiples of the tiles


@functools.cache
def _kernel(factory, *args):
    return tilelang.compile(factory.get_tir(*args), out_idx=[-1], target="cuda")


def _close(got, ref, atol=1e-5, rtol=1e-5):
    torch.testing.assert_close(got.double(), ref.double(), atol=atol, rtol=rtol)


@pytest.mark.parametrize("M,N", SIZES)
@pytest.mark.parametrize("block_M", (1, 2, 4))
@pytest.mark.parametrize("name", sorted(K.ROW_KERNELS))
def test_row_kernel_cuda(name, block_M, M, N):
    fac, _, ref, _ = K.ROW_KERNELS[name]
    kernel = _kernel(fac, *K.factory_args(name, M, N, block_M))
    ins = K.inputs(name, M, N, torch.Generator().manual_seed(block_M), device=DEV)
    _close(kernel(*ins), ref(*ins), atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("blk", (1, 3))
def test_unit_slice_copy_cuda(blk):
    a = torch.randn(37, 8192, device=DEV)
    _close(_kernel(K.scale_rows, 37, 8192, blk)(a), a.double() * 2 + 1)


def test_copies_differing_by_unit_dims_cuda():
    a = torch.randn(37, 1000, device=DEV)
    _close(_kernel(K.row_through_vector, 37, 1000)(a), a.double() * 3 - 1)
