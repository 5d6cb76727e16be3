"""The seed tutorials' kernels (tests/seeds/seed_kernels.py, traced by the
frontend) on the C backend: properties of the generated code, and numerics in
configurations the seed suite does not cover."""

import pytest
import torch

S = pytest.importorskip("tests.seeds.seed_kernels")
import tilelang.language as T  # noqa: E402

torch.manual_seed(0)


def test_seed_gemm_multiple_of_tiles_has_no_guards():
    k = S.matmul.compile(
        M=256, N=256, K=256, block_M=64, block_N=64, block_K=32, dtype=T.float32, accum_dtype=T.float32, target="c"
    )
    src = k.get_kernel_source()
    assert "tl_gemm_f32(" in src
    body = src.split("tl__error_raised()) continue;")[1].split("return tl__error_raised()")[0]
    assert " ? " not in body and " else " not in body  # every bounds test was proven away
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    torch.testing.assert_close(k(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_seed_gemm_partial_tiles_fp16():
    k = S.matmul.compile(M=100, N=72, K=50, block_M=64, block_N=64, block_K=32, target="c")
    a, b = torch.randn(100, 50).half(), torch.randn(50, 72).half()
    torch.testing.assert_close(k(a, b).float(), a.float() @ b.float(), rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("seq,dim", [(130, 32), (64, 64)])
def test_seed_flash_attention_causal(seq, dim):
    """(The seed's non-causal path omits clearing acc_s before the first gemm, which the
    tutorial says it left out; that path reads uninitialized memory on any target.)"""
    batch, heads = 1, 2
    kernel = S.flashattn(batch, heads, seq, dim, True, block_M=64, block_N=64)
    q, k, v = (torch.randn(batch, seq, heads, dim, dtype=torch.float16) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.float().transpose(1, 2) for x in (q, k, v)), is_causal=True
    ).transpose(1, 2)
    torch.testing.assert_close(kernel(q, k, v).float(), ref, rtol=2e-2, atol=2e-2)


def test_seed_gemv_partial_blocks():
    if not hasattr(S, "gemv"):
        pytest.skip("no GEMV seed")
    N, K = 100, 70
    kernel = S.gemv(N, K, 32, 32)
    a, b = torch.randn(K).half(), torch.randn(N, K).half()
    torch.testing.assert_close(kernel(a, b).float(), b.float() @ a.float(), rtol=1e-2, atol=5e-2)
