"""clang (HIP) driver: HIP source -> AMDGPU code object (ELF) for one processor.

Requires: clang++-15 (or `clang++` / `hipcc` of a ROCm install; `TILELANG_HIP_CLANG` picks the
compiler) and ROCm's device libraries. Debian's ROCm 5.2 layout is the default
(`--rocm-path=/usr`, bitcode in /usr/lib/x86_64-linux-gnu/amdgcn/bitcode); `ROCM_PATH` /
`TILELANG_ROCM_DEVICE_LIB_PATH` override them.

Guarantees: `-x hip --offload-arch=<arch> -O3 --offload-device-only --no-gpu-bundle-output`
(a raw ELF code object, no host side), `--hip-version=5.2` where the compiler is Debian's
clang 15 (it misreads Debian's HIP version file), our header library on the include path;
gfx942 compiles as gfx940 (clang 15 has no gfx942; `target.hip_offload_arch`) and says so on
stderr once; compile errors name the kernel and the generated lines; the compile timeout of
`backend.toolrun` applies."""

from __future__ import annotations

import os
import re
import shutil
import sys
import warnings
from pathlib import Path

from ...errors import TileLangError
from ..toolrun import run_tool

INCLUDE_DIR = Path(__file__).parent / "include"
DEBIAN_DEVICE_LIBS = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
_warned: set = set()


class HipCompileError(TileLangError):
    kind = "hip compile error"


def hip_compiler() -> str | None:
    """The clang that compiles HIP device code, or None."""
    env = os.environ.get("TILELANG_HIP_CLANG")
    if env:
        return env
    for name in ("clang++-15", "clang++-16", "clang++-17"):
        found = shutil.which(name)
        if found and os.path.isdir(DEBIAN_DEVICE_LIBS):
            return found
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    clang = os.path.join(rocm, "llvm", "bin", "clang++")
    return clang if os.path.exists(clang) else None


def clang_command(src: str, out: str, arch: str, assembly: bool = False, extra: list | None = None) -> list[str]:
    clang = hip_compiler()
    if clang is None:
        raise TileLangError("no HIP compiler (clang++-15 with ROCm device libraries) was found", None,
                            "apt-get install --no-install-recommends hipcc, or set TILELANG_HIP_CLANG")  # fmt: skip
    cmd = [clang, "-x", "hip", "-std=c++17", "-O3", f"--offload-arch={arch}", "--offload-device-only",
           "--no-gpu-bundle-output", f"-I{INCLUDE_DIR}", "-Wno-unused-command-line-argument"]  # fmt: skip
    libs = os.environ.get("TILELANG_ROCM_DEVICE_LIB_PATH") or (
        DEBIAN_DEVICE_LIBS if os.path.isdir(DEBIAN_DEVICE_LIBS) else ""
    )
    if libs:  # Debian: clang does not look in the multiarch bitcode directory by itself
        cmd += ["--hip-version=5.2", "--rocm-path=/usr", f"--rocm-device-lib-path={libs}"]
    cmd += list(extra or [])
    cmd += ["-S" if assembly else "-c", src, "-o", out]
    return cmd


def offload_arch_for(arch: str) -> str:
    from ..target import HIP_OFFLOAD_PROXY

    proxy = HIP_OFFLOAD_PROXY.get(arch, arch)
    if proxy != arch and arch not in _warned:
        _warned.add(arch)
        warnings.warn(f"tilelang: compiling the {arch} target for {proxy} (this clang has no {arch}; "
                      f"the code object loads on a {proxy} only)", stacklevel=3)  # fmt: skip
    return proxy


def compile_hip(source: str, workdir: str, name: str, arch: str, extra: list | None = None,
                assembly: bool = False) -> str:  # fmt: skip
    """Compile `source` to `<workdir>/<name>.<arch>.co` (or `.s` with `assembly`); returns the path."""
    os.makedirs(workdir, exist_ok=True)
    src = os.path.join(workdir, f"{name}.hip")
    out = os.path.join(workdir, f"{name}.{arch}.{'s' if assembly else 'co'}")
    Path(src).write_text(source)
    proc = run_tool(clang_command(src, out, arch, assembly, extra), "clang (HIP)", name)
    if proc.returncode != 0:
        raise HipCompileError(_explain(proc.stderr, source, name), None,
                              "this is a code-generation bug: please report it with the kernel")  # fmt: skip
    if os.environ.get("TILELANG_HIP_VERBOSE"):
        print(proc.stderr, file=sys.stderr)
    return out


def _explain(stderr: str, source: str, name: str) -> str:
    lines = source.splitlines()
    shown = []
    for m in re.finditer(r"\.hip:(\d+):\d+: (error.*)", stderr):
        n = int(m.group(1))
        code = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        shown.append(f"  line {n}: {m.group(2)}\n    {code}")
    detail = "\n".join(shown[:5]) or stderr.strip()[-2000:]
    return f"clang failed to compile HIP kernel `{name}`:\n{detail}"
