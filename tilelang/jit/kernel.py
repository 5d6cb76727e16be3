"""`JITKernel`: a compiled, loaded kernel with its launch adapter.

Compilation goes through the disk cache (tilelang.cache) keyed by the
kernel's printed IR, the target and the options; a cache hit skips every pass
and the compiler.
"""

from __future__ import annotations

import logging
from typing import Any

from ..backend.launch_plan import backend_for
from ..backend.registry import get_backend
from ..backend.target import Target, parse
from ..engine.param import KernelParam
from ..ir.function import PrimFunc
from .adapter import Adapter

log = logging.getLogger("tilelang")


def normalize_out_idx(out_idx: Any, n_params: int) -> list[int]:
    if out_idx is None:
        return []
    if isinstance(out_idx, int):
        out_idx = [out_idx]
    out = []
    for i in out_idx:
        if not isinstance(i, int) or not -n_params <= i < n_params:
            raise ValueError(f"out_idx {i!r} is out of range for a kernel with {n_params} parameters")
        out.append(i % n_params)
    return out


def compile_options(func: PrimFunc, pass_configs: dict | None, compile_flags: Any) -> dict:
    """Options that, with the IR and the target, key a compiled kernel: the function's own
    pass configs/flags (from T.annotate_*) merged with the caller's (which win)."""
    from ..pass_config import check

    merged = dict(func.attrs.get("pass_configs", {}))
    merged.update(pass_configs or {})
    merged = check(merged)  # string keys; warns about keys without effect here and unknown ones
    flags = list(func.attrs.get("compile_flags", ()))
    if compile_flags:
        flags += [compile_flags] if isinstance(compile_flags, str) else list(compile_flags)
    return {"pass_configs": merged, "compile_flags": flags}


class JITKernel:
    """A compiled kernel. Call it with the input tensors; it returns the outputs."""

    def __init__(
        self,
        func: PrimFunc,
        out_idx: Any = None,
        target: Any = None,
        pass_configs: dict | None = None,
        compile_flags: Any = None,
        execution_backend: str = "auto",
        verbose: bool = False,
        built: Any = None,
    ) -> None:
        """`built`: an already built `BuiltKernel` of exactly this func/target/options to load
        instead of going through the cache (the autotuner's benchmark worker)."""
        from ..cache import load_kernel

        attr_out = func.attrs.get("out_idx")
        if attr_out is not None and out_idx is not None:
            raise ValueError("out_idx given twice: the kernel declares outputs with T.empty; drop the out_idx argument")
        self.prim_func = func
        self.out_idx = normalize_out_idx(out_idx if out_idx is not None else attr_out, len(func.params))
        self.target: Target = parse(target)
        options = compile_options(func, pass_configs, compile_flags)
        self.pass_configs, self.compile_flags = options["pass_configs"], options["compile_flags"]
        self.execution_backend = execution_backend
        self.backend = backend_for(get_backend(self.target), func)  # several T.Kernel blocks: a launch plan
        if built is not None:
            self.built, launch = built, self.backend.load(built)
        else:
            self.built, launch = load_kernel(self.backend, func, self.target, options)
        device_index = None
        if self.backend.device_kind == "cuda":  # load() put the kernel in the current device's context
            import torch

            device_index = torch.cuda.current_device()
        self.adapter = Adapter(func, self.out_idx, self.backend.device_kind, launch, device_index)
        self._call = self.adapter.call  # the generated entry: one frame between the user and the checks
        self.latency = self.config = self.ref_latency = None

    # -- calling ---------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        return self._call(*args)

    # -- introspection -----------------------------------------------------------
    @property
    def kernel_source(self) -> str:
        return self.built.kernel_source

    def get_kernel_source(self, kernel_only: bool = True) -> str:
        return self.built.kernel_source

    def get_host_source(self) -> str:
        return self.built.meta.get("host_source", "")

    @property
    def host_source(self) -> str:
        return self.get_host_source()

    def show_source(self, which: str = "kernel") -> None:
        print(self.get_kernel_source() if which != "host" else self.get_host_source())

    def export_sources(self, kernel_path: str | None = None, host_path: str | None = None) -> None:
        if kernel_path:
            with open(kernel_path, "w") as f:
                f.write(self.get_kernel_source())
        if host_path:
            with open(host_path, "w") as f:
                f.write(self.get_host_source())

    @property
    def params(self) -> list[KernelParam]:
        return self.adapter.params

    @property
    def artifact(self) -> Any:
        return self.built

    def get_profiler(self, tensor_supply_type: Any = None):
        from ..profiler import Profiler, TensorSupplyType

        device = "cpu" if self.backend.device_kind == "cpu" else None
        return Profiler(self.params, self.out_idx, tensor_supply_type or TensorSupplyType.Auto, self, device=device)

    def run_once(self, func: Any = None) -> Any:
        return self.get_profiler().run_once(func)

    def update_tuner_result(self, latency: float, config: dict, ref_latency: float | None) -> JITKernel:
        self.latency, self.config, self.ref_latency = latency, config, ref_latency
        return self

    def get_tuner_result(self) -> dict:
        return {"latency": self.latency, "config": self.config, "ref_latency": self.ref_latency}

    @property
    def n_regs(self) -> int | None:
        return self.built.meta.get("registers")

    @property
    def n_spills(self) -> int | None:
        return self.built.meta.get("spill_bytes")

    def __repr__(self) -> str:
        return f"<JITKernel {self.prim_func.name} target={self.target}>"
