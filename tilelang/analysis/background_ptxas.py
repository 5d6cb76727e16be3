"""Background nvcc/ptxas builds for the editor: the register estimate replaced by ptxas's figures.

`BackgroundPtxas(on_done)` compiles a kernel's generated CUDA source (what `analyze_function(...,
build_source=True)` returns in `KernelInfo.build`) with the same nvcc command a build uses
(`backend/cuda/compiler.nvcc_command`, `-Xptxas=-v`) and parses ptxas's report
(`compiler.parse_ptxas`), then adds what the post-compile hint shows (`backend.measured_meta`:
shared memory static + dynamic, blocks per SM and the limiting resource).

- debounced: `submit(key, ...)` waits `delay_s` before compiling; a newer submit for the same
  `key` (the same kernel in the same file) replaces a pending one;
- cancellable: a newer submit, `cancel(key)` or `close()` kills a running nvcc (its whole process
  group);
- cached by the lowered source: results are kept per (source digest, arch), so an edit that
  does not change the generated code is answered at once, and so is undoing one.

Nothing here runs user code: nvcc compiles generated source. Builds run one at a time, in a
thread, at a lower CPU priority (`nice` 10) than the editor's analysis; `on_done(key, stats)` is
called from that thread.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable

from ..backend.target import nvcc_path


def _lower_priority() -> None:
    """In the nvcc child: yield the CPU to the editor's own analysis (a background build may wait)."""
    try:
        os.nice(10)
    except OSError:
        pass


class BackgroundPtxas:
    def __init__(
        self,
        on_done: Callable[[str, dict], None] | None = None,
        delay_s: float = 0.5,
        timeout_s: float = 120.0,
        max_cached: int = 256,
    ) -> None:
        self.on_done = on_done
        self.delay_s = delay_s
        self.timeout_s = timeout_s
        self.max_cached = max_cached
        self.results: OrderedDict[tuple, dict] = OrderedDict()
        self.lock = threading.Lock()
        self.pending: dict[str, tuple] = {}  # key -> (digest, arch, source, entry, threads, smem)
        self.timers: dict[str, threading.Timer] = {}
        self.running: dict[str, subprocess.Popen] = {}
        self.wake = threading.Condition(self.lock)
        self.ready: list[str] = []
        self.closed = False
        self.builds = 0  # nvcc runs started (for tests)
        self.thread = threading.Thread(target=self._loop, name="tilelang-ptxas", daemon=True)
        self.thread.start()

    @staticmethod
    def available() -> bool:
        return nvcc_path() is not None

    @staticmethod
    def digest(source: str, arch: str) -> tuple:
        return (hashlib.sha256(source.encode()).hexdigest(), arch)

    def cached(self, source: str, arch: str) -> dict | None:
        with self.lock:
            hit = self.results.get(self.digest(source, arch))
            return dict(hit) if hit is not None else None

    def submit(self, key: str, source: str, arch: str, entry: str, threads: int, smem: int) -> dict | None:
        """ptxas's figures for `source` if known; else None, and a build of it is scheduled
        `delay_s` from now (replacing any pending or running build for `key`)."""
        d = self.digest(source, arch)
        with self.lock:
            hit = self.results.get(d)
            if hit is not None:
                self.results.move_to_end(d)
                return dict(hit)
            if self.closed:
                return None
            self._cancel_locked(key)
            self.pending[key] = (d, arch, source, entry, threads, smem)
            timer = threading.Timer(self.delay_s, self._due, (key, d))
            timer.daemon = True
            self.timers[key] = timer
            timer.start()
        return None

    def cancel(self, key: str) -> None:
        with self.lock:
            self._cancel_locked(key)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for key in list(self.pending) + list(self.running):
                self._cancel_locked(key)
            self.wake.notify_all()

    def _cancel_locked(self, key: str) -> None:
        t = self.timers.pop(key, None)
        if t is not None:
            t.cancel()
        self.pending.pop(key, None)
        if key in self.ready:
            self.ready.remove(key)
        proc = self.running.pop(key, None)
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _due(self, key: str, d: tuple) -> None:
        with self.lock:
            job = self.pending.get(key)
            if job is None or job[0] != d:
                return  # replaced meanwhile
            self.timers.pop(key, None)
            self.ready.append(key)
            self.wake.notify()

    def _loop(self) -> None:
        while True:
            with self.lock:
                while not self.ready and not self.closed:
                    self.wake.wait()
                if self.closed:
                    return
                key = self.ready.pop(0)
                job = self.pending.pop(key, None)
            if job is not None:
                stats = self._build(key, *job)
                if stats is not None and self.on_done is not None:
                    self.on_done(key, dict(stats))

    def _build(self, key: str, d: tuple, arch: str, source: str, entry: str, threads: int, smem: int) -> dict | None:
        from ..backend.cuda.backend import measured_meta
        from ..backend.cuda.compiler import nvcc_command, parse_ptxas

        with tempfile.TemporaryDirectory(prefix="tilelang-ptxas-") as tmp:
            src, out = os.path.join(tmp, f"{entry}.cu"), os.path.join(tmp, f"{entry}.cubin")
            with open(src, "w") as f:
                f.write(source)
            with self.lock:
                if self.closed or key in self.pending:  # replaced before it started
                    return None
                try:
                    proc = subprocess.Popen(
                        nvcc_command(src, out, arch), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        start_new_session=True, preexec_fn=_lower_priority,
                    )  # fmt: skip
                except (OSError, Exception):  # noqa: BLE001 - no nvcc after all: no measurement
                    return None
                self.running[key] = proc
                self.builds += 1
            try:
                log_out, log_err = proc.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                with self.lock:
                    self._cancel_locked(key)
                return None
            finally:
                with self.lock:
                    if self.running.get(key) is proc:
                        del self.running[key]
            if proc.returncode != 0:
                return None
        stats = parse_ptxas(log_err + log_out)
        if "registers" not in stats:
            return None
        stats.update(measured_meta(arch, threads, smem, stats))
        stats["arch"] = arch
        with self.lock:
            self.results[d] = stats
            while len(self.results) > self.max_cached:
                self.results.popitem(last=False)
        return stats
