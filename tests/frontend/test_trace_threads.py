"""Tracing is thread-safe: parallel builds and the autotuner trace kernels from thread pools.

Regression: the rewriter edited the parsed module shared by every trace of a file, so threads
tracing kernels at once could see a half-rewritten body ("name 'bz' is not defined" in
FlashAttention's `with T.Kernel(...) as (bx, by, bz)`, seen in benchmarks/hopper.py)."""

import os
import sys
from concurrent.futures import ThreadPoolExecutor

from tilelang.frontend import trace as trace_mod

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from flash_attention import mha_fwd  # noqa: E402
from gemm import gemm  # noqa: E402


def trace(i: int) -> str:
    if i % 2:
        return repr(mha_fwd.flashattn.get_tir(2, 2, 64 * (1 + i % 3), 64, i % 4 == 1, block_M=64, block_N=32))
    return repr(gemm.matmul_lazy.get_tir(128, 128, 64 * (1 + i % 3), 64, 64, 32))


def test_parallel_traces_agree_with_serial_ones():
    results = []
    for _ in range(8):  # the race hit the first trace of a function, intermittently: repeat from cold
        trace_mod._CODES.clear()
        trace_mod._TREES.clear()
        with ThreadPoolExecutor(16) as ex:
            results.append(list(ex.map(trace, range(24))))
    serial = [trace(i) for i in range(24)]
    for got in results:
        assert got == serial
