"""Thread-level code (issue #18, item 4): `T.get_thread_binding`, `threads=(x, y)`,
`T.thread_binding` loops, per-thread `T.alloc_local` arrays, `T.vectorized`, stores that
index by the thread outside `T.Parallel`, `T.tvm_thread_allreduce` under `T.comm_reducer`,
and `T.shfl_xor` (kernels in tests/conformance/thread_level_kernels.py).

Each kernel: CPU-backend numerics against torch at sizes that are not tile multiples
(N=1000, K=777, fp16 data with float32 accumulation); the CUDA lowering executed per thread
by the simulator (tests/cuda/sim.py, which race-checks shared memory and rendezvous the warp
collectives); nvcc builds for sm_80 and sm_90a. Before this change these programs did not
trace (no `T.get_thread_binding`), and a block-level store that reads the thread index ran
in thread 0 only — `test_store_by_thread_index*` pin that every thread stores its element.
"""

from __future__ import annotations

import re

import pytest
import torch
from sim import RaceError, simulate

import tilelang
import tilelang.language as T
from conformance import thread_level_kernels as TK
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError

torch.manual_seed(0)

N, K = 1000, 777
GEMVS = ["gemv_per_row", "gemv_split_k_atomic", "gemv_allreduce", "gemv_warp_shuffle"]


def gemv_inputs(n: int = N, k: int = K, dtype=torch.float16):
    x = torch.randn(k).to(dtype)
    W = torch.randn(n, k).to(dtype)
    return x, W, W.double() @ x.double()


def cpu(factory, *args, out_idx=(-1,), **kw):
    return tilelang.compile(factory.get_tir(*args, **kw), out_idx=list(out_idx) if out_idx else None, target="c")


def close(got, ref, dtype):
    # fp16 output: the float32 sum is rounded once (relative 2^-11 of |y| <= ~90)
    tol = 6e-2 if dtype == torch.float16 else 1e-4
    torch.testing.assert_close(got.double(), ref.double(), atol=tol, rtol=tol)


# -- GEMV written with thread bindings -------------------------------------------------------------


@pytest.mark.parametrize("name", GEMVS)
def test_gemv_cpu(name):
    x, W, ref = gemv_inputs()
    y = cpu(getattr(TK, name), N, K)(x, W)
    close(y, ref, torch.float16)


@pytest.mark.parametrize("name", GEMVS)
def test_gemv_float32_cpu(name):
    x, W, ref = gemv_inputs(dtype=torch.float32)
    y = cpu(getattr(TK, name), N, K, dtype="float32")(x, W)
    close(y, ref, torch.float32)


def test_gemv_split_k_global_atomics_cpu():
    x, W, ref = gemv_inputs()
    y = torch.zeros(N, dtype=torch.float32)
    cpu(TK.gemv_split_k_global, N, K, out_idx=None)(x, W, y)
    close(y, ref, torch.float32)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("name", GEMVS)
def test_gemv_simulated(name, arch):
    n, k = 72, 777  # the simulator runs every thread in Python: fewer rows
    x, W, ref = gemv_inputs(n, k)
    y = torch.zeros(n, dtype=torch.float16)
    simulate(getattr(TK, name).get_tir(n, k), [x, W, y], arch=arch)
    close(y, ref, torch.float16)


