"""The server's side of the analysis worker: a child process that can hang or die.

`Worker` keeps one persistent `python -m tilelang_lsp.child` warm (tilelang
imported) and sends it one request at a time with a time limit; on a timeout
or a crash it kills the process, starts a fresh one and raises `WorkerError`
so the caller can turn it into a diagnostic. `run_job` runs one request in a
throw-away child (compile / benchmark), with progress events and cancellation.
Blocking calls: use them from a thread, never from the event loop.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)
ROOT = str(Path(__file__).resolve().parent.parent)  # so the child finds tilelang_lsp (and tilelang next to it)


class WorkerError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # "timeout" | "crash" | "unavailable" | "cancelled"
        self.message = message


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def spawn(python: str | None, once: bool = False) -> subprocess.Popen:
    """Start a child in a session of its own, so that killing it (`_kill`) also kills every
    process the code it traced may have started."""
    cmd = [python or sys.executable, "-m", "tilelang_lsp.child"] + (["--once"] if once else [])
    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env(), cwd=ROOT, start_new_session=True
    )


class LineReader:
    """Read JSON lines from a child's stdout with a deadline."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.fd = proc.stdout.fileno()
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)

    def read(self, deadline: float, cancel: threading.Event | None = None) -> dict:
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if cancel is not None and cancel.is_set():
                raise WorkerError("cancelled", "cancelled")
            if left <= 0:
                raise WorkerError("timeout", "time limit exceeded")
            try:
                if not self.sel.select(min(left, 0.1)):
                    continue
                chunk = os.read(self.fd, 65536)
            except (OSError, ValueError):  # the process was killed and its pipe closed under us
                chunk = b""
            if not chunk:
                try:
                    code = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = "?"
                raise WorkerError("crash", f"the analysis process exited with code {code}")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            raise WorkerError("crash", f"garbled reply from the analysis process: {line[:80]!r}") from None

    def close(self):
        self.sel.close()


