"""The generated source of one tile op: the lines under its `// file:line` markers.

The C and CUDA code generators put `// <file name>:<line>` before the statements that a
source line produced (backend/c/codegen.py). The op on lines `start..end` of the kernel
file owns every run of lines from a marker naming one of those lines to the next marker;
an op can own several runs (a pipelined copy has a prologue and a steady-state copy).
No protocol types here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from .actions import COMPILE_TIMEOUT_S, _run, find_function, request
from .config import Settings

MARKER = re.compile(r"^\s*// (?P<file>[^\s:]+):(?P<line>\d+)\s*$")


@dataclass(frozen=True)
class OpSource:
    text: str  # the runs, in source order, each starting with its marker line
    runs: int
    language: str


def segments(generated: str, file_name: str, start: int, end: int) -> list[list[str]]:
    """The runs of `generated` under markers `file_name:N` with start <= N <= end."""
    runs: list[list[str]] = []
    current: list[str] | None = None
    for line in generated.splitlines():
        m = MARKER.match(line)
        if m:
            current = None
            if m.group("file") == file_name and start <= int(m.group("line")) <= end:
                current = [line]
                runs.append(current)
        elif current is not None:
            current.append(line)
    return runs


def tile_op_at(text: str, line1: int, lang_aliases: set[str]) -> tuple[int, int, str] | None:
    """(first line, last line, `T.name`) of the `T.*` call statement on 1-based `line1`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Expr | ast.Assign | ast.AugAssign | ast.For | ast.With):
            continue
        call = node.value if isinstance(node, ast.Expr | ast.Assign | ast.AugAssign) else None
        if isinstance(node, ast.For):
            call = node.iter
        elif isinstance(node, ast.With):
            call = node.items[0].context_expr if node.items else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        head = call.func.value
        if not (isinstance(head, ast.Name) and head.id in lang_aliases):
            continue
        first, last = node.lineno, (call.end_lineno or node.lineno)
        if first <= line1 <= last and (best is None or last - first < best[1] - best[0]):
            best = (first, last, f"{head.id}.{call.func.attr}")
    return best


def tile_op_source(text: str, path: str, name: str, start: int, end: int, settings: Settings) -> OpSource:
    """Blocking: compile kernel `name` (a throw-away child, as *Compile and show generated
    source* does) and cut out the runs of lines `start..end`."""
    from .actions import ActionError

    fn = find_function(text, name)
    # a kernel-cache hit carries this file's markers too (tilelang/cache/markers.py)
    gen = _run(request("generate", text, path, fn, settings), settings, COMPILE_TIMEOUT_S)
    runs = segments(gen.get("text", ""), Path(path).name, start, end)
    if not runs:
        where = f"line {start}" if start == end else f"lines {start}-{end}"
        raise ActionError(
            f"the {gen.get('language', '?')} source of {name} for {settings.target} has no code from {where}"
        )
    return OpSource("\n".join("\n".join(r) for r in runs) + "\n", len(runs), gen.get("language", "?"))
