"""The launch path (cubin → driver API) with a fake libcuda: no GPU needed.

A real cubin is built with nvcc; the driver calls are recorded by `FakeDriver`,
so the tests check what would be launched: kernel name, dynamic shared
memory attribute, grid evaluated from the dynamic dimensions, block size, and
the packed argument values."""

from __future__ import annotations

import ctypes

import pytest
import torch

import tilelang
from tilelang.backend.cuda import runtime
from tilelang.backend.cuda.backend import make_backend
from tilelang.backend.target import nvcc_path, parse

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


class FakeDriver:
    def __init__(self) -> None:
        self.calls: list = []
        self.launches: list = []
        self.has_ctx = False

    def cuCtxGetCurrent(self, out):  # noqa: N802 - driver API names
        ctypes.cast(out, ctypes.POINTER(ctypes.c_void_p))[0] = 1234 if self.has_ctx else None
        return 0

    def cuDeviceGet(self, out, ordinal):  # noqa: N802
        self.calls.append(("cuDeviceGet", ordinal))
        return 0

    def cuDevicePrimaryCtxRetain(self, out, dev):  # noqa: N802
        ctypes.cast(out, ctypes.POINTER(ctypes.c_void_p))[0] = 1234
        self.calls.append(("retain",))
        return 0

    def cuCtxSetCurrent(self, ctx):  # noqa: N802
        self.has_ctx = True
        self.calls.append(("set_current",))
        return 0

    def cuModuleLoadData(self, out, data):  # noqa: N802
        self.calls.append(("load", len(data.value or b"")))
        ctypes.cast(out, ctypes.POINTER(ctypes.c_void_p))[0] = 99
        return 0

    def cuModuleGetFunction(self, out, module, name):  # noqa: N802
        self.calls.append(("function", name))
        ctypes.cast(out, ctypes.POINTER(ctypes.c_void_p))[0] = 77
        return 0

    def cuFuncSetAttribute(self, func, attr, value):  # noqa: N802
        self.calls.append(("attr", attr, value.value))
        return 0

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):  # noqa: N802
        self.launches.append(((gx, gy, gz), (bx, by, bz), smem, params))
        return 0

    def cuGetErrorString(self, res, out):  # noqa: N802
        return 0


class FakeTensor:
    def __init__(self, ptr: int, shape: tuple) -> None:
        self.ptr = ptr
        self.shape = shape

    def data_ptr(self) -> int:
        return self.ptr


@pytest.fixture
def fake(monkeypatch):
    drv = FakeDriver()
    monkeypatch.setattr(runtime, "_driver", lambda: drv)
    monkeypatch.setattr(torch.cuda, "init", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)

    class _Stream:
        cuda_stream = 0

    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: _Stream())
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: real_empty(*a))
    return drv


def _slot(params, i: int, ctype) -> object:
    return ctypes.cast(params[i], ctypes.POINTER(ctype))[0]


@needs_nvcc
def test_launch_packs_arguments_and_evaluates_the_grid(fake, tmp_path):
    from seeds import seed_kernels as S

    func = S.matmul_dynamic_mnk.get_tir(
        block_M=64, block_N=32, block_K=32, trans_A=False, trans_B=False, in_dtype="float16", out_dtype="float16",
        accum_dtype="float32", num_stages=3, threads=128,
    )  # fmt: skip
    backend = make_backend()
    built = backend.build(func, parse({"kind": "cuda", "arch": "sm_80"}), {}, str(tmp_path))
    assert built.meta["args"] == ["ptr", "ptr", "ptr", "i32", "i32", "i32"]
    launch = backend.load(built)
    assert ("function", b"matmul_dynamic_mnk_kernel") in fake.calls
    assert ("set_current",) in fake.calls
    a, b, c = FakeTensor(0x1000, (200, 100)), FakeTensor(0x2000, (100, 70)), FakeTensor(0x3000, (200, 70))
    launch([a, b, c], [200, 100, 70])  # dynamic dims m, k, n in first-appearance order
    ((grid, block, smem, params),) = fake.launches
    assert grid == (3, 4, 1)  # ceildiv(70, 32), ceildiv(200, 64)
    assert block == (128, 1, 1)
    assert smem == built.meta["smem"] > 0
    assert [_slot(params, i, ctypes.c_void_p) for i in range(3)] == [0x1000, 0x2000, 0x3000]
    assert [_slot(params, 3 + i, ctypes.c_int32) for i in range(3)] == [200, 100, 70]


@needs_nvcc
def test_large_dynamic_shared_memory_sets_the_attribute(fake, tmp_path):
    import kernels as KZ

    func = KZ.gemm.get_tir(512, 512, 512, 128, 128, 64, "float16", "float32", "float32", stages=4)
    backend = make_backend()
    no_tma = {"pass_configs": {"tl.disable_tma_lower": True}}  # the fake driver encodes no TMA tensor maps
    built = backend.build(func, parse({"kind": "cuda", "arch": "sm_90a"}), no_tma, str(tmp_path))
    assert built.meta["smem"] > 48 * 1024
    launch = backend.load(built)
    assert ("attr", runtime.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, built.meta["smem"]) in fake.calls
    launch([FakeTensor(1, (512, 512)), FakeTensor(2, (512, 512)), FakeTensor(3, (512, 512))], [])
    assert fake.launches[0][0] == (4, 4, 1)


@needs_nvcc
def test_scalar_parameters_and_empty_grids(fake, tmp_path):
    import kernels as KZ

    scale = KZ.scale_by_scalar
    backend = make_backend()
    built = backend.build(scale, parse({"kind": "cuda", "arch": "sm_80"}), {}, str(tmp_path))
    assert built.meta["args"] == ["ptr", "f32", "i32"]
    launch = backend.load(built)
    launch([FakeTensor(5, (1024,)), 2.5, 300], [])
    grid, _, _, params = fake.launches[0]
    assert grid == (3, 1, 1)
    assert _slot(params, 1, ctypes.c_float) == 2.5 and _slot(params, 2, ctypes.c_int32) == 300
    launch([FakeTensor(5, (1024,)), 2.5, 0], [])
    assert len(fake.launches) == 1, "a grid with no blocks is not launched"


def test_lower_without_a_gpu_returns_source():
    from seeds import seed_kernels as S

    art = tilelang.lower(
        S.vector_add.get_tir(M=4096), target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=False
    )
    assert "vector_add_kernel" in art.kernel_source and art.lib_path is None
