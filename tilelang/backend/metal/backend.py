"""The Metal backend as seen by the backend registry (`tilelang.backend.registry`).

`make_backend()` returns the object the JIT, `tilelang.lower` and the kernel cache use:
`lower` (the Metal pipeline + MSL generation), `build` (the MSL source *is* the artifact:
Metal compiles it when the kernel is loaded, through `torch.mps.compile_shader`; the source and
its launch metadata go to the cache like every backend's), `load` (the MPS launcher of
`backend/metal/runtime.py`, imported only then), `cache_salt`, `check_meta`.

Launch metadata (JSON): kernel entry, threadgroup size, threadgroup memory, parameter kinds
and the grid as expression trees over the scalar parameters and dynamic dimensions — the same
schema as CUDA's (`backend/cuda/backend.py`), which `check_meta` validates."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..cuda.backend import _fast_math, check_cuda_meta
from ..registry import BuiltKernel
from ..source_backend import SourceBackend
from ..target import Target, metal_msl_version

BACKEND_REVISION = "metal-1"


class MetalBackend(SourceBackend):
    kind = "metal"
    device_kind = "mps"
    source_ext = "metal"

    def run_pipeline(self, func: PrimFunc, ctx: CompileContext, stop_after: str | None = None) -> PrimFunc:
        from .pipeline import lower as metal_lower

        return metal_lower(func, ctx, stop_after=stop_after)

    def generate_source(self, lowered: PrimFunc, target: Target, options: dict) -> Any:
        from .codegen import generate

        return generate(lowered, fast_math=_fast_math(options.get("pass_configs") or {}))

    def extra_meta(self, lowered: PrimFunc, target: Target) -> dict:
        return {"msl": ".".join(str(x) for x in metal_msl_version(target))}

    def build(
        self, func: PrimFunc, target: Target, options: dict, workdir: str, pre: BuiltKernel | None = None
    ) -> BuiltKernel:
        """The MSL source written to `workdir/<entry>.metal` (what the cache stores; Metal compiles
        it at load time)."""
        if pre is not None and pre.lowered is not None:
            lowered, source, meta = pre.lowered, pre.kernel_source, dict(pre.meta)
        else:
            lowered, src, meta = self._generate(func, target, options)
            source = src.source
        os.makedirs(workdir, exist_ok=True)
        path = os.path.join(workdir, f"{meta['entry']}.metal")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        return BuiltKernel(source, path, meta, lowered)

    def build_joined(self, pres: list, name: str, target: Target, options: dict, workdir: str) -> tuple:
        """(source, path, per-kernel metadata) of one MSL library holding every kernel of a
        function with several `T.Kernel` blocks (`backend/launch_plan.py`): the sources in program
        order (their prelude sections are include-guarded), written to `workdir/<name>.metal`."""
        source = "\n".join(p.kernel_source for p in pres)
        os.makedirs(workdir, exist_ok=True)
        path = os.path.join(workdir, f"{name}.metal")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        return source, path, [dict(p.meta) for p in pres]

    def load(self, built: BuiltKernel) -> Callable[[list, list], None]:
        """The MPS launcher of `built`; a kernel of a joined library (`build_joined`: the plan loads
        each entry with only its metadata and the library path) reads its source from the file."""
        from . import runtime  # torch.mps: only when a kernel is launched

        if not built.kernel_source and built.lib_path:
            with open(built.lib_path, encoding="utf-8") as fh:
                built = BuiltKernel(fh.read(), built.lib_path, built.meta, built.lowered)
        return runtime.make_launcher(built)

    def check_meta(self, meta: dict) -> None:
        """Raise ValueError unless `meta` is launch metadata `build` could have written."""
        check_cuda_meta(meta)
        if meta.get("smem", 0) > 32 * 1024:
            raise ValueError("launch metadata: `smem` exceeds Metal's 32 KiB of threadgroup memory")

    def cache_salt(self, target: Target) -> str:
        return "|".join([BACKEND_REVISION, prelude_digest()])


def prelude_digest() -> str:
    """A digest of the generator's own MSL (the prelude and the code generator): a change to
    either rebuilds cached kernels."""
    here = os.path.dirname(__file__)
    h = hashlib.sha256()
    for name in ("prelude.py", "codegen.py", "gemm.py"):
        with open(os.path.join(here, name), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def make_backend() -> MetalBackend:
    return MetalBackend()
