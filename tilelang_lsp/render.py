"""Turn analysis results into editor-neutral hints, diagnostics and hover text.

Positions here are 0-based lines and Python string indices; server.py converts
them to the client's position encoding. `Loc` columns from the analysis are
ast-style (UTF-8 byte offsets) and are converted with the line's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .documents import DocResult, FunctionResult


@dataclass
class Hint:
    line: int
    col: int
    label: str
    tooltip: str = ""
    kind: str = "buffer"  # buffer | kernel | op


@dataclass
class Diag:
    line: int
    col: int
    end_line: int
    end_col: int
    severity: str
    message: str
    code: str
    related: list[tuple[int, int, int, int, str]] = field(default_factory=list)


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def char_col(text: str, col: int) -> int:
    """ast-style byte column -> index into `text` (clamped)."""
    if col <= 0:
        return 0
    if text.isascii():
        return min(col, len(text))
    return min(len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore")), len(text))


def code_end(text: str) -> int:
    """Index just after the last code character of a line (before a trailing comment)."""
    if "#" not in text:
        return len(text.rstrip())
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif c in "'\"":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else c
            i += len(quote) - 1
        elif c == "#":
            return len(text[:i].rstrip())
        i += 1
    return len(text.rstrip())


def _line(lines: list[str], line1: int) -> str:
    return lines[line1 - 1] if 0 < line1 <= len(lines) else ""


def short_scope(scope: str) -> str:
    return {"local.fragment": "fragment"}.get(scope, scope)


def dims(buf: dict) -> str:
    shape, text = buf.get("shape") or [], buf.get("shape_text") or []
    return ", ".join(str(d) if d is not None else (text[i] if i < len(text) else "?") for i, d in enumerate(shape))


def buffer_label(buf: dict, unresolved: list[str]) -> tuple[str, str]:
    label = f"{short_scope(buf['scope'])} {buf['dtype']}[{dims(buf)}]"
    if buf["scope"].startswith("shared"):
        label += f" {fmt_bytes(buf.get('bytes'))}"
        if (buf.get("stages") or 1) > 1:
            label += f" ×{buf['stages']}"
    layout = buf.get("layout") or ""
    if layout:
        label += f" · {layout}"
    regs = buf.get("regs_per_thread")
    if regs is not None and "regs" not in layout:
        label += f" · {regs} regs/thread"
    missing = [n for n in unresolved if any(re.search(rf"\b{re.escape(n)}\b", t) for t in buf.get("shape_text") or [])]
    tooltip = ""
    if missing:
        label += f" ({', '.join(missing)} unresolved)"
        tooltip = (
            f"No compile-time value found for {', '.join(missing)}: add a call site in this file, "
            f"a default, or a `# tilelang: {missing[0]}=...` comment above the function."
        )
    return label, tooltip


def _is_metal(res: dict) -> bool:
    """The kernel was analysed for Metal (`tilelang.target = "metal"`): threadgroup memory, SIMD-groups."""
    return str(res.get("target", "")).startswith("metal")


def kernel_label(res: dict) -> str:
    parts = []
    if res.get("threads") is not None:
        parts.append(f"{res['threads']} threads")
    if res.get("shared_bytes") is not None:
        what = "threadgroup" if _is_metal(res) else "shared"  # Metal's name for it
        parts.append(f"{what} {fmt_bytes(res['shared_bytes'])} / {fmt_bytes(res.get('shared_limit'))}")
    if res.get("measured"):
        parts.append(measured_label(res))
    return " · ".join(parts)


def measured_label(res: dict) -> str:
    """ptxas's figures, marked as measured: "154 regs · 0 B spill · 1 block/SM (registers) — measured (ptxas, sm_90a)"."""
    spill = (res.get("spill_stores") or 0) + (res.get("spill_loads") or 0)
    out = [f"{res.get('regs_per_thread')} regs", f"{fmt_bytes(spill)} spill"]
    if res.get("blocks_per_sm") is not None:
        n = res["blocks_per_sm"]
        out.append(f"{n} block{'s' if n != 1 else ''}/SM" + (f" ({res['limiting']})" if res.get("limiting") else ""))
    return " · ".join(out) + f" — measured ({res.get('source')})"


