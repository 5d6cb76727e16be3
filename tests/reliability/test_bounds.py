"""Accesses that certainly leave an on-chip buffer are compile errors at their line on every
target; register tiles need compile-time shapes everywhere; gemm dtype rules are the same on
the CPU as on CUDA. Correct programs that merely look close to the edge still compile."""

# ruff: noqa: F841 - kernels name their block index as real programs do

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.errors import TileLangError

TARGETS = ["c", {"kind": "cuda", "arch": "sm_90a"}]


def _lower(func, target):
    return tilelang.lower(func, target=target) if target != "c" else tilelang.compile(func, target="c")


def _line_of(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def shared_overrun(N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((32,), T.float32)
            for i in T.Parallel(64):
                S[i] = A[i]  # writes 64 elements into 32
            for i in T.Parallel(32):
                B[i] = S[i]

    return main


def fragment_overrun(N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            F = T.alloc_fragment((60,), T.float32)
            for i in T.Parallel(64):
                F[i] = A[i] * 2.0  # 64 elements into a fragment of 60
            T.copy(F, B[0:60])

    return main


def shifted_read(N=64):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((64,), T.float32)
            T.copy(A, S)
            for i in T.Parallel(64):
                B[i] = S[i + 32]  # reads past the end for i >= 32

    return main


def region_overrun(N=128):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((64,), T.float32)
            T.copy(A[0:64], S[32:96])  # a region that ends past the buffer
            T.copy(S, B[0:64])

    return main


@pytest.mark.parametrize("target", TARGETS, ids=["c", "sm_90a"])
@pytest.mark.parametrize(
    "factory,text,what",
    [
        (shared_overrun, "S[i] = A[i]", "index 63 is outside dimension 0 of `S`"),
        (fragment_overrun, "F[i] = A[i] * 2.0", "index 63 is outside dimension 0 of `F`"),
        (shifted_read, "B[i] = S[i + 32]", "index 95 is outside dimension 0 of `S`"),
        (region_overrun, "T.copy(A[0:64], S[32:96])", "last index 95 is outside dimension 0 of `S`"),
    ],
    ids=["shared", "fragment", "shifted", "region"],
)
def test_certain_out_of_range_access_is_an_error_at_its_line(factory, text, what, target):
    with pytest.raises(TileLangError) as err:
        _lower(factory(), target)
    msg = str(err.value)
    assert what in msg, msg
    assert f"test_bounds.py:{_line_of(factory, text)}:" in msg, msg


def guarded_and_partial(N=50):
    """Near the edge but correct: guarded by an if, a loop left by break, a tail tile."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            S = T.alloc_shared((32,), T.float32)
            acc = T.alloc_local((1,), T.float32)
            for i in T.Parallel(64):
                if i < 32:
                    S[i] = A[bx * 32 + i]
            acc[0] = 0.0
            for k in T.serial(64):
                if k >= 32:
                    break
                acc[0] += S[k]
            for i in T.Parallel(32):
                B[bx * 32 + i] = S[i] + acc[0] * 0.0

    return main


def test_correct_kernels_near_the_edge_compile_and_run():
    a = torch.randn(50)
    b = tilelang.compile(guarded_and_partial(), out_idx=[-1], target="c")(a)
    torch.testing.assert_close(b, a)


def dynamic_fragment():
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((M,), T.float32)
            T.copy(A, F)
            T.copy(F, B)

    return main


@pytest.mark.parametrize("target", TARGETS, ids=["c", "sm_90a"])
def test_a_register_tile_with_a_run_time_shape_is_rejected_on_every_target(target):
    with pytest.raises(TileLangError, match="not known at compile time"):
        _lower(dynamic_fragment(), target)


def int32_accumulator(M=64, N=64, K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), T.float16)
            B_s = T.alloc_shared((K, N), T.float16)
            C_l = T.alloc_fragment((M, N), T.int32)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C)

    return main


@pytest.mark.parametrize("target", TARGETS, ids=["c", "sm_90a"])
def test_gemm_dtype_rules_are_the_same_on_every_target(target):
    with pytest.raises(TileLangError, match="float16 inputs cannot accumulate in int32"):
        _lower(int32_accumulator(), target)


def offset_read(N=64):
    """Reads `S[i + off]` with `off` known only at run time."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), off: T.int32):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((64,), T.float32)
            T.copy(A, S)
            for i in T.Parallel(64):
                B[i] = S[i + off]

    return main


@pytest.mark.parametrize("how", ["pass_config", "env"])
def test_bounds_check_mode_names_buffer_index_and_line(how, monkeypatch):
    from tilelang.backend.c.runtime import DeviceAssertError

    cfg = {"tl.enable_bounds_check": True} if how == "pass_config" else {}
    if how == "env":
        monkeypatch.setenv("TILELANG_BOUNDS_CHECK", "1")
    k = tilelang.compile(offset_read(), out_idx=[1], target="c", pass_configs=cfg)
    a = torch.randn(64)
    torch.testing.assert_close(k(a, 0), a)  # in range: no error, right numbers
    with pytest.raises(DeviceAssertError) as err:
        k(a, 8)
    msg = str(err.value)
    assert f"test_bounds.py:{_line_of(offset_read, 'B[i] = S[i + off]')}" in msg, msg
    assert "out-of-range access to `S`" in msg and "i + off" in msg, msg
    src = tilelang.lower(offset_read(), target={"kind": "cuda", "arch": "sm_80"}, pass_configs=cfg)
    assert "tl::device_assert_fail" in src.kernel_source


def test_bounds_check_mode_keeps_correct_kernels_correct():
    from seeds import seed_kernels as S

    func = S.matmul.get_tir(M=200, N=136, K=72, block_M=64, block_N=64, block_K=32)
    k = tilelang.compile(func, target="c", pass_configs={"tl.enable_bounds_check": True})
    a, b = torch.randn(200, 72).half(), torch.randn(72, 136).half()
    c = k(a, b)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.1, rtol=1e-2)
    cuda = tilelang.lower(
        func, target={"kind": "cuda", "arch": "sm_90a"}, pass_configs={"tl.enable_bounds_check": True}
    )
    assert cuda.kernel_source
