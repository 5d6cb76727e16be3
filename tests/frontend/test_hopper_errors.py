"""Argument errors of the explicit Hopper API (T.ws, mbarriers, T.tma_copy, wgmma,
setmaxnreg, named barriers, clusters): each points at the offending call, says what
is wrong and how to fix it."""

import linecache
import os

import pytest

import tilelang.language as T
from tilelang.errors import DSLError

FILE = os.path.abspath(__file__)


def line_of(text: str) -> int:
    for n, line in enumerate(linecache.getlines(FILE), 1):
        if text in line and "line_of(" not in line:
            return n
    raise AssertionError(text)


def kernel(case: str, threads: int = 256):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((64, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            bars = T.alloc_barrier([128, 128])
            if case == "ws_gap":
                with T.ws(0, 2):  # case: ws_gap
                    T.clear(C_f)
            if case == "ws_range":
                with T.ws(2):  # case: ws_range
                    T.clear(C_f)
            if case == "ws_threads":
                with T.ws(0):  # case: ws_threads
                    T.clear(C_f)
            if case == "ws_nested":
                with T.ws(0):
                    with T.ws(1):  # case: ws_nested
                        T.clear(C_f)
            if case == "ws_type":
                with T.ws("producer"):  # case: ws_type
                    T.clear(C_f)
            if case == "wait_not_barrier":
                T.mbarrier_wait_parity(A_s, 0)  # case: wait_not_barrier
            if case == "wait_parity":
                T.barrier_wait(bars[0], 0.5)  # case: wait_parity
            if case == "arrive_not_barrier":
                T.mbarrier_arrive(C_f)  # case: arrive_not_barrier
            if case == "tma_no_barrier":
                T.tma_copy(A[0, 0], A_s)  # case: tma_no_barrier
            if case == "tma_store_barrier":
                T.tma_copy(A_s, A[0, 0], barrier=bars[0])  # case: tma_store_barrier
            if case == "tma_fragment":
                T.tma_copy(C[0, 0], C_f, barrier=bars[0])  # case: tma_fragment
            if case == "tma_dtype":
                T.tma_copy(C[0:64, 0:64], A_s, barrier=bars[0])  # case: tma_dtype
            if case == "tma_extents":
                T.tma_copy(A[0:16, 0:64], A_s, barrier=bars[1])  # case: tma_extents
            if case == "nreg_range":
                T.set_max_nreg(16, 0)  # case: nreg_range
            if case == "nreg_multiple":
                T.set_max_nreg(100, 1)  # case: nreg_multiple
            if case == "wait_wgmma":
                T.wait_wgmma(-1)  # case: wait_wgmma
            if case == "sync_count":
                T.sync_threads(1, 48)  # case: sync_count
            if case == "sync_reserved":
                T.sync_threads(9)  # case: sync_reserved
            if case == "sync_no_id":
                T.sync_threads(arrive_count=128)  # case: sync_no_id
            T.copy(A_s, A[0, 0])

    return main


CASES = [
    ("ws_gap", "consecutive", 256),
    ("ws_range", "only 2 warpgroup", 256),
    ("ws_threads", "whole warpgroups", 96),
    ("ws_nested", "cannot be nested", 256),
    ("ws_type", "compile-time integer", 256),
    ("wait_not_barrier", "must be an mbarrier from T.alloc_barrier", 256),
    ("wait_parity", "integer expression", 256),
    ("arrive_not_barrier", "must be an mbarrier", 256),
    ("tma_no_barrier", "needs `barrier=`", 256),
    ("tma_store_barrier", "takes no `barrier`", 256),
    ("tma_fragment", "global → shared or shared → global", 256),
    ("tma_dtype", "cannot convert", 256),
    ("tma_extents", "do not match", 256),
    ("nreg_range", "[24, 256]", 256),
    ("nreg_multiple", "multiple of 8", 256),
    ("wait_wgmma", "[0, 7]", 256),
    ("sync_count", "multiple of 32", 256),
    ("sync_reserved", "belong to the T.ws regions", 256),
    ("sync_no_id", "needs a `barrier_id`", 256),
]


@pytest.mark.parametrize("case,message,threads", CASES, ids=[c[0] for c in CASES])
def test_argument_errors(case, message, threads):
    with pytest.raises(DSLError) as ei:
        kernel(case, threads)
    e = ei.value
    assert message in str(e), str(e)
    assert e.span.file == FILE and e.span.line == line_of(f"# case: {case}"), (e.span, str(e))
    assert "^" in str(e)  # the underlined source line


def cluster_kernel(dims, grid):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.ClusterKernel(grid, threads=128, cluster_dims=dims) as bx:  # case: cluster
            A[bx] = 1.0

    return main


@pytest.mark.parametrize(
    "dims,grid,message",
    [((4, 4, 1), 16, "exceeds the portable maximum of 8"), (2, 3, "not a multiple"), ((1, 2, 1), 4, "spans grid")],
)
def test_cluster_errors(dims, grid, message):
    with pytest.raises(DSLError) as ei:
        cluster_kernel(dims, grid)
    assert message in str(ei.value)
    assert ei.value.span.line == line_of("# case: cluster")


def test_alloc_barrier_counts():
    with pytest.raises(DSLError) as ei:

        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):  # traced here, at definition
            with T.Kernel(1, threads=128) as bx:
                T.alloc_barrier([128, 0])  # case: barrier0
                A[bx] = 1.0

    assert "arrive counts" in str(ei.value) and ei.value.span.line == line_of("# case: barrier0")


def test_outside_kernel():
    from tilelang.jit.exceptions import JITNoBuilderError

    with pytest.raises(JITNoBuilderError):
        T.ws(0).__enter__()
    with pytest.raises(JITNoBuilderError):
        T.fence_proxy_async()
