"""nvcc driver: CUDA source → cubin, with ptxas statistics.

Requires: nvcc (found through CUDA_HOME/CUDA_PATH, PATH or /usr/local/cuda).
Guarantees: `-gencode arch=compute_XX,code=sm_XX` for the requested arch
(`sm_90a` keeps its `a`), our header library on the include path, fast math
only when `tl.enable_fast_math` is set, compile errors reported with the kernel
name and the offending generated line, and the compile timeout
(`TILELANG_COMPILE_TIMEOUT`, `backend.toolrun`): a hung nvcc is a ToolTimeoutError.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ...errors import TileLangError
from ..target import nvcc_path
from ..toolrun import run_tool

INCLUDE_DIR = Path(__file__).parent / "include"


class CompileError(TileLangError):
    kind = "nvcc error"


def gencode(arch: str) -> list[str]:
    num = arch.removeprefix("sm_")
    return ["-gencode", f"arch=compute_{num},code=sm_{num}"]


def nvcc_command(src: str, out: str, arch: str, fast_math: bool = False, extra: list[str] | None = None) -> list[str]:
    nvcc = nvcc_path()
    if nvcc is None:
        raise TileLangError("nvcc was not found", None, "install the CUDA toolkit or set CUDA_HOME")
    cmd = [
        nvcc,
        "-cubin",
        "-O3",
        "-std=c++17",
        "-lineinfo",
        "-Xptxas=-v",
        *gencode(arch),
        f"-I{INCLUDE_DIR}",
        "-o",
        out,
        src,
    ]
    if fast_math:
        cmd.insert(3, "--use_fast_math")
    cmd[3:3] = list(extra or [])
    return cmd


_PTXAS = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_SMEM = re.compile(r"(\d+) bytes smem")


def compile_cuda(
    source: str,
    workdir: str,
    name: str,
    arch: str,
    fast_math: bool = False,
    extra: list[str] | None = None,
    verbose: bool = False,
    per_entry: bool = False,
) -> tuple[str, dict]:
    """Compile `source` to `<workdir>/<name>.cubin`; returns (path, ptxas stats). `verbose`
    (tl.enable_ptxas_verbose_output) prints nvcc's and ptxas's output to stderr. `per_entry`:
    the stats are `{entry name: stats}`, one per kernel of a source with several."""
    src = os.path.join(workdir, f"{name}.cu")
    out = os.path.join(workdir, f"{name}.cubin")
    Path(src).write_text(source)
    proc = run_tool(nvcc_command(src, out, arch, fast_math, extra), "nvcc", name)
    if proc.returncode != 0:
        raise CompileError(
            _explain(proc.stderr, source, name), None, "this is a code-generation bug: please report it with the kernel"
        )
    log = proc.stderr + proc.stdout
    if verbose:
        print(f"[tilelang] nvcc/ptxas output for `{name}`:\n{log}", file=sys.stderr)
    if per_entry:
        return out, {m.group(1): parse_ptxas(m.group(2)) for m in _ENTRY.finditer(log)}
    return out, parse_ptxas(log)


# ptxas -v reports each entry function's figures after the line that names it
_ENTRY = re.compile(r"Compiling entry function '(\w+)'(.*?)(?=Compiling entry function|\Z)", re.S)


def parse_ptxas(log: str) -> dict:
    """ptxas's `-v` figures for the (one) kernel in `log`: registers, spill stores / loads (bytes)
    and their sum, static shared memory."""
    stats: dict = {}
    if m := _PTXAS.search(log):
        stats["registers"] = int(m.group(1))
    if m := _SPILL.search(log):
        stats["spill_stores"], stats["spill_loads"] = int(m.group(1)), int(m.group(2))
        stats["spill_bytes"] = int(m.group(1)) + int(m.group(2))
    if m := _SMEM.search(log):
        stats["static_smem_bytes"] = int(m.group(1))
    return stats


def _explain(stderr: str, source: str, name: str) -> str:
    lines = source.splitlines()
    shown = []
    for m in re.finditer(r"\.cu\((\d+)\): (error.*)", stderr):
        n = int(m.group(1))
        code = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        shown.append(f"  line {n}: {m.group(2)}\n    {code}")
    detail = "\n".join(shown[:5]) or stderr.strip()[-2000:]
    return f"nvcc failed to compile kernel `{name}`:\n{detail}"
