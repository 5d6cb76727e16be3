"""`AutoTuner`: compile every config (in parallel, possibly elsewhere), check
and time each on the local device, keep the fastest, cache the answer.

    result = (AutoTuner.from_kernel(kernel=factory, configs=configs)
              .set_compile_args(out_idx=[-1], target="c")
              .set_profile_args(ref_prog=ref)
              .run(warmup=5, rep=20))
    result.config, result.latency, result.kernel, result.skipped

Candidates run and are timed in a benchmark worker process (isolation.py), so a
config that fails to trace or compile, crashes, runs past `timeout` seconds, or
fails the correctness check is skipped — `result.skipped` lists
`(config, reason)` — and only if every config fails is `AutoTuneError` raised,
listing all the reasons.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..ir.function import PrimFunc
from ..jit.kernel import JITKernel
from . import cache as result_cache
from .bench import Evaluator, ProfileArgs
from .compiling import compile_stream
from .inputs import get_autotune_inputs
from .locate import check_not_loading
from .results import restore, save, tuning_key
from .source import CompileArgs, KernelSource
from .spec import call_with_timeout, describe_error, failure_reason

log = logging.getLogger("tilelang.autotuner")


@dataclass
class AutotuneResult:
    latency: float
    config: dict
    ref_latency: float | None
    libcode: str
    func: PrimFunc | None
    kernel: JITKernel
    skipped: list[tuple[dict, str]] = field(default_factory=list)
    timings: list[tuple[dict, float]] = field(default_factory=list)
    compiled_on: dict[int, str] = field(default_factory=dict)  # config index -> "host:pid" of the compile
    tuning_seconds: float = 0.0
    compile_seconds: float = 0.0  # until the last config finished compiling (and loading)
    from_cache: bool = False
    cache_key: str | None = None


class AutoTuneError(RuntimeError):
    """Every config failed; `.skipped` holds `(config, reason)` for each."""

    def __init__(self, name: str, skipped: list[tuple[dict, str]]) -> None:
        self.skipped = skipped
        lines = [f"autotuning `{name}`: all {len(skipped)} configs failed"]
        lines += [f"  {cfg!r}: {reason.splitlines()[0] if reason else '?'}" for cfg, reason in skipped]
        super().__init__("\n".join(lines))


def call_configs(configs: Any, args: tuple, kwargs: dict, signature: Any) -> list[dict]:
    """Evaluate callable configs with the call's arguments (positionally, else by name)."""
    if not callable(configs):
        return list(configs)
    import inspect

    sig = inspect.signature(configs)
    try:
        sig.bind(*args, **kwargs)
        return list(configs(*args, **kwargs))
    except TypeError:
        pass
    given = dict(zip(signature.parameters, args), **kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return list(configs(**given))
    return list(configs(**{k: v for k, v in given.items() if k in sig.parameters}))


def _progress(total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)
    except Exception:  # tqdm missing or broken: no bar
        return None


class AutoTuner:
    """Programmatic autotuner (the `@autotune` decorator is built on it)."""

    def __init__(self, fn: Callable, configs: Any) -> None:
        self.fn = fn
        self.configs = configs
        self.compile_args = CompileArgs()
        self.profile_args = ProfileArgs()
        self._profile_set = False
        self.call_args: tuple = ()
        self.call_kwargs: dict = {}
        self.key_ignore: set[str] = set()

    @classmethod
    def from_kernel(cls, kernel: Callable, configs: Any) -> AutoTuner:
        """`kernel(**config)` returns a `@T.prim_func` (or is a `@tilelang.jit` kernel)."""
        return cls(kernel, configs)

    def set_compile_args(
        self,
        out_idx: Any = None,
        target: Any = None,
        execution_backend: str | None = None,
        target_host: Any = None,
        verbose: bool | None = None,
        pass_configs: dict | None = None,
    ) -> AutoTuner:
        self.compile_args = CompileArgs(out_idx, target, execution_backend, target_host, verbose, pass_configs)
        return self

    def set_profile_args(
        self,
        warmup: int = 25,
        rep: int = 100,
        timeout: float = 30,
        supply_type: Any = None,
        ref_prog: Callable | None = None,
        supply_prog: Callable | None = None,
        rtol: float = 1e-2,
        atol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
        skip_check: bool = False,
        manual_check_prog: Callable | None = None,
        cache_input_tensors: bool = False,
        backend: str = "event",
    ) -> AutoTuner:
        st = supply_type if supply_type is not None else ProfileArgs.supply_type
        self.profile_args = ProfileArgs(
            warmup,
            rep,
            timeout,
            st,
            ref_prog,
            supply_prog,
            rtol,
            atol,
            max_mismatched_ratio,
            skip_check,
            manual_check_prog,
            cache_input_tensors,
            backend,
        )
        self._profile_set = True
        return self

    def set_kernel_parameters(self, args: tuple = (), kwargs: dict | None = None, ignore_in_key: Any = ()) -> AutoTuner:
        """The call's own arguments (configs are merged over `kwargs`)."""
        self.call_args, self.call_kwargs = tuple(args), dict(kwargs or {})
        self.key_ignore = set(ignore_in_key or ())
        return self

    def compile_configs(
        self, executor: Any = None, timeout: float | None = None
    ) -> list[tuple[dict, JITKernel | None, str]]:
        """Compile every config (no checking or timing): `(config, kernel or None, failure reason)`."""
        src = KernelSource(self.fn, self.call_args, self.call_kwargs, self.compile_args)
        configs = call_configs(self.configs, self.call_args, self.call_kwargs, src.signature)
        src.check_keys(configs)
        done = sorted(compile_stream(src, configs, timeout or self.profile_args.timeout, executor), key=lambda t: t[0])
        return [(configs[i], kernel, reason) for i, kernel, reason, _ in done]

    # -- the run ---------------------------------------------------------------
    def run(
        self,
        warmup: int | None = None,
        rep: int | None = None,
        timeout: float | None = None,
        use_pipeline: bool = False,
        enable_grouped_compile: bool = False,
        group_compile_size: int = 2,
        benchmark_devices: Any = None,
        benchmark_multi_gpu: bool = False,
        early_stop: bool = False,
        early_stop_factor: float = 2.0,
        executor: Any = None,
    ) -> AutotuneResult:
        """Tune and return the best config. `warmup`/`rep` are iteration counts, `timeout` seconds per config."""
        check_not_loading()  # a compile worker importing a script that tunes at top level
        t0 = time.perf_counter()
        prof = self.profile_args
        prof = replace(
            prof,
            warmup=prof.warmup if warmup is None else warmup,
            rep=prof.rep if rep is None else rep,
            timeout=(prof.timeout if self._profile_set else 180) if timeout is None else timeout,
        )
        src = KernelSource(self.fn, self.call_args, self.call_kwargs, self.compile_args)
        configs = call_configs(self.configs, self.call_args, self.call_kwargs, src.signature)
        if not configs:
            raise ValueError(f"autotuning `{src.raw.__name__}`: the config list is empty")
        src.check_keys(configs)
        fixed = get_autotune_inputs()
        key = tuning_key(src, configs, prof, fixed, early_stop, early_stop_factor, self.key_ignore)
        if key is not None:
            hit = result_cache.memory_get(key) or restore(key, src, configs)
            if hit is not None:
                return hit
        res = self._tune(src, configs, prof, fixed, early_stop, early_stop_factor, use_pipeline, executor)
        res.tuning_seconds, res.cache_key = time.perf_counter() - t0, key
        if key is not None:
            save(key, src, configs, res)
        return res

    # -- the loop ------------------------------------------------------------------
    def _tune(
        self,
        src: KernelSource,
        configs: list,
        prof: ProfileArgs,
        fixed: Any,
        early_stop: bool,
        factor: float,
        use_pipeline: bool,
        executor: Any,
    ) -> AutotuneResult:
        name = src.raw.__name__
        ev = Evaluator(prof, fixed)
        skipped: list[tuple[int, str]] = []
        timings: dict[int, float] = {}
        kernels: dict[int, JITKernel] = {}
        where: dict[int, str] = {}
        best: tuple[float, int, list] | None = None
        bar = _progress(len(configs), f"autotune {name}")
        t0 = time.perf_counter()
        stream = compile_stream(src, configs, prof.timeout, executor)
        if not use_pipeline:
            stream = iter(sorted(stream, key=lambda t: t[0]))
            compile_seconds = time.perf_counter() - t0
        for i, kernel, reason, host in stream:
            where[i] = host
            if kernel is None:
                skipped.append((i, reason))
                log.info("autotune `%s`: skipped config %r — %s", name, configs[i], reason.splitlines()[0])
            else:
                baseline = factor * best[0] if early_stop and best is not None else None
                try:
                    lat, inputs = ev.evaluate(kernel, baseline, prof.timeout)
                except BaseException as err:  # noqa: BLE001
                    reason = failure_reason(err, "benchmark")
                    skipped.append((i, reason))
                    log.info("autotune `%s`: skipped config %r — %s", name, configs[i], reason.splitlines()[0])
                else:
                    if baseline is not None and lat > baseline:
                        skipped.append((i, f"early stop: estimate {lat:.4f} ms > {factor:g} x best {best[0]:.4f} ms"))
                    else:
                        timings[i], kernels[i] = lat, kernel
                        if best is None or lat < best[0]:
                            best = (lat, i, inputs)
            if bar is not None:
                bar.update(1)
                if best is not None:
                    bar.set_postfix_str(f"best {best[0]:.4f} ms")
        if bar is not None:
            bar.close()
        skipped.sort()
        named = [(configs[i], r) for i, r in skipped]
        if best is None:
            raise AutoTuneError(name, named)
        if skipped:
            log.warning(
                "autotune `%s`: %d of %d configs skipped (see AutotuneResult.skipped)", name, len(skipped), len(configs)
            )
        lat, bi, inputs = best
        kernel = kernels[bi]
        try:
            ref = call_with_timeout(lambda: ev.ref_latency(kernel, inputs), prof.timeout)
        except BaseException as err:  # noqa: BLE001
            log.warning("autotune `%s`: timing ref_prog failed: %s", name, describe_error(err))
            ref = None
        kernel.update_tuner_result(lat, configs[bi], ref)
        log.info("autotune `%s`: best config %r, %.4f ms", name, configs[bi], lat)
        return AutotuneResult(
            lat,
            configs[bi],
            ref,
            kernel.get_kernel_source(),
            kernel.prim_func,
            kernel,
            skipped=named,
            timings=[(configs[i], timings[i]) for i in sorted(timings)],
            compiled_on=where,
            compile_seconds=compile_seconds if not use_pipeline else time.perf_counter() - t0,
        )
