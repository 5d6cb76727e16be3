"""The process that runs `tilelang.analysis` on behalf of the server.

Speaks JSON lines: one request per line on stdin, one or more messages per
request on the protocol channel (a private copy of the original stdout).
User code that prints writes to stderr instead, and cannot read our stdin.

    python -m tilelang_lsp.child          persistent worker (analysis requests)
    python -m tilelang_lsp.child --once   one request, then exit (compile / benchmark jobs)

Request:  {"id": n, "op": "analyze"|"generate"|"trace"|"benchmark"|"tuning"|"ping", "source", "path",
           "function", "target", "bindings": "<python literal>", "trust": "kernels"|"workspace"}
          {"op": "cancel", "id": n}: stop request n (an analysis stops after its current pass and
          answers {"id": n, "error": {"type": "Cancelled"}}); a cancel for a finished request is ignored.
Replies:  {"ready": true} once tilelang is imported (or {"ready": false, "error": ...}),
          {"id": n, "event": "..."} progress (an analysis: "traced" once user code is done), then {"id": n, "result": {...}} or
          {"id": n, "error": {"type", "message", "line", "col"}}.
Only the standard library and `tilelang.analysis` are imported here.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback


def _channel():
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    inp = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(2, 1)  # user prints -> stderr
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # user code cannot eat our requests
    sys.stdout = sys.stderr
    return inp, out


def _jsonable(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def handle(analysis, req: dict, send, cancelled: threading.Event | None = None) -> None:
    rid = req.get("id")
    op = req.get("op")
    if op == "ping":
        send({"id": rid, "result": {"pid": os.getpid()}})
        return
    if op == "tuning":  # reads the autotuner's cache (JSON under its trust rules); runs no user code
        try:
            from tilelang.autotuner.lookup import best_config

            send({"id": rid, "result": best_config(req["source"], req["path"], req["function"])})
        except Exception as e:  # noqa: BLE001
            send({"id": rid, "error": {"type": type(e).__name__, "message": str(e)}})
        return
    fn = {
        "analyze": "analyze_function",
        "generate": "generate_source",
        "trace": "lowering_trace",
        "benchmark": "benchmark",
    }.get(op)
    if fn is None:
        send({"id": rid, "error": {"type": "ValueError", "message": f"unknown op {op!r}"}})
        return
    send({"id": rid, "event": "started"})
    try:
        bindings = ast.literal_eval(req.get("bindings") or "{}")
        from tilelang.analysis import source as _source

        extra = {"build_source": True} if op == "analyze" and req.get("build_source") else {}
        if op == "analyze" and cancelled is not None:
            extra["should_stop"] = _stop_check(rid, cancelled, send)
        with _source.trust(req.get("trust") or "kernels"):
            result = getattr(analysis, fn)(
                req["source"],
                req["path"],
                req["function"],
                target=req.get("target", "sm_90a"),
                bindings=bindings,
                **extra,
            )
    except _cancelled_type():
        send({"id": rid, "error": {"type": "Cancelled", "message": "cancelled"}})
        return
    except SyntaxError as e:
        err = {"type": "SyntaxError", "message": e.msg or str(e), "line": e.lineno, "col": (e.offset or 1) - 1}
        send({"id": rid, "error": err})
        return
    except Exception as e:  # noqa: BLE001 - everything user code raises is reported, never fatal
        tb = traceback.extract_tb(e.__traceback__)
        line = next((f.lineno for f in reversed(tb) if f.filename == req["path"]), None)
        msg = f"{type(e).__name__}: {e}"
        send(
            {
                "id": rid,
                "error": {"type": type(e).__name__, "message": msg, "line": line, "trace": traceback.format_exc()},
            }
        )
        return
    send({"id": rid, "result": _jsonable(result)})


def _stop_check(rid, cancelled: threading.Event, send):
    """The analysis's `should_stop`: first polled when the trace is done, which the server is
    told (from then on a cancel is honoured at the next pass, so the process need not be killed)."""
    told = []

    def should_stop() -> bool:
        if not told:
            told.append(True)
            send({"id": rid, "event": "traced"})
        return cancelled.is_set()

    return should_stop


def _cancelled_type() -> type[BaseException]:
    from tilelang.analysis.compiled import AnalysisCancelled

    return AnalysisCancelled


class Requests:
    """Requests read by a thread of their own, so that a cancel for the running request is seen
    while it runs (it sets `cancelled`, which the analysis polls between passes)."""

    def __init__(self, inp) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.running: int | None = None
        self.cancelled = threading.Event()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=(inp,), daemon=True, name="requests").start()

    def _read(self, inp) -> None:
        for line in inp:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if req.get("op") == "cancel":
                with self.lock:
                    if req.get("id") == self.running:
                        self.cancelled.set()
                continue
            self.queue.put(req)
        self.queue.put(None)

    def next(self) -> dict | None:
        req = self.queue.get()
        with self.lock:
            self.running = req.get("id") if req else None
            self.cancelled.clear()
        return req


class CpuLimitExceeded(Exception):
    pass


class Limits:
    """Memory and CPU limits for the code a request traces (kernel factories and bodies).

    Memory: the address space may grow by `TILELANG_ANALYSIS_MEMORY_MB` (default 1024) over
    what this process holds once tilelang is imported (RLIMIT_AS; an allocation past it
    raises MemoryError, reported as the request's error). CPU: each request may use
    `TILELANG_ANALYSIS_CPU_S` seconds (default 20; RLIMIT_CPU's soft limit, moved for
    every request; SIGXCPU becomes an error reply). 0 turns a limit off. The server's
    wall-clock time limit applies on top, and kills the whole process group."""

    def __init__(self, memory_mb: float, cpu_s: float) -> None:
        import resource

        self.resource = resource
        self.cpu_s = cpu_s
        if memory_mb > 0:
            held = _address_space_bytes()
            if held is not None:
                limit = held + int(memory_mb * 2**20)
                _, hard = resource.getrlimit(resource.RLIMIT_AS)
                if hard != resource.RLIM_INFINITY:
                    limit = min(limit, hard)
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        if cpu_s > 0:
            signal.signal(signal.SIGXCPU, self._on_xcpu)

    @classmethod
    def from_env(cls) -> Limits:
        def num(name: str, default: float) -> float:
            try:
                return float(os.environ.get(name, "") or default)
            except ValueError:
                return default

        return cls(num("TILELANG_ANALYSIS_MEMORY_MB", 1024), num("TILELANG_ANALYSIS_CPU_S", 20))

    def _on_xcpu(self, signum, frame):
        self._lift()  # no second signal while the error unwinds
        raise CpuLimitExceeded(f"the traced code used more than {self.cpu_s:g} s of CPU time")

    def _lift(self) -> None:
        r = self.resource
        r.setrlimit(r.RLIMIT_CPU, (r.RLIM_INFINITY, r.getrlimit(r.RLIMIT_CPU)[1]))

    def __enter__(self) -> Limits:
        if self.cpu_s > 0:
            r = self.resource
            used = r.getrusage(r.RUSAGE_SELF)
            soft = int(used.ru_utime + used.ru_stime + self.cpu_s) + 1
            hard = r.getrlimit(r.RLIMIT_CPU)[1]
            r.setrlimit(r.RLIMIT_CPU, (soft if hard == r.RLIM_INFINITY else min(soft, hard), hard))
        return self

    def __exit__(self, *exc) -> None:
        if self.cpu_s > 0:
            self._lift()


def _address_space_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _exit_with_parent() -> None:
    """A hanging trace would outlive a server that was killed: leave when the parent is gone,
    taking along every process the traced code started (this process leads their group)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _exit_with_parent()
    inp, out = _channel()

    def send(msg):
        out.write(json.dumps(msg) + "\n")
        out.flush()

    try:
        import tilelang.analysis as analysis

        if not hasattr(analysis, "analyze_function"):
            raise ImportError("tilelang.analysis has no analyze_function")
        if "--once" not in argv and hasattr(analysis, "warm_up"):
            analysis.warm_up()  # the pipeline's modules and first-run caches, before the first request
    except Exception as e:  # noqa: BLE001
        send({"ready": False, "error": f"cannot import tilelang.analysis: {type(e).__name__}: {e}"})
        return 1
    # compile / benchmark jobs (--once) run nvcc and the GPU, which need far more address space
    # than tracing does; they are bounded by the server's time limit and killed with their group
    limits = Limits.from_env() if "--once" not in argv else contextlib.nullcontext()
    send({"ready": True, "pid": os.getpid()})
    requests = Requests(inp)
    while (req := requests.next()) is not None:
        with limits:
            handle(analysis, req, send, requests.cancelled)
        if "--once" in argv:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