def hints(
    doc: DocResult, lines: list[str], show: dict[str, bool], extras: dict[str, list[str]] | None = None
) -> list[Hint]:
    out: list[Hint] = []
    for fr in doc.functions:
        out += function_hints(fr, lines, show, (extras or {}).get(fr.fn.name, []))
    return out


def function_hints(fr: FunctionResult, lines: list[str], show: dict[str, bool], extras: list[str]) -> list[Hint]:
    info, out = fr.info, []
    if info is None:
        return out
    unresolved = list(info.get("unresolved") or []) + [
        n for n in fr.fn.unresolved if n not in (info.get("unresolved") or [])
    ]
    if show.get("buffers", True):
        for buf in info.get("buffers") or []:
            out.append(_buffer_hint(buf, lines, unresolved))
    for n, kernel in enumerate(info.get("kernels") or [info]):  # one hint per `T.Kernel` block
        kl = kernel.get("kernel_loc") or info.get("loc")
        extras = extras if n == 0 else []
        if kl and (show.get("kernel", True) or extras):
            text = _line(lines, kl["line"])
            label = kernel_label(kernel.get("resources") or {}) if show.get("kernel", True) else ""
            label = " · ".join([p for p in [label, *extras] if p])
            if label:
                out.append(Hint(kl["line"] - 1, code_end(text), label, kind="kernel"))
    if show.get("ops", True):
        by_line: dict[int, list[str]] = {}
        for op in info.get("ops") or []:
            if op.get("decision"):
                by_line.setdefault(op["loc"]["end_line"] or op["loc"]["line"], []).append(op["decision"])
        for line1, decisions in by_line.items():
            out.append(Hint(line1 - 1, code_end(_line(lines, line1)), " · ".join(decisions), kind="op"))
    origin = fr.fn.origin_summary() if show.get("kernel", True) else ""
    if origin:  # once per kernel, on its `def` line: the values the hints assume and where they come from
        tip = "\n".join(f"{k} = {v!r} ({fr.fn.sources.get(k, '')})" for k, v in fr.fn.bindings.items())
        out.append(Hint(fr.fn.def_line - 1, code_end(_line(lines, fr.fn.def_line)), origin, tip, kind="kernel"))
    if fr.stale:  # an earlier version's analysis: say so on every hint
        for h in out:
            h.label += " (stale)"
            h.tooltip = f"{fr.stale}\n{h.tooltip}".rstrip()
    first, last = fr.fn.start_line - 1, fr.fn.end_line - 1
    return [h for h in out if 0 <= h.line < max(len(lines), 1) and (not fr.stale or first <= h.line <= last)]


def _buffer_hint(buf: dict, lines: list[str], unresolved: list[str]) -> Hint:
    label, tooltip = buffer_label(buf, unresolved)
    lc = buf["loc"]
    end_line = lc.get("end_line") or lc["line"]
    text = _line(lines, end_line)
    degenerate = end_line == lc["line"] and (lc.get("end_col") or 0) - lc["col"] <= 1
    if buf["scope"] == "global" and not degenerate:
        col = char_col(text, lc["end_col"])
    else:
        col = code_end(text)
    return Hint(end_line - 1, col, label, tooltip, "buffer")


def _range(lc: dict, lines: list[str]) -> tuple[int, int, int, int]:
    """A Loc as a one-line range: a span over a whole block (function, `with T.Kernel`) would
    squiggle every line of it, so multi-line spans are cut at the end of their first line."""
    line = max(lc["line"], 1)
    text = _line(lines, line)
    col = char_col(text, lc.get("col") or 0)
    if (lc.get("end_line") or line) == line:
        end_col = char_col(text, lc.get("end_col") or 0)
    else:
        end_col = code_end(text)
    return line - 1, col, line - 1, max(end_col, min(col + 1, len(text)))


def diagnostics(doc: DocResult, lines: list[str]) -> list[Diag]:
    raw = [doc.syntax] if doc.syntax else []
    for fr in doc.functions:
        raw += fr.diagnostics + list((fr.info or {}).get("diagnostics") or [])
    out = []
    for d in raw:
        rel = [
            (*_range(r[1], lines), r[0]) for r in d.get("related") or [] if isinstance(r, list | tuple) and len(r) == 2
        ]
        out.append(Diag(*_range(d["loc"], lines), d.get("severity", "error"), d["message"], d.get("code", ""), rel))
    return out


