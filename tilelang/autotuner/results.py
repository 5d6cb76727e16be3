"""Tuning results in and out of the cache (cache.py stores; this module decides).

`tuning_key` hashes: the tilelang version, the kind and source of the tuned
function, its default values, the call's arguments (tensors by shape/dtype,
`do_not_specialize` left out), its closure constants, the configs, the compile
and profile arguments (ref/supply/check programs by module-level identity), the
shapes of `set_autotune_inputs` tensors, and the device name. Any part without
a stable identity (keys.py) disables caching for that run.
"""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

from ..backend.registry import get_backend
from ..ir.function import PrimFunc
from .bench import ProfileArgs
from .cache import enabled, load, memory_put, store
from .keys import Unstable, closure_constants, digest, stable
from .lookup import identity
from .source import KernelSource
from .spec import describe_error
from .transfer import ir_hash, pack, store_built

if TYPE_CHECKING:
    from .tuner import AutotuneResult

log = logging.getLogger("tilelang.autotuner")


def tuning_key(
    src: KernelSource, configs: list, prof: ProfileArgs, fixed: Any, early_stop: bool, factor: float, ignore: set
) -> str | None:
    """sha256 over everything that decides the outcome of a tuning run; None = do not cache."""
    if not enabled():
        return None
    from .. import __version__

    try:
        sig = src.signature
        given = dict(zip(sig.parameters, src.args), **src.kwargs)
        parts = {
            "version": __version__,
            "kind": src.kind,
            "source": inspect.getsource(src.raw),
            "defaults": stable({n: p.default for n, p in sig.parameters.items() if p.default is not p.empty}),
            "args": stable({k: v for k, v in given.items() if k not in ignore}),
            "closure": closure_constants(src.raw),
            "configs": stable(configs),
            "compile": stable([src.target, src.out_idx, src.pass_configs, src.compile_flags, src.execution_backend]),
            "profile": stable(
                [
                    prof.warmup,
                    prof.rep,
                    prof.timeout,
                    prof.supply_type,
                    prof.rtol,
                    prof.atol,
                    prof.max_mismatched_ratio,
                    prof.skip_check,
                    prof.cache_input_tensors,
                    prof.backend,
                    early_stop,
                    factor,
                ]
            ),
            "programs": stable([prof.ref_prog, prof.supply_prog, prof.manual_check_prog]),
            "inputs": stable(fixed),
            "device": device_name(src),
        }
    except (Unstable, OSError, TypeError) as err:
        log.debug("autotune result cache off for `%s`: %s", getattr(src.raw, "__name__", src.raw), err)
        return None
    return digest(parts)


def save(key: str, src: KernelSource, configs: list, res: AutotuneResult) -> None:
    """Write `res` to memory and disk: the best config's index, latencies, skip reasons, the build."""
    index = next(i for i, c in enumerate(configs) if c is res.config)
    artifact = None
    built = getattr(res.kernel, "built", None)
    if built is not None:
        try:
            artifact = pack(built)
        except OSError:
            artifact = None
    latency = {
        "latency": res.latency,
        "ref_latency": res.ref_latency,
        "tuning_seconds": res.tuning_seconds,
        "skipped": [[configs.index(c), r] for c, r in res.skipped],
        "timings": [[configs.index(c), t] for c, t in res.timings],
    }
    best = {"index": index, "config": stable(res.config), "ir_sha": ir_hash(res.kernel.prim_func)}
    best["tuned"] = identity(src.raw)  # which function this is, for tools that look results up (lookup.py)
    store(key, best, latency, artifact, get_backend(src.target).source_ext)
    memory_put(key, res)


def restore(key: str, src: KernelSource, configs: list) -> AutotuneResult | None:
    """The cached result for `key`, its best config rebuilt (a kernel-cache hit), or None."""
    from .tuner import AutotuneResult

    rec = load(key)
    if rec is None or not 0 <= rec.get("index", -1) < len(configs):
        return None
    cfg = configs[rec["index"]]
    try:
        func = src.trace(cfg)
        if isinstance(func, PrimFunc) and rec.get("artifact"):
            if ir_hash(func) == rec.get("ir_sha"):  # never file an old build under new IR
                store_built(func, src.target, src.options(cfg, func), rec["artifact"])
        kernel = src.kernel(cfg, func)
    except Exception as err:  # noqa: BLE001 - a stale entry is a miss
        log.warning("autotune cache entry %s could not be rebuilt (%s); tuning again", key[:12], describe_error(err))
        return None
    kernel.update_tuner_result(rec["latency"], cfg, rec.get("ref_latency"))
    res = AutotuneResult(
        rec["latency"],
        cfg,
        rec.get("ref_latency"),
        kernel.get_kernel_source(),
        kernel.prim_func,
        kernel,
        skipped=[(configs[i], r) for i, r in rec.get("skipped", []) if 0 <= i < len(configs)],
        timings=[(configs[i], t) for i, t in rec.get("timings", []) if 0 <= i < len(configs)],
        tuning_seconds=rec.get("tuning_seconds", 0.0),
        from_cache=True,
        cache_key=key,
    )
    memory_put(key, res)
    log.info("autotune `%s`: best config %r from the cache", src.raw.__name__, cfg)
    return res


def device_name(src: KernelSource) -> str:
    import platform

    if src.target.kind in ("cuda", "hip"):
        try:
            import torch

            return torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001
            return src.target.kind
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.machine()} {model or platform.processor()}"