def _kill(proc: subprocess.Popen | None) -> None:
    """Kill the child's whole process group (it leads one: `spawn`), then reap the child."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        proc.kill()
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass
    for f in (proc.stdin, proc.stdout):
        try:
            f and f.close()
        except OSError:
            pass


class Worker:
    """One warm analysis process (plus a warm spare that replaces it after a kill);
    `call` is thread-safe and serialised."""

    def __init__(self, python: str | None = None, startup_timeout: float = 120.0):
        self.python = python
        self.startup_timeout = startup_timeout
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.reader: LineReader | None = None
        self.spare: subprocess.Popen | None = None  # started after the first one is ready
        self.ready = False
        self.unavailable: tuple[float, str] | None = None  # (when, why) tilelang.analysis could not be imported
        self.restarts = 0
        self.stopped = False
        self.cancel_grace_s = 1.0  # how long a cancelled request may take to stop before the process is killed
        self._next_id = 0

    def start(self) -> None:
        """Spawn the process now (it imports tilelang while we do other things)."""
        with self.lock:
            self._spawn()

    def _spawn(self, use_spare: bool = False) -> None:
        _kill(self.proc)
        if self.reader:
            self.reader.close()
        if use_spare and self.spare is not None and self.spare.poll() is None:
            self.proc, self.spare = self.spare, None
        else:
            self.proc = spawn(self.python)
        self.reader = LineReader(self.proc)
        self.ready = False

    def _ensure_ready(self) -> None:
        if self.stopped:
            raise WorkerError("unavailable", "the server is shutting down")
        if self.unavailable and time.monotonic() - self.unavailable[0] < 10:
            raise WorkerError("unavailable", self.unavailable[1])
        if self.proc is None or self.proc.poll() is not None:
            self._spawn(use_spare=True)
        if not self.ready:
            try:
                msg = self.reader.read(time.monotonic() + self.startup_timeout)
            except WorkerError as e:
                self._restart_later()
                raise WorkerError("unavailable", f"the analysis process did not start: {e.message}") from None
            if not msg.get("ready"):
                self.unavailable = (time.monotonic(), msg.get("error", "analysis unavailable"))
                _kill(self.proc)
                self.proc = None
                raise WorkerError("unavailable", self.unavailable[1])
            self.unavailable = None
            self.ready = True
            if self.spare is None or self.spare.poll() is not None:
                self.spare = spawn(self.python)

    def _restart_later(self) -> None:
        _kill(self.proc)
        self.proc = None
        self.ready = False

    def call(self, request: dict, timeout: float, cancel: Callable[[], bool] | None = None) -> dict:
        """Send one request; return its result dict. Raises WorkerError. `cancel`: polled while
        the request runs; once it returns True the child is asked to stop the request (an
        analysis stops after the trace or after its current compiler pass; the process stays
        warm, with its caches) and WorkerError "cancelled" is raised when it has answered. A
        request still tracing user code `cancel_grace_s` after the cancel (a loop in a kernel
        factory never reaches a check) has its process killed instead of running to the limit."""
        with self.lock:
            self._ensure_ready()
            self._next_id += 1
            rid = self._next_id
            try:
                self._send({**request, "id": rid})
            except OSError:
                self._restart()
                raise WorkerError("crash", "the analysis process died") from None
            limit = time.monotonic() + timeout
            kill_at = None  # set by a cancel while the request is in user code
            traced = False  # the child said the trace is done: it will stop at the next pass
            try:
                while True:
                    if cancel is not None and kill_at is None and cancel():
                        self._send({"op": "cancel", "id": rid})
                        kill_at = time.monotonic() + self.cancel_grace_s
                    deadline = limit if kill_at is None or traced else min(limit, kill_at)
                    step = deadline if cancel is None or kill_at is not None else min(deadline, time.monotonic() + 0.01)
                    try:
                        msg = self.reader.read(step)
                    except WorkerError as e:
                        if e.kind == "timeout" and time.monotonic() < deadline:
                            continue  # a polling step ended: look at `cancel` again
                        if e.kind == "timeout" and kill_at is not None and not traced and time.monotonic() < limit:
                            raise WorkerError("killed", "a stale request did not stop") from None
                        raise
                    if msg.get("id") != rid:
                        continue
                    if "event" in msg:
                        traced = traced or msg["event"] == "traced"
                        continue
                    if msg.get("error", {}).get("type") == "Cancelled":
                        raise WorkerError("cancelled", "a newer version replaced this request")
                    return msg  # finished before the cancel arrived: still a true result for its text
            except WorkerError as e:
                if e.kind != "cancelled":
                    self._restart()
                if e.kind == "killed":
                    raise WorkerError("cancelled", e.message) from None
                raise e from None

    def _send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def _restart(self) -> None:
        self.restarts += 1
        if self.stopped:
            _kill(self.proc)
            self.proc = None
            return
        self._spawn(use_spare=True)  # the spare is warm already; a new spare starts once it is ready

    def restart(self) -> None:
        with self.lock:
            self.unavailable, self.stopped = None, False
            _kill(self.spare)  # fresh imports: the user may have changed tilelang itself
            self.spare = None
            self._spawn()

    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self) -> None:
        """Kill the process now, even while a call waits on it (that call gets a WorkerError)."""
        self.stopped = True
        _kill(self.spare)
        _kill(self.proc)


def run_job(
    python: str | None,
    request: dict,
    timeout: float,
    on_event: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> dict:
    """Run one request in a fresh child process; kill it on timeout or cancel."""
    proc = spawn(python, once=True)
    reader = LineReader(proc)
    deadline = time.monotonic() + timeout
    try:
        msg = reader.read(deadline, cancel)
        if not msg.get("ready"):
            raise WorkerError("unavailable", msg.get("error", "analysis unavailable"))
        if on_event:
            on_event("ready")
        proc.stdin.write((json.dumps({**request, "id": 1}) + "\n").encode())
        proc.stdin.flush()
        while True:
            msg = reader.read(deadline, cancel)
            if "event" in msg:
                if on_event:
                    on_event(msg["event"])
                continue
            return msg
    finally:
        reader.close()
        _kill(proc)


class WorkerPool:
    """A few `Worker`s, so a kernel that hangs until its time limit holds up only the
    document it is in: requests from other documents go to another worker meanwhile.
    Same interface as `Worker` (`call`, `start`, `restart`, `stop`, `pid`)."""

    def __init__(self, size: int = 2, python: str | None = None):
        self.workers = [Worker(python) for _ in range(max(1, size))]
        self.free = list(self.workers)
        self.cond = threading.Condition()
        self.home: dict[str, Worker] = {}  # path -> the worker that analysed it last (its pipeline memo)
        self._warming = False

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def start(self) -> None:
        for w in self.workers:
            w.start()

    def call(self, request: dict, timeout: float, cancel: Callable[[], bool] | None = None) -> dict:
        """On a free worker — the one that served the same file last when it is free (its memo of
        the compiler's runs is there), else the one used most recently."""
        path = request.get("path")
        with self.cond:
            while not self.free:
                self.cond.wait()
            home = self.home.get(path)
            worker = home if home in self.free else self.free[0]
            self.free.remove(worker)
            self.home[path] = worker
            warm_others = not self._warming
            self._warming = True
        if warm_others:  # the other workers (and their spares) get ready now, not when a hang needs them
            threading.Thread(target=self._warm, args=(worker,), daemon=True, name="warm-workers").start()
        try:
            return worker.call(request, timeout, cancel)
        finally:
            with self.cond:
                self.free.insert(0, worker)  # the warm one first
                self.cond.notify()

    def _warm(self, busy: Worker) -> None:
        time.sleep(2.0)  # after the first answer, which needs the CPU more
        for w in self.workers:
            if w is busy:
                continue
            with self.cond:
                if w not in self.free:
                    continue
                self.free.remove(w)
            try:
                w.call({"op": "ping"}, w.startup_timeout)
            except WorkerError:
                pass
            finally:
                with self.cond:
                    self.free.append(w)
                    self.cond.notify()

    def restart(self) -> None:
        for w in self.workers:
            w.restart()

    def pid(self) -> int | None:
        return self.workers[0].pid()

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
