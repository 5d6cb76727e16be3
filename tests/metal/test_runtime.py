"""The Metal runtime (tilelang/backend/metal/runtime.py) and Metal auto-detection against a FAKE
torch.mps: there is no Apple GPU here, so these tests check the call sequence torch would see —
the MSL handed to `torch.mps.compile_shader`, and each kernel call's arguments, `threads`
(total threads per dimension), `group_size` and `arg_casts` — plus the errors for arguments
that are not on `mps`, missing MPS, and detection order."""

from __future__ import annotations

import types

import pytest
import torch

from tilelang.backend import target as target_mod
from tilelang.backend.metal import runtime
from tilelang.backend.registry import BuiltKernel
from tilelang.errors import UnsupportedError

SOURCE = "kernel void add_kernel(device float* a [[buffer(0)]]) {}"


class MpsTensor(torch.Tensor):
    """A CPU tensor that reports device mps (what the runtime's checks read)."""

    @property
    def device(self):
        return torch.device("mps")


def mps(t: torch.Tensor) -> torch.Tensor:
    return torch.Tensor._make_subclass(MpsTensor, t)


class FakeKernel:
    def __init__(self, calls: list, casts_supported: bool, max_threads: int) -> None:
        self.calls = calls
        self.max_threads_per_threadgroup = max_threads
        self.casts_supported = casts_supported

    def __call__(self, *args, threads=None, group_size=None, **kw):
        if "arg_casts" in kw and not self.casts_supported:
            raise TypeError("unexpected keyword argument 'arg_casts'")
        self.calls.append({"args": args, "threads": threads, "group_size": group_size, **kw})


class FakeMps(types.SimpleNamespace):
    """Records compile_shader sources; the library exposes kernels as attributes."""

    def __init__(self, casts_supported: bool = True, max_threads: int = 1024, reject: bool = False) -> None:
        super().__init__(sources=[], calls=[])
        self.casts_supported, self.max_threads, self.reject = casts_supported, max_threads, reject

    def compile_shader(self, source: str):
        if self.reject:
            raise RuntimeError("program_source:3:5: error: use of undeclared identifier 'x'")
        self.sources.append(source)
        kernel = FakeKernel(self.calls, self.casts_supported, self.max_threads)
        if self.casts_supported:
            type(kernel).__call__.__doc__ = "__call__(self, *args, threads, group_size, arg_casts, error_buf_idx)"
        else:
            type(kernel).__call__.__doc__ = "__call__(self, *args, threads, group_size)"
        return types.SimpleNamespace(add_kernel=kernel)


@pytest.fixture
def fake_mps(monkeypatch):
    monkeypatch.setattr(runtime, "_LIBRARIES", {})  # libraries of earlier (fake) devices

    def install(**kw) -> FakeMps:
        fake = FakeMps(**kw)
        monkeypatch.setattr(torch, "mps", fake, raising=False)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
        return fake

    return install


def built(**meta) -> BuiltKernel:
    base = {"entry": "add_kernel", "threads": 128, "args": ["ptr", "ptr", "i32"], "n_params": 3, "grid": [["p", 2]]}
    base.update(meta)
    return BuiltKernel(SOURCE, None, base)


def test_compiles_once_and_launches_total_threads_with_group_size(fake_mps):
    fake = fake_mps()
    launch = runtime.make_launcher(built())
    assert fake.sources == [SOURCE]
    a, b = mps(torch.zeros(4)), mps(torch.zeros(4))
    launch([a, b, 5], [])
    launch([a, b, 3], [])
    assert fake.sources == [SOURCE]  # compiled when loaded, not per call
    runtime.make_launcher(built())
    assert fake.sources == [SOURCE]  # the same source again (another kernel of a joined library)
    first, second = fake.calls
    assert first["args"][:2] == (a, b) and first["args"][2] == 5 and type(first["args"][2]) is int
    # a grid of 5 threadgroups of 128 threads: dispatchThreads of 5*128 threads
    assert first["threads"] == (640, 1, 1) and first["group_size"] == (128, 1, 1)
    assert second["threads"] == (384, 1, 1)
    assert first["arg_casts"] == {2: "int32"}  # a Python int is bound as 8 bytes by default


