"""Pipelined kernels on a real GPU (cp.async groups, barriers, multi-buffered
shared memory as the CUDA backend lowers them), against torch.

Marked `cuda`: skipped without a GPU. Covers trip counts below the stage
count, dynamic trip counts, explicit stage/order and FlashAttention with
num_stages 1 and 2.
"""

import pytest
import torch

import tilelang
from tests.transform.kernels import dynamic_tir, flash_tir, gemm, gemm_stage_order, seed_gemm_tir

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _compile(f):
    return tilelang.compile(f, target="cuda")


def _inputs(M, N, K, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g).half()
    b = torch.randn(K, N, device="cuda", generator=g).half()
    return a, b


@pytest.mark.parametrize("K,stages", [(16, 3), (32, 3), (40, 3), (512, 3), (512, 4), (48, 2), (1000, 2)])
def test_gemm_stages(K, stages):
    M, N = 192, 160
    a, b = _inputs(M, N, K)
    c = torch.zeros(M, N, device="cuda")
    _compile(gemm(M, N, K, bm=64, bn=64, bk=16, stages=stages))(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3 * K**0.5)


def test_quickstart_gemm():
    M = N = K = 1024
    a, b = _inputs(M, N, K)
    c = _compile(seed_gemm_tir(M, N, K, block_M=128, block_N=128, block_K=32))(a, b)
    torch.testing.assert_close(c.float(), torch.relu(a.float() @ b.float()), rtol=1e-2, atol=0.05)


def test_dynamic_k_one_kernel():
    a0, b0 = _inputs(96, 64, 64)
    kernel = _compile(dynamic_tir(a0.cpu(), b0.cpu(), 3))
    for K in (8, 16, 17, 40, 333):
        a, b = _inputs(96, 64, K, seed=K)
        c = kernel(a, b)
        torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2 * K**0.5)


@pytest.mark.parametrize("stage,order", [([0, 0, 1], [1, 2, 0]), ([0, 1, 2], [0, 1, 2]), ([0, 0, 2], [2, 0, 1])])
def test_stage_order(stage, order):
    M, N, K = 128, 96, 272
    a, b = _inputs(M, N, K)
    c = torch.zeros(M, N, device="cuda")
    _compile(gemm_stage_order(M, N, K, stage, order))(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3 * K**0.5)


@pytest.mark.parametrize("num_stages,causal", [(1, False), (2, False), (2, True)])
def test_flash_attention(num_stages, causal):
    seq, dim = 200, 64
    f = flash_tir(seq, dim, causal, num_stages, block=64)
    q, k, v = (torch.randn(1, seq, 1, dim, device="cuda").half() for _ in range(3))
    o = torch.zeros_like(q)
    _compile(f)(q, k, v, o)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.transpose(1, 2).float() for x in (q, k, v)), is_causal=causal
    ).transpose(1, 2)
    torch.testing.assert_close(o.float(), ref, rtol=1e-2, atol=1e-2)
