"""Helpers the conformance tests share (`from conformance.util import cuda_build, CUDA_ARCHS`)."""

from __future__ import annotations

import pytest

CUDA_ARCHS = ("sm_80", "sm_90a")


def cuda_build(func, arch: str):
    """Lower `func` (a PrimFunc) for CUDA `arch` and build it with nvcc; skip without nvcc."""
    import tilelang
    from tilelang.backend.target import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch})
