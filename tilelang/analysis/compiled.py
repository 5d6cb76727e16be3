"""Running the target's own pipeline for the analysis: what the compiler did to one traced kernel.

Requires: a traced PrimFunc, a target and the kernel's pass configs. Guarantees: the passes run
are exactly the target's declared `PASSES` (`backend/<kind>/pipeline.py`) with the options a
build uses (`jit.kernel.compile_options`: the function's own pass configs merged with the
caller's), stopped after the pipeline's `ANALYSIS_STOP` — nothing is re-derived here. When a pass
raises, the IR after the last pass that ran is kept with the error, so the editor shows what was
decided before it (and the compiler's own error, at its span).
"""

from __future__ import annotations

import importlib
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backend.target import Target, parse
from ..ir.decisions import Decisions, decisions_of
from ..ir.function import PrimFunc
from ..ir.node import spans_in_walk_order
from ..transform.context import CompileContext


class AnalysisCancelled(BaseException):
    """Raised between passes when the caller's `should_stop()` became true (a newer version of
    the kernel is waiting). A BaseException: no `except Exception` of a pass or of traced user
    code swallows it."""


@dataclass
class Compiled:
    target: Target
    pass_configs: dict
    outputs: dict = field(default_factory=dict)  # pass name -> its output (first run of that name)
    last: PrimFunc | None = None  # the IR after the last pass that ran
    last_pass: str = ""
    error: BaseException | None = None  # what stopped the pipeline early (None: it reached the stop)
    failed_pass: str = ""
    complete: bool = False  # every pass up to ANALYSIS_STOP ran

    @property
    def decisions(self) -> Decisions:
        return decisions_of(self.last)

    def after(self, name: str) -> PrimFunc | None:
        return self.outputs.get(name)


def build_source(compiled: Compiled) -> dict | None:
    """The CUDA source a build of this kernel compiles: the rest of the declared pipeline after
    `ANALYSIS_STOP`, then the code generator — {"source", "arch", "entry", "threads", "smem"};
    None when the pipeline did not complete or the target is not CUDA."""
    if not compiled.complete or compiled.target.kind != "cuda" or compiled.last is None:
        return None
    from ..backend.cuda import pipeline
    from ..backend.cuda.codegen import generate

    ctx = CompileContext(compiled.target, compiled.pass_configs)
    lowered = pipeline.run_pipeline(pipeline.PASSES, compiled.last, ctx, "cuda", start_after=pipeline.ANALYSIS_STOP)
    src = generate(lowered)
    return {"source": src.source, "arch": compiled.target.arch, "entry": src.entry, "threads": src.threads,
            "smem": src.smem_bytes}  # fmt: skip


def target_of_spec(target: Any) -> Target:
    """The analysis's target names ("sm_90a", "hip:gfx942", "c", "cuda -arch=sm_90a -sm_count=132",
    a dict or a Target) as one resolved Target."""
    if isinstance(target, str) and target.startswith("sm_") and " " not in target:
        return parse({"kind": "cuda", "arch": target})
    return parse(target)


def ir_fingerprint(func: PrimFunc) -> str:
    """The printed IR (what the kernel cache keys on) and every node's span, in walk order: two
    traces with the same fingerprint are interchangeable — same structure, same source positions
    — so one's pipeline output (and every location read from it) is the other's."""
    spans = [(s.file, s.line, s.col, s.end_line, s.end_col) for s in spans_in_walk_order(func)]
    return func.script() + "\n" + repr(spans)


# fingerprint, target, pass configs -> (the traced func the pipeline ran on, its Compiled, build source)
_MEMO: OrderedDict[tuple, list] = OrderedDict()
_MEMO_ENTRIES = 32


def pipeline_for_analysis(
    func: PrimFunc,
    target: Any,
    pass_configs: dict | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[PrimFunc, Compiled, dict]:
    """`run_pipeline_for_analysis`, memoised by `ir_fingerprint`: an edit that leaves the traced IR
    as it was (a comment, blank lines elsewhere, an undo) re-reads the earlier run instead of
    lowering again. Returns (the func to read the report from — the earlier trace on a hit, whose
    buffers are the ones the pipeline outputs name —, the Compiled, a dict for results derived
    from it, e.g. the build source). Raises AnalysisCancelled when `should_stop()` turns true."""
    key = (ir_fingerprint(func), repr(target), json.dumps(pass_configs or {}, sort_keys=True, default=str))
    hit = _MEMO.get(key)
    if hit is not None:
        _MEMO.move_to_end(key)
        return hit[0], hit[1], hit[2]
    compiled = run_pipeline_for_analysis(func, target, pass_configs, should_stop)
    _MEMO[key] = [func, compiled, {}]
    while len(_MEMO) > _MEMO_ENTRIES:
        _MEMO.popitem(last=False)
    return func, compiled, _MEMO[key][2]


def run_pipeline_for_analysis(
    func: PrimFunc, target: Any, pass_configs: dict | None = None, should_stop: Callable[[], bool] | None = None
) -> Compiled:
    from ..jit.kernel import compile_options

    tgt = target_of_spec(target)
    try:
        pipeline = importlib.import_module(f"tilelang.backend.{tgt.kind}.pipeline")
    except ModuleNotFoundError:
        from ..errors import UnsupportedError

        return Compiled(tgt, dict(pass_configs or {}), last=func, error=UnsupportedError(
            f"the {tgt.kind!r} backend is not available in this build of tilelang", None))  # fmt: skip
    options = compile_options(func, pass_configs, None)
    out = Compiled(tgt, dict(options["pass_configs"]))

    steps = [0]

    def seen(name: str, f: PrimFunc) -> None:
        out.outputs.setdefault(name, f)
        out.last, out.last_pass = f, name
        steps[0] += 1
        if should_stop is not None and should_stop():
            raise AnalysisCancelled(name)

    ctx = CompileContext(tgt, options["pass_configs"], {"compile_flags": options["compile_flags"]}, seen)
    out.last = func
    names = [p.name for p in pipeline.PASSES]
    try:
        pipeline.lower(func, ctx, stop_after=pipeline.ANALYSIS_STOP)
        out.complete = True
    except Exception as err:  # noqa: BLE001 - the compiler's own error: reported, with what ran before it
        out.error = err
        out.failed_pass = names[steps[0]] if steps[0] < len(names) else ""
    return out
