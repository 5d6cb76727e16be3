"""Where compile jobs run: worker sizing and the default process pool.

`executor=` (on `@autotune` and `AutoTuner.run`) may be
- None or "process": a pool of spawned worker processes on this machine,
  sized by TILELANG_AUTO_TUNING_CPU_COUNTS (-1 = auto: the
  TILELANG_AUTO_TUNING_CPU_UTILITIES fraction (0.9) of the CPUs, capped by
  TILELANG_AUTO_TUNING_MAX_CPU_COUNT); it is kept alive and reused;
- "thread": a thread pool in this process (the compiler subprocess runs in
  parallel; tracing and passes share the GIL);
- "serial": one after another in this process;
- any `concurrent.futures.Executor` (e.g. `dask.distributed.Client.get_executor()`):
  jobs are submitted to it as picklable `CompileJob`s; this module never shuts it down.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
import threading
import types
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

_POOL: tuple[tuple, ProcessPoolExecutor] | None = None
_LOCK = threading.Lock()
MODES = ("process", "thread", "serial")


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def worker_count(n_jobs: int) -> int:
    """How many compile workers to use for `n_jobs` jobs (from the TILELANG_AUTO_TUNING_* variables)."""
    counts = int(_env_float("TILELANG_AUTO_TUNING_CPU_COUNTS", -1))
    if counts <= 0:
        util = _env_float("TILELANG_AUTO_TUNING_CPU_UTILITIES", 0.9)
        counts = max(1, int((os.cpu_count() or 1) * util))
        cap = int(_env_float("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", -1))
        if cap > 0:
            counts = min(counts, cap)
    return max(1, min(counts, n_jobs))


def process_pool(n: int) -> ProcessPoolExecutor:
    """The shared pool of `n` spawned compile workers (created on first use, reused after)."""
    global _POOL
    key = (n, os.environ.get("TILELANG_CACHE_DIR", ""))
    with _LOCK:
        if _POOL is not None and (_POOL[0] != key or getattr(_POOL[1], "_broken", False)):
            _POOL[1].shutdown(wait=False, cancel_futures=True)
            _POOL = None
        if _POOL is None:
            ctx = multiprocessing.get_context("spawn")  # never fork a process that holds CUDA / torch threads
            _POOL = (key, ProcessPoolExecutor(max_workers=n, mp_context=ctx))
        return _POOL[1]


@contextmanager
def hidden_main() -> Any:
    """Hide `__main__` while the pool spawns workers, so multiprocessing does not re-run
    the user's script in each of them; workers load only its definitions (locate.py)."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def start_pool(n_jobs: int, kernel: Any = None) -> int:
    """Start (or reuse) the compile pool for `n_jobs` jobs with all its workers running and,
    given `kernel`, its module loaded in each; returns the worker count (1 = no pool)."""
    from .locate import FunctionRef, warm_worker

    n = worker_count(n_jobs)
    if n > 1:
        pool = process_pool(n)
        ref = FunctionRef.of(kernel) if kernel is not None else None
        with hidden_main():
            futures = [pool.submit(warm_worker, ref, 0.5) for _ in range(2 * n)]
        for f in futures:
            f.result()
    return n


def kill_pool(pool: ProcessPoolExecutor) -> None:
    """Shut `pool` down and kill its worker processes: a worker left running a timed-out
    job (a thread that cannot be interrupted) must not keep burning a CPU while other
    configs are timed."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # no public accessor
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        try:
            proc.kill()
        except (OSError, AttributeError):
            pass
    for proc in procs:
        proc.join(5)


def discard_process_pool() -> None:
    """Shut the shared pool down and kill its workers (e.g. after a job timed out in one)."""
    global _POOL
    with _LOCK:
        if _POOL is not None:
            kill_pool(_POOL[1])
            _POOL = None


atexit.register(discard_process_pool)


def choose(executor: Any, n_jobs: int, remote_ok: bool) -> tuple[str, Executor | None, bool]:
    """(mode, executor, owned) for a tuning run.

    mode is "remote" (jobs are `CompileJob`s run by `spec.run_job` on `executor`),
    "thread" or "serial" (compiled in this process). `owned` executors are shut
    down by the caller. `remote_ok` is False when the kernel cannot be shipped
    (a local function, unpicklable arguments, the kernel cache disabled).
    """
    if isinstance(executor, Executor):
        return ("remote", executor, False) if remote_ok else ("serial", None, False)
    if executor is not None and executor not in MODES:
        raise ValueError(f"executor must be None, one of {MODES}, or a concurrent.futures.Executor; got {executor!r}")
    n = worker_count(n_jobs)
    if executor == "serial" or n <= 1:
        return "serial", None, False
    if executor == "thread" or not remote_ok:
        return "thread", ThreadPoolExecutor(max_workers=n, thread_name_prefix="tilelang-compile"), True
    return "remote", process_pool(n), False
