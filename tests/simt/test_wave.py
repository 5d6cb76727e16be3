"""The warp / wave model of the simulator: shuffles stay within `wave_size` lanes (32 on CUDA, 64
on HIP), and a reduction that spans several warps / waves must go through scratch."""

from __future__ import annotations

import pytest

from simt.core import SimError
from simt.wave import shuffle


def _xor_events(threads: int, mask: int, width: int) -> list:
    return [("shfl", 0, float(t), mask, width) for t in range(threads)]


def test_xor_shuffle_crosses_half_a_wave_of_64():
    got = shuffle(_xor_events(128, 32, 64), wave_size=64)
    assert got == [float(t ^ 32) for t in range(128)]


def test_shuffle_of_a_warp_of_32_stays_in_its_warp():
    got = shuffle(_xor_events(64, 16, 32), wave_size=32)
    assert got == [float(t ^ 16) for t in range(64)]


def test_up_and_down_shuffles_keep_their_own_value_at_the_edges():
    down = shuffle([("shfl", 1, float(t), 8, 64) for t in range(64)], wave_size=64)
    assert down[:56] == [float(t + 8) for t in range(56)] and down[56:] == [float(t) for t in range(56, 64)]
    up = shuffle([("shfl", 2, float(t), 8, 64) for t in range(64)], wave_size=64)
    assert up[:8] == [float(t) for t in range(8)] and up[8:] == [float(t - 8) for t in range(8, 64)]


def test_a_shuffle_wider_than_the_wave_is_an_error():
    with pytest.raises(SimError, match="a warp has 32"):
        shuffle(_xor_events(64, 32, 64), wave_size=32)


def _reducing(t: int, threads: int, scratch: bool, out: list):
    out[t] = yield ("red", "sum", threads, 1, float(t), scratch)


@pytest.mark.parametrize("dialect_name", ["cuda", "hip"])
def test_a_reduction_across_waves_needs_scratch(dialect_name):
    from simt.cuda import CUDA
    from simt.hip import HIP
    from simt.wave import run_block

    dialect = {"cuda": CUDA, "hip": HIP}[dialect_name]
    out = [None] * 128
    run_block([_reducing(t, dialect.wave_size, False, out) for t in range(128)], 128, dialect)
    size = dialect.wave_size
    assert out == [float(sum(range(t - t % size, t - t % size + size))) for t in range(128)]
    run_block([_reducing(t, 128, True, out) for t in range(128)], 128, dialect)
    assert out == [float(sum(range(128)))] * 128
    with pytest.raises(SimError, match="no scratch buffer"):
        run_block([_reducing(t, 2 * size, False, out) for t in range(128)], 128, dialect)