def test_gemv_split_k_global_simulated():
    n, k = 72, 301
    x, W, ref = gemv_inputs(n, k)
    y = torch.zeros(n, dtype=torch.float32)
    simulate(TK.gemv_split_k_global.get_tir(n, k, 4, 3), [x, W, y])
    close(y, ref, torch.float32)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_gemv_nvcc(arch):
    for name in GEMVS:
        src = cuda_build(getattr(TK, name).get_tir(8192, 8192), arch).kernel_source
        if name != "gemv_per_row":  # (its x slice is a uniform shared store: thread 0's)
            assert "if (tx == 0)" not in src, name  # the per-thread stores are not narrowed to thread 0
    src = cuda_build(TK.gemv_allreduce.get_tir(N, K), arch).kernel_source
    assert "tl::AllReduce<tl::SumOp, 32, 8>::run" in src
    src = cuda_build(TK.gemv_warp_shuffle.get_tir(N, K), arch).kernel_source
    assert "tl::shfl_lane<0>" in src
    cuda_build(TK.gemv_split_k_global.get_tir(N, K), arch)
    for name in GEMVS:
        cuda_build(getattr(TK, name).get_tir(N, K, dtype="float32"), arch)
    src = cuda_build(TK.gemv_warp_shuffle.get_tir(8192, 8192, unroll=4), arch).kernel_source
    assert "#pragma unroll 4" in src and "tl::copy_vec<16>" in src  # 16-byte loads, 4 trips in flight


# -- thread indices outside T.Parallel -------------------------------------------------------------


def test_store_by_thread_index_cpu():
    out = cpu(TK.store_thread_index, 96)()
    assert torch.equal(out, torch.arange(96, dtype=torch.int32))


def test_store_by_thread_index_simulated():
    out = torch.full((96,), -1, dtype=torch.int32)
    simulate(TK.store_thread_index.get_tir(96), [out])
    assert torch.equal(out, torch.arange(96, dtype=torch.int32))


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_store_by_thread_index_nvcc(arch):
    src = cuda_build(TK.store_thread_index.get_tir(96), arch).kernel_source
    assert re.search(r"A\[tx\] = tx;", src), src
    assert "if (tx == 0)" not in src


def test_uniform_store_once_varying_control_cpu():
    a = torch.randn(64)
    out = cpu(TK.uniform_and_varying_stores, 64)(a)
    ref = a + 1.0
    ref[0] = 100.0
    torch.testing.assert_close(out, ref)


def test_uniform_store_once_varying_control_simulated():
    a = torch.randn(64)
    out = torch.zeros(64)
    simulate(TK.uniform_and_varying_stores.get_tir(64), [a, out])
    ref = a + 1.0
    ref[0] = 100.0
    torch.testing.assert_close(out, ref)


def test_threads_2d_cpu_and_simulated():
    M, Nn = 13, 70
    i = torch.arange(M).view(-1, 1)
    j = torch.arange(Nn).view(1, -1)
    ref = (i * 1000 + j + 4).float()
    torch.testing.assert_close(cpu(TK.thread_grid_2d, M, Nn)(), ref)
    out = torch.zeros(M, Nn)
    simulate(TK.thread_grid_2d.get_tir(M, Nn), [out])
    torch.testing.assert_close(out, ref)


def test_thread_binding_loop_cpu_and_simulated():
    n = 300
    a = torch.randn(n)
    torch.testing.assert_close(cpu(TK.thread_binding_loop, n, 96)(a), a * 2)
    out = torch.zeros(n)
    simulate(TK.thread_binding_loop.get_tir(n, 96), [a, out])
    torch.testing.assert_close(out, a * 2)


def test_shared_tree_reduction_cpu_and_simulated():
    n = 1000
    a = torch.randn(n)
    torch.testing.assert_close(cpu(TK.block_reduce_shared, n)(a), a.sum().view(1), atol=1e-4, rtol=1e-4)
    out = torch.zeros(1)
    simulate(TK.block_reduce_shared.get_tir(n), [a, out])
    torch.testing.assert_close(out, a.sum().view(1), atol=1e-4, rtol=1e-4)


def test_barrier_loop_with_uniform_break_cpu_and_simulated():
    a = torch.randn(1000)
    a[320] = 3.0  # the flag of trip 5
    ref = TK.ref_neighbour_sums_until_flag(a)
    torch.testing.assert_close(cpu(TK.neighbour_sums_until_flag, 1000)(a), ref)
    out = torch.zeros(64)
    simulate(TK.neighbour_sums_until_flag.get_tir(1000), [a, out])
    torch.testing.assert_close(out, ref)


