"""The process that runs `tilelang.analysis` on behalf of the server.

Speaks JSON lines: one request per line on stdin, one or more messages per
request on the protocol channel (a private copy of the original stdout).
User code that prints writes to stderr instead, and cannot read our stdin.

    python -m tilelang_lsp.child          persistent worker (analysis requests)
    python -m tilelang_lsp.child --once   one request, then exit (compile / benchmark jobs)

Request:  {"id": n, "op": "analyze"|"generate"|"benchmark"|"ping", "source", "path",
           "function", "target", "bindings": "<python literal>"}
Replies:  {"ready": true} once tilelang is imported (or {"ready": false, "error": ...}),
          {"id": n, "event": "..."} progress, then {"id": n, "result": {...}} or
          {"id": n, "error": {"type", "message", "line", "col"}}.
Only the standard library and `tilelang.analysis` are imported here.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
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


def handle(analysis, req: dict, send) -> None:
    rid = req.get("id")
    op = req.get("op")
    if op == "ping":
        send({"id": rid, "result": {"pid": os.getpid()}})
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
        result = getattr(analysis, fn)(
            req["source"], req["path"], req["function"], target=req.get("target", "sm_90a"), bindings=bindings
        )
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


def _exit_with_parent() -> None:
    """A hanging trace would outlive a server that was killed: leave when the parent is gone."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
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
    except Exception as e:  # noqa: BLE001
        send({"ready": False, "error": f"cannot import tilelang.analysis: {type(e).__name__}: {e}"})
        return 1
    send({"ready": True, "pid": os.getpid()})
    for line in inp:
        if not line.strip():
            continue
        handle(analysis, json.loads(line), send)
        if "--once" in argv:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
