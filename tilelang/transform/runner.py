"""Running a target's pass list with IR dumps and lowering traces.

Requires: a pass list of `def pass_name(func, ctx) -> PrimFunc` and a
`CompileContext` (`transform/context.py`). Guarantees:
every pass runs in order; after each, the printed IR is handed to the
`ctx.trace` callback (used by `tilelang.analysis.lowering_trace`), written
to `<tl.dump_ir_path>/<NN>_<pass>.py` when `tl.enable_dump_ir` is set, and
collected for `TL_LOWER_TRACE=1|html|terminal|both` (an HTML page in
`TL_LOWER_TRACE_DIR`, default `./tl_lower_trace`, and/or diffs on stderr;
tilelang.tools.lower_trace renders them, the backend adds the generated source). With
`tl.pass_profile` (or `TILELANG_PASS_PROFILE=1`) each pass's time is printed
to stderr at the end, only passes slower than `tl.pass_profile_threshold_ms`
(or `TILELANG_PASS_PROFILE_THRESHOLD_MS`, default 0); `tools.pass_timing`
(and `TL_PASS_TIMING=1`) gets every compile's times. The callback sees the
output of every pass, not the input (its caller has that). While a pass of a
function with buffer views runs, `view_alias.current_roots()` maps each view to
its base, so access summaries (`inject_sync.collect_accesses`) in any pass see
a view's accesses as its base's.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ..ir.function import PrimFunc
from ..ir.printer import func_lines
from ..tools import pass_timing
from ..tools.lower_trace import trace_mode, write_env_trace
from . import view_alias
from .context import CompileContext

LAST_TRACE = threading.local()  # .runner: the PassRunner that finished last in this thread


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
        self.trace_mode = trace_mode()
        self.stages: list = []  # tools.lower_trace.Stage per pass: the IR with its source lines
        self.func_name, self.source_file = "", ""
        self.step = 0
        self.has_views = False
        env_profile = os.environ.get("TILELANG_PASS_PROFILE", "0").lower() in ("1", "true", "yes", "on")
        self.print_profile = bool(cfg.get("tl.pass_profile")) or env_profile
        self.profile = self.print_profile or pass_timing.collecting()
        self.threshold_ms = float(
            cfg.get("tl.pass_profile_threshold_ms") or os.environ.get("TILELANG_PASS_PROFILE_THRESHOLD_MS") or 0
        )
        self.times: list[tuple[str, float]] = []

    @property
    def collecting(self) -> bool:
        """Printed IR is kept (dumps, TL_LOWER_TRACE): the trace callback alone prints nothing —
        it gets the PrimFunc, and prints it itself if it wants text."""
        return bool(self.dump_dir or self.trace_mode)

    def __call__(self, p: Callable[[PrimFunc, CompileContext], PrimFunc], func: PrimFunc) -> PrimFunc:
        if self.step == 0:  # ir-eq: a counter
            self.func_name, self.source_file = func.name, func.span.file if func.span is not None else ""
            self.has_views = bool(view_alias.view_allocs(func.body))  # none appear later if none are traced
            if self.collecting:
                self._record("input", 0.0, func)
        t = time.perf_counter()
        with view_alias.roots_in_force(view_alias.roots_or_empty(func) if self.has_views else {}):
            out = p(func, self.ctx)  # any pass summarising accesses (collect_accesses) sees views as their bases
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
        from ..tools.lower_trace import Stage

        text, sources = func_lines(func)
        self.stages.append(Stage(name, ms, text, tuple(sources)))
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            (self.dump_dir / f"{len(self.stages) - 1:02d}_{name}.py").write_text(text + "\n")

    def finish(self) -> None:
        if self.times:
            pass_timing.record(self.func_name, self.target_name, self.times)
        if self.print_profile and self.times:
            total = sum(ms for _, ms in self.times)
            lines = [f"  {name:<28} {ms:9.3f} ms" for name, ms in self.times if ms >= self.threshold_ms]
            print(f"[tilelang] pass profile ({self.target_name}, {total:.3f} ms total):", file=sys.stderr)
            print("\n".join(lines) or f"  (no pass slower than {self.threshold_ms} ms)", file=sys.stderr)
        if self.stages and self.trace_mode:
            write_env_trace(self.func_name, self.target_name, self.stages, self.source_file)
            LAST_TRACE.runner = self  # the backend adds the generated source (tools.lower_trace)
