"""The compile stage: every config becomes a loaded `JITKernel` or a failure reason.

Configs that can be shipped (see spec.py) are submitted as `CompileJob`s to
the executor chosen by executor.py; the rest, and every config in "thread" or
"serial" mode, are compiled in this process. For each worker result the
config is re-traced here (cheap); if its kernel-cache key (IR, options,
compiler and CPU salt) equals the worker's, the shipped artifact is filed into
the local kernel cache (transfer.py) and the kernel loaded from there — so no
shared filesystem is needed; otherwise (a different toolchain or CPU on the
worker) the config is compiled here. A worker that
cannot import the kernel function falls back to a local compile.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import nullcontext
from typing import Any

from ..ir.function import PrimFunc
from ..jit.kernel import JITKernel
from .executor import choose, discard_process_pool, hidden_main, kill_pool, process_pool, worker_count
from .locate import UNRESOLVED
from .source import KernelSource
from .spec import CompileOutcome, call_with_timeout, describe_error, failure_reason, run_job

log = logging.getLogger("tilelang.autotuner")
STALL_MARGIN = 60.0  # seconds beyond the per-config timeout without any result before giving up
Built = tuple[int, JITKernel | None, str, str]  # (config index, kernel, failure reason, "host:pid" | "local")


def compile_stream(src: KernelSource, configs: list, timeout: float, executor: Any) -> Iterator[Built]:
    """Yield (index, kernel or None, failure reason, where) as configs finish compiling."""
    from ..cache import is_cache_enabled

    jobs = {}
    remote_ok = is_cache_enabled() and src.ref() is not None
    for i, cfg in enumerate(configs) if remote_ok else ():
        job = src.job(i, cfg, timeout)
        try:
            pickle.dumps(job)
        except Exception as err:  # noqa: BLE001 - unpicklable argument: compile here
            log.debug("config %r compiled in-process: %s", cfg, err)
            continue
        jobs[i] = job
    remote_ok = remote_ok and len(jobs) > 0
    mode, pool, owned = choose(executor, len(configs), remote_ok)
    if executor is not None and mode != "remote" and executor not in ("thread", "serial"):
        log.warning(
            "autotune: `%s` cannot be compiled on the given executor (local function, unpicklable arguments or kernel cache off); compiling in this process",
            src.raw.__name__,
        )
    log.info("autotune `%s`: compiling %d configs (%s)", src.raw.__name__, len(configs), mode)

    def local(i: int) -> Built:
        try:
            return i, call_with_timeout(lambda: src.kernel(configs[i]), timeout), "", "local"
        except BaseException as err:  # noqa: BLE001
            return i, None, failure_reason(err, "compile"), "local"

    stale = False
    try:
        if mode == "serial":
            for i in range(len(configs)):
                yield local(i)
            return
        futures = {}
        with hidden_main() if not isinstance(executor, Executor) else nullcontext():
            for i in range(len(configs)):  # ship what can be shipped first; workers start at once
                if mode == "remote" and i in jobs:
                    futures[pool.submit(run_job, jobs[i])] = i
        for i in range(len(configs)):
            if mode == "thread":
                futures[pool.submit(local, i)] = i
            elif i not in jobs:
                yield local(i)  # remote mode, but this job cannot be shipped
        pending, stall = set(futures), (timeout or 0) + STALL_MARGIN
        ours = mode == "remote" and not isinstance(executor, Executor)  # the shared pool: ours to restart
        suspects: list[int] = []  # jobs that were running when a worker died
        while pending:
            done, pending = wait(pending, timeout=stall, return_when=FIRST_COMPLETED)
            if not done:  # every job finishes or times out within `timeout` of starting: workers are gone
                for fut in pending:
                    fut.cancel()
                    yield futures[fut], None, f"timeout: no compile result for {stall:g} s (compile workers lost?)", "?"
                stale = True
                break
            restart = False
            for fut in sorted(done, key=futures.__getitem__):
                if ours and _broken(fut):
                    suspects.append(futures[fut])
                    restart = True
                    continue
                yield _finish(src, configs, futures[fut], fut, local, timeout)
                restart = restart or (ours and _timed_out(fut))
                stale = stale or _timed_out(fut)
            if restart:
                # a worker still runs a timed-out job (an uninterruptible thread), or one died and
                # took the pool down: kill the pool, start a fresh one, resubmit what was pending
                discard_process_pool()
                pool, stale = process_pool(worker_count(len(configs))), False
                with hidden_main():
                    for fut in list(pending):
                        if fut.done() and not _broken(fut) and not fut.cancelled():
                            continue  # finished before the kill: collected on the next round
                        pending.discard(fut)
                        i = futures.pop(fut)
                        new = pool.submit(run_job, jobs[i])
                        futures[new] = i
                        pending.add(new)
        for i in suspects:  # each alone in a pool of its own: a crash is charged to its config only
            yield _run_alone(src, configs, i, jobs[i], local, timeout)
    finally:
        if owned:
            pool.shutdown(wait=False, cancel_futures=True)
        if stale and not isinstance(executor, Executor):
            discard_process_pool()  # a worker still runs an abandoned job: start fresh next time


def _broken(fut: Any) -> bool:
    return not fut.cancelled() and isinstance(fut.exception(), BrokenProcessPool)


def _run_alone(src: KernelSource, configs: list, i: int, job: Any, local: Any, timeout: float) -> Built:
    """Compile job `i` in a fresh one-worker pool: a worker died while it was running."""
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        with hidden_main():
            fut = pool.submit(run_job, job)
        done, _ = wait([fut], timeout=(timeout or 0) + STALL_MARGIN)
        if not done:
            return i, None, f"timeout: no compile result for {(timeout or 0) + STALL_MARGIN:g} s", "?"
        if _broken(fut):
            return i, None, "compile failed: the compile worker crashed (its process died) on this config", "?"
        return _finish(src, configs, i, fut, local, timeout)
    finally:
        kill_pool(pool)


def _timed_out(fut: Any) -> bool:
    out = fut.result() if not fut.cancelled() and fut.exception() is None else None
    return isinstance(out, CompileOutcome) and not out.ok and out.error.startswith("timeout")


def _finish(src: KernelSource, configs: list, i: int, fut: Any, local: Any, timeout: float) -> Built:
    """A finished future as (index, kernel or None, reason, where)."""
    try:
        out = fut.result()
    except BaseException as err:  # noqa: BLE001 - worker crash / executor error
        return i, None, f"compile worker failed: {describe_error(err)}", "?"
    if not isinstance(out, CompileOutcome):
        return out  # thread mode: already (index, kernel, reason, where)
    if not out.ok and UNRESOLVED in out.error:  # the worker cannot import the function: build here
        log.warning("config %r: %s; compiling it in this process", configs[i], out.error)
        return local(i)
    return _adopt(src, configs[i], out, timeout)


def _adopt(src: KernelSource, cfg: dict, out: CompileOutcome, timeout: float) -> Built:
    """Load a worker-compiled config: re-trace here, insert the shipped artifact, load from the cache."""
    where = f"{out.host}:{out.pid}"
    if not out.ok:
        return out.index, None, out.error, where

    def load() -> JITKernel:
        from . import transfer

        func = src.trace(cfg)
        if isinstance(func, PrimFunc) and out.artifact is not None:
            options = src.options(cfg, func)
            # same key = same IR, options and toolchain/CPU salt: only then is the worker's build valid here
            if transfer.kernel_key(func, src.target, options) == out.key:
                transfer.store_built(func, src.target, options, out.artifact)
            else:
                why = "IR" if transfer.ir_hash(func) != out.ir_sha else "compiler or CPU (kernel-cache salt)"
                log.warning(
                    "config %r: the worker's build differs from this machine's (%s); compiling it here", cfg, why
                )
        return src.kernel(cfg, func)

    try:
        return out.index, call_with_timeout(load, timeout), "", where
    except BaseException as err:  # noqa: BLE001
        return out.index, None, failure_reason(err, "load"), where
