"""The disk cache: hits skip compilation, corrupt entries are rebuilt, concurrent writers never tear."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

import tilelang
import tilelang.language as T
from tilelang.cache import cache_dir


@tilelang.jit
def scale(A, factor: float = 3.0):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, 32)) as bx:
        for i in T.Parallel(32):
            B[bx * 32 + i] = A[bx * 32 + i] * factor
    return B


def entries() -> list[Path]:
    return sorted((cache_dir() / "kernels").glob("*/*/meta.json"))


def test_hit_and_corruption_recovery():
    k1 = scale.compile(M=64, factor=5.0)
    metas = [
        m
        for m in entries()
        if (m.parent / "kernel.c").exists() and (m.parent / "kernel.c").read_text() == k1.get_kernel_source()
    ]
    assert len(metas) == 1
    lib = next(p for p in metas[0].parent.iterdir() if p.suffix == ".so")
    lib.unlink()  # another process left a truncated library (the loaded one stays mapped)
    lib.write_bytes(b"truncated")
    scale._kernels.clear()
    k2 = scale.compile(M=64, factor=5.0)  # detected by checksum, rebuilt
    a = torch.randn(64)
    torch.testing.assert_close(k2(a), a * 5.0)
    assert lib.read_bytes() != b"truncated"


def test_disable_cache(monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    before = len(entries())
    k = scale.compile(M=96, factor=7.0)
    a = torch.randn(96)
    torch.testing.assert_close(k(a), a * 7.0)
    assert len(entries()) == before


def test_two_processes_compile_the_same_kernel(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        import torch, tilelang, tilelang.language as T

        @tilelang.jit
        def twice(A):
            M = T.const("M")
            A: T.Tensor((M,), T.float32)
            B = T.empty((M,), T.float32)
            with T.Kernel(T.ceildiv(M, 16)) as bx:
                for i in T.Parallel(16):
                    B[bx * 16 + i] = A[bx * 16 + i] * 2
            return B

        a = torch.arange(48, dtype=torch.float32)
        assert torch.equal(twice(a), a * 2)
        print("ok")
        """
    )
    path = tmp_path / "race.py"
    path.write_text(script)
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path / "cache"))
    procs = [
        subprocess.Popen(
            [sys.executable, str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    leftovers = [p for p in (tmp_path / "cache").rglob("*.tmp")]
    assert not leftovers
