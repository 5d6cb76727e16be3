"""Every seed kernel runs unchanged on the CPU backend and matches a float32 torch
reference, including sizes that are not multiples of the tile sizes."""

import pytest
import torch

from . import seed_kernels as S

torch.manual_seed(0)


def close(got, ref, K=1, rtol=1e-2):
    torch.testing.assert_close(got.float(), ref.float(), rtol=rtol, atol=1e-2 * K**0.5)


@pytest.mark.parametrize("M", [1024, 1000])
def test_vector_add(M):
    a, b = torch.randn(M), torch.randn(M)
    torch.testing.assert_close(S.vector_add(a, b), a + b)
    kernel = S.vector_add.compile(M=M)
    torch.testing.assert_close(kernel(a, b), a + b)


@pytest.mark.parametrize("shape", [(256, 256, 256), (200, 136, 72)])
def test_gemm_eager(shape):
    M, N, K = shape
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    close(S.matmul(a, b, block_M=64, block_N=64, block_K=32), a.float() @ b.float(), K)


def test_gemm_relu_compile():
    M, N, K = 300, 200, 100
    k = S.matmul_relu.compile(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    close(k(a, b), torch.relu(a.float() @ b.float()), K)


# The seed omits the non-causal branch that initialises acc_s each iteration ("省略了非因果模式的
# 尾部 mask 分支"): verbatim, its non-causal path accumulates into uninitialised registers. The
# seed is run causal here; the complete kernel (examples/flash_attention/mha_fwd.py) is tested
# causal and non-causal in tests/examples.
@pytest.mark.parametrize("causal,seq", [(True, 200), (True, 256)])
def test_flash_attention(causal, seq):
    batch, heads, dim = 1, 2, 64
    kernel = S.flashattn(batch, heads, seq, dim, causal, block_M=64, block_N=64)
    q, k, v = (torch.randn(batch, seq, heads, dim, dtype=torch.float16) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.float().transpose(1, 2) for x in (q, k, v)), is_causal=causal
    )
    close(kernel(q, k, v), ref.transpose(1, 2), rtol=2e-2)


def test_fragment_reduce_and_reducer():
    x = torch.rand(S.rows, S.width) + 0.5
    out = torch.empty_like(x)
    S.fragment_reduce(x, out)
    torch.testing.assert_close(out, x / x.sum(1, keepdim=True))
    s = torch.empty(S.rows)
    S.reducer_sum(x, s)
    torch.testing.assert_close(s, x.sum(1))


def test_dynamic_shapes_one_compilation():
    cfg = dict(
        block_M=64,
        block_N=64,
        block_K=32,
        trans_A=False,
        trans_B=False,
        in_dtype="float16",
        out_dtype="float16",
        accum_dtype="float32",
        num_stages=2,
        threads=128,
    )
    for m, n, k in ((128, 96, 64), (200, 72, 100)):
        a, b = torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16)
        close(S.matmul_dynamic_mnk(a, b, **cfg), a.float() @ b.float(), k)
    assert len(S.matmul_dynamic_mnk._kernels) == 1


def test_splitk_atomic_add():
    M, N, K = 96, 80, 256
    kernel = S.matmul_splitk(M, N, K, 64, 64, 32, 4)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    c = torch.zeros(M, N)
    kernel(a, b, c)
    close(c, a.float() @ b.float(), K)


def test_persistent_gemm():
    M, N, K = 300, 200, 96
    kernel = S.matmul_persistent(M, N, K, 64, 64, 32, 128, 2, 3)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    close(kernel(a, b), a.float() @ b.float(), K)


def test_pipelined_stage_order():
    M, N, K = 130, 70, 100
    kernel = S.matmul_stage_order(M, N, K)
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    close(kernel(a, b), a.float() @ b.float(), K)


def test_patterns_seed():
    a, b = torch.randn(200, 300), torch.randn(200, 300)
    torch.testing.assert_close(S.elementwise_op(200, 300, 32, 64, 128)(a, b), a + b)
    x, y = torch.randn(1000), torch.randn(1000)
    torch.testing.assert_close(S.conditional_elementwise(1000, 128)(x, y), torch.where(x > 0, x + y, x - y))
    r = torch.randn(64, 1000)
    torch.testing.assert_close(S.reduction_op(64, 1000, 128)(r), r.sum(1), atol=1e-3, rtol=1e-4)
    ln = torch.randn(50, 384)
    torch.testing.assert_close(
        S.layer_norm(50, 384, 128)(ln), torch.nn.functional.layer_norm(ln, (384,), eps=1e-5), atol=1e-4, rtol=1e-4
    )
    a16, b16 = torch.randn(200, 72, dtype=torch.float16), torch.randn(72, 136, dtype=torch.float16)
    close(S.matmul_pattern(200, 136, 72, 64, 64, 32)(a16, b16), a16.float() @ b16.float(), 72)
    va, mb = torch.randn(200, dtype=torch.float16), torch.randn(300, 200, dtype=torch.float16)
    close(S.gemv(300, 200, 128, 32)(va, mb), mb.float() @ va.float(), 200)


def test_profiler_snippet():
    # seed 001 section 6: verify, dump the source, benchmark — on the CPU backend
    import tilelang

    M = N = K = 128
    matmul_kernel = S.matmul_relu.compile(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = matmul_kernel(a, b)
    ref32 = torch.relu(a.float() @ b.float())
    torch.testing.assert_close(c.float(), ref32, rtol=1e-2, atol=0.05)
    cuda_source = matmul_kernel.get_kernel_source()
    assert "tl_kernel_matmul_relu" in cuda_source
    profiler = matmul_kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    latency = profiler.do_bench()
    assert latency > 0
    from tilelang.profiler import do_bench

    assert do_bench(lambda: matmul_kernel(a, b)) > 0
    profiler.assert_allclose(lambda A, B: torch.relu(A.float() @ B.float()).half(), atol=0.05, rtol=1e-2)


def test_carver_snippet():
    # seed 000 chapter 8: carver replaces a hand-written config grid
    import tilelang.language as T
    from tilelang.carver.arch import CUDA
    from tilelang.carver.template import MatmulTemplate

    arch = CUDA("sm_80")
    template = MatmulTemplate(
        M=4096, N=4096, K=4096, in_dtype=T.float16, out_dtype=T.float16, accum_dtype=T.float32
    ).with_arch(arch)
    hints = template.recommend_hints(topk=20)
    configs = [
        {"block_M": h.block[0], "block_N": h.block[1], "block_K": h.rstep[0], "num_stages": h.pipeline_stage}
        for h in hints
    ]
    assert configs and all(c["block_M"] % 16 == 0 for c in configs)
