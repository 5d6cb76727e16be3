"""Barriers in block-uniform control flow that only scalars kept in `T.alloc_local` /
`T.alloc_var` buffers (or loaded from global memory) make uniform, and `break` / `continue`
(issue #17, items 1 and 2).

Each kernel (tests/conformance/sync_kernels.py): CPU-backend numerics against torch at
sizes that are not tile multiples; a `__syncthreads()` inside the loop / branch of the CUDA
source for sm_80 and sm_90a, which nvcc builds; and the CUDA lowering run by the simulator,
whose shared-memory race check fails when a barrier is missing (it does on the code before
this change, which placed none in these loops). A loop that really differs between threads
and needs a barrier is an error at its line."""

from __future__ import annotations

import re

import pytest
import torch
from sim import RaceError, simulate

import tilelang
from conformance.sync_kernels import (
    branch_on_loaded_flag,
    per_thread_trip_count,
    positives_before_plunge,
    ref_first_tiles,
    ref_positives_before_plunge,
    ref_weighted,
    streamk_gemm,
    sum_of_first_tiles,
    weighted_tiles,
)
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError

torch.manual_seed(0)
SYNC = "__syncthreads()"


def cpu(factory, *args, **kw):
    return tilelang.compile(factory.get_tir(*args, **kw), out_idx=[-1], target="c")


def block_of(src: str, header: str) -> str:
    """The braced block of the first line of `src` matching the regex `header`."""
    m = re.search(header, src)
    assert m, f"no `{header}` in the generated source"
    i = src.index("{", m.end())
    depth = 0
    for j in range(i, len(src)):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return src[i : j + 1]
    raise AssertionError("unbalanced braces")


def assert_barrier_inside(func, header: str) -> None:
    for arch in CUDA_ARCHS:
        art = cuda_build(func, arch)
        body = block_of(art.kernel_source, header)
        assert SYNC in body, f"{arch}: no barrier inside `{header}`:\n{body}"


def rand16(*shape):
    return (torch.randn(*shape) / 4).half()


# -- a stream-K GEMM: a `while` loop on a local counter, tiles through shared memory, T.gemm ------


@pytest.mark.parametrize("counter", ["local", "var"])
def test_streamk_gemm_while_on_local_counter(counter):
    M, N, K = 70, 50, 90
    a, b = rand16(M, K), rand16(K, N)
    ref = a.double() @ b.double()
    torch.testing.assert_close(cpu(streamk_gemm, M, N, K, counter=counter)(a, b).double(), ref, atol=1e-3, rtol=1e-3)
    f = streamk_gemm.get_tir(M, N, K, counter=counter)
    assert_barrier_inside(f, r"while \(")
    c = torch.zeros(M, N)
    simulate(f, [a, b, c])
    torch.testing.assert_close(c.double(), ref, atol=1e-3, rtol=1e-3)


# -- a `for` over a bound loaded into a local ----------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 3])
def test_for_over_a_loaded_bound(n):
    M, N = 45, 50  # 4 column tiles of 16, the last one partial
    a, lim = torch.randn(M, N), torch.tensor([n], dtype=torch.int32)
    ref = ref_first_tiles(a, n, 16)
    torch.testing.assert_close(cpu(sum_of_first_tiles, M, N)(a, lim).double(), ref, atol=1e-5, rtol=1e-5)
    f = sum_of_first_tiles.get_tir(M, N)
    assert_barrier_inside(f, r"for \(int k = 0; k < ")
    c = torch.zeros(M, 16)
    simulate(f, [a, lim, c])
    torch.testing.assert_close(c.double(), ref, atol=1e-5, rtol=1e-5)


# -- an `if` on a scalar loaded from global memory --------------------------------------------


@pytest.mark.parametrize("flag", [1, 0])
def test_if_on_a_loaded_scalar(flag):
    M, N = 45, 24
    a, b, fl = torch.randn(M, N), torch.randn(M, N), torch.tensor([flag], dtype=torch.int32)
    ref = (a * 2 if flag else a + b).double()
    torch.testing.assert_close(cpu(branch_on_loaded_flag, M, N)(a, b, fl).double(), ref, atol=1e-5, rtol=1e-5)
    f = branch_on_loaded_flag.get_tir(M, N)
    assert_barrier_inside(f, r"if \(F\[0\] > 0\)")
    c = torch.zeros(M, N)
    simulate(f, [a, b, fl, c])
    torch.testing.assert_close(c.double(), ref, atol=1e-5, rtol=1e-5)


