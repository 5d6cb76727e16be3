"""`do_bench`: time a zero-argument callable, on the GPU or the CPU.

GPU (`backend="event"`, the default): one call, an estimate from 5 calls, then
`warmup`/`rep` milliseconds worth of warm-up and timed calls (or exactly
`_n_warmup`/`_n_repeat` calls when those are > 0); before each timed call L2 is
flushed by zeroing a `cache_size` MB buffer, and each call is bracketed by its
own pair of CUDA events. `backend="cupti"` reads kernel durations from
torch.profiler (CUPTI) instead, falling back to events with a one-time warning
when that is unavailable — in this torch build, or at run time (the profiler
fails, or records none of `fn`'s kernels: e.g. another tool holds CUPTI);
`backend="cudagraph"` captures the calls in a CUDA graph and times graph
replays (no L2 flush between calls inside a replay).

CPU (no CUDA, `device="cpu"`, or every tensor `fn` closes over is on the CPU):
the same warm-up/repeat logic with `time.perf_counter` around each call.

Result: milliseconds, reduced by `return_mode` (mean/median/min/max), or a list
when `quantiles` is given.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

BACKENDS = ("event", "cupti", "cudagraph")
RETURN_MODES = ("mean", "median", "min", "max")
_warned_cupti = False


# -- statistics (stdlib only) --------------------------------------------------
def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    pos = q * (len(sorted_xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(times_ms: Sequence[float], quantiles: Sequence[float] | None, return_mode: str) -> float | list[float]:
    """Reduce per-call times to one number (`return_mode`) or a list (`quantiles`)."""
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    xs = sorted(float(t) for t in times_ms)
    if not xs:
        raise ValueError("no timings were collected")
    if quantiles is not None:
        return [_quantile(xs, q) for q in quantiles]
    if return_mode == "min":
        return xs[0]
    if return_mode == "max":
        return xs[-1]
    if return_mode == "median":
        return _quantile(xs, 0.5)
    return sum(xs) / len(xs)


MAX_BUDGET_CALLS = 100_000  # cap on counts derived from a time budget (near-free callables)


def _counts(est_ms: float, warmup: float, rep: float, n_warmup: int, n_repeat: int) -> tuple[int, int]:
    est = max(est_ms, 1e-6)
    nw = n_warmup if n_warmup > 0 else max(1, min(MAX_BUDGET_CALLS, int(warmup / est)))
    nr = n_repeat if n_repeat > 0 else max(1, min(MAX_BUDGET_CALLS, int(rep / est)))
    return nw, nr


# -- device choice ---------------------------------------------------------------
def _closure_tensors(fn: Callable, depth: int = 0) -> list[Any]:
    """Tensors reachable from `fn` through functools.partial args or closure cells."""
    import torch

    found: list[Any] = []

    def add(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v[:64]:
                if isinstance(x, torch.Tensor):
                    found.append(x)
        elif callable(v) and depth < 2:
            found.extend(_closure_tensors(v, depth + 1))

    if isinstance(fn, functools.partial):
        for v in (*fn.args, *fn.keywords.values()):
            add(v)
        add(fn.func)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            add(cell.cell_contents)
        except ValueError:  # empty cell
            pass
    return found


def _use_cuda(fn: Callable, device: Any) -> bool:
    import torch

    if device is not None:
        return torch.device(device).type == "cuda"
    if not torch.cuda.is_available():
        return False
    tensors = _closure_tensors(fn)
    return not tensors or any(t.is_cuda for t in tensors)


# -- CPU --------------------------------------------------------------------------
def _bench_cpu(fn, warmup, rep, n_warmup, n_repeat, early_stop_baseline) -> list[float]:
    clock = time.perf_counter
    fn()
    t0 = clock()
    for _ in range(5):
        fn()
    est = (clock() - t0) * 1e3 / 5
    if early_stop_baseline is not None and est > early_stop_baseline:
        return [est]
    nw, nr = _counts(est, warmup, rep, n_warmup, n_repeat)
    for _ in range(nw):
        fn()
    times = []
    for _ in range(nr):
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return times


# -- CUDA -------------------------------------------------------------------------
def cupti_available() -> bool:
    """True when torch.profiler can record CUDA kernel activity (CUPTI via Kineto)."""
    try:
        import torch
        import torch.profiler  # noqa: F401

        return torch.cuda.is_available() and bool(torch.autograd.kineto_available())
    except Exception:
        return False


def resolve_backend(backend: str) -> str:
    """Validate `backend`; "cupti" without CUPTI becomes "event" with a one-time warning."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cupti" and not cupti_available():
        _warn_cupti_fallback("CUPTI profiling is not available in this torch build")
        return "event"
    return backend


