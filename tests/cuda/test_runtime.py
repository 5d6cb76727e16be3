"""The launch path (cubin → driver API) with a fake libcuda: no GPU needed.

A real cubin is built with nvcc; the driver calls are recorded by `FakeDriver`,
so the tests check what would be launched: kernel name, dynamic shared
memory attribute, grid evaluated from the dynamic dimensions, block size, and
the packed argument values. Every test runs through both launchers: the C one
(`native_launch`, calling the fake's cuLaunchKernel through a C function pointer)
and the ctypes one."""

from __future__ import annotations

import ctypes

import pytest
import torch

import tilelang
from tilelang.backend.cuda import runtime
from tilelang.backend.cuda.backend import make_backend
from tilelang.backend.target import nvcc_path, parse

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


LAUNCH_PROTO = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    *[ctypes.c_uint] * 7,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_void_p,
)


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

    n_slots = 0  # how many parameter slots a launch snapshots (the tests set it)
    slot_bytes: dict = {}  # slot index -> bytes to snapshot, where not 8
    result = 0  # what the fake cuLaunchKernel returns

    def _launch(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        # the parameter buffer only lives during the call (the C launcher's is on its stack)
        snapshot = [ctypes.string_at(params[i], self.slot_bytes.get(i, 8)) for i in range(self.n_slots)]
        self.launches.append(((gx, gy, gz), (bx, by, bz), smem, snapshot))
        return self.result

    @property
    def cuLaunchKernel(self):  # noqa: N802 - a C function pointer, as libcuda's is
        if not hasattr(self, "_launch_ptr"):
            self._launch_ptr = LAUNCH_PROTO(self._launch)
        return self._launch_ptr

    def cuGetErrorString(self, res, out):  # noqa: N802
        return 0


class FakeTensor:
    def __init__(self, ptr: int, shape: tuple) -> None:
        self.ptr = ptr
        self.shape = shape

    def data_ptr(self) -> int:
        return self.ptr


@pytest.fixture(params=["native", "ctypes"])
def fake(monkeypatch, request):
    from tilelang.backend.cuda import native_launch

    if request.param == "ctypes":
        monkeypatch.setattr(native_launch, "extension", lambda: None)
    elif native_launch.extension() is None:
        pytest.skip(f"native launcher unavailable: {native_launch.unavailable_reason()}")
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


def _slot(snapshot, i: int, ctype) -> object:
    return ctype.from_buffer_copy(snapshot[i][: ctypes.sizeof(ctype)]).value


@needs_nvcc
def test_launch_packs_arguments_and_evaluates_the_grid(fake, tmp_path):
    from seeds import seed_kernels as S

    func = S.matmul_dynamic_mnk.get_tir(
        block_M=64, block_N=32, block_K=32, trans_A=False, trans_B=False, in_dtype="float16", out_dtype="float16",
        accum_dtype="float32", num_stages=3, threads=128,
    )  # fmt: skip
    backend = make_backend()
    built = backend.build(func, parse({"kind": "cuda", "arch": "sm_80"}), {}, str(tmp_path))
    assert built.meta["args"] == ["ptr", "ptr", "ptr", "i64", "i64", "i64"]  # dynamic dims travel as int64
    launch = backend.load(built)
    assert ("function", b"matmul_dynamic_mnk_kernel") in fake.calls
    assert ("set_current",) in fake.calls
    fake.n_slots = 6
    a, b, c = FakeTensor(0x1000, (200, 100)), FakeTensor(0x2000, (100, 70)), FakeTensor(0x3000, (200, 70))
    launch([a, b, c], [200, 100, 70])  # dynamic dims m, k, n in first-appearance order
    ((grid, block, smem, params),) = fake.launches
    assert grid == (3, 4, 1)  # ceildiv(70, 32), ceildiv(200, 64)
    assert block == (128, 1, 1)
    assert smem == built.meta["smem"] > 0
    assert [_slot(params, i, ctypes.c_void_p) for i in range(3)] == [0x1000, 0x2000, 0x3000]
    assert [_slot(params, 3 + i, ctypes.c_int64) for i in range(3)] == [200, 100, 70]


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
    fake.n_slots = 3
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


def _module(drv: FakeDriver) -> runtime.CudaModule:
    """A CudaModule over the fake driver without loading a cubin."""
    mod = object.__new__(runtime.CudaModule)
    mod.lib, mod.func, mod.smem, mod.device, mod.kernel_name = drv, ctypes.c_void_p(77), 1024, 0, "k"
    return mod


class FakeEncoder:
    """Stands in for tensor_map.TensorMapEncoder: a 128-byte map derived from the tensor's address."""

    def __init__(self, param: int) -> None:
        self.param = param
        self.maps: dict = {}

    def address(self, tensor) -> int:
        raw = self.maps.setdefault(tensor.data_ptr(), ctypes.create_string_buffer(bytes(range(128))[::-1] + b"\0"))
        ctypes.c_uint64.from_buffer(raw).value = tensor.data_ptr()
        return ctypes.addressof(raw)


ALL_KINDS = ["ptr", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool", "f32", "f64", "f16", "bf16"]
ALL_VALUES = [FakeTensor(0xABC0, (4,)), -3, 250, -300, 65000, -70000, 4000000000, -(2**40), 2**63 + 5, True, 1.25,
              -2.5e-300, 0.333, -1.5e10]  # fmt: skip


def _launch_all_kinds(drv: FakeDriver, native: bool, monkeypatch) -> list:
    mod = _module(drv)
    monkeypatch.setattr(runtime, "_tensor_map_encoders", lambda lib, specs: [FakeEncoder(param=0)] if specs else [])
    kinds = ALL_KINDS + ["i32"]  # the last slot is a dynamic dimension
    drv.n_slots = len(kinds) + 1  # + the tensor map
    drv.slot_bytes = {len(kinds): 128}
    if native:
        run = mod.native_launcher(kinds, len(ALL_KINDS), ["map"], (96, 1, 1), None)
        run(ALL_VALUES, [123], 5, 6, 7)
    else:
        run = mod.launcher(kinds, len(ALL_KINDS), ["map"])
        run(ALL_VALUES, [123], (5, 6, 7), (96, 1, 1))
    ((grid, block, smem, snapshot),) = drv.launches
    assert (grid, block, smem) == ((5, 6, 7), (96, 1, 1), 1024)
    return snapshot


def test_native_and_ctypes_launchers_pack_every_kind_identically(monkeypatch):
    """Each parameter kind, a dynamic dimension and a TMA map: the C launcher's parameter
    buffer holds what the ctypes launcher's does, slot by slot."""
    from tilelang.backend.cuda import native_launch

    if native_launch.extension() is None:
        pytest.skip(f"native launcher unavailable: {native_launch.unavailable_reason()}")
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: type("S", (), {"cuda_stream": 0})())
    by_ctypes = _launch_all_kinds(FakeDriver(), False, monkeypatch)
    by_native = _launch_all_kinds(FakeDriver(), True, monkeypatch)
    types = [ctypes.c_uint64, ctypes.c_int8, ctypes.c_uint8, ctypes.c_int16, ctypes.c_uint16, ctypes.c_int32,
             ctypes.c_uint32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_bool, ctypes.c_float, ctypes.c_double,
             ctypes.c_uint16, ctypes.c_uint16, ctypes.c_int32]  # fmt: skip
    for snapshot in (by_ctypes, by_native):
        got = [_slot(snapshot, i, t) for i, t in enumerate(types)]
        assert got[:10] == [0xABC0, -3, 250, -300, 65000, -70000, 4000000000, -(2**40), 2**63 + 5, True]
        assert got[10] == 1.25 and got[11] == -2.5e-300 and got[14] == 123
        assert got[12] == runtime._half_bits(0.333, "float16")
        assert got[13] == runtime._half_bits(-1.5e10, "bfloat16")
        tmap = snapshot[15]
        assert (
            len(tmap) == 128
            and int.from_bytes(tmap[:8], "little") == 0xABC0
            and tmap[8:] == bytes(range(128))[::-1][8:]
        )
    assert [b[: ctypes.sizeof(t)] for b, t in zip(by_native, types)] == [
        b[: ctypes.sizeof(t)] for b, t in zip(by_ctypes, types)
    ]


def test_launch_errors_are_explained_and_a_missing_context_is_bound(fake):
    mod = _module(fake)
    fake.n_slots = 1
    fake.result = runtime.CUDA_ERROR_INVALID_CONTEXT
    run = mod.native_launcher(["ptr"], 1, [], (32, 1, 1), (2, 1, 1)) or (
        lambda v, d, r=mod.launcher(["ptr"], 1, []): r(v, d, (2, 1, 1), (32, 1, 1))
    )
    with pytest.raises(RuntimeError, match=r"CUDA driver error 201 in cuLaunchKernel\(k\)"):
        run([FakeTensor(8, (1,))], [])
    assert ("set_current",) in fake.calls, "an invalid context binds the primary context before retrying"
    assert len(fake.launches) == 2
    fake.result = 0
    run([FakeTensor(8, (1,))], [])
    assert len(fake.launches) == 3


@pytest.mark.parametrize(
    "env, reason",
    [({"TILELANG_NATIVE_LAUNCH": "0"}, "turned off"), ({"CC": "no-such-compiler-here"}, "not found")],
)
def test_native_launcher_unavailable_means_the_ctypes_launcher(monkeypatch, tmp_path, env, reason):
    from tilelang.backend.cuda import native_launch

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    for name, value in (("_tried", False), ("_module", None), ("_reason", None), ("_builder", None)):
        monkeypatch.setattr(native_launch, name, value)
    native_launch.prebuild()
    assert native_launch.extension() is None
    assert reason in native_launch.unavailable_reason()
    assert _module(FakeDriver()).native_launcher(["ptr"], 1, [], (32, 1, 1), (1, 1, 1)) is None


def test_native_launcher_rejects_bad_values_without_launching(monkeypatch):
    from tilelang.backend.cuda import native_launch

    if native_launch.extension() is None:
        pytest.skip(f"native launcher unavailable: {native_launch.unavailable_reason()}")
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: type("S", (), {"cuda_stream": 0})())
    drv = FakeDriver()
    drv.n_slots = 2
    run = _module(drv).native_launcher(["ptr", "i32"], 1, [], (32, 1, 1), None)
    tensor = FakeTensor(8, (1,))
    with pytest.raises(TypeError, match="dynamic dimensions given"):
        run([tensor], [], 1, 1, 1)
    with pytest.raises(TypeError):
        run([tensor], ["not a number"], 1, 1, 1)
    with pytest.raises(AttributeError):
        run([object()], [3], 1, 1, 1)  # no data_ptr
    with pytest.raises(ValueError, match="more than a launch allows"):
        run([tensor], [3], 2**33, 1, 1)
    run([tensor], [3], 0, 1, 1)  # an empty grid: nothing to launch
    assert drv.launches == []
    run([tensor], [3], 4, 1, 1)
    assert len(drv.launches) == 1 and _slot(drv.launches[0][3], 1, ctypes.c_int32) == 3
