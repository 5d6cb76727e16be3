"""A serial loop inside a T.Parallel nest that stores shared memory at thread-independent places
(the gemv seed: every thread stores the same `A_shared[tk]`) gets a barrier at the start of each
trip *and* one between those stores and the trip's reads of shared memory: the values agree, but
compute-sanitizer's racecheck counted 16 hazards on the H200 without the second one."""

from __future__ import annotations

import torch
from sim import simulate

import tilelang


def _gemv():
    from seeds import seed_kernels as S

    return S.gemv.get_tir(100, 60, 64, 16)


def test_uniform_stores_are_settled_before_the_trip_reads_them():
    for arch in ("sm_80", "sm_90a"):
        src = tilelang.lower(_gemv(), target={"kind": "cuda", "arch": arch}).kernel_source
        trip = src[src.index("for (int bk") :]
        trip = trip[: trip.index("C[bx")]
        store, read = trip.index("A_shared[tk] ="), trip.index("A_shared[tk_1]")
        assert trip.count("__syncthreads()") == 2, trip
        assert store < trip.rindex("__syncthreads()") < read, trip


def test_the_settled_gemv_still_computes_the_gemv():
    a, b = torch.randn(60).half(), torch.randn(100, 60).half()
    c = torch.empty(100, dtype=torch.float16)
    simulate(_gemv(), [a, b, c])
    torch.testing.assert_close(c.float(), b.float() @ a.float(), atol=2e-2, rtol=1e-2)
