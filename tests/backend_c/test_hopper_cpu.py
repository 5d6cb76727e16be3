"""The explicit Hopper API on the CPU backend: T.ws regions run in program order,
T.tma_copy is a copy, mbarriers keep their arrival / phase state so that a protocol
that cannot complete in program order (or over-arrives) stops the launch with an
error instead of computing garbage; clusters run their blocks with ranks from the
block index. (The examples in examples/hopper run in tests/examples.)"""

import os
import sys

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.c.runtime import DeviceAssertError
from tilelang.errors import UnsupportedError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from hopper_kernels import cluster_ranks, seed_ws_ring, sync_ops  # noqa: E402


@tilelang.jit(out_idx=[1])
def handoff(n, consumer_first=False, arrive_outside=False):
    """Warpgroup 0 stages a tile in shared memory, warpgroup 1 doubles it (one mbarrier)."""

    @T.prim_func
    def main(A: T.Tensor((n, 64), "float32"), B: T.Tensor((n, 64), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=256) as bx:
            S = T.alloc_shared((64, 64), "float32")
            ready = T.alloc_barrier(arrive_count=128)
            if consumer_first:
                with T.ws(1):
                    T.mbarrier_wait_parity(ready, 0)
                    for i, j in T.Parallel(64, 64):
                        B[bx * 64 + i, j] = S[i, j] * 2
            with T.ws(0):
                T.tma_copy(A[bx * 64, 0], S, barrier=ready)
                if not arrive_outside:
                    T.mbarrier_arrive(ready)
            if arrive_outside:
                T.mbarrier_arrive(ready)  # all 256 threads: more arrivals than the phase expects
            if not consumer_first:
                with T.ws(1):
                    T.mbarrier_wait_parity(ready, 0)
                    for i, j in T.Parallel(64, 64):
                        B[bx * 64 + i, j] = S[i, j] * 2

    return main


def test_program_order_protocol():
    a = torch.randn(100, 64)
    torch.testing.assert_close(handoff(100)(a), a * 2)


def test_protocol_that_needs_concurrency_is_rejected():
    with pytest.raises(DeviceAssertError, match="needs sm_90a"):
        handoff(100, consumer_first=True)(torch.randn(100, 64))


def test_over_arrival_is_rejected():
    with pytest.raises(DeviceAssertError, match="exceeds the arrivals its phase expects"):
        handoff(64, arrive_outside=True)(torch.randn(64, 64))


def test_tma_double_buffer_longer_than_the_ring():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cuda"))
    from catalog import _example

    qk = _example("hopper/tma_double_buffer.py").qk_scores(1, 1, 200, 64, 64, 64)  # 4 K blocks > 2 slots
    q = torch.randn(1, 1, 200, 64).half()
    with pytest.raises(DeviceAssertError, match="needs sm_90a"):
        qk(q, q)


@tilelang.jit(out_idx=[2])
def async_gemm(M, N, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.serial(T.ceildiv(K, 32)):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.wgmma_gemm(A_s, B_s, C_f)
                T.wait_wgmma(0)
            T.fence_proxy_async()
            T.copy(C_f, C[by * 64, bx * 64])

    return main


def test_wgmma_gemm_and_fences():
    a, b = torch.randn(100, 70).half(), torch.randn(70, 90).half()
    torch.testing.assert_close(async_gemm(100, 90, 70)(a, b), a.float() @ b.float(), atol=1e-2, rtol=1e-2)


def test_cluster_kernel_ranks():
    x = torch.randn(6, 50)
    torch.testing.assert_close(cluster_ranks(6, 50)(x), x * 2 + (torch.arange(6) % 2).float()[:, None])


def test_remote_arrive_needs_sm90a():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.ClusterKernel(2, threads=128, cluster_dims=2) as bx:
            bar = T.alloc_barrier(arrive_count=128)
            T.mbarrier_arrive(bar, cta_id=1 - T.block_rank_in_cluster())
            A[bx] = 1.0

    with pytest.raises(UnsupportedError, match="needs sm_90a"):
        tilelang.compile(main, target="c")


def test_every_sync_statement_in_program_order():
    a = torch.randn(128, 64).half()
    torch.testing.assert_close(sync_ops(False)(a), a)


def test_seed_ring_sample_verbatim():
    # The seed's sample runs as written: its barrier protocol completes in program order.
    # (It never clears C_local, so its numbers are undefined on any target; the example
    # examples/hopper/ws_gemm_pipelined.py adds the T.clear and is checked against torch.)
    a, b = torch.randn(100, 96).half(), torch.randn(96, 72).half()
    assert seed_ws_ring(100, 72, 96)(a, b).shape == (100, 72)