# -- break and continue ------------------------------------------------------------------------


@pytest.mark.parametrize("loop", ["serial", "while"])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("skip,stop", [(1, 3), (0, 9), (2, 2)])
def test_break_and_continue(loop, shared, skip, stop):
    M, N = 45, 70  # 5 column tiles of 16, the last one partial
    a, p = torch.randn(M, N), torch.tensor([skip, stop], dtype=torch.int32)
    ref = ref_weighted(a, skip, stop, 16)
    torch.testing.assert_close(
        cpu(weighted_tiles, M, N, loop=loop, shared=shared)(a, p).double(), ref, atol=1e-4, rtol=1e-5
    )
    f = weighted_tiles.get_tir(M, N, loop=loop, shared=shared)
    header = r"for \(int k = 0; k < " if loop == "serial" else r"while \("
    for arch in CUDA_ARCHS:
        src = cuda_build(f, arch).kernel_source
        body = block_of(src, header)
        assert "break;" in body and "continue;" in body
        if shared:
            assert SYNC in body, f"{arch}: no barrier inside the loop:\n{body}"
            # the back edge's barrier also precedes the `continue` (which skips the one at the end)
            assert re.search(r"__syncthreads\(\);\s*continue;", body), body
    c = torch.zeros(M, 16)
    simulate(f, [a, p, c])
    torch.testing.assert_close(c.double(), ref, atol=1e-4, rtol=1e-5)


def test_break_and_continue_per_thread_inside_t_parallel():
    M, N = 45, 37
    a = torch.randn(M, N)
    ref = ref_positives_before_plunge(a)
    assert torch.equal(cpu(positives_before_plunge, M, N)(a), ref)
    f = positives_before_plunge.get_tir(M, N)
    for arch in CUDA_ARCHS:
        body = block_of(cuda_build(f, arch).kernel_source, r"for \(int k = 0; k < 37")
        assert "break;" in body and "continue;" in body and SYNC not in body
    c = torch.zeros(M, dtype=torch.int32)
    simulate(f, [a, c])
    assert torch.equal(c, ref)


# -- what must not compile ------------------------------------------------------------------------


def _line_of(marker: str) -> int:
    import conformance.sync_kernels as mod

    with open(mod.__file__) as fh:
        return next(i for i, line in enumerate(fh, 1) if marker in line)


@pytest.mark.parametrize("loop,marker", [("for", "DIVERGENT-FOR"), ("while", "DIVERGENT-WHILE")])
def test_thread_divergent_loop_needing_a_barrier_is_an_error(loop, marker):
    f = per_thread_trip_count.get_tir(45, 50, loop=loop)
    for arch in CUDA_ARCHS:
        with pytest.raises(TileLangError, match="may differ between the threads of the block") as e:
            tilelang.lower(f, target={"kind": "cuda", "arch": arch})
        assert e.value.span.line == _line_of(marker), str(e.value)
        assert e.value.span.file.endswith("sync_kernels.py")
        assert "`n`" in str(e.value) and "error:" in str(e.value)


def test_simulator_catches_a_missing_barrier():
    """The race check is what makes the simulator runs above able to fail: the stream-K GEMM
    lowered without barriers (as before this change) races on its shared tiles."""
    M, N, K = 70, 50, 90
    f = streamk_gemm.get_tir(M, N, K)
    with pytest.raises(RaceError):
        simulate(
            f, [rand16(M, K), rand16(K, N), torch.zeros(M, N)], pass_configs={"tl.disable_thread_storage_sync": True}
        )


def test_break_in_t_parallel_is_unsupported_on_cuda():
    import tilelang.language as T
    from tilelang.errors import UnsupportedError

    @T.prim_func
    def main(A: T.Tensor((45,), "float32"), C: T.Tensor((45,), "float32")):
        with T.Kernel(1, threads=128) as _bx:
            for i in T.Parallel(45):
                if A[i] < 0.0:
                    break  # BREAK-IN-PARALLEL
                C[i] = A[i]

    for arch in CUDA_ARCHS:
        with pytest.raises(UnsupportedError, match="in a T.Parallel loop") as e:
            tilelang.lower(main, target={"kind": "cuda", "arch": arch})
        assert "BREAK-IN-PARALLEL" in open(__file__).read().splitlines()[e.value.span.line - 1]
