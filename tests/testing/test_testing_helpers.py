"""tilelang.testing helpers and tilelang.contrib.nvcc."""

import os
import random
import stat
import sys

import pytest
import torch

import tilelang.testing as tt
from tilelang.contrib import nvcc


def skip_condition(fn):
    """(condition, reason) of the skipif mark a decorator attached to `fn`."""
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "skipif"]
    assert len(marks) == 1
    return marks[0].args[0], marks[0].kwargs["reason"]


def fresh():
    """A new named function (pytest ignores marks applied to lambdas)."""

    def test_fn():
        pass

    return test_fn


def fake_cuda(monkeypatch, capability):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)


def test_requires_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    fn = tt.requires_cuda(fresh())
    assert skip_condition(fn) == (True, "requires a CUDA GPU")
    assert any(m.name == "cuda" for m in fn.pytestmark)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    assert skip_condition(tt.requires_cuda(fresh()))[0] is False


def test_requires_cuda_compute_version(monkeypatch):
    fake_cuda(monkeypatch, (9, 0))
    assert skip_condition(tt.requires_cuda_compute_version(8, 0)(fresh()))[0] is False
    assert skip_condition(tt.requires_cuda_compute_version_lt(9)(fresh()))[0] is True
    assert skip_condition(tt.requires_cuda_compute_version_eq(9, 0)(fresh()))[0] is False
    assert skip_condition(tt.requires_cuda_compute_version_gt(9, 0)(fresh()))[0] is True
    assert skip_condition(tt.requires_cuda_compute_version_le(9, 0)(fresh()))[0] is False
    cond, reason = skip_condition(tt.requires_cuda_compute_version_ge(10, 0)(fresh()))
    assert cond is True and "ge 10.0" in reason
    with pytest.raises(ValueError, match="mode"):
        tt.requires_cuda_compute_version(8, 0, mode="ne")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert skip_condition(tt.requires_cuda_compute_version(1, 0)(fresh()))[0] is True


def test_requires_package():
    assert skip_condition(tt.requires_package("torch")(fresh()))[0] is False
    cond, reason = skip_condition(tt.requires_package("surely_not_a_package_xyz")(fresh()))
    assert cond is True and "surely_not_a_package_xyz" in reason


def test_requires_package_on_classes():
    @tt.requires_package("surely_not_a_package_xyz")
    class TestX:
        pass

    assert skip_condition(TestX)[0] is True


def test_set_random_seed_is_reproducible():
    np = pytest.importorskip("numpy")
    tt.set_random_seed(123)
    first = (random.random(), np.random.rand(), torch.rand(3))
    tt.set_random_seed(123)
    second = (random.random(), np.random.rand(), torch.rand(3))
    assert first[0] == second[0] and first[1] == second[1] and torch.equal(first[2], second[2])
    tt.set_random_seed(124)
    assert not torch.equal(torch.rand(3), first[2])


def test_torch_assert_close():
    a = torch.linspace(-1, 1, 1000)
    tt.torch_assert_close(a, a + 1e-4)
    b = a.clone()
    b[10] += 1.0
    tt.torch_assert_close(a, b, max_mismatched_ratio=0.002)  # 1/1000 allowed
    with pytest.raises(AssertionError) as err:
        tt.torch_assert_close(a, b, max_mismatched_ratio=0.0005, base_name="ours", ref_name="torch")
    msg = str(err.value)
    assert msg.startswith("Too many mismatched elements: 1 > 0 (0.05% allowed, but get 0.10%).") and "(10,)" in msg
    assert "ours=" in msg and "torch=" in msg
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        tt.torch_assert_close(a, a.double())  # dtypes are checked by default (public API)
    tt.torch_assert_close(a.half(), a.double(), atol=1e-3, check_dtype=False)
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        tt.torch_assert_close(a, a[:10])


def test_main_runs_pytest_on_the_calling_file(monkeypatch):
    seen = {}

    def fake_main(args):
        seen["args"] = args
        return 3

    monkeypatch.setattr(pytest, "main", fake_main)
    monkeypatch.setattr(sys, "argv", ["prog", "-k", "x"])
    with pytest.raises(SystemExit) as exc:
        tt.main()
    assert exc.value.code == 3
    assert seen["args"] == [os.path.abspath(__file__), "-k", "x"]


def regression_demo():
    tt.process_func(lambda scale: 1.5 * scale, 2)


def test_regression_runs_regression_functions(capsys):
    records = tt.regression()
    assert [v for _, v in records] == [3.0]
    assert "3.0" in capsys.readouterr().out


def test_nvcc_compute_versions(monkeypatch):
    assert nvcc.get_target_compute_version("sm_90a") == "9.0"
    assert nvcc.get_target_compute_version("sm_86") == "8.6"
    assert nvcc.get_target_compute_version("sm_120") == "12.0"
    assert nvcc.get_target_compute_version({"kind": "cuda", "arch": "sm_80"}) == "8.0"
    assert nvcc.get_target_compute_version("cuda -arch=sm_75") == "7.5"
    assert nvcc.parse_compute_version("10.3") == (10, 3)
    with pytest.raises(ValueError):
        nvcc.parse_compute_version("sm_80")
    assert nvcc.have_bf16("8.0") and not nvcc.have_fp8("8.6") and nvcc.have_tma("9.0")
    fake_cuda(monkeypatch, (8, 9))
    assert nvcc.get_target_compute_version() == "8.9"
    assert nvcc.get_target_compute_version("cuda") == "8.9"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="sm_80"):
        nvcc.get_target_compute_version()


def make_fake_toolkit(root, release="12.4"):
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("")
    exe = root / "bin" / "nvcc"
    exe.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return root


def test_find_cuda_path_and_nvcc_version(tmp_path, monkeypatch):
    root = make_fake_toolkit(tmp_path / "cuda-fake")
    monkeypatch.setenv("CUDA_HOME", str(root))
    monkeypatch.setenv("PATH", f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    nvcc.find_cuda_path.cache_clear()
    nvcc.get_nvcc_version.cache_clear()
    try:
        assert nvcc.find_cuda_path() == str(root)
        assert nvcc.get_nvcc_version() == (12, 4)
    finally:
        nvcc.find_cuda_path.cache_clear()
        nvcc.get_nvcc_version.cache_clear()
