"""GPU twin of tests/conformance/test_views.py: the same view kernels (global, shared and
register views, dtype reinterpretation, an fp8 gemm through a shared view of int8 storage)
compiled for CUDA and compared with torch."""

from __future__ import annotations

import pytest
import torch
from conformance import test_views as V

import tilelang

pytestmark = pytest.mark.cuda


def cuda(factory, *args, out_idx=(-1,)):
    return tilelang.compile(factory.get_tir(*args), out_idx=list(out_idx), target="cuda")


def test_global_views_cuda():
    a = torch.randn(37, 21, device="cuda")
    torch.testing.assert_close(cuda(V.flat_scale, 37, 21)(a), a * 3 + 1)
    h = torch.randn(45 * 24, device="cuda").half()
    torch.testing.assert_close(cuda(V.reshape_copy, 45, 24)(h), h.reshape(45, 24))
    f8 = torch.randn(37, 40, device="cuda").to(torch.float8_e4m3fn)
    torch.testing.assert_close(cuda(V.fp8_from_int8, 37, 40)(f8.view(torch.int8)), f8.float())
    h2 = torch.randn(7, 13, device="cuda").half()
    torch.testing.assert_close(cuda(V.halves_of_bytes, 7, 13)(h2.view(torch.uint8)), h2.float())
    assert torch.equal(cuda(V.bytes_of_halves, 7, 13)(h2), h2.view(torch.uint8))


def test_shared_views_cuda():
    f8 = torch.randn(37, 24, device="cuda").to(torch.float8_e4m3fn)
    torch.testing.assert_close(cuda(V.shared_fp8, 37, 24)(f8.view(torch.int8)), f8.float() * 2)
    a = torch.randn(21, 12, device="cuda")
    torch.testing.assert_close(cuda(V.shared_reshape, 21, 12)(a), V._shared_reshape_ref(a.cpu()).cuda())


def test_fp8_gemm_through_shared_view_cuda():
    M, N, K = 40, 36, 72
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    out = cuda(V.fp8_gemm_from_int8, M, N, K)(a.view(torch.int8), b)
    torch.testing.assert_close(out, a.float() @ b.float().T, atol=1e-3, rtol=1e-3)


def test_register_views_cuda():
    a = torch.randn(37, 24, device="cuda")
    assert torch.equal(cuda(V.float_bits, 37, 24)(a), a.view(torch.int32) ^ 0x7FFFFF)
    c = torch.randn(37, 24, device="cuda")
    torch.testing.assert_close(cuda(V.fragment_reshape, 37, 24)(c), V._fragment_reshape_ref(c.cpu()).cuda())
    b = torch.randn(5, 12, device="cuda")
    torch.testing.assert_close(cuda(V.local_reshape, 5, 12)(b), b.reshape(5, 6, 2).flip(-1).reshape(5, 12))


def test_chained_dynamic_view_cuda():
    kern = tilelang.compile(V.chained_dynamic.get_tir(24), out_idx=[-1], target="cuda")
    for m in (5, 77):
        f8 = torch.randn(m, 24, device="cuda").to(torch.float8_e4m3fn)
        torch.testing.assert_close(kern(f8.view(torch.int8)), f8.float().flatten())
