"""What every backend that generates source text shares: the pipeline → codegen → launch
metadata sequence of `lower` (`registry.Backend.lower`).

A backend supplies its pipeline (`run_pipeline`, the declared pass list of `<kind>/pipeline.py`),
its code generator (`generate_source`, returning an object with `source`, `entry`, `threads`
and `smem_bytes`) and the metadata only it has (`extra_meta`: tensor maps and clusters on CUDA,
the MSL version on Metal); the launch metadata every GPU launcher reads (entry, block size,
shared memory, parameter kinds, grid expressions, index limits) is assembled here once, so the
schema `cuda/backend.py: check_cuda_meta` validates cannot drift between targets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..ir.function import PrimFunc
from ..transform.context import CompileContext
from .launch_limits import limits_meta
from .registry import BuiltKernel
from .target import Target


class SourceBackend(ABC):
    builds_from_lowered = True  # build(..., pre=lower(...)) skips the second lowering

    @abstractmethod
    def run_pipeline(self, func: PrimFunc, ctx: CompileContext, stop_after: str | None = None) -> PrimFunc:
        """The target's declared pass list over `func` (up to `stop_after` when given)."""

    @abstractmethod
    def generate_source(self, lowered: PrimFunc, target: Target, options: dict) -> Any:
        """The generated source of lowered `func` (`.source`, `.entry`, `.threads`, `.smem_bytes`)."""

    def extra_meta(self, lowered: PrimFunc, target: Target) -> dict:
        """Launch metadata only this target has."""
        return {}

    def compile_context(self, options: dict, target: Target) -> CompileContext:
        return CompileContext(target, options.get("pass_configs") or {}, {})

    def _generate(self, func: PrimFunc, target: Target, options: dict) -> tuple:
        from ..tools.lower_trace import add_generated_source
        from .cuda.backend import arg_kinds, grid_exprs

        lowered = self.run_pipeline(func, self.compile_context(options, target))
        src = self.generate_source(lowered, target, options)
        add_generated_source(src.source)  # TL_LOWER_TRACE: the page gets the final source too
        meta = {
            "entry": src.entry,
            "threads": src.threads,
            "smem": src.smem_bytes,
            "args": arg_kinds(lowered),
            "n_params": len(lowered.params),
            "grid": grid_exprs(lowered),
            "arch": target.arch,
            **self.extra_meta(lowered, target),
            **limits_meta(lowered),
        }
        return lowered, src, meta

    def lower(self, func: PrimFunc, target: Target, options: dict, stop_after: str | None = None) -> BuiltKernel:
        if stop_after is not None:
            partial = self.run_pipeline(func, self.compile_context(options, target), stop_after=stop_after)
            return BuiltKernel("", None, {"stopped_after": stop_after}, partial)
        lowered, src, meta = self._generate(func, target, options)
        return BuiltKernel(src.source, None, meta, lowered)
