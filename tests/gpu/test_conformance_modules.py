"""GPU twin of tests/conformance/test_api_modules.py: a CUDA source postproc callback whose edit
changes what the kernel computes (so the result proves the edited source is what ran), and a
GEMM built with a few acting pass configs, against torch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
from tilelang.engine import callback  # noqa: E402

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@tilelang.jit(out_idx=[-1])
def scale(M, block=128):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 1.25

    return main


@tilelang.jit(
    out_idx=[-1],
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
        tilelang.PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL: 8,
        "tl.disable_warp_specialized": True,
        tilelang.PassConfigKey.TL_DISABLE_SHARED_MEMORY_REUSE: True,
    },
)
def gemm(M, N, K, bm=64, bn=64, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), T.float16)
            Bs = T.alloc_shared((bk, bn), T.float16)
            Cl = T.alloc_fragment((bm, bn), T.float32)
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn])

    return main


@pytest.fixture
def hook():
    callback.unregister_postproc("cuda")
    yield
    callback.unregister_postproc("cuda")


def test_postproc_edit_runs_on_the_gpu(hook):
    a = torch.randn(1000, device="cuda")
    plain = scale(1000)
    torch.testing.assert_close(plain(a), a * 1.25)

    @tilelang.engine.callback.register_cuda_postproc_callback
    def triple(code, target):
        assert "* 1.25f" in code
        return code.replace("* 1.25f", "* 3.0f")

    edited = scale(1000)  # not the kernel built before the hook
    assert "* 3.0f" in edited.get_kernel_source()
    torch.testing.assert_close(edited(a), a * 3.0)
    callback.unregister_postproc("cuda")
    torch.testing.assert_close(scale(1000)(a), a * 1.25)


def test_gemm_with_pass_configs(hook):
    tilelang.register_cuda_postproc(lambda code, target: "// postproc: gemm\n" + code)
    M, N, K = 200, 136, 72
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    k = gemm(M, N, K)
    assert k.get_kernel_source().startswith("// postproc: gemm")
    torch.testing.assert_close(k(a, b), a.float() @ b.float(), atol=1e-2, rtol=1e-2)
