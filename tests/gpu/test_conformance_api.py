"""GPU twin of tests/conformance/test_api_semantics.py: the same kernels (ragged grouped GEMMs
whose loop trip counts are read with `by`, a lazy factory built by a helper, the TVMScript-cased
aliases, integer division flavours) run on CUDA and are compared with torch."""

from __future__ import annotations

import pytest
import torch
from conformance import api_kernels as K

pytestmark = pytest.mark.cuda


def test_ragged_grouped_gemm_cuda():
    G, M_max, K_max, N = 3, 70, 90, 75
    m_lens, k_lens = [70, 33, 5], [90, 17, 64]
    A, B, ml, kl = K.grouped_inputs(G, M_max, K_max, N, m_lens, k_lens, device="cuda")
    C = K.grouped_gemm(G, M_max, K_max, N)(A, B, ml, kl)
    for g, ref in enumerate(K.grouped_reference(A, B, m_lens, k_lens)):
        torch.testing.assert_close(C[g, : m_lens[g]], ref, atol=2e-2, rtol=2e-3)


def test_grouped_gemm_with_ragged_k_cuda():
    G, M, K_max, N = 3, 100, 150, 70
    k_lens = [150, 33, 1]
    A, B, _, kl = K.grouped_inputs(G, M, K_max, N, [M] * G, k_lens, device="cuda")
    C = K.grouped_gemm_k(G, M, K_max, N)(A, B, kl)
    for g, ref in enumerate(K.grouped_reference(A, B, [M] * G, k_lens)):
        torch.testing.assert_close(C[g], ref, atol=2e-2, rtol=2e-3)


def test_lazy_factory_from_a_helper_cuda():
    M, N = 45, 19
    a = torch.randn(M, N, device="cuda")
    kern = K.affine_from_helper(M, N, alpha=1.5, beta=0.25)
    torch.testing.assert_close(kern(a), a * 1.5 + 0.25)
    assert K.affine_from_helper.mode == "lazy"


def test_aliases_in_a_kernel_cuda():
    M, N = 37, 29
    A = torch.randn(M, N, device="cuda") * 4e4
    got = K.saturated_row_max(M, N)(A)
    torch.testing.assert_close(got, K.saturated_row_max_reference(A), atol=0, rtol=1e-3)


def test_integer_division_in_a_kernel_cuda():
    N = 301
    a, b = K.division_inputs(N, device="cuda")
    outs = K.int_division(N)(a, b)
    for got, want in zip(outs, K.division_reference(a, b)):
        assert torch.equal(got.long(), want)
