"""Every seed kernel and every example kernel is lowered for CUDA and compiled by
nvcc for sm_80 and for sm_90a (no GPU needed: `tilelang.lower` builds the cubin).

The builds run two at a time in a module-scoped fixture (nvcc is a subprocess,
so lowering one kernel overlaps compiling another); each test checks one
kernel's results."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from catalog import all_funcs

import tilelang
from tilelang.backend.target import nvcc_path

ARCHS = ("sm_80", "sm_90a")
# gemm kernels that stay on mma.sync on sm_90a (tf32 wgmma reads K-major operands only)
MMA_ON_SM90A = {"kz.gemm_tf32_trans"}
CASES = list(all_funcs())

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


@pytest.fixture(scope="module")
def builds():
    funcs = {}
    for name, make in all_funcs().items():  # trace sequentially; lower + build concurrently
        try:
            funcs[name] = make()
        except Exception as err:  # noqa: BLE001 - reported by the test of this kernel
            funcs[name] = err

    def one(job):
        name, arch = job
        try:
            if isinstance(funcs[name], Exception):
                raise funcs[name]
            art = tilelang.lower(funcs[name], target={"kind": "cuda", "arch": arch})
            return art, None
        except Exception as err:  # noqa: BLE001 - reported by the test of this kernel
            return None, err

    jobs = [(n, a) for n in CASES for a in ARCHS]
    with ThreadPoolExecutor(max_workers=int(os.environ.get("TL_TEST_NVCC_JOBS", "2"))) as ex:
        results = dict(zip(jobs, ex.map(one, jobs)))
    return results


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", CASES)
def test_builds(builds, name, arch):
    art, err = builds[(name, arch)]
    if err is not None:
        raise err
    assert art.lib_path and os.path.getsize(art.lib_path) > 0
    src = art.kernel_source
    assert '#include "tl/common.h"' in src
    assert "__launch_bounds__" in src and 'extern "C" __global__' in src
    assert "// " in src and ".py:" in src, "generated code carries `// file:line` comments"
    assert art.meta.get("spill_bytes", 0) == 0 or name.startswith(("seed.flashattn", "ex.flash")), art.meta
    if "tl::gemm_" in src or "tl::wgmma_gemm_" in src:  # every other gemm runs on wgmma on sm_90a
        wgmma = arch == "sm_90a" and name not in MMA_ON_SM90A
        assert ("tl::wgmma_gemm_" in src) == wgmma and ("tl::gemm_" in src) != wgmma, (name, arch)
