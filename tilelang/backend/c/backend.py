"""The C backend as seen by the backend registry (`tilelang.backend.registry`):
`make_backend()` returns the object the JIT and the kernel cache use."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ...ir.dtype import DataType
from ...ir.function import PrimFunc
from ...tools.lower_trace import add_generated_source
from ...transform.context import CompileContext
from ..launch_limits import guard_dynamic, limits_meta
from ..meta_schema import field, is_identifier, is_int, is_list_of
from ..registry import BuiltKernel
from . import build as c_build
from .codegen import generate
from .compiler import _header_digest, compile_source, compiler, compiler_identity, flags_for
from .pipeline import lower as c_lower
from .runtime import _CTYPES, arg_spec, launcher


def _ctx(options: dict, target: Any, build_dir: str | None = None) -> CompileContext:
    opts = {"compile_flags": list(options.get("compile_flags") or [])}
    if build_dir:
        opts["build_dir"] = build_dir
    return CompileContext(target, options.get("pass_configs") or {}, opts)


def _is_arg(arg: Any) -> bool:
    if type(arg) is not list or len(arg) != 2 or arg[0] not in ("buffer", "scalar") or type(arg[1]) is not str:
        return False
    try:
        base = DataType(arg[1]).base
    except (TypeError, ValueError, KeyError):
        return False
    return arg[0] == "buffer" or base in _CTYPES


def _cpu_signature() -> str:
    """-march=native code is only valid on this kind of CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features", "model name")):
                    return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


class CBackend:
    kind = "c"
    device_kind = "cpu"
    source_ext = "c"

    def lower(self, func: PrimFunc, target: Any, options: dict, stop_after: str | None = None) -> BuiltKernel:
        if stop_after is not None:
            return BuiltKernel(
                "", None, {"stopped_after": stop_after}, c_lower(func, _ctx(options, target), stop_after)
            )
        lowered = c_lower(func, _ctx(options, target))
        src = generate(lowered)
        add_generated_source(src.source)  # TL_LOWER_TRACE: the page gets the final source too
        spec, n_dyn = arg_spec(lowered)
        meta = {"entry": src.entry, "args": spec, "n_dyn": n_dyn, **limits_meta(lowered)}
        return BuiltKernel(src.source, None, meta, lowered)

    def build(self, func: PrimFunc, target: Any, options: dict, workdir: str) -> BuiltKernel:
        art = c_build(func, _ctx(options, target, workdir))
        spec, n_dyn = arg_spec(art.lowered)
        meta = {"entry": art.entry, "args": spec, "n_dyn": n_dyn, **limits_meta(art.lowered)}
        return BuiltKernel(art.kernel_source, art.lib_path, meta, art.lowered)

    def build_joined(self, pres: list, name: str, target: Any, options: dict, workdir: str) -> tuple:
        """One library with the entries of several lowered kernels (`lower` results), for a
        function with several T.Kernel blocks (`backend/launch_plan.py`): (source, library,
        per-kernel metadata). The sources share `tl_cpu.h` (include-guarded) and its error state."""
        source = "\n".join(p.kernel_source for p in pres)
        lib = compile_source(source, name, _ctx(options, target, workdir))
        return source, lib, [dict(p.meta) for p in pres]

    def load(self, built: BuiltKernel) -> Callable[[list, list], None]:
        m = built.meta
        return guard_dynamic(launcher(built.lib_path, m["entry"], m["args"], m["n_dyn"]), m)

    def check_meta(self, meta: dict) -> None:
        """Raise ValueError unless `meta` is launch metadata `build` could have written."""
        field(meta, "entry", is_identifier, "a C identifier")
        field(meta, "args", lambda x: is_list_of(x, _is_arg), "a list of [buffer|scalar, dtype]")
        field(meta, "n_dyn", lambda x: is_int(x, 0, 1 << 16), "a count")

    def cache_salt(self, target: Any) -> str:
        cc = compiler()
        return "|".join([compiler_identity(cc), " ".join(flags_for()), _header_digest(), _cpu_signature()])


def make_backend() -> CBackend:
    return CBackend()
