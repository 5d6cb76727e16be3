"""Vector atomics on a real GPU (half2 / bfloat162 pairs, float2/float4 on sm_90):
split-K GEMM accumulation into fp16 / bf16 / fp32 outputs and element-form column sums,
against torch, including sizes that fall back to scalar atomics."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import atomic_kernels as AK  # noqa: E402

torch.manual_seed(0)


@pytest.mark.parametrize(
    "dtype,M,N,K,split",
    [
        ("float16", 1024, 1024, 4096, 4),
        ("bfloat16", 512, 768, 2048, 8),
        ("float32", 512, 512, 2048, 4),
        ("float16", 1000, 1000, 1024, 4),  # partial tiles
    ],
)
def test_split_k_accumulation(dtype, M, N, K, split):
    tdt = getattr(torch, dtype)
    k = AK.splitk_gemm(M, N, K, split, out_dtype=dtype)
    if N % 64 == 0:  # whole tiles: the accumulator's column pairs become vector atomics
        assert "atomic_add_x2" in k.get_kernel_source()
    a, b = torch.randn(M, K, device="cuda").half() / 8, torch.randn(K, N, device="cuda").half() / 8
    c = torch.zeros(M, N, device="cuda", dtype=tdt)
    k(a, b, c)
    ref = a.float() @ b.float()
    tol = {"float16": 2e-2, "bfloat16": 1e-1, "float32": 1e-3}[dtype]
    torch.testing.assert_close(c.float(), ref, atol=tol * (K / 1024) ** 0.5, rtol=2e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_column_sums(dtype):
    tdt = getattr(torch, dtype)
    # every atomic add rounds the running sum to `dtype`: few rows keep that error small
    M, N = 256, 512
    k = AK.column_atomic_sum(M, N, dtype)
    assert "atomic_add_x" in k.get_kernel_source()
    x = torch.randn(M, N, device="cuda").to(tdt) / 16
    out = torch.zeros(N, device="cuda", dtype=tdt)
    k(x, out)
    tol = {"float16": 2e-2, "bfloat16": 1.5e-1, "float32": 1e-4}[dtype]
    torch.testing.assert_close(out.float(), x.float().sum(0), atol=tol, rtol=2e-2)


def test_tile_atomic_from_shared():
    M, N = 512, 1024
    k = AK.tile_atomic_from_shared(M, N, "bfloat16")
    x = torch.randn(M, N, device="cuda").bfloat16()
    out = torch.zeros(32, N, device="cuda").bfloat16()
    k(x, out)
    torch.testing.assert_close(out.float(), x.float().view(M // 32, 32, N).sum(0), atol=2e-1, rtol=2e-2)
