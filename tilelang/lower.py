"""`tilelang.lower`: lower (and build) a PrimFunc for a target without loading it.

Needs no GPU: CUDA code is generated and compiled with nvcc to a cubin on any
machine that has nvcc, which is how CI checks every generated kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .backend.launch_plan import backend_for
from .backend.registry import get_backend
from .backend.target import Target, parse
from .ir.function import PrimFunc


@dataclass
class CompiledArtifact:
    kernel_source: str
    lib_path: str | None
    target: Target
    lowered: PrimFunc | None
    params: list
    meta: dict

    @property
    def device_mod(self) -> str:
        return self.kernel_source


def lower(
    func: Any,
    target: Any = "auto",
    target_host: Any = None,
    runtime_only: bool = False,
    enable_host_codegen: bool = False,
    enable_device_compile: bool = True,
    pass_configs: dict | None = None,
) -> CompiledArtifact:
    from .cache import load_or_build
    from .jit.adapter import Adapter
    from .jit.kernel import compile_options

    if not isinstance(func, PrimFunc):
        raise TypeError(f"tilelang.lower expects a PrimFunc, got {type(func).__name__}")
    tgt = parse(target)
    backend = backend_for(get_backend(tgt), func)  # several T.Kernel blocks: backend/launch_plan.py
    options = compile_options(func, pass_configs, None)
    built = load_or_build(backend, func, tgt, options) if enable_device_compile else backend.lower(func, tgt, options)
    params = Adapter(func, list(func.attrs.get("out_idx", ()) or ()), backend.device_kind, lambda *_: None).params
    return CompiledArtifact(built.kernel_source, built.lib_path, tgt, built.lowered, params, built.meta)
