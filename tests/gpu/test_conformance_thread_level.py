"""GPU twin of tests/conformance/test_thread_level.py: the thread-level kernels (GEMVs with
thread bindings, per-thread stores, 2-D threads, thread_binding loops, a shared tree reduction,
shuffles of every kind, a T.tvm_thread_allreduce max) run on CUDA and are compared with torch,
at odd sizes (N=1000, K=777) and at 8192 x 8192."""

from __future__ import annotations

import pytest
import torch
from conformance import thread_level_kernels as TK

pytestmark = pytest.mark.cuda

GEMVS = ["gemv_per_row", "gemv_split_k_atomic", "gemv_allreduce", "gemv_warp_shuffle"]


def inputs(n, k, dtype=torch.float16):
    torch.manual_seed(0)
    x = torch.randn(k, device="cuda").to(dtype)
    W = torch.randn(n, k, device="cuda").to(dtype)
    return x, W, W.double() @ x.double()


def close(got, ref, dtype=torch.float16):
    tol = 6e-2 if dtype == torch.float16 else 1e-3
    torch.testing.assert_close(got.double(), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize("name", GEMVS)
@pytest.mark.parametrize("size", [(1000, 777), (8192, 8192)])
def test_gemv_cuda(name, size):
    x, W, ref = inputs(*size)
    close(getattr(TK, name)(*size)(x, W), ref)


@pytest.mark.parametrize("name", GEMVS)
def test_gemv_float32_cuda(name):
    x, W, ref = inputs(1000, 777, torch.float32)
    close(getattr(TK, name)(1000, 777, dtype="float32")(x, W), ref, torch.float32)


@pytest.mark.parametrize(
    "cfg",
    [dict(block_n=4, reduce_threads=32, reduce_axis=0, unroll=4), dict(block_n=2, reduce_threads=64, reduce_axis=1)],
)
def test_gemv_allreduce_configs_cuda(cfg):
    x, W, ref = inputs(1000, 777)
    close(TK.gemv_allreduce(1000, 777, **cfg)(x, W), ref)


@pytest.mark.parametrize(
    "size,cfg", [((1000, 777), dict(rows=4, split=3)), ((8192, 8192), dict(rows=8, split=4, unroll=4))]
)
def test_gemv_split_k_global_cuda(size, cfg):
    x, W, ref = inputs(*size)
    y = torch.zeros(size[0], device="cuda", dtype=torch.float32)
    TK.gemv_split_k_global(*size, **cfg)(x, W, y)
    close(y, ref, torch.float32)


def test_store_by_thread_index_cuda():
    assert torch.equal(TK.store_thread_index(96)().cpu(), torch.arange(96, dtype=torch.int32))


def test_uniform_and_varying_stores_cuda():
    a = torch.randn(64, device="cuda")
    ref = a + 1.0
    ref[0] = 100.0
    torch.testing.assert_close(TK.uniform_and_varying_stores(64)(a), ref)


def test_threads_2d_cuda():
    M, N = 13, 70
    i = torch.arange(M, device="cuda").view(-1, 1)
    j = torch.arange(N, device="cuda").view(1, -1)
    torch.testing.assert_close(TK.thread_grid_2d(M, N)(), (i * 1000 + j + 4).float())


def test_thread_binding_loop_cuda():
    a = torch.randn(300, device="cuda")
    torch.testing.assert_close(TK.thread_binding_loop(300, 96)(a), a * 2)


def test_shared_tree_reduction_cuda():
    a = torch.randn(1000, device="cuda")
    torch.testing.assert_close(TK.block_reduce_shared(1000)(a), a.sum().view(1), atol=1e-3, rtol=1e-4)


def test_shuffles_cuda():
    a = torch.randn(64, device="cuda")
    torch.testing.assert_close(TK.shuffles(64)(a).cpu(), TK.ref_shuffles(a.cpu()))


def test_allreduce_max_cuda():
    a = torch.randn(4, 32, device="cuda")
    torch.testing.assert_close(TK.row_max_allreduce(4)(a), a.max(dim=1).values)


def test_reducer_in_thread_level_code_cuda():
    a = torch.randn(1000, device="cuda")
    ref = torch.stack([a.sum(), torch.tensor(127.0, device="cuda")])
    torch.testing.assert_close(TK.reducer_sum_and_max(1000)(a), ref, atol=1e-3, rtol=1e-4)


def test_barrier_loop_with_uniform_break_cuda():
    a = torch.randn(1000)
    a[320] = 3.0
    ref = TK.ref_neighbour_sums_until_flag(a)
    torch.testing.assert_close(TK.neighbour_sums_until_flag(1000)(a.cuda()).cpu(), ref)


def test_tile_ops_thread_code_and_parallel_cuda():
    a = torch.randn(70, 50, device="cuda")
    ref = a - a.mean(dim=1, keepdim=True)
    torch.testing.assert_close(TK.center_rows_mixed(70, 50)(a), ref, atol=1e-5, rtol=1e-5)


def test_lane_and_warp_indices_cuda():
    t = torch.arange(256)
    ref = torch.stack([t % 32, t // 32, t // 128, (t % 32 == 0).long()]).int()
    assert torch.equal(TK.lane_and_warp_indices()().cpu(), ref)


@pytest.mark.parametrize("n", [4096, 1001])
def test_vectorized_per_thread_loads_and_stores_cuda(n):
    x, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    torch.testing.assert_close(TK.axpy_vectorized(n)(x, b), 2 * x + b)


def test_allreduce_over_two_thread_axes_cuda():
    a = torch.randn(1000, device="cuda")
    torch.testing.assert_close(TK.block_sum_allreduce_2d(1000)(a), a.sum().expand(128), atol=1e-3, rtol=1e-4)
