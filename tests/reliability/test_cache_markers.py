"""A kernel-cache hit gives the `// file:line` markers of the kernel that asked, not of the
kernel that first built the same IR (cache/markers.py): the tile-op source action and the
lowering trace read them."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import tilelang
from tilelang.backend.target import nvcc_path
from tilelang.cache.markers import reanchor

KERNEL = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1], target=TARGET)
def scale_add(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 2.0 + B[bx * block + i]

    return main
"""
MARKER = re.compile(r"^\s*// ([^\s:/]+):(\d+)$", re.M)


def _module(path: Path, target: str):
    text = path.read_text()
    path.write_text(text.replace("TARGET", repr(target)))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def _two_files(tmp_path: Path, target: str):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = tmp_path / "a" / "first_kernels.py"
    second = tmp_path / "b" / "second_kernels.py"
    first.write_text(KERNEL)
    second.write_text("# an unrelated header\n" * 7 + KERNEL)  # the same kernel, 7 lines lower
    return _module(first, target), _module(second, target), second


def _source(mod, target: str) -> str:
    """The kernel's generated source as a user reads it (`get_kernel_source`); CUDA: built into
    the cache by `tilelang.lower`, so no GPU is needed."""
    if target == "c":
        return mod.scale_add.compile(N=1000).get_kernel_source()
    return tilelang.lower(mod.scale_add.get_tir(N=1000), target="cuda -arch=sm_80").kernel_source


@pytest.mark.parametrize(
    "target",
    ["c", pytest.param("cuda", marks=pytest.mark.skipif(nvcc_path() is None, reason="needs nvcc"))],
)
def test_a_hit_has_the_markers_of_the_file_that_asked(tmp_path, cache, builds, monkeypatch, target):
    one, two, second = _two_files(tmp_path, "c" if target == "c" else "cuda -arch=sm_80")
    src_one = _source(one, target)
    assert builds.n == 1
    src_two = _source(two, target)
    assert builds.n == 1  # the same IR: served from the cache, not rebuilt
    assert {f for f, _ in MARKER.findall(src_one)} == {"first_kernels.py"}
    lines = second.read_text().splitlines()
    for name, line in MARKER.findall(src_two):
        assert name == "second_kernels.py"
        assert lines[int(line) - 1].strip()  # a line of the kernel, not a blank or header one
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    fresh = _source(two, target)
    assert src_two == fresh  # exactly what a build of the second file generates


def test_markers_that_do_not_pair_up_are_not_rewritten():
    source = "// k.py:3\nx = 1;\n// k.py:4\ny = 2;"
    assert reanchor(source, (("k.py", 3), ("k.py", 4)), (("j.py", 9), ("j.py", 10)), "/w/j.py") == (
        "// j.py:9\nx = 1;\n// j.py:10\ny = 2;"
    )
    # one builder line, two requester lines (the kernel was re-wrapped): no faithful rewrite
    assert reanchor(source, (("k.py", 3), ("k.py", 3)), (("j.py", 9), ("j.py", 10)), "/w/j.py") is None
    # a marker the anchors do not hold
    assert reanchor(source, (("k.py", 3),), (("j.py", 9),), "/w/j.py") is None
