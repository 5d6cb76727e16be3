"""Lowering traces: the IR after every pass, a diff to the pass before, the time each took, and
which lines every source line became — in every stage and in the generated source.

- `TL_LOWER_TRACE=1|html|terminal|both` (with `TL_LOWER_TRACE_DIR`, default `./tl_lower_trace`)
  writes one self-contained HTML page per kernel and/or prints the diffs to stderr, for every
  target (`transform/runner.PassRunner` collects the records; the backend adds the generated
  source once it exists).
- `lower_trace(func, passes, mode=..., context=3, html_path=...)` is the programmatic entry.

The page needs no network and no script from elsewhere: clicking a line of the kernel's source
highlights the IR lines whose statements carry that line's span, and the generated-source lines
under its `// file:line` marker (`page.html#line=N` opens with line N picked).
"""

from __future__ import annotations

import difflib
import html
import inspect
import linecache
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MARKER = re.compile(r"^\s*// (?P<file>[^\s:]+):(?P<line>\d+)\s*$")


@dataclass(frozen=True)
class Stage:
    """The IR after one pass."""

    name: str
    ms: float
    text: str
    line_sources: tuple[int, ...]  # per IR line: the source line of its statement (0: none)


def generated_line_sources(source: str, file_name: str) -> list[int]:
    """Per line of generated C/CUDA source: the kernel source line its `// file:line` marker names."""
    base = os.path.basename(file_name)
    out, current = [], 0
    for line in source.splitlines():
        m = _MARKER.match(line)
        if m:
            current = int(m["line"]) if os.path.basename(m["file"]) == base else 0
        out.append(current)
    return out


def unified_diff(before: str, after: str, context: int = 3, names: tuple[str, str] = ("before", "after")) -> str:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), *names, n=context, lineterm="")
    return "\n".join(lines)


_STYLE = """
body{font:13px/1.35 ui-monospace,Menlo,Consolas,monospace;margin:0;display:flex;height:100vh}
#src{width:38%;overflow:auto;border-right:1px solid #ccc;background:#fafafa}
#stages{flex:1;overflow:auto;padding:0 12px}
h1{font-size:15px;margin:8px} h2{font-size:14px;margin:14px 0 4px}
.l{white-space:pre;padding:0 6px;cursor:default} .l[data-l]:not([data-l="0"]){cursor:pointer}
.n{color:#999;display:inline-block;width:3.5em;text-align:right;margin-right:8px;user-select:none}
.hit{background:#fff2a8} .sel{background:#ffd54f}
.add{color:#116329;background:#dafbe1} .del{color:#82071e;background:#ffebe9} .hunk{color:#6e7781}
.same{color:#888;font-weight:normal} table{border-collapse:collapse} td{padding:0 8px}
"""

_SCRIPT = """
function pick(n){
  document.querySelectorAll('.hit,.sel').forEach(e=>e.classList.remove('hit','sel'));
  if(n==='0')return;
  document.querySelectorAll('[data-l="'+n+'"]').forEach(e=>e.classList.add(e.closest('#src')?'sel':'hit'));
}
document.addEventListener('click',ev=>{const e=ev.target.closest('[data-l]'); if(e) pick(e.dataset.l);});
const m=location.hash.match(/^#line=(\\d+)$/); if(m) pick(m[1]);  // page.html#line=42 opens with line 42 picked
"""


def _lines_html(text: str, sources: Sequence[int], numbered: bool = True) -> str:
    rows = []
    for i, line in enumerate(text.splitlines()):
        n = sources[i] if i < len(sources) else 0
        num = f"<span class='n'>{i + 1}</span>" if numbered else ""
        rows.append(f"<div class='l' data-l='{n}'>{num}{html.escape(line) or ' '}</div>")
    return "\n".join(rows)


def _diff_html(diff: str) -> str:
    rows = []
    for line in diff.splitlines():
        cls = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else ""
        )
        rows.append(f"<div class='l {cls}'>{html.escape(line) or ' '}</div>")
    return "\n".join(rows)


