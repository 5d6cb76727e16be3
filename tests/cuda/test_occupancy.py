"""Blocks per SM (backend/cuda/occupancy.py) and the recompile with `__launch_bounds__(threads,
blocks)` when ptxas's register count lands just past an occupancy cliff that shared memory would
not impose (FlashAttention 128×64 / 2 stages / 256 threads: 130 registers leave one 98 KB block
per SM, 128 leave two)."""

from __future__ import annotations

import os
import re
import sys

import pytest

import tilelang
from tilelang.backend.cuda.occupancy import (
    blocks_by_registers,
    min_blocks_to_request,
    register_cap,
    resident_blocks,
)
from tilelang.backend.target import nvcc_path

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
from flash_attention import mha_fwd  # noqa: E402

KB = 1024


@pytest.mark.parametrize(
    "threads, registers, blocks",
    [(256, 128, 2), (256, 130, 1), (256, 136, 1), (128, 250, 2), (128, 256, 2), (128, 64, 8), (384, 168, 1)],
)
def test_blocks_by_registers(threads, registers, blocks):
    assert blocks_by_registers(threads, registers) == blocks


def test_register_caps():
    assert register_cap(256, 2) == 128 and register_cap(128, 2) == 255 and register_cap(128, 4) == 128


def test_resident_blocks_take_the_tightest_limit():
    assert resident_blocks("sm_90a", 256, 128, 98 * KB) == 2  # registers and shared memory: 2
    assert resident_blocks("sm_90a", 256, 64, 98 * KB) == 2  # shared memory: 2 (228 KB / 99 KB)
    assert resident_blocks("sm_80", 256, 64, 98 * KB) == 1  # 164 KB on the A100
    assert resident_blocks("sm_90a", 1024, 32, 0) == 2  # threads: 2048 per SM


@pytest.mark.parametrize(
    "arch, threads, registers, smem, want",
    [
        ("sm_90a", 256, 130, 98 * KB, 2),  # just past the cliff: ask for the second block
        ("sm_90a", 256, 128, 98 * KB, None),  # already two
        ("sm_90a", 256, 180, 98 * KB, None),  # a cap of 128 is too far below 180
        ("sm_90a", 256, 130, 160 * KB, None),  # shared memory allows one anyway
        ("sm_75", 256, 130, 98 * KB, None),  # limits not known: leave it to ptxas
    ],
)
def test_when_to_ask_for_another_block(arch, threads, registers, smem, want):
    assert min_blocks_to_request(arch, threads, registers, smem) == want


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
def test_the_backend_recompiles_for_the_second_block():
    func = mha_fwd.flashattn.get_tir(8, 32, 4096, 128, False, block_M=128, block_N=64, num_stages=2, threads=256)
    art = tilelang.lower(func, target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=True)
    assert re.search(r"__launch_bounds__\(256, 2\)", art.kernel_source)
    assert art.meta["registers"] <= 128 and art.meta.get("spill_bytes", 0) <= 16
    assert resident_blocks("sm_90a", 256, art.meta["registers"], art.meta["smem"]) == 2


def test_arch_limits_compare_architectures_as_numbers():
    from tilelang.backend.arch_limits import ARCHES, arch_limits

    # "sm_100a" < "sm_90" as strings: it used to get sm_80's 163 KiB of shared memory
    assert arch_limits("sm_100a") is ARCHES["sm_90a"] and arch_limits("sm_120") is ARCHES["sm_90a"]
    assert arch_limits("sm_86") is ARCHES["sm_86"] and arch_limits("sm_70") is ARCHES["sm_75"]
    assert arch_limits("hip:gfx942").name == "gfx942" and arch_limits("c") is ARCHES["c"]
