"""Escape hatches written the way public TileLang 0.1.x programs use them, on the C backend
(vs torch), and lowered + nvcc-built for sm_80 / sm_90a:

- `T.import_source` + `T.call_extern`: a device function given as source, called per
  element (the same source compiles as C: its CUDA qualifiers are defined away);
- `T.access_ptr` / `Buffer.access_ptr` (with `offset`) as pointer arguments; `T.attr(...,
  "pragma_import_c", ...)`; a bare value-returning extern call runs, `T.evaluate` runs once;
- `T.assume`: an assumed bound removes the bounds guard (C and CUDA source), check_bounds
  honours it, the numbers stay right;
- `T.call_intrin` for math intrinsics; `T.call_packed`, unknown `T.attr` keys: unsupported;
- `T.disable_warp_group_reg_alloc()`: the sm_90a warp-specialized GEMM loses its setmaxnreg;
- `T.alloc_cluster_barrier`: a cluster barrier initialised cluster-wide before remote arrives
  (sm_90a), an error outside a cluster kernel and on sm_80, the local protocol on the CPU.
"""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance import escape_kernels as K
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError, VerifyError


@pytest.mark.parametrize("M,N", [(5, 130), (1, 7)])
def test_extern_device_function_from_source(M, N):
    a = torch.randn(M, N)
    torch.testing.assert_close(K.extern_axpb(M, N, 2.0, 1.0)(a), 2 * a + 1)
    src = K.extern_axpb(M, N, 2.0, 1.0).get_kernel_source()
    assert src.count("my_axpb(float a") == 1  # emitted once, before the entry


@pytest.mark.parametrize("M,N", [(3, 37), (4, 1)])
def test_extern_with_pointers(M, N):
    a = torch.randn(M, N)
    torch.testing.assert_close(K.extern_rows(M, N, 3.0)(a), 3 * a)


def test_bare_extern_call_runs_and_evaluate_runs_once():
    c = torch.zeros(1, dtype=torch.int32)
    K.extern_counter(4, 3)(c)
    assert int(c) == 4 * 3 + 1


