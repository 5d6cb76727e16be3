"""Run Metal Shading Language kernels on the CPU: the MSL execution harness's Python side.

`compile_msl(source)` compiles the MSL text (g++ -std=c++20, `-I include` so that
`#include <metal_stdlib>` finds `msl_host.h`) together with a small generated driver into a
shared library; `MslKernel.__call__(*args, grid=, threads=)` runs it over torch CPU tensors:
`grid` is the number of threadgroups per dimension, `threads` the threads of one threadgroup
(as Metal's dispatchThreadgroups:threadsPerThreadgroup:). The driver is generated from the
kernel's parameter list: buffers (`device T*`, `constant T*`) take tensors, scalars
(`constant T&`) take Python numbers, and parameters with a builtin attribute
(`[[threadgroup_position_in_grid]]`, ...) are filled in per thread by the runner.

The kernel text is compiled as generated except for one change, `shared_storage`: a
kernel-scope `threadgroup` variable declaration (an array, a union or struct, a scalar — not
a pointer) gets `static` in front, because MSL gives the whole threadgroup one such object
and a C++ local would be one per thread (see msl_host.h).

The compiler is g++ (else clang++; `MSL_HARNESS_CXX` picks another — both pass the tests).

Compiled libraries are cached by the hash of source + header, in one directory per process;
`compile_many` compiles several sources in parallel (one g++ per core).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
_BUILD_DIR = Path(tempfile.mkdtemp(prefix="msl-harness-"))
atexit.register(shutil.rmtree, _BUILD_DIR, True)

# builtin attribute → the msl_host::ThreadIds field it reads
BUILTINS = {
    "threadgroup_position_in_grid": "id.tg_pos",
    "thread_position_in_threadgroup": "id.local",
    "threads_per_threadgroup": "id.tg_size",
    "threadgroups_per_grid": "id.grid_groups",
    "thread_index_in_threadgroup": "vec<uint, 3>(id.linear)",
    "simdgroup_index_in_threadgroup": "vec<uint, 3>(id.simd_index)",
    "thread_index_in_simdgroup": "vec<uint, 3>(id.lane)",
    "threads_per_simdgroup": "vec<uint, 3>(32u)",
    "thread_position_in_grid": "(id.tg_pos * id.tg_size + id.local)",
    "threads_per_grid": "(id.grid_groups * id.tg_size)",
}

_SCALARS = {
    "int": ctypes.c_int32,
    "uint": ctypes.c_uint32,
    "unsigned int": ctypes.c_uint32,
    "short": ctypes.c_int16,
    "ushort": ctypes.c_uint16,
    "char": ctypes.c_int8,
    "uchar": ctypes.c_uint8,
    "long": ctypes.c_int64,
    "ulong": ctypes.c_uint64,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "bool": ctypes.c_bool,
    "float": ctypes.c_float,
    "half": ctypes.c_uint16,  # passed as its bits
    "bfloat": ctypes.c_uint16,
}
_QUALIFIERS = {"device", "constant", "const", "thread", "volatile", "threadgroup"}


class HarnessError(RuntimeError):
    """The harness found the kernel wrong: a barrier or SIMD-group function not reached by
    every thread, a launch that does not fit the kernel, or a compile error."""


@dataclass(frozen=True)
class Param:
    text: str  # the declaration without its attribute
    name: str
    base: str  # the type without qualifiers, `*` or `&`
    kind: str  # "buffer" | "scalar" | "builtin"
    builtin: str | None = None


def parse_kernel(source: str, entry: str | None = None) -> tuple[str, list[Param]]:
    """The name and parameters of the `kernel void` function `entry` (the only one when None)."""
    found = [(m.group(1), m.end()) for m in re.finditer(r"\bkernel\s+void\s+(\w+)\s*\(", source)]
    if entry is not None:
        found = [f for f in found if f[0] == entry]
    if len(found) != 1:
        names = [f[0] for f in found]
        raise HarnessError(f"expected one kernel{' named ' + entry if entry else ''} in the MSL, found {names}")
    name, start = found[0]
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        i += 1
    return name, [_param(p) for p in _split_top(source[start : i - 1]) if p.strip()]


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _param(text: str) -> Param:
    attr = re.search(r"\[\[\s*(\w+)\s*(?:\(([^)]*)\))?\s*\]\]", text)
    decl = (text[: attr.start()] + text[attr.end() :]).strip() if attr else text.strip()
    decl = re.sub(r"\s+", " ", decl)
    m = re.match(r"(.*?)(\w+)$", decl)
    if m is None:
        raise HarnessError(f"cannot read kernel parameter {text.strip()!r}")
    type_text, name = m.group(1).strip(), m.group(2)
    base = " ".join(w for w in re.sub(r"[*&]", " ", type_text).split() if w not in _QUALIFIERS)
    if attr and attr.group(1) in BUILTINS:
        return Param(decl, name, base, "builtin", attr.group(1))
    if attr and attr.group(1) != "buffer":
        raise HarnessError(f"kernel parameter `{name}`: attribute [[{attr.group(1)}]] is not modelled")
    if "*" in type_text:
        return Param(decl, name, base, "buffer")
    if "&" in type_text:
        if base not in _SCALARS:
            raise HarnessError(f"kernel parameter `{name}`: scalar type {base!r} is not modelled")
        return Param(decl, name, base, "scalar")
    raise HarnessError(f"kernel parameter `{name}` ({decl!r}) is neither a buffer, a reference nor a builtin")


# a threadgroup variable declaration at the start of a line: `threadgroup float4 buf[704];`,
# `threadgroup union {`, `threadgroup int count;` — never a pointer (`threadgroup half* A = ...`)
_TG_VARIABLE = re.compile(
    r"^([ \t]*)(threadgroup\s+(?:union\b|struct\b|[^;=*()\n]*?\w+\s*(?:\[[^\]\n]*\]\s*)*;))", re.M
)


def shared_storage(source: str) -> str:
    """`source` with every threadgroup variable declaration made `static` (module docstring)."""
    return _TG_VARIABLE.sub(r"\1static \2", source)


def driver_source(source_path: Path, name: str, params: list[Param]) -> str:
    args, slot = [], 0
    for p in params:
        type_text = p.text[: -len(p.name)].strip()
        if p.kind == "builtin":
            args.append(f"msl_host::builtin<{p.base}>({BUILTINS[p.builtin]})")
        elif p.kind == "buffer":
            args.append(f"({type_text})tl_args[{slot}]")
            slot += 1
        else:
            args.append(f"*({type_text.replace('&', '*')})tl_args[{slot}]")
            slot += 1
    return "\n".join(
        [
            f'#include "{source_path}"',
            f"static void* tl_args[{max(slot, 1)}];",
            "static void tl_thread(int t) {",
            "  msl_host::ThreadIds id = msl_host::ids(t);",
            "  (void)id;",
            f"  {name}({', '.join(args)});",
            "}",
            'extern "C" int tl_launch(void** args, const unsigned* grid, const unsigned* tg) {',
            f"  for (int i = 0; i < {slot}; ++i) tl_args[i] = args[i];",
            "  return msl_host::launch(grid, tg, tl_thread);",
            "}",
            'extern "C" const char* tl_error() { return msl_host::S.error; }',
            "",
        ]
    )


def compiler() -> str:
    found = os.environ.get("MSL_HARNESS_CXX") or shutil.which("g++") or shutil.which("clang++")
    if found is None:
        raise HarnessError("the MSL harness needs g++ or clang++")
    return found


class MslKernel:
    """One compiled kernel; call it with the buffer and scalar arguments in parameter order."""

    def __init__(self, lib_path: Path, name: str, params: list[Param]) -> None:
        self.lib = ctypes.CDLL(str(lib_path))
        self.lib.tl_launch.restype = ctypes.c_int
        self.lib.tl_error.restype = ctypes.c_char_p
        self.name = name
        self.params = [p for p in params if p.kind != "builtin"]

    def __call__(self, *args: object, grid: tuple, threads: tuple) -> None:
        if len(args) != len(self.params):
            raise HarnessError(f"kernel {self.name} takes {len(self.params)} arguments, got {len(args)}")
        keep, ptrs = [], []
        for p, a in zip(self.params, args):
            if p.kind == "buffer":
                if not isinstance(a, torch.Tensor) or a.device.type != "cpu" or not a.is_contiguous():
                    raise HarnessError(f"argument `{p.name}` must be a contiguous CPU tensor")
                ptrs.append(ctypes.c_void_p(a.data_ptr()))
            else:
                value = _SCALARS[p.base](_scalar_bits(a, p.base))
                keep.append(value)
                ptrs.append(ctypes.cast(ctypes.pointer(value), ctypes.c_void_p))
        g = [*grid, 1, 1][:3]
        t = [*threads, 1, 1][:3]
        arr = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
        rc = self.lib.tl_launch(arr, (ctypes.c_uint * 3)(*g), (ctypes.c_uint * 3)(*t))
        if rc != 0:
            raise HarnessError(f"kernel {self.name}: {self.lib.tl_error().decode()}")


def _scalar_bits(value: object, base: str) -> object:
    if base == "half":
        return int(torch.tensor(float(value), dtype=torch.float16).view(torch.int16).item()) & 0xFFFF
    if base == "bfloat":
        return int(torch.tensor(float(value), dtype=torch.bfloat16).view(torch.int16).item()) & 0xFFFF
    return value


def _lib_path(source: str, entry: str | None, flags: tuple) -> tuple[Path, str, list[Param], Path]:
    name, params = parse_kernel(source, entry)
    headers = "".join(p.read_text() for p in sorted(HERE.glob("msl_host*.h")))
    digest = hashlib.sha256((source + headers + name + repr(flags)).encode()).hexdigest()[:20]
    return _BUILD_DIR / f"{name}_{digest}.so", name, params, _BUILD_DIR / f"{name}_{digest}"


def _build(source: str, entry: str | None, flags: tuple = ()) -> tuple[Path, str, list[Param]]:
    lib, name, params, stem = _lib_path(source, entry, flags)
    if lib.exists():
        return lib, name, params
    metal = stem.with_suffix(".metal")
    metal.write_text(shared_storage(source))
    drv = stem.with_suffix(".driver.cpp")
    drv.write_text(driver_source(metal, name, params))
    tmp = stem.with_suffix(f".{os.getpid()}.tmp.so")
    cmd = [compiler(), "-std=c++20", "-O1", "-shared", "-fPIC", "-Wno-attributes", "-Wno-unknown-attributes",
           f"-I{INCLUDE}", *flags, "-x", "c++", str(drv), "-o", str(tmp)]  # fmt: skip
    if "clang" not in Path(cmd[0]).name:
        cmd.remove("-Wno-unknown-attributes")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise HarnessError(f"the harness could not compile kernel {name}:\n{res.stderr[-4000:]}")
    tmp.replace(lib)
    return lib, name, params


def compile_msl(source: str, entry: str | None = None, flags: tuple = ()) -> MslKernel:
    """The kernel `entry` of `source` (the only kernel when None), compiled for the CPU
    (`flags`: extra compiler flags, e.g. `-DMSL_HOST_NO_FAST_SWITCH` for the ucontext fibers)."""
    lib, name, params = _build(source, entry, tuple(flags))
    return MslKernel(lib, name, params)


def compile_many(sources: list[str]) -> list[MslKernel | HarnessError]:
    """`compile_msl` for several sources at once (a compile error is returned in its place)."""

    def one(src: str) -> MslKernel | HarnessError:
        try:
            return compile_msl(src)
        except HarnessError as err:
            return err

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, sources))
