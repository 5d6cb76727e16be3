"""Analyse a whole document: find its kernels, ask the worker about the changed ones.

Results are plain dicts shaped like `tilelang.analysis.model` (the worker sends
`KernelInfo` as JSON), so the server process never imports the compiler.
A function's result is cached by (its source text, the module context it reads,
its bindings, target, path); when only its position changed, the cached
locations are shifted instead of re-analysing.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from .bindings import KernelFunction, analyze_module
from .measure import Measurements
from .worker import Worker, WorkerError


@dataclass
class FunctionResult:
    fn: KernelFunction
    info: dict | None  # KernelInfo as a dict, locations in current document lines
    diagnostics: list[dict] = field(default_factory=list)  # model-shaped Diagnostic dicts (incl. worker failures)


@dataclass
class DocResult:
    version: int | None
    syntax: dict | None = None  # a Diagnostic dict when the module does not parse
    functions: list[FunctionResult] = field(default_factory=list)

    def function_at(self, line1: int) -> FunctionResult | None:
        return next((f for f in self.functions if f.fn.start_line <= line1 <= f.fn.end_line), None)

    def function_named(self, name: str) -> FunctionResult | None:
        return next((f for f in self.functions if f.fn.name == name), None)


def loc(line: int, col: int = 0, end_line: int | None = None, end_col: int | None = None) -> dict:
    return {"line": line, "col": col, "end_line": end_line or line, "end_col": col + 1 if end_col is None else end_col}


def diagnostic(severity: str, message: str, where: dict, code: str) -> dict:
    return {"severity": severity, "message": message, "loc": where, "code": code, "related": []}


def shift_locs(obj, delta: int):
    """Copy of `obj` with every Loc-shaped dict moved by `delta` lines."""
    if isinstance(obj, dict):
        out = {k: shift_locs(v, delta) for k, v in obj.items()}
        if isinstance(out.get("line"), int) and "end_line" in out:
            out["line"] += delta
            if isinstance(out["end_line"], int):
                out["end_line"] += delta
        return out
    if isinstance(obj, list):
        return [shift_locs(v, delta) for v in obj]
    return obj


class Analyzer:
    """Per-function cache in front of one `Worker`."""

    def __init__(self, worker: Worker, max_entries: int = 512):
        self.worker = worker
        self.cache: OrderedDict[tuple, tuple[int, dict | None, list[dict], float | None]] = OrderedDict()
        self.max_entries = max_entries
        self.lock = threading.Lock()
        self.analysed = 0  # functions sent to the worker (for tests / stats)
        self.failure_ttl = 30.0  # seconds a timeout / crash result is trusted for unchanged code
        self.measurements: Measurements | None = None  # background ptxas (measure.py), set by the server

    def clear(self) -> None:
        with self.lock:
            self.cache.clear()

    def forget_failures(self) -> None:
        with self.lock:
            for key in [k for k, v in self.cache.items() if v[3] is not None]:
                del self.cache[key]

    def analyse(
        self,
        path: str,
        text: str,
        version: int | None,
        target: str,
        timeout_s: float,
        stale: Callable[[], bool] = lambda: False,
    ) -> DocResult | None:
        """Blocking; returns None when `stale()` became true midway."""
        try:
            functions = analyze_module(text)
        except SyntaxError as e:
            line = e.lineno or 1
            where = loc(line, max((e.offset or 1) - 1, 0))
            return DocResult(version, syntax=diagnostic("error", f"syntax error: {e.msg}", where, "syntax"))
        except (RecursionError, ValueError, MemoryError) as e:
            return DocResult(version, syntax=diagnostic("error", f"cannot parse: {e}", loc(1), "syntax"))
        lines = text.splitlines()
        result = DocResult(version)
        for fn in functions:
            if stale():
                return None
            result.functions.append(self._one(fn, lines, path, text, target, timeout_s))
        return result

    def _one(self, fn: KernelFunction, lines: list[str], path: str, text: str, target: str, timeout_s: float):
        body = "\n".join(lines[fn.start_line - 1 : fn.end_line])
        key = (body, fn.context, repr(sorted(fn.bindings.items())), target, path, fn.start_line - fn.def_line)
        with self.lock:
            hit = self.cache.get(key)
            if hit is not None and hit[3] is not None and time.monotonic() > hit[3]:
                hit = None  # a timeout or crash is retried after a while: the machine may just have been busy
            if hit is not None:
                self.cache.move_to_end(key)
        if hit is None:
            info, diags = self._ask(fn, path, text, target, timeout_s)
            if self.measurements is not None:
                self.measurements.attach(f"{path}::{fn.name}", info)  # ptxas replaces the estimate
            codes = {d["code"] for d in diags}
            if "unavailable" not in codes:
                expires = time.monotonic() + self.failure_ttl if codes & {"timeout", "crash"} else None
                with self.lock:
                    self.cache[key] = (fn.def_line, info, diags, expires)
                    while len(self.cache) > self.max_entries:
                        self.cache.popitem(last=False)
            return FunctionResult(fn, info, diags)
        delta = fn.def_line - hit[0]
        return FunctionResult(fn, shift_locs(hit[1], delta), shift_locs(hit[2], delta))  # shift_locs copies

    def _ask(self, fn: KernelFunction, path: str, text: str, target: str, timeout_s: float):
        request = {
            "op": "analyze", "source": text, "path": path, "function": fn.name,
            "target": target, "bindings": repr(fn.bindings),
            "build_source": self.measurements is not None and self.measurements.enabled,
        }  # fmt: skip
        where = loc(fn.def_line, 0, fn.def_line, 4 + len(fn.name))
        self.analysed += 1
        try:
            msg = self.worker.call(request, timeout_s)
        except WorkerError as e:
            if e.kind == "timeout":
                m = f"analysis of `{fn.name}` took longer than {timeout_s * 1000:.0f} ms and was stopped (does the kernel loop forever at trace time?); tilelang.analysis.timeoutMs sets the limit"
                return None, [diagnostic("error", m, where, "timeout")]
            if e.kind == "crash":
                m = f"the analysis process crashed while tracing `{fn.name}` ({e.message}); it was restarted"
                return None, [diagnostic("error", m, where, "crash")]
            return None, [diagnostic("warning", f"tilelang analysis unavailable: {e.message}", where, "unavailable")]
        if "result" in msg:
            return msg["result"], []
        err = msg.get("error", {})
        if err.get("type") == "SyntaxError":
            return None, [
                diagnostic(
                    "error",
                    err.get("message", "syntax error"),
                    loc(err.get("line") or fn.def_line, err.get("col") or 0),
                    "syntax",
                )
            ]
        at = loc(err["line"]) if err.get("line") and fn.start_line <= err["line"] <= fn.end_line else where
        return None, [diagnostic("error", f"analysis failed: {err.get('message', 'unknown error')}", at, "crash")]
