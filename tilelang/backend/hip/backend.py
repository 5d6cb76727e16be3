"""The HIP backend as seen by the backend registry (`tilelang.backend.registry`).

`make_backend()` returns the object the JIT, `tilelang.lower` and the kernel cache use:
`lower` (the HIP pipeline + HIP C++ generation), `build` (clang -> an AMDGPU code object for
the target's processor in the cache workdir; gfx942 compiles for gfx940 before LLVM 17),
`load` (`backend/hip/runtime.py`: hipModuleLoadData + hipModuleLaunchKernel on torch's
stream), `cache_salt` (revision, compiler, header digest), `check_meta`.

Launch metadata (JSON): the CUDA schema (`backend/cuda/backend.py`: entry, threads, LDS bytes
as `smem`, parameter kinds, grid trees) plus `arch` (the target's processor) and
`offload_arch` (what the code object was compiled for), which the runtime checks against
the device."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from typing import Any

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..cuda.backend import arg_kinds, grid_exprs
from ..launch_limits import limits_meta
from ..registry import BuiltKernel
from ..target import Target, hip_offload_arch

BACKEND_REVISION = "hip-1"


def _ctx(options: dict, target: Any) -> CompileContext:
    return CompileContext(target, options.get("pass_configs") or {}, {})


class HipBackend:
    kind = "hip"
    device_kind = "cuda"  # torch names ROCm devices "cuda"
    source_ext = "hip"
    builds_from_lowered = True

    def _generate(self, func: PrimFunc, target: Target, options: dict) -> tuple:
        from ...engine.callback import apply_postproc
        from ...tools.lower_trace import add_generated_source
        from .codegen import generate
        from .pipeline import lower as hip_lower

        lowered = hip_lower(func, _ctx(options, target))
        src = generate(lowered)
        src.source = apply_postproc("hip", src.source, target)
        add_generated_source(src.source)
        meta = {
            "entry": src.entry,
            "threads": src.threads,
            "smem": src.smem_bytes,
            "args": arg_kinds(lowered),
            "n_params": len(lowered.params),
            "grid": grid_exprs(lowered),
            "arch": target.arch,
            "offload_arch": hip_offload_arch(target),
            **limits_meta(lowered),
        }
        return lowered, src, meta

    def lower(self, func: PrimFunc, target: Target, options: dict, stop_after: str | None = None) -> BuiltKernel:
        if stop_after is not None:
            from .pipeline import lower as hip_lower

            partial = hip_lower(func, _ctx(options, target), stop_after=stop_after)
            return BuiltKernel("", None, {"stopped_after": stop_after}, partial)
        lowered, src, meta = self._generate(func, target, options)
        return BuiltKernel(src.source, None, meta, lowered)

    def build(
        self, func: PrimFunc, target: Target, options: dict, workdir: str, pre: BuiltKernel | None = None
    ) -> BuiltKernel:
        """Lower (or take `pre`) and compile to `workdir/<entry>.<offload arch>.co`."""
        from .compiler import compile_hip, offload_arch_for

        if pre is not None and pre.lowered is not None:
            lowered, source, meta = pre.lowered, pre.kernel_source, dict(pre.meta)
        else:
            lowered, src, meta = self._generate(func, target, options)
            source = src.source
        arch = offload_arch_for(target.arch)
        path = compile_hip(source, workdir, meta["entry"], arch, list(options.get("compile_flags") or []))
        return BuiltKernel(source, path, meta, lowered)

    def build_joined(self, pres: list, name: str, target: Target, options: dict, workdir: str) -> tuple:
        """(source, path, per-kernel metadata) of one code object holding every kernel of a
        function with several `T.Kernel` blocks (`backend/launch_plan.py`)."""
        from .compiler import compile_hip, offload_arch_for

        source = _join_sources([p.kernel_source for p in pres])
        path = compile_hip(
            source, workdir, name, offload_arch_for(target.arch), list(options.get("compile_flags") or [])
        )
        return source, path, [dict(p.meta) for p in pres]

    def load(self, built: BuiltKernel) -> Callable[[list, list], None]:
        from . import runtime  # libamdhip64: only when a kernel is launched

        return runtime.load_code_object(built)

    def check_meta(self, meta: dict) -> None:
        """Raise ValueError unless `meta` is launch metadata `build` could have written."""
        from .runtime import check_launch_meta

        check_launch_meta(meta)
        if meta.get("smem", 0) > 64 * 1024:
            raise ValueError("launch metadata: `smem` exceeds the 64 KiB of LDS of a workgroup")

    def cache_salt(self, target: Target) -> str:
        return "|".join([BACKEND_REVISION, compiler_version(), header_digest()])


def _join_sources(sources: list) -> str:
    """Several generated kernels in one translation unit: each header is included once (they
    use `#pragma once`), so the sources are concatenated as they are."""
    return "\n".join(sources)


def compiler_version() -> str:
    from .compiler import hip_compiler

    clang = hip_compiler()
    if clang is None:
        return "no-clang"
    try:
        out = subprocess.run([clang, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown-clang"
    return out.splitlines()[0] if out else "unknown-clang"


def header_digest() -> str:
    """A digest of our device headers and code generator: a change to either rebuilds."""
    here = os.path.dirname(__file__)
    h = hashlib.sha256()
    inc = os.path.join(here, "include", "tl_hip")
    for name in sorted(os.listdir(inc)):
        with open(os.path.join(inc, name), "rb") as fh:
            h.update(fh.read())
    for name in ("codegen.py", "gemm.py"):
        with open(os.path.join(here, name), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def make_backend() -> HipBackend:
    return HipBackend()