def _warn_cupti_fallback(why: str) -> None:
    global _warned_cupti
    if not _warned_cupti:
        warnings.warn(f"do_bench(backend='cupti'): {why}; falling back to CUDA events", RuntimeWarning, stacklevel=4)
        _warned_cupti = True


class _CuptiUnusable(Exception):
    """CUPTI was available on paper but did not deliver kernel timings."""


def _flush_buffer(cache_size_mb: int, fast_flush: bool):
    """A `cache_size_mb` MB device buffer; `zero_()` on it evicts L2 (int32 elements if fast_flush)."""
    import torch

    nbytes = int(cache_size_mb) * 1024 * 1024
    if fast_flush:
        return torch.empty(nbytes // 4, dtype=torch.int32, device="cuda")
    return torch.empty(nbytes, dtype=torch.int8, device="cuda")


def _bench_cuda(fn, warmup, rep, n_warmup, n_repeat, fast_flush, backend, cache_size, early_stop_baseline):
    import torch

    Event = torch.cuda.Event
    fn()
    torch.cuda.synchronize()
    cache = _flush_buffer(cache_size, fast_flush)

    start, end = Event(enable_timing=True), Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    est = start.elapsed_time(end) / 5
    if early_stop_baseline is not None and est > early_stop_baseline:
        return [est]
    nw, nr = _counts(est, warmup, rep, n_warmup, n_repeat)
    for _ in range(nw):
        fn()

    if backend == "cudagraph":
        return _time_cudagraph(fn, nr)
    if backend == "cupti":
        try:
            return _time_cupti(fn, nr, cache)
        except _CuptiUnusable as err:
            _warn_cupti_fallback(str(err))
    starts = [Event(enable_timing=True) for _ in range(nr)]
    ends = [Event(enable_timing=True) for _ in range(nr)]
    for i in range(nr):
        cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _time_cudagraph(fn, n_repeat: int) -> list[float]:
    import torch

    inner = max(1, min(n_repeat, 100))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # warm up on the capture stream (allocator, lazy init)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(inner):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    replays = max(1, math.ceil(n_repeat / inner))
    times = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / inner)
    return times


def _kernel_events(prof) -> list[tuple[str, float]]:
    """(name, duration in ms) of each device kernel in a finished torch.profiler run."""
    out = []
    for evt in prof.events():
        if str(getattr(evt, "device_type", "")).endswith("CUDA"):
            tr = evt.time_range
            out.append((evt.name, float(tr.end - tr.start) / 1e3))
    return out


def _time_cupti(fn, n_repeat: int, cache) -> list[float]:
    import torch

    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as flush_prof:
            cache.zero_()
            torch.cuda.synchronize()
        flush_names = {name for name, _ in _kernel_events(flush_prof)}
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n_repeat):
                cache.zero_()
                fn()
            torch.cuda.synchronize()
        kernels = [ms for name, ms in _kernel_events(prof) if name not in flush_names]
    except Exception as err:  # noqa: BLE001 - any profiler failure means: time with events
        raise _CuptiUnusable(f"the CUDA profiler failed ({type(err).__name__}: {err})") from err
    if not kernels:
        raise _CuptiUnusable("the CUDA profiler recorded no kernel of the timed function")
    return [sum(kernels) / n_repeat]


# -- entry point ------------------------------------------------------------------
def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    _n_warmup: int = 0,
    _n_repeat: int = 0,
    quantiles: Sequence[float] | None = None,
    fast_flush: bool = True,
    backend: str = "event",
    return_mode: str = "mean",
    device: Any = None,
    cache_size: int = 256,
    early_stop_baseline: float | None = None,
) -> float | list[float]:
    """Time `fn()` in milliseconds (see the module docstring for the algorithm).

    `warmup`/`rep` are time budgets in ms; `_n_warmup`/`_n_repeat` > 0 override
    them as call counts. If `early_stop_baseline` (ms) is given and the initial
    estimate already exceeds it, the estimate is returned without further timing.
    With `backend="cupti"` one mean per-call value is measured (so every
    return_mode/quantile gives that value).
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if _use_cuda(fn, device):
        import torch

        dev = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
        with torch.cuda.device(dev):
            times = _bench_cuda(
                fn,
                warmup,
                rep,
                _n_warmup,
                _n_repeat,
                fast_flush,
                resolve_backend(backend),
                cache_size,
                early_stop_baseline,
            )
    else:
        times = _bench_cpu(fn, warmup, rep, _n_warmup, _n_repeat, early_stop_baseline)
    return summarize(times, quantiles, return_mode)
