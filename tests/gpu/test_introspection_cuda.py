"""On the GPU: a real JITKernel's PTX, SASS and resource report; the Analyzer on the device."""

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.tools.analyzer import Analyzer

pytestmark = pytest.mark.cuda


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, bm=128, bn=128, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), T.float16)
            Bs = T.alloc_shared((bk, bn), T.float16)
            Cl = T.alloc_fragment((bm, bn), T.float32)
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn])

    return main


def test_ptx_sass_resources_on_the_device():
    k = matmul(300, 200, 160)
    a = torch.randn(300, 160, device="cuda", dtype=torch.float16)
    b = torch.randn(160, 200, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(k(a, b).float(), a.float() @ b.float(), atol=0.1, rtol=1e-2)
    entry = k.built.meta["entry"]
    assert f".entry {entry}" in k.get_ptx()
    try:
        sass = k.get_sass()
    except tilelang.errors.TileLangError as e:
        pytest.skip(str(e))
    assert entry in sass
    ru = k.resource_usage
    assert ru.registers == k.n_regs and ru.max_threads == 128 == k.n_max_threads
    assert ru.blocks_per_sm >= 1 and ru.dynamic_shared_bytes == k.built.meta["smem"]


def test_analyzer_on_the_device():
    from tilelang.carver.arch import CUDA

    r = Analyzer.analysis(matmul(1024, 1024, 1024), CUDA("cuda"))
    assert r.total_flops == 2 * 1024**3 and r.estimated_time > 0