def test_tile_ops_thread_code_and_parallel_cpu_and_simulated():
    M, Nn = 70, 50
    a = torch.randn(M, Nn)
    ref = a - a.mean(dim=1, keepdim=True)
    torch.testing.assert_close(cpu(TK.center_rows_mixed, M, Nn)(a), ref, atol=1e-5, rtol=1e-5)
    for arch in CUDA_ARCHS:  # (sm_90a: the tile copies go by TMA)
        out = torch.zeros(M, Nn)
        simulate(TK.center_rows_mixed.get_tir(M, Nn), [a, out], arch=arch)
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_sync_pass_orders_thread_level_shared_accesses():
    """Without the sync pass the simulator sees the race the barriers it places prevent."""
    x, W, _ = gemv_inputs(72, 777)
    y = torch.zeros(72, dtype=torch.float16)
    with pytest.raises(RaceError):
        simulate(TK.gemv_per_row.get_tir(72, 777), [x, W, y], pass_configs={"tl.disable_thread_storage_sync": True})


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_thread_level_nvcc(arch):
    cuda_build(TK.thread_grid_2d.get_tir(13, 70), arch)
    cuda_build(TK.thread_binding_loop.get_tir(300, 96), arch)
    cuda_build(TK.neighbour_sums_until_flag.get_tir(1000), arch)
    cuda_build(TK.center_rows_mixed.get_tir(70, 50), arch)
    src = cuda_build(TK.block_reduce_shared.get_tir(1000), arch).kernel_source
    assert "__syncthreads()" in src
    src = cuda_build(TK.uniform_and_varying_stores.get_tir(64), arch).kernel_source
    assert "if (tx == 0)" in src  # the uniform shared stores stay in one thread


def test_reducer_in_thread_level_code_cpu_and_simulated():
    a = torch.randn(1000)
    ref = torch.stack([a.sum(), torch.tensor(127.0)])
    torch.testing.assert_close(cpu(TK.reducer_sum_and_max, 1000)(a), ref, atol=1e-4, rtol=1e-4)
    out = torch.zeros(2)
    simulate(TK.reducer_sum_and_max.get_tir(1000), [a, out])
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    for arch in CUDA_ARCHS:
        cuda_build(TK.reducer_sum_and_max.get_tir(1000), arch)


