"""Every compiler run is bounded and every temporary directory is removed (issue #22, item 7).

A fake compiler that never finishes stands in for a wedged `cc` / `nvcc`: the build must
stop after `TILELANG_COMPILE_TIMEOUT` seconds with a TileLang error naming the tool and
the kernel — also when the tool's own children keep its output pipes open.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.toolrun import ToolTimeoutError
from tilelang.errors import TileLangError

ROOT = Path(__file__).resolve().parents[2]


@tilelang.jit(out_idx=[-1], target="c")
def shift(N, block=32):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1.5

    return main


def fake_tool(tmp_path: Path, name: str, version_hangs: bool = False, grandchild: bool = False) -> Path:
    """A compiler that answers `--version` (unless `version_hangs`) and otherwise never
    finishes; with `grandchild`, a child of it holds the output pipes open as well."""
    body = "sleep 30 & wait" if grandchild else "sleep 30"
    script = tmp_path / name
    script.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            if [ "$1" = "--version" ]; then
                {"sleep 30" if version_hangs else "echo fake-cc 1.0; exit 0"}
            fi
            {body}
            """
        )
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("version_hangs", [False, True], ids=["compile-hangs", "version-hangs"])
def test_a_hung_c_compiler_is_a_timeout_error(cache, monkeypatch, tmp_path, version_hangs):
    monkeypatch.setenv("CC", str(fake_tool(tmp_path, "hung-cc", version_hangs)))
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT", "1")
    t0 = time.monotonic()
    with pytest.raises(ToolTimeoutError) as err:
        shift(1000)
    assert time.monotonic() - t0 < 15
    text = str(err.value)
    assert "hung-cc" in text and "main" in text and "TILELANG_COMPILE_TIMEOUT" in text
    assert ("--version" in text) == version_hangs
    assert isinstance(err.value, TileLangError)


@pytest.mark.parametrize("grandchild", [False, True], ids=["nvcc", "nvcc-with-children"])
def test_a_hung_nvcc_is_a_timeout_error_naming_the_kernel(monkeypatch, tmp_path, grandchild):
    from tilelang.backend.cuda import compiler

    nvcc = fake_tool(tmp_path, "nvcc", grandchild=grandchild)
    monkeypatch.setattr(compiler, "nvcc_path", lambda: str(nvcc))
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT", "1")
    t0 = time.monotonic()
    with pytest.raises(ToolTimeoutError, match=r"nvcc did not finish within 1 s for kernel `my_kernel`"):
        compiler.compile_cuda("__global__ void my_kernel() {}", str(tmp_path), "my_kernel", "sm_80")
    assert time.monotonic() - t0 < 15, "the whole process group was not stopped"


def test_a_hung_native_launcher_build_falls_back(cache, monkeypatch, tmp_path):
    from tilelang.backend.cuda import native_launch

    monkeypatch.setenv("CC", str(fake_tool(tmp_path, "hung-cc")))
    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT", "1")
    for name, value in (("_tried", False), ("_module", None), ("_reason", None), ("_builder", None)):
        monkeypatch.setattr(native_launch, name, value)
    t0 = time.monotonic()
    assert native_launch.extension() is None
    assert time.monotonic() - t0 < 15
    assert "did not finish" in native_launch.unavailable_reason()


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_timeout_setting_is_an_error(cache, monkeypatch, value):
    from tilelang.backend.toolrun import compile_timeout

    monkeypatch.setenv("TILELANG_COMPILE_TIMEOUT", value)
    with pytest.raises(TileLangError, match="TILELANG_COMPILE_TIMEOUT"):
        compile_timeout()


SCRIPT = """
import sys; sys.path.insert(0, {root!r})
import torch, tilelang, tilelang.language as T

@tilelang.jit(out_idx=[-1], target="c")
def add_one(N):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 16)) as bx:
            for i in T.Parallel(16):
                B[bx * 16 + i] = A[bx * 16 + i] + 1.0
    return main

for n in (37, 100, 333):
    a = torch.randn(n)
    torch.testing.assert_close(add_one(n)(a), a + 1.0)
    tilelang.lower(add_one.get_tir(n + 1), target="c")
print("ok")
"""


@pytest.mark.parametrize("how", ["disabled", "unusable"])
def test_no_temporary_directories_are_left_behind(tmp_path, how):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)  # another user could write it: not used
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(root=str(ROOT)))
    env = dict(os.environ, TMPDIR=str(tmp), TILELANG_CACHE_DIR=str(cache), TILELANG_NATIVE_LAUNCH="0")
    if how == "disabled":
        env["TILELANG_DISABLE_CACHE"] = "1"
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("tilelang")) == []
    assert list(cache.iterdir()) == [], "an untrusted cache directory is never written"


def test_private_builds_outlive_the_compile_until_exit(monkeypatch, cache):
    """With the cache disabled the library stays loadable for the whole process."""
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    art = tilelang.lower(shift.get_tir(77), target="c")
    assert os.path.exists(art.lib_path)
    k = tilelang.compile(shift.get_tir(77), out_idx=[-1], target="c")
    a = torch.randn(77)
    torch.testing.assert_close(k(a), a + 1.5)