def word_at(text: str, col: int) -> str:
    for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", text):
        if m.start() <= col <= m.end():
            return m.group()
    return ""


def hover(doc: DocResult, lines: list[str], line0: int, col: int) -> str | None:
    fr = doc.function_at(line0 + 1)
    if fr is None:
        return None
    info = fr.info or {}
    word = word_at(_line(lines, line0 + 1), col)
    for buf in info.get("buffers") or []:
        if buf["name"] == word:
            return buffer_markdown(buf)
    for kernel in info.get("kernels") or [info]:
        kl = kernel.get("kernel_loc")
        if kl and kl["line"] <= line0 + 1 <= (kl.get("end_line") or kl["line"]) and kernel.get("resources"):
            if word in ("Kernel", "T", "threads", "with") or not word:
                return resources_markdown(kernel["resources"])
    if line0 + 1 == fr.fn.def_line and word == fr.fn.name:
        return bindings_markdown(fr)
    return None


def buffer_markdown(buf: dict) -> str:
    out = [
        f"**{buf['name']}** — `{short_scope(buf['scope'])} {buf['dtype']}[{dims(buf)}]` (scope `{buf['scope']}`)",
        "",
    ]
    if buf.get("bytes") is not None:
        stages = buf.get("stages") or 1
        total = f" × {stages} stages = {fmt_bytes(buf['bytes'] * stages)}" if stages > 1 else ""
        out.append(f"- size: {fmt_bytes(buf['bytes'])} ({buf['bytes']} B){total}")
    if buf.get("layout"):
        out.append(f"- layout: {buf['layout']}")
    if buf.get("regs_per_thread") is not None:
        out.append(f"- registers: {buf['regs_per_thread']} per thread")
    if buf.get("layout_detail"):
        out += ["", "```text", buf["layout_detail"].rstrip(), "```"]
    return "\n".join(out)


def resources_markdown(res: dict) -> str:
    out = [f"**T.Kernel** on `{res.get('target', '?')}`", ""]
    if res.get("threads") is not None:
        unit = "SIMD-groups" if _is_metal(res) else "warps"
        out.append(f"- threads: {res['threads']} ({res['threads'] // 32} {unit})")
    if res.get("shared_bytes") is not None:
        parts = ", ".join(f"{n} {fmt_bytes(b)}" for n, b in res.get("shared_breakdown") or [])
        out.append(
            f"- {'threadgroup' if _is_metal(res) else 'shared'} memory: {fmt_bytes(res['shared_bytes'])} of "
            f"{fmt_bytes(res.get('shared_limit'))}" + (f" ({parts})" if parts else "")
        )
    if res.get("measured"):
        out.append(
            f"- registers: {res['regs_per_thread']}/thread, {res.get('regs_per_block')}/block; spills: "
            f"{res.get('spill_stores') or 0} B stored, {res.get('spill_loads') or 0} B loaded — measured ({res.get('source')})"
        )
        if res.get("static_shared_bytes") is not None:
            out.append(f"- shared memory: {fmt_bytes(res.get('dynamic_shared_bytes'))} dynamic + "
                       f"{fmt_bytes(res['static_shared_bytes'])} static (ptxas)")  # fmt: skip
    elif res.get("regs_per_thread") is not None:
        out.append(f"- registers: ~{res['regs_per_thread']}/thread, {res.get('regs_per_block')}/block (estimate)")
    if res.get("occupancy") is not None:
        out.append(f"- occupancy: {res['occupancy']:.0%} ({res.get('blocks_per_sm')} blocks/SM)")
    if res.get("limiting"):
        out.append(f"- limited by: {res['limiting']}")
    return "\n".join(out)


def bindings_markdown(fr: FunctionResult) -> str:
    fn = fr.fn
    out = [f"**{fn.name}** — compile-time values used by the language server", ""]
    out += [f"- `{k} = {v!r}` ({fn.sources.get(k, '')})" for k, v in fn.bindings.items()]
    if fn.unresolved:
        out.append(f"- unresolved: {', '.join(fn.unresolved)} (shown symbolically)")
    return "\n".join(out)