def test_dynamic_dimensions_follow_the_parameters_and_wide_scalars_need_no_cast(fake_mps):
    fake = fake_mps()
    meta = {"args": ["ptr", "f32", "i64"], "n_params": 2, "grid": [7, ["d", 0]], "threads": [32, 4]}
    launch = runtime.make_launcher(built(**meta))
    x = mps(torch.zeros(2))
    launch([x, 2], [9])
    (call,) = fake.calls
    assert call["args"][1] == 2.0 and type(call["args"][1]) is float and call["args"][2] == 9
    assert call["threads"] == (7 * 32, 9 * 4, 1) and call["group_size"] == (32, 4, 1)
    assert "arg_casts" not in call


def test_empty_grid_launches_nothing(fake_mps):
    fake = fake_mps()
    launch = runtime.make_launcher(built())
    launch([mps(torch.zeros(1)), mps(torch.zeros(1)), 0], [])
    assert fake.calls == []


def test_narrow_scalars_become_buffers_when_torch_has_no_arg_casts(fake_mps, monkeypatch):
    fake = fake_mps(casts_supported=False)
    monkeypatch.setattr(runtime, "scalar_buffer", lambda v, dtype: torch.tensor([v], dtype=dtype))
    launch = runtime.make_launcher(built(args=["ptr", "ptr", "i32", "f16"], n_params=4))
    launch([mps(torch.zeros(1)), mps(torch.zeros(1)), 2, 0.5], [])
    (call,) = fake.calls
    assert "arg_casts" not in call
    assert call["args"][2].dtype == torch.int32 and int(call["args"][2]) == 2
    assert call["args"][3].dtype == torch.float16 and float(call["args"][3]) == 0.5


def test_tensor_not_on_mps_is_refused(fake_mps):
    fake_mps()
    launch = runtime.make_launcher(built())
    with pytest.raises(ValueError, match="argument 0 must be a tensor on mps, got cpu"):
        launch([torch.zeros(1), mps(torch.zeros(1)), 1], [])


def test_threadgroup_over_the_pipeline_limit_is_refused(fake_mps):
    fake_mps(max_threads=256)
    with pytest.raises(UnsupportedError, match="needs 512 threads per threadgroup; this GPU's pipeline allows 256"):
        runtime.make_launcher(built(threads=512))


def test_metal_compile_error_names_the_kernel(fake_mps):
    fake_mps(reject=True)
    with pytest.raises(runtime.MetalCompileError, match="(?s)rejected kernel `add_kernel`.*undeclared identifier"):
        runtime.make_launcher(built())


def test_unknown_scalar_kind_is_refused(fake_mps):
    fake_mps()
    with pytest.raises(UnsupportedError, match=r"no scalar parameter of kind\(s\) \['f64'\]"):
        runtime.make_launcher(built(args=["ptr", "ptr", "f64"]))


def test_no_mps_device_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(UnsupportedError, match="needs an Apple GPU"):
        runtime.make_launcher(built())


def test_torch_without_compile_shader_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch, "mps", types.SimpleNamespace(), raising=False)
    with pytest.raises(UnsupportedError, match=r"torch.mps.compile_shader \(torch >= 2.6\)"):
        runtime.make_launcher(built())


# --- auto-detection: CUDA -> HIP -> Metal -> CPU ---------------------------------------------


def test_auto_picks_metal_when_mps_is_available_and_no_gpu_of_the_others(monkeypatch, fake_mps):
    fake_mps()
    monkeypatch.setattr(target_mod, "_cuda_device_arch", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert target_mod.parse("auto").kind == "metal"


def test_auto_prefers_cuda_over_metal(monkeypatch, fake_mps):
    fake_mps()
    monkeypatch.setattr(target_mod, "_cuda_device_arch", lambda: "sm_90a")
    monkeypatch.setattr(target_mod, "nvcc_path", lambda: "/usr/local/cuda/bin/nvcc")
    assert target_mod.parse("auto").kind == "cuda"


def test_auto_falls_back_to_cpu_without_mps(monkeypatch):
    monkeypatch.setattr(target_mod, "_cuda_device_arch", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert target_mod.parse("auto").kind == "c"
    assert target_mod.metal_available() is False
