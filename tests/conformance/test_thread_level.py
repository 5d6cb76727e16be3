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
from sim import simulate

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


@pytest.mark.parametrize("name", GEMVS)
def test_gemv_simulated(name):
    n, k = 72, 777  # the simulator runs every thread in Python: fewer rows
    x, W, ref = gemv_inputs(n, k)
    y = torch.zeros(n, dtype=torch.float16)
    simulate(getattr(TK, name).get_tir(n, k), [x, W, y])
    close(y, ref, torch.float16)


def test_gemv_split_k_global_simulated():
    n, k = 72, 301
    x, W, ref = gemv_inputs(n, k)
    y = torch.zeros(n, dtype=torch.float32)
    simulate(TK.gemv_split_k_global.get_tir(n, k, 32, 3), [x, W, y])
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


@tilelang.jit(out_idx=[-1])
def uniform_and_varying_stores(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            cnt = T.alloc_shared((1,), "float32")
            cnt[0] = 0.0  # uniform: one thread
            T.sync_threads()
            cnt[0] = cnt[0] + 1.0  # uniform read-modify-write: once, not n times
            T.sync_threads()
            out[tx] = A[tx] + cnt[0]
            if tx == 3:
                out[0] = 100.0  # uniform value under per-thread control: thread 3 does it

    return main


def test_uniform_store_once_varying_control_cpu():
    a = torch.randn(64)
    out = cpu(uniform_and_varying_stores, 64)(a)
    ref = a + 1.0
    ref[0] = 100.0
    torch.testing.assert_close(out, ref)


def test_uniform_store_once_varying_control_simulated():
    a = torch.randn(64)
    out = torch.zeros(64)
    simulate(uniform_and_varying_stores.get_tir(64), [a, out])
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


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_thread_level_nvcc(arch):
    cuda_build(TK.thread_grid_2d.get_tir(13, 70), arch)
    cuda_build(TK.thread_binding_loop.get_tir(300, 96), arch)
    src = cuda_build(TK.block_reduce_shared.get_tir(1000), arch).kernel_source
    assert "__syncthreads()" in src
    src = cuda_build(uniform_and_varying_stores.get_tir(64), arch).kernel_source
    assert "if (tx == 0)" in src  # the uniform shared stores stay in one thread


# -- shuffles of every kind ------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1])
def shuffles(n: int):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), out: T.Tensor((4, n), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding(0)
            v = T.alloc_local((1,), "float32")
            r = T.alloc_local((4,), "float32")
            v[0] = A[tx]
            r[0] = T.shfl_xor(v[0], 5)
            r[1] = T.shfl_down(v[0], 3, 16)
            r[2] = T.shfl_up(v[0], 2)
            r[3] = T.shfl_sync(v[0], 7, 8)
            for q in T.serial(4):
                out[q, tx] = r[q]

    return main


def ref_shuffles(a):
    n = a.numel()
    out = torch.zeros(4, n)
    for t in range(n):
        lane = t % 32
        out[0, t] = a[t - lane + (lane ^ 5)]
        p = t % 16
        out[1, t] = a[t + 3] if p + 3 < 16 else a[t]
        out[2, t] = a[t - 2] if lane >= 2 else a[t]
        out[3, t] = a[t - t % 8 + 7]
    return out


def test_shuffles_cpu_and_simulated():
    a = torch.randn(64)
    torch.testing.assert_close(cpu(shuffles, 64)(a), ref_shuffles(a))
    out = torch.zeros(4, 64)
    simulate(shuffles.get_tir(64), [a, out])
    torch.testing.assert_close(out, ref_shuffles(a))
    for arch in CUDA_ARCHS:
        cuda_build(shuffles.get_tir(64), arch)


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
    @tilelang.jit(out_idx=[-1])
    def row_max(rows: int):
        @T.prim_func
        def main(A: T.Tensor((rows, 32), "float32"), out: T.Tensor((rows,), "float32")):
            with T.Kernel(1, threads=(32, rows)):
                tx = T.get_thread_binding(0)
                ty = T.get_thread_binding(1)
                v = T.alloc_local((1,), "float32")
                r = T.alloc_local((1,), "float32")
                v[0] = A[ty, tx]
                with T.attr(T.comm_reducer(lambda a, b: T.max(a, b), [T.Cast("float32", 0)]), "reduce_scope", 0):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), v[0], True, r[0], tx, dtype="handle"))
                if tx == 0:
                    out[ty] = r[0]

        return main

    a = torch.randn(4, 32)
    torch.testing.assert_close(cpu(row_max, 4)(a), a.max(dim=1).values)
    out = torch.zeros(4)
    simulate(row_max.get_tir(4), [a, out])
    torch.testing.assert_close(out, a.max(dim=1).values)


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
