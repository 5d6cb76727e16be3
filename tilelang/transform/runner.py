"""Running a target's pass list with IR dumps and lowering traces.

Requires: a pass list of `def pass_name(func, ctx) -> PrimFunc` and a
`CompileContext` (`transform/context.py`). Guarantees:
every pass runs in order; after each, the printed IR is handed to the
`ctx.trace` callback (used by `tilelang.analysis.lowering_trace`), written
to `<tl.dump_ir_path>/<NN>_<pass>.py` when `tl.enable_dump_ir` is set, and
collected for `TL_LOWER_TRACE=1|html|terminal|both` (an HTML page in
`TL_LOWER_TRACE_DIR`, default `./tl_lower_trace`, and/or stderr). With
`tl.pass_profile` (or `TILELANG_PASS_PROFILE=1`) each pass's time is printed
to stderr at the end, only passes slower than `tl.pass_profile_threshold_ms`
(or `TILELANG_PASS_PROFILE_THRESHOLD_MS`, default 0). The callback sees the
output of every pass, not the input (its caller has that).
"""

from __future__ import annotations

import html
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..ir.function import PrimFunc
from .context import CompileContext


class Pass(NamedTuple):
    """One entry of a target's declared pipeline: the pass and why it is there."""

    run: Callable[[PrimFunc, CompileContext], PrimFunc]
    note: str = ""

    @property
    def name(self) -> str:
        return self.run.__name__


def pass_names(pipeline: tuple) -> list[str]:
    return [p.name for p in pipeline]


def run_pipeline(
    pipeline: tuple,
    func: PrimFunc,
    ctx: CompileContext | None,
    target_name: str,
    stop_after: str | None = None,
    start_after: str | None = None,
) -> PrimFunc:
    """Run the declared `pipeline` (a tuple of `Pass`) on `func` with one PassRunner (dumps,
    traces, profile); with `stop_after`, only up to and including the first pass of that name;
    with `start_after`, only the passes after the first pass of that name (`func` is its output)."""
    names = pass_names(pipeline)
    for name in (stop_after, start_after):
        if name is not None and name not in names:
            raise ValueError(f"no pass named {name!r} in the {target_name} pipeline: {', '.join(names)}")
    run = PassRunner(CompileContext.of(ctx), target_name)
    first = names.index(start_after) + 1 if start_after is not None else 0
    for p in pipeline[first:]:
        func = run(p.run, func)
        if p.name == stop_after:
            break
    run.finish()
    return func


class PassRunner:
    def __init__(self, ctx: CompileContext, target_name: str) -> None:
        self.ctx = ctx = CompileContext.of(ctx)
        self.target_name = target_name
        cfg = ctx.pass_configs
        self.callback = ctx.trace
        self.dump_dir = Path(cfg.get("tl.dump_ir_path", "./dump_ir")) if cfg.get("tl.enable_dump_ir") else None
        self.trace_mode = os.environ.get("TL_LOWER_TRACE", "0").lower()
        self.records: list[tuple[str, float, str]] = []
        self.step = 0
        env_profile = os.environ.get("TILELANG_PASS_PROFILE", "0").lower() in ("1", "true", "yes", "on")
        self.profile = bool(cfg.get("tl.pass_profile")) or env_profile
        self.threshold_ms = float(
            cfg.get("tl.pass_profile_threshold_ms") or os.environ.get("TILELANG_PASS_PROFILE_THRESHOLD_MS") or 0
        )
        self.times: list[tuple[str, float]] = []

    @property
    def collecting(self) -> bool:
        """Printed IR is kept (dumps, TL_LOWER_TRACE): the trace callback alone prints nothing —
        it gets the PrimFunc, and prints it itself if it wants text."""
        return bool(self.dump_dir or self.trace_mode not in ("", "0", "false", "off"))

    def __call__(self, p: Callable[[PrimFunc, CompileContext], PrimFunc], func: PrimFunc) -> PrimFunc:
        if self.step == 0 and self.collecting:  # ir-eq: a counter
            self._record("input", 0.0, func)
        t = time.perf_counter()
        out = p(func, self.ctx)
        self.step += 1
        ms = (time.perf_counter() - t) * 1e3
        if self.profile:
            self.times.append((p.__name__, ms))
        if self.collecting:
            self._record(p.__name__, ms, out)
        if self.callback:
            self.callback(p.__name__, out)
        return out

    def _record(self, name: str, ms: float, func: PrimFunc) -> None:
        text = func.script()
        self.records.append((name, ms, text))
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            (self.dump_dir / f"{len(self.records) - 1:02d}_{name}.py").write_text(text + "\n")

    def finish(self) -> None:
        if self.profile and self.times:
            total = sum(ms for _, ms in self.times)
            lines = [f"  {name:<28} {ms:9.3f} ms" for name, ms in self.times if ms >= self.threshold_ms]
            print(f"[tilelang] pass profile ({self.target_name}, {total:.3f} ms total):", file=sys.stderr)
            print("\n".join(lines) or f"  (no pass slower than {self.threshold_ms} ms)", file=sys.stderr)
        mode = self.trace_mode
        if mode in ("", "0", "false", "off") or not self.records:
            return
        if mode in ("terminal", "both"):
            for name, ms, text in self.records:
                print(f"===== {name} ({ms:.2f} ms) =====\n{text}", file=sys.stderr)
        if mode in ("1", "true", "on", "html", "both"):
            out = Path(os.environ.get("TL_LOWER_TRACE_DIR", "./tl_lower_trace"))
            out.mkdir(parents=True, exist_ok=True)
            func_name = self.records[0][2].split("def ", 1)[-1].split("(", 1)[0]
            (out / f"{func_name}.{self.target_name}.html").write_text(render_html(func_name, self.records))


def render_html(title: str, records: list[tuple[str, float, str]]) -> str:
    parts = [f"<html><head><meta charset='utf-8'><title>{html.escape(title)} lowering trace</title></head><body>"]
    parts.append(f"<h1>{html.escape(title)}</h1><ol>")
    for i, (name, ms, _) in enumerate(records):
        parts.append(f"<li><a href='#p{i}'>{html.escape(name)}</a> ({ms:.2f} ms)</li>")
    parts.append("</ol>")
    for i, (name, ms, text) in enumerate(records):
        parts.append(f"<h2 id='p{i}'>{i}. {html.escape(name)} ({ms:.2f} ms)</h2><pre>{html.escape(text)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


def format_trace(records: list[tuple[str, float, str]]) -> str:
    """Plain-text trace (what the editor's "Show lowering trace" opens)."""
    return "\n\n".join(f"# ===== {i}. {name} ({ms:.2f} ms) =====\n{text}" for i, (name, ms, text) in enumerate(records))