def _source_pane(source_file: str, lines_used: set[int]) -> str:
    text = "".join(linecache.getlines(source_file)) if source_file else ""
    if not text and source_file and os.path.isfile(source_file):
        text = Path(source_file).read_text(errors="replace")
    if not text:
        return "<p>(kernel source not available)</p>"
    all_lines = text.splitlines()
    used = [n for n in lines_used if 0 < n <= len(all_lines)]
    lo, hi = (max(1, min(used) - 3), min(len(all_lines), max(used) + 3)) if used else (1, len(all_lines))
    rows = []
    for n in range(lo, hi + 1):
        rows.append(
            f"<div class='l' data-l='{n}'><span class='n'>{n}</span>{html.escape(all_lines[n - 1]) or ' '}</div>"
        )
    return "\n".join(rows)


def render_html(
    title: str, stages: Sequence[Stage], source_file: str = "", generated: str | None = None, context: int = 3
) -> str:
    """One self-contained page: the kernel source on the left, every stage with its diff on the right."""
    used = {n for st in stages for n in st.line_sources if n}
    gen_sources = generated_line_sources(generated, source_file) if generated else []
    total = sum(st.ms for st in stages)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)} — lowering trace</title><style>{_STYLE}</style></head><body>",
        f"<div id='src'><h1>{html.escape(os.path.basename(source_file) or title)}</h1>",
        _source_pane(source_file, used),
        "</div><div id='stages'>",
        f"<h1>{html.escape(title)}: {len(stages)} stages, {total:.2f} ms</h1><table>",
    ]
    for i, st in enumerate(stages):
        parts.append(f"<tr><td>{i}</td><td><a href='#s{i}'>{html.escape(st.name)}</a></td><td>{st.ms:.2f} ms</td></tr>")
    if generated is not None:
        parts.append("<tr><td></td><td><a href='#generated'>generated source</a></td><td></td></tr>")
    parts.append("</table>")
    prev = None
    for i, st in enumerate(stages):
        same = prev is not None and prev.text == st.text
        note = " <span class='same'>(unchanged)</span>" if same else ""
        parts.append(f"<h2 id='s{i}'>{i}. {html.escape(st.name)} — {st.ms:.2f} ms{note}</h2>")
        if prev is not None and not same:
            diff = unified_diff(prev.text, st.text, context, (prev.name, st.name))
            parts.append(f"<details><summary>diff to {html.escape(prev.name)}</summary>{_diff_html(diff)}</details>")
        parts.append(f"<details{' open' if i in (0, len(stages) - 1) else ''}><summary>IR</summary>")
        parts.append(_lines_html(st.text, st.line_sources))
        parts.append("</details>")
        prev = st
    if generated is not None:
        parts.append("<h2 id='generated'>generated source</h2>")
        parts.append(_lines_html(generated, gen_sources))
    parts.append(f"</div><script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def format_terminal(stages: Sequence[Stage], context: int = 3) -> str:
    out = []
    prev = None
    for i, st in enumerate(stages):
        if prev is None:
            out.append(f"===== {i}. {st.name} ({st.ms:.2f} ms) =====\n{st.text}")
        elif prev.text == st.text:
            out.append(f"===== {i}. {st.name} ({st.ms:.2f} ms): unchanged =====")
        else:
            out.append(f"===== {i}. {st.name} ({st.ms:.2f} ms) =====\n" + unified_diff(prev.text, st.text, context))
        prev = st
    return "\n".join(out)


def trace_mode() -> str:
    """TL_LOWER_TRACE as one of "", "html", "terminal", "both"."""
    value = os.environ.get("TL_LOWER_TRACE", "0").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return ""
    if value in ("terminal", "both"):
        return value
    return "html"


def trace_path(func_name: str, target_name: str) -> Path:
    return Path(os.environ.get("TL_LOWER_TRACE_DIR", "./tl_lower_trace")) / f"{func_name}.{target_name}.html"


def write_env_trace(
    func_name: str, target_name: str, stages: Sequence[Stage], source_file: str, generated: str | None = None
) -> None:
    """What TL_LOWER_TRACE asks for, for one kernel (called by the pass runner, and again by the
    backend with the generated source)."""
    mode = trace_mode()
    if not mode or not stages:
        return
    if mode in ("terminal", "both"):
        text = format_terminal(stages) if generated is None else f"===== generated source =====\n{generated}"
        print(text, file=sys.stderr)
    if mode in ("html", "both"):
        path = trace_path(func_name, target_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(func_name, stages, source_file, generated))


def add_generated_source(source: str) -> None:
    """The backend's generated source for the kernel whose pipeline just finished in this thread:
    TL_LOWER_TRACE's page is written again with it (and the terminal trace prints it)."""
    from ..transform.runner import LAST_TRACE

    runner = getattr(LAST_TRACE, "runner", None)
    if runner is None:
        return
    LAST_TRACE.runner = None
    write_env_trace(runner.func_name, runner.target_name, runner.stages, runner.source_file, source)


def _call_pass(p: Callable, func: Any, ctx: Any) -> Any:
    try:
        n = len(inspect.signature(p).parameters)
    except (TypeError, ValueError):
        n = 2
    return p(func, ctx) if n >= 2 else p(func)


def _stage(name: str, ms: float, func: Any) -> Stage:
    from ..ir.printer import func_lines

    text, sources = func_lines(func)
    return Stage(name, ms, text, tuple(sources))


def lower_trace(
    func_or_mod: Any,
    passes: Any,
    *,
    mode: str = "terminal",
    context: int = 3,
    html_path: str = "lower_trace_report.html",
    target: str = "c",
) -> list[dict]:
    """Run `passes` on a PrimFunc and show what each did.

    `passes`: one pass, a list of passes, or a list of `(name, pass)` pairs; a pass is
    `f(func, ctx)` or `f(func)` returning the new PrimFunc. `mode`: "terminal" (diffs on stderr),
    "html" (a page at `html_path`), or "both". Returns one dict per pass: `name`, `ms`,
    `changed`, `diff` (unified, `context` lines), `ir` (the IR after it)."""
    from ..backend.target import parse
    from ..ir.function import PrimFunc

    if mode not in ("terminal", "html", "both"):
        raise ValueError(f"mode must be 'terminal', 'html' or 'both', not {mode!r}")
    func = func_or_mod
    for attr in ("prim_func", "func"):
        if not isinstance(func, PrimFunc) and isinstance(getattr(func, attr, None), PrimFunc):
            func = getattr(func, attr)
    if not isinstance(func, PrimFunc):
        raise TypeError(f"lower_trace needs a T.prim_func (a PrimFunc), not {type(func_or_mod).__name__}")
    if callable(passes) and not isinstance(passes, list | tuple):
        passes = [passes]
    named = [(p[0], p[1]) if isinstance(p, tuple) else (getattr(p, "__name__", repr(p)), p) for p in passes]
    ctx = {"target": parse(target), "pass_configs": {}}
    stages = [_stage("input", 0.0, func)]
    results = []
    for name, p in named:
        t = time.perf_counter()
        func = _call_pass(p, func, ctx)
        ms = (time.perf_counter() - t) * 1e3
        stage = _stage(name, ms, func)
        prev = stages[-1]
        results.append(
            {
                "name": name,
                "ms": ms,
                "changed": stage.text != prev.text,
                "diff": unified_diff(prev.text, stage.text, context, (prev.name, name)),
                "ir": stage.text,
            }
        )
        stages.append(stage)
    if mode in ("terminal", "both"):
        print(format_terminal(stages, context), file=sys.stderr)
    if mode in ("html", "both"):
        source_file = func.span.file if getattr(func, "span", None) is not None else ""
        Path(html_path).write_text(render_html(func.name, stages, source_file, None, context))
    return results


__all__ = ["Stage", "add_generated_source", "generated_line_sources", "lower_trace", "render_html", "write_env_trace"]
