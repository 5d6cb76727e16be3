"""Analyse a whole document: find its kernels, ask the worker about the changed ones.

Results are plain dicts shaped like `tilelang.analysis.model` (the worker sends
`KernelInfo` as JSON), so the server process never imports the compiler.
The document is parsed once per version (regions.parse_document); a kernel's result is
cached by (its source text, the module statements it reads, its bindings, target, trust,
path); when only its position changed, the cached locations are shifted instead of
re-analysing. The worker gets only the kernel and the statements it reads (other lines
blank), so its cost does not grow with the file. With trust "none" nothing is sent to
the worker: the hints are static (static_hints.py).
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from .bindings import KernelFunction, Module, alternative_bindings, analyze_document
from .measure import Measurements
from .regions import ParsedDoc, parse_document
from .static_hints import static_info
from .worker import Worker, WorkerError


@dataclass
class FunctionResult:
    fn: KernelFunction
    info: dict | None  # KernelInfo as a dict, locations in current document lines
    diagnostics: list[dict] = field(default_factory=list)  # model-shaped Diagnostic dicts (incl. worker failures)
    stale: str = ""  # why `info` is an earlier version's (the kernel does not parse / has an error now)


@dataclass
class DocResult:
    version: int | None
    syntax: dict | None = None  # a Diagnostic dict when the module does not parse
    functions: list[FunctionResult] = field(default_factory=list)
    broken: dict[str, tuple[int, int]] = field(
        default_factory=dict
    )  # kernel name -> (def line, end) in an unparsable region

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


_DEF = re.compile(r"^(?:async\s+)?def\s+([A-Za-z_]\w*)")
_UNRESOLVED = re.compile(r"name '(\w+)' is not defined")
FRONTEND_CODES = {"dsl-error", "unresolved", "syntax", "crash"}


def _broken_kernels(doc: ParsedDoc) -> dict[str, tuple[int, int]]:
    """Functions defined at column 0 inside regions that were blanked for not parsing."""
    lines = doc.text.splitlines()
    out = {}
    for a, b in doc.broken:
        for ln in range(a, b + 1):
            m = _DEF.match(lines[ln - 1]) if ln <= len(lines) else None
            if m:
                out.setdefault(m.group(1), (ln, b))
    return out


def shifted(fn: KernelFunction, def_line: int, end_line: int) -> KernelFunction:
    d = def_line - fn.def_line
    return dataclasses.replace(fn, start_line=fn.start_line + d, def_line=def_line, end_line=end_line)


class Analyzer:
    """Per-kernel cache in front of one `Worker`."""

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
        trust: str = "kernels",
        latest_text: Callable[[], str] | None = None,
    ) -> DocResult | None:
        """Blocking; returns None when `stale()` became true midway. With `latest_text` (the
        document's newest text), a kernel whose analysis is running when its own text changed
        has that analysis stopped (the worker stays warm) instead of waiting for it."""
        doc = parse_document(text)
        result = DocResult(version)
        if doc.syntax is not None:
            e = doc.syntax
            where = loc(e.lineno or 1, max((e.offset or 1) - 1, 0))
            result.syntax = diagnostic("error", f"syntax error: {e.msg}", where, "syntax")
            result.broken = _broken_kernels(doc)
        try:
            functions = analyze_document(doc)
        except (RecursionError, ValueError, MemoryError) as e:
            result.syntax = result.syntax or diagnostic("error", f"cannot parse: {e}", loc(1), "syntax")
            return result
        module = Module(doc.tree) if trust == "none" and functions else None
        lines = text.splitlines()
        kernel_nodes = {id(f.node) for f in functions}
        for fn in functions:
            if stale():
                return None
            if module is not None:
                result.functions.append(FunctionResult(fn, static_info(fn, module.env, module.lang_aliases)))
                continue
            cancel = _edited(fn, lines, stale, latest_text)
            try:
                result.functions.append(self._one(fn, doc, lines, path, target, timeout_s, trust, kernel_nodes, cancel))
            except _Cancelled:
                return None
        return result

    def _one(
        self, fn, doc: ParsedDoc, lines, path, target, timeout_s, trust, kernel_nodes, cancel=None
    ) -> FunctionResult:
        body = "\n".join(lines[fn.start_line - 1 : fn.end_line])
        if trust == "workspace":  # every top-level statement but the kernels may matter
            context = "\n".join(doc.segment(st) for st in doc.stmts if id(st.node) not in kernel_nodes)
            source = doc.full_source
        else:
            context = fn.context
            source = lambda: doc.request_source(fn.node, fn.start_line, fn.end_line)  # noqa: E731 - built on a miss only
        info, diags = self._cached(fn, fn.bindings, body, context, source, path, target, timeout_s, trust, cancel)
        info, diags = self._judge(fn, doc, info, diags, body, context, source, path, target, timeout_s, trust, cancel)
        return FunctionResult(fn, info, diags)

    def _cached(self, fn, bindings, body, context, source, path, target, timeout_s, trust, cancel=None):
        key = (body, context, repr(sorted(bindings.items())), target, trust, path, fn.start_line - fn.def_line)
        with self.lock:
            hit = self.cache.get(key)
            if hit is not None and hit[3] is not None and time.monotonic() > hit[3]:
                hit = None  # a timeout or crash is retried after a while: the machine may just have been busy
            if hit is not None:
                self.cache.move_to_end(key)
        if hit is None:
            info, diags = self._ask(fn, bindings, source, path, target, timeout_s, trust, cancel)
            if self.measurements is not None:
                self.measurements.attach(f"{path}::{fn.name}", info)  # ptxas replaces the estimate
            codes = {d["code"] for d in diags}
            if "unavailable" not in codes:
                expires = time.monotonic() + self.failure_ttl if codes & {"timeout", "crash"} else None
                with self.lock:
                    self.cache[key] = (fn.def_line, info, diags, expires)
                    while len(self.cache) > self.max_entries:
                        self.cache.popitem(last=False)
            return shift_locs(info, 0), shift_locs(diags, 0)
        delta = fn.def_line - hit[0]
        return shift_locs(hit[1], delta), shift_locs(hit[2], delta)  # shift_locs copies

    def _judge(self, fn, doc, info, diags, body, context, source, path, target, timeout_s, trust, cancel=None):
        """No false errors: a name that module code defines (not run under trust "kernels") is an
        info note, and an error that goes away with other assumed values is a hint-level note."""
        for d in list((info or {}).get("diagnostics") or []) + diags:
            m = _UNRESOLVED.search(d["message"]) if d.get("code") == "unresolved" else None
            if m and m.group(1) in doc.top_level_names() and trust != "workspace":
                d["severity"] = "info"
                d["message"] = (
                    f"`{m.group(1)}` is set by module-level code, which the analysis does not run "
                    'with tilelang.analysis.trust = "kernels"; set it to "workspace" to resolve it'
                )
        errors = [  # warnings too: a register-pressure warning may come from an assumed size alone
            d
            for d in _all(info, diags)
            if d.get("severity") in ("error", "warning") and d.get("code") not in ("timeout", "unavailable", "crash")
        ]
        if not errors or not fn.assumed:
            return info, diags
        alt = alternative_bindings(fn)
        if alt is None:
            return info, diags
        alt_info, alt_diags = self._cached(fn, alt, body, context, source, path, target, timeout_s, trust, cancel)
        persists = {
            (d.get("code"), d["loc"]["line"])
            for d in _all(alt_info, alt_diags)
            if d.get("severity") in ("error", "warning")
        }
        assumed = ", ".join(f"{k}={fn.bindings[k]!r}" for k in fn.assumed)
        for d in errors:
            if (d.get("code"), d["loc"]["line"]) not in persists:
                d["severity"] = "hint"
                d["message"] = (
                    f"with assumed values ({assumed}): {d['message']} — it does not happen with other values; write the real ones in a call site or a `# tilelang:` comment"
                )
        return info, diags

    def _ask(
        self,
        fn: KernelFunction,
        bindings: dict,
        source: str,
        path: str,
        target: str,
        timeout_s: float,
        trust: str,
        cancel: Callable[[], bool] | None = None,
    ):
        request = {
            "op": "analyze", "source": source(), "path": path, "function": fn.name,
            "target": target, "bindings": repr(bindings), "trust": trust,
            "build_source": self.measurements is not None and self.measurements.enabled,
        }  # fmt: skip
        where = loc(fn.def_line, 0, fn.def_line, 4 + len(fn.name))
        self.analysed += 1
        try:
            msg = self.worker.call(request, timeout_s, cancel)
        except WorkerError as e:
            if e.kind == "cancelled":
                raise _Cancelled from None
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


class _Cancelled(Exception):
    """The kernel's analysis was stopped: its text changed while it ran (nothing is cached)."""


def _edited(fn: KernelFunction, lines: list[str], stale, latest_text) -> Callable[[], bool] | None:
    """Whether the kernel's own text changed since this pass began (a newer version exists and
    no longer holds the kernel's lines verbatim); an edit elsewhere lets its analysis finish."""
    if latest_text is None:
        return None
    lines_of_body = "\n" + "\n".join(lines[fn.start_line - 1 : fn.end_line]) + "\n"  # whole lines only
    return lambda: stale() and lines_of_body not in "\n" + latest_text() + "\n"


def _all(info: dict | None, diags: list[dict]) -> list[dict]:
    return list((info or {}).get("diagnostics") or []) + diags