def test_lane_and_warp_indices_cpu_and_simulated():
    t = torch.arange(256)
    ref = torch.stack([t % 32, t // 32, t // 128, (t % 32 == 0).long()]).int()
    assert torch.equal(cpu(TK.lane_and_warp_indices)(), ref)
    out = torch.zeros(4, 256, dtype=torch.int32)
    simulate(TK.lane_and_warp_indices.get_tir(), [out])
    assert torch.equal(out, ref)
    for arch in CUDA_ARCHS:
        cuda_build(TK.lane_and_warp_indices.get_tir(), arch)


@pytest.mark.parametrize("n", [4096, 1001])
def test_vectorized_per_thread_loads_and_stores(n):
    x, b = torch.randn(n), torch.randn(n)
    torch.testing.assert_close(cpu(TK.axpy_vectorized, n)(x, b), 2 * x + b)
    y = torch.zeros(n)
    simulate(TK.axpy_vectorized.get_tir(n), [x, b, y])
    torch.testing.assert_close(y, 2 * x + b)
    src = cuda_build(TK.axpy_vectorized.get_tir(n), "sm_80").kernel_source
    if n == 4096:  # whole vectors: 16-byte loads and stores, in every thread
        assert src.count("tl::copy_vec<16>") == 3 and "if (tx == 0)" not in src


# -- shuffles of every kind ------------------------------------------------------------------------


def test_shuffles_cpu_and_simulated():
    a = torch.randn(64)
    torch.testing.assert_close(cpu(TK.shuffles, 64)(a), TK.ref_shuffles(a))
    out = torch.zeros(4, 64)
    simulate(TK.shuffles.get_tir(64), [a, out])
    torch.testing.assert_close(out, TK.ref_shuffles(a))
    for arch in CUDA_ARCHS:
        cuda_build(TK.shuffles.get_tir(64), arch)


# -- errors ----------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1])
def barrier_under_thread_branch(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((n,), "float32")
            if tx < 5:
                s[tx] = A[tx]
                T.sync_threads()
            out[tx] = s[tx]

    return main


@tilelang.jit(out_idx=[-1])
def allreduce_under_thread_branch(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            v = T.alloc_local((1,), "float32")
            r = T.alloc_local((1,), "float32")
            v[0] = A[tx]
            if tx < 16:
                with T.attr(T.comm_reducer(lambda a, b: T.max(a, b), [T.Cast("float32", 0)]), "reduce_scope", 0):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), v[0], True, r[0], tx, dtype="handle"))
            out[tx] = r[0]

    return main


@pytest.mark.parametrize("factory", [barrier_under_thread_branch, allreduce_under_thread_branch])
def test_collective_under_thread_dependent_control_is_an_error(factory):
    f = factory.get_tir(64)
    with pytest.raises(TileLangError, match="differ between"):
        tilelang.compile(f, out_idx=[-1], target="c")
    with pytest.raises(TileLangError, match="differ between"):
        tilelang.lower(f, target={"kind": "cuda", "arch": "sm_80"})


def test_allreduce_max_cpu_and_simulated():
    row_max = TK.row_max_allreduce
    a = torch.randn(4, 32)
    torch.testing.assert_close(cpu(row_max, 4)(a), a.max(dim=1).values)
    out = torch.zeros(4)
    simulate(row_max.get_tir(4), [a, out])
    torch.testing.assert_close(out, a.max(dim=1).values)


def test_allreduce_over_two_thread_axes_cpu_and_simulated():
    a = torch.randn(1000)
    ref = a.sum().expand(128)
    torch.testing.assert_close(cpu(TK.block_sum_allreduce_2d, 1000)(a), ref, atol=1e-4, rtol=1e-4)
    out = torch.zeros(128)
    simulate(TK.block_sum_allreduce_2d.get_tir(1000), [a, out])
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    for arch in CUDA_ARCHS:
        src = cuda_build(TK.block_sum_allreduce_2d.get_tir(1000), arch).kernel_source
        assert "tl::AllReduce<tl::SumOp, 32, 1>" in src and "tl::AllReduce<tl::SumOp, 4, 32>" in src


def test_comm_reducer_rejects_unknown_combiner():
    with pytest.raises(TileLangError, match="combiner"):

        @T.prim_func
        def main(A: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32):
                tx = T.get_thread_binding(0)
                with T.attr(T.comm_reducer(lambda a, b: a * b + 1, [T.Cast("float32", 0)]), "reduce_scope", 0):
                    A[tx] = 0.0


def test_bindings_api():
    @T.prim_func
    def main(A: T.Tensor((8, 4, 2), "int32")):
        with T.Kernel(3, 5, threads=(8, 4, 2)) as (bx, by):
            tx, ty, tz = T.get_thread_bindings()
            assert T.get_thread_binding(1) is ty
            assert T.get_block_binding(0) is bx and T.get_block_binding(1) is by
            assert T.get_thread_extents() == [8, 4, 2] and T.get_thread_extent(2) == 2
            assert [int(e.value) for e in T.get_block_extents()] == [3, 5, 1]
            if bx == 0 and by == 0:
                A[tx, ty, tz] = tx * 100 + ty * 10 + tz

    out = torch.zeros(8, 4, 2, dtype=torch.int32)
    tilelang.compile(main, target="c")(out)
    i, j, k = torch.meshgrid(torch.arange(8), torch.arange(4), torch.arange(2), indexing="ij")
    assert torch.equal(out, (i * 100 + j * 10 + k).int())