def test_pure_extern_in_an_expression():
    @tilelang.jit(out_idx=[-1])
    def k(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                T.import_source(K.AXPB)
                for i in T.Parallel(n):
                    B[i] = T.call_pure_extern("float32", "my_axpb", A[i], A[i], 0.5)

        return main

    a = torch.randn(19)
    torch.testing.assert_close(k(19)(a), a * a + 0.5)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_extern_nvcc_builds(arch):
    for tir in (K.extern_axpb.get_tir(5, 130), K.extern_rows.get_tir(3, 37), K.extern_counter.get_tir(2)):
        art = cuda_build(tir, arch)
        assert art.kernel_source.count("__device__") == 1


def test_assume_removes_the_guard_and_stays_correct():
    M, W = 100, 6
    a = torch.randn(M)
    for assume in (False, True):
        k = K.window(M, W, assume)
        torch.testing.assert_close(k(a, 7), a[7 : 7 + W])
        (line,) = [x for x in k.get_kernel_source().split("\n") if "B[" in x]
        assert ("?" in line) is not assume, line  # the guarded load is a select


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_assume_removes_the_cuda_guard(arch):
    for assume in (False, True):
        src = cuda_build(K.window.get_tir(100, 6, assume), arch).kernel_source
        (line,) = [x for x in src.split("\n") if "B[" in x]
        assert ("?" in line) is not assume, line


def _local_index_kernel(assume: bool):
    @tilelang.jit(out_idx=[-1])
    def k(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                buf = T.alloc_local((4,), "float32")
                for i in T.serial(8):
                    if assume:
                        T.assume(i < 4)
                    buf[i] = A[i]
                for i in T.serial(4):
                    B[i] = buf[i]

        return main

    return k


def test_check_bounds_honours_assume():
    with pytest.raises(VerifyError, match="out-of-range"):
        _local_index_kernel(False)(8)
    _local_index_kernel(True)(8)  # the user's assumption rules out i >= 4: nothing certain is out of range


def test_call_intrin_and_unsupported_names():
    @tilelang.jit(out_idx=[-1])
    def k(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(n):
                    B[i] = T.call_intrin("float32", "tir.exp", A[i])

        return main

    a = torch.randn(33)
    torch.testing.assert_close(k(33)(a), torch.exp(a))

    def failing(body):
        @tilelang.jit(out_idx=[-1])
        def f(n):
            @T.prim_func
            def main(A: T.Tensor((n,), "float32")):
                with T.Kernel(1, threads=32):
                    body()

            return main

        with pytest.raises(TileLangError) as ei:
            f(4)()
        return ei.value

    @T.macro
    def packed():
        T.call_packed("tvm.contrib.foo", 1)

    @T.macro
    def unknown_attr():
        T.attr(0, "async_scope", 1)

    @T.macro
    def unknown_intrin():
        T.evaluate(T.call_intrin("float32", "tir.ptx_ldmatrix", 1))

    for body, what in ((packed, "call_packed"), (unknown_attr, "async_scope"), (unknown_intrin, "ptx_ldmatrix")):
        err = failing(body)
        assert err.kind == "unsupported" and what in str(err) and "test_escape_hatches.py" in str(err)


def test_evaluate_and_attr_as_a_with_frame():
    @tilelang.jit(out_idx=[-1])
    def k(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                with T.attr(0, "pragma_import_c", K.AXPB):
                    for i in T.Parallel(n):
                        B[i] = T.call_extern("float32", "my_axpb", 1.0, A[i], 2.0)
                T.evaluate(0)

        return main

    a = torch.randn(9)
    torch.testing.assert_close(k(9)(a), a + 2)


def test_disable_warp_group_reg_alloc_drops_setmaxnreg():
    on = cuda_build(K.ws_gemm.get_tir(512, 512, 256, False), "sm_90a").kernel_source
    off = cuda_build(K.ws_gemm.get_tir(512, 512, 256, True), "sm_90a").kernel_source
    assert "tl::warpgroup_reg_alloc<" in on and "tl::warpgroup_reg_dealloc<" in on
    assert "warpgroup_reg" not in off and "if (tx >= 256) {" in off  # still warp-specialized
    # and on sm_80 (no warp specialization there) it is accepted and changes nothing
    a = cuda_build(K.ws_gemm.get_tir(512, 512, 256, True), "sm_80").kernel_source
    b = cuda_build(K.ws_gemm.get_tir(512, 512, 256, False), "sm_80").kernel_source
    assert a == b


def test_disable_warp_group_reg_alloc_gemm_numbers_on_cpu():
    M, N, K_ = 130, 260, 70
    a, b = torch.randn(M, K_).half(), torch.randn(K_, N).half()
    c = K.ws_gemm(M, N, K_, True)(a, b)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)


def test_cluster_barrier():
    src = cuda_build(K.cluster_pingpong.get_tir(64, True), "sm_90a").kernel_source
    init, sync, arrive = (
        src.index(s) for s in ("tl::mbarrier_init(", "tl::cluster_sync()", "mbarrier_arrive_cluster(")
    )
    assert init < sync < arrive  # every block's barrier exists before a partner arrives on it
    with pytest.raises(TileLangError, match="needs sm_90a"):
        cuda_build(K.cluster_pingpong.get_tir(64, True), "sm_80")
    a = torch.randn(2, 64)
    torch.testing.assert_close(K.cluster_pingpong(64, False)(a), a)  # CPU: the local protocol runs
    with pytest.raises(TileLangError, match="cta_id"):
        K.cluster_pingpong(64, True)(a)  # CPU: blocks of a cluster share no memory

    @tilelang.jit(out_idx=[-1])
    def plain(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                T.alloc_cluster_barrier([32])

        return main

    with pytest.raises(TileLangError, match="outside a cluster kernel"):
        plain(4)()


def _indexed_local(assume: bool):
    @tilelang.jit(out_idx=[-1], pass_configs={"tl.enable_bounds_check": True})
    def k(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), idx: T.int32, B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=1):
                buf = T.alloc_local((8,), "float32")
                for i in T.serial(8):
                    buf[i] = A[i]
                if assume:
                    T.assume(idx >= 0)
                    T.assume(idx < 8)
                B[0] = buf[idx]

        return main

    return k(8)


def test_debug_bounds_checks_honour_assume():
    x = torch.arange(8.0)
    for assume in (False, True):
        k = _indexed_local(assume)
        checked = [ln for ln in k.get_kernel_source().split("\n") if "idx < 0 || idx >= 8" in ln]
        assert bool(checked) is not assume
        assert float(k(x, 3)) == 3.0
