"""`KernelSource`: how one config becomes a PrimFunc, a `JITKernel` or a `CompileJob`.

The tuned function is either a `@tilelang.jit` kernel (lazy or eager; traced
with `get_tir`) or a plain factory `fn(**config) -> PrimFunc` (as given to
`AutoTuner.from_kernel`). Compile options come from the jit decorator,
overridden by `AutoTuner.set_compile_args`, with per-config `pass_configs`
merged on top.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from ..backend.target import Target, parse
from ..ir.function import PrimFunc
from ..jit.kernel import JITKernel
from .locate import FunctionRef, raw_function
from .spec import CompileJob, stub_tensors

PASS_CONFIGS = "pass_configs"


@dataclass
class CompileArgs:
    out_idx: Any = None
    target: Any = None
    execution_backend: str | None = None
    target_host: Any = None
    verbose: bool | None = None
    pass_configs: dict | None = None


class KernelSource:
    def __init__(self, fn: Any, args: tuple, kwargs: dict, overrides: CompileArgs) -> None:
        jit = getattr(fn, "jit_impl", fn)
        self.jit = jit if type(jit).__name__ == "JITImpl" else None
        self.raw = raw_function(fn)
        if not callable(self.raw):
            raise TypeError(f"the autotuned object must be a @tilelang.jit kernel or a PrimFunc factory, got {fn!r}")
        self.kind = "jit" if self.jit is not None else "factory"
        self.lazy = self.jit is None or self.jit.mode == "lazy"
        self.args, self.kwargs = tuple(args), dict(kwargs)
        j, o = self.jit, overrides
        self.target: Target = parse(o.target if o.target is not None else (j.target if j else None))
        self.out_idx = o.out_idx if o.out_idx is not None else (j.out_idx if j else None)
        self.pass_configs = {**(j.pass_configs if j else {}), **(o.pass_configs or {})}
        self.compile_flags = j.compile_flags if j else None
        self.execution_backend = o.execution_backend or (j.execution_backend if j else "auto")
        self.verbose = bool(o.verbose if o.verbose is not None else (j.verbose if j else False))
        self.signature = inspect.signature(self.raw)

    # -- configs ---------------------------------------------------------------
    def check_keys(self, configs: list[dict]) -> None:
        """Every config key must be a parameter of the function (or "pass_configs")."""
        params = self.signature.parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return
        for i, cfg in enumerate(configs):
            if not isinstance(cfg, dict):
                raise TypeError(f"autotune config #{i} must be a dict of parameter values, got {cfg!r}")
            for k in cfg:
                if k != PASS_CONFIGS and k not in params:
                    names = ", ".join(n for n in params)
                    raise ValueError(
                        f"autotune config #{i} {cfg!r} sets `{k}`, which is not a parameter of "
                        f"`{self.raw.__name__}` (parameters: {names})"
                    )

    def split(self, cfg: dict) -> tuple[dict, dict]:
        """(call kwargs, pass_configs) for one config."""
        kw = {**self.kwargs, **{k: v for k, v in cfg.items() if k != PASS_CONFIGS}}
        return kw, {**self.pass_configs, **(cfg.get(PASS_CONFIGS) or {})}

    # -- building ----------------------------------------------------------------
    def trace(self, cfg: dict) -> PrimFunc | JITKernel:
        kw, _ = self.split(cfg)
        if self.jit is not None:
            return self.jit.get_tir(*self.args, **kw)
        out = self.raw(*self.args, **kw)
        if not isinstance(out, (PrimFunc, JITKernel)):
            raise TypeError(
                f"kernel factory `{self.raw.__name__}` must return a @T.prim_func, got {type(out).__name__}"
            )
        return out

    def kernel(self, cfg: dict, func: PrimFunc | JITKernel | None = None) -> JITKernel:
        """Compile (through the kernel cache) and load the kernel for `cfg`."""
        func = self.trace(cfg) if func is None else func
        if isinstance(func, JITKernel):
            return func
        _, pass_configs = self.split(cfg)
        return JITKernel(
            func,
            out_idx=self.out_idx if self.lazy else None,
            target=self.target,
            pass_configs=pass_configs,
            compile_flags=self.compile_flags,
            execution_backend=self.execution_backend,
            verbose=self.verbose,
        )

    def options(self, cfg: dict, func: PrimFunc) -> dict:
        from .transfer import build_options

        return build_options(func, self.split(cfg)[1], self.compile_flags)

    def ref(self) -> FunctionRef | None:
        if not hasattr(self, "_ref"):
            self._ref = FunctionRef.of(self.raw)
        return self._ref

    def job(self, index: int, cfg: dict, timeout: float | None) -> CompileJob | None:
        """A picklable job for a worker, or None when this kernel cannot be shipped."""
        ref = self.ref()
        if ref is None:
            return None
        kw, pass_configs = self.split(cfg)
        return CompileJob(
            index,
            ref,
            self.kind,
            stub_tensors(self.args),
            stub_tensors(kw),
            self.target,
            pass_configs,
            self.compile_flags,
            timeout,
        )
