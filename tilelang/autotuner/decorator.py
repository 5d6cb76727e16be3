"""`@tilelang.autotune(configs=...)`, stacked above `@tilelang.jit`.

    @tilelang.autotune(configs=get_configs, warmup=10, rep=10)
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128, ...): ...

    kernel = matmul(1024, 1024, 1024)          # lazy: tunes, returns the best JITKernel
    c = gemm(a, b)                             # eager: tunes, runs the best kernel
    k = gemm(a, b, __return_kernel=True)       # eager: the best kernel itself
    k = matmul(1024, 1024, 1024, block_M=64)   # a tuned parameter given: no tuning

Tuning happens once per call signature (arguments normalised against the
function signature, tensors by shape/dtype, `do_not_specialize` parameters
left out). A call that differs from the tuned one only in `do_not_specialize`
parameters reuses the tuned config and compiles it for its own arguments.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from ..jit.kernel import JITKernel
from .bench import ProfileArgs
from .keys import freeze
from .source import PASS_CONFIGS, CompileArgs, KernelSource
from .tuner import AutoTuner, AutotuneResult, call_configs

log = logging.getLogger("tilelang.autotuner")


def _pop_return_kernel(kwargs: dict) -> bool:
    flag = False
    for k in [k for k in kwargs if k.endswith("__return_kernel")]:  # also a name-mangled spelling
        flag = bool(kwargs.pop(k)) or flag
    return flag


class AutoTuneImpl:
    """What `@autotune` returns: call it like the kernel it wraps."""

    def __init__(
        self, jit_impl: Any, configs: Any, profile: ProfileArgs, run_kwargs: dict, do_not_specialize: Any
    ) -> None:
        if type(jit_impl).__name__ != "JITImpl":
            from ..jit.jit import jit

            jit_impl = jit(jit_impl)  # a bare function: treat as @tilelang.jit
        self.jit_impl = jit_impl
        self.configs = configs
        self.profile = profile
        self.run_kwargs = run_kwargs
        if isinstance(do_not_specialize, str):
            do_not_specialize = [do_not_specialize]
        self.do_not_specialize = set(do_not_specialize or ())
        self.results: dict[Any, AutotuneResult] = {}
        self.last_result: AutotuneResult | None = None
        self._exact: dict[Any, Any] = {}
        self._configs: dict[Any, list] = {}
        self._derived: dict[Any, JITKernel] = {}
        functools.update_wrapper(self, jit_impl.func)

    def __getattr__(self, name: str) -> Any:  # mode, signature, get_tir, ... of the jit kernel
        if name == "jit_impl":
            raise AttributeError(name)
        return getattr(self.jit_impl, name)

    # -- calls -------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return_kernel = _pop_return_kernel(kwargs)
        kernel = self._kernel(args, kwargs)
        if self.jit_impl.mode == "lazy" or return_kernel:
            return kernel
        return kernel(*self._runtime_inputs(kernel, args, kwargs))

    def compile(self, *args: Any, **kwargs: Any) -> JITKernel:
        """The best kernel for these arguments (tuning first if needed), without running it."""
        _pop_return_kernel(kwargs)
        return self._kernel(args, kwargs)

    def tune(self, *args: Any, **kwargs: Any) -> AutotuneResult:
        """Tune (or fetch the cached tuning) for these arguments and return the full result."""
        _pop_return_kernel(kwargs)
        self._kernel(args, kwargs)
        return self.results[self._key(args, kwargs)]

    # -- internals -----------------------------------------------------------------
    def _bound(self, args: tuple, kwargs: dict) -> dict:
        params = self.jit_impl.signature.parameters
        if len(args) > len(params):
            raise TypeError(f"{self.__name__}() takes {len(params)} arguments but {len(args)} were given")
        given = dict(zip(params, args))
        dup = [k for k in kwargs if k in given]
        if dup:
            raise TypeError(f"{self.__name__}() got multiple values for argument `{dup[0]}`")
        given.update(kwargs)
        return given

    def _key(self, args: tuple, kwargs: dict, ignore: set | None = None) -> Any:
        given = self._bound(args, kwargs)
        full = {n: p.default for n, p in self.jit_impl.signature.parameters.items() if p.default is not p.empty}
        full.update(given)
        skip = self.do_not_specialize if ignore is None else ignore
        return freeze({k: v for k, v in full.items() if k not in skip})

    def _tuner(self, configs: list, args: tuple, kwargs: dict) -> AutoTuner:
        t = AutoTuner(self.jit_impl, configs)
        p = self.profile
        t.set_profile_args(
            p.warmup,
            p.rep,
            p.timeout,
            p.supply_type,
            p.ref_prog,
            p.supply_prog,
            p.rtol,
            p.atol,
            p.max_mismatched_ratio,
            p.skip_check,
            p.manual_check_prog,
            p.cache_input_tensors,
            p.backend,
        )
        return t.set_kernel_parameters(args, kwargs, self.do_not_specialize)

    def _kernel(self, args: tuple, kwargs: dict) -> JITKernel:
        ck = freeze((args, kwargs))
        configs = self._configs.get(ck)
        if configs is None:  # a callable may be expensive (e.g. carver): once per call signature
            configs = self._configs[ck] = call_configs(self.configs, args, kwargs, self.jit_impl.signature)
        tuned = {k for cfg in configs if isinstance(cfg, dict) for k in cfg if k != PASS_CONFIGS}
        explicit = tuned & set(self._bound(args, kwargs))
        if explicit:
            log.debug("autotune `%s`: %s given explicitly, compiling without tuning", self.__name__, sorted(explicit))
            return self.jit_impl.compile(*args, **kwargs)
        key = self._key(args, kwargs)
        exact = self._key(args, kwargs, ignore=set())
        res = self.results.get(key)
        if res is None:
            res = self._tuner(configs, args, kwargs).run(**self.run_kwargs)
            self.results[key], self._exact[key] = res, exact
        self.last_result = res
        if self._exact[key] == exact:
            return res.kernel
        kernel = self._derived.get(exact)
        if kernel is None:  # differs only in do_not_specialize parameters: reuse the tuned config
            src = KernelSource(self.jit_impl, args, kwargs, CompileArgs())
            kernel = src.kernel(res.config).update_tuner_result(res.latency, res.config, res.ref_latency)
            self._derived[exact] = kernel
        return kernel

    def _runtime_inputs(self, kernel: JITKernel, args: tuple, kwargs: dict) -> list:
        given = self._bound(args, kwargs)
        params = self.jit_impl.signature.parameters
        out = []
        for p in kernel.params:
            if p.is_output:
                continue
            if p.name in given:
                out.append(given[p.name])
            elif p.name in params and params[p.name].default is not params[p.name].empty:
                out.append(params[p.name].default)
            else:
                raise TypeError(f"{self.__name__}() missing argument `{p.name}` of the kernel")
        return out


def autotune(
    func: Callable | None = None,
    *,
    configs: Any,
    warmup: int = 25,
    rep: int = 100,
    timeout: float = 100,
    supply_type: Any = None,
    ref_prog: Callable | None = None,
    supply_prog: Callable | None = None,
    rtol: float = 1e-2,
    atol: float = 1e-2,
    max_mismatched_ratio: float = 0.01,
    skip_check: bool = False,
    manual_check_prog: Callable | None = None,
    cache_input_tensors: bool = False,
    do_not_specialize: Any = None,
    early_stop: bool = False,
    early_stop_factor: float = 2.0,
    executor: Any = None,
) -> Any:
    """Decorator: tune the compile-time parameters of a `@tilelang.jit` kernel over `configs`.

    `configs`: a list of dicts (keys are the kernel's parameters; the reserved key
    "pass_configs" adds per-config pass configs), or a callable that receives the
    call's arguments and returns that list. `warmup`/`rep` are iteration counts;
    `timeout` is seconds per config. `executor` picks where configs compile
    (see tilelang.autotuner.executor); benchmarking is always local.
    """
    profile = ProfileArgs(
        warmup,
        rep,
        timeout,
        supply_type if supply_type is not None else ProfileArgs.supply_type,
        ref_prog,
        supply_prog,
        rtol,
        atol,
        max_mismatched_ratio,
        skip_check,
        manual_check_prog,
        cache_input_tensors,
    )
    run_kwargs = {
        "warmup": warmup,
        "rep": rep,
        "timeout": timeout,
        "early_stop": early_stop,
        "early_stop_factor": early_stop_factor,
        "executor": executor,
    }

    def wrap(f: Callable) -> AutoTuneImpl:
        return AutoTuneImpl(f, configs, profile, run_kwargs, do_not_specialize)

    return wrap(func) if func is not None else wrap
