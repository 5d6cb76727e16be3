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
from ..registry import BuiltKernel
from ..source_backend import SourceBackend
from ..target import Target, hip_offload_arch

BACKEND_REVISION = "hip-1"


class HipBackend(SourceBackend):
    kind = "hip"
    device_kind = "cuda"  # torch names ROCm devices "cuda"
    source_ext = "hip"

    def run_pipeline(self, func: PrimFunc, ctx: CompileContext, stop_after: str | None = None) -> PrimFunc:
        from .pipeline import lower as hip_lower

        return hip_lower(func, ctx, stop_after=stop_after)

    def generate_source(self, lowered: PrimFunc, target: Target, options: dict) -> Any:
        from ...engine.callback import apply_postproc
        from .codegen import generate

        src = generate(lowered)
        src.source = apply_postproc("hip", src.source, target)  # register_hip_postproc: before clang sees it
        return src

    def extra_meta(self, lowered: PrimFunc, target: Target) -> dict:
        return {"offload_arch": hip_offload_arch(target)}

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
