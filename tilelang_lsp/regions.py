"""One parse per document version, and the pieces of a module a kernel needs.

`parse_document(text)` parses once. When the whole file does not parse, it is split into
top-level regions (a line that starts at column 0 starts one; decorators join the next
definition), each region is parsed on its own, and those that fail are blanked out
(line numbers kept), so a syntax error in one place never hides the kernels elsewhere.

`ParsedDoc.context(fn)` gives the top-level statements a kernel reads (transitively: a helper
function's own imports and constants too) and `ParsedDoc.request_source(fn)` the text sent to
the analysis worker: those statements and the kernel, every other line blank. The worker's
cost then does not grow with the file, and the context text is part of the kernel's cache key.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache

_CONTINUATIONS = ("else", "elif", "except", "finally", "case")


@dataclass
class Stmt:
    node: ast.stmt
    start: int  # 1-based, first decorator line
    end: int  # 1-based inclusive
    defines: set[str]
    uses: set[str]


@dataclass
class ParsedDoc:
    text: str
    lines: list[str]
    tree: ast.Module  # of the repaired text (identical to `text` when it parses)
    syntax: SyntaxError | None = None  # the whole file's parse error
    broken: list[tuple[int, int]] = field(default_factory=list)  # blanked regions (1-based, inclusive)
    stmts: list[Stmt] = field(default_factory=list)
    _by_name: dict[str, list[int]] = field(default_factory=dict)
    kernels: list | None = field(default=None, repr=False)  # bindings.analyze_document's answer, once per version

    def __post_init__(self) -> None:
        for node in self.tree.body:
            start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            defines, uses = statement_names(node)
            st = Stmt(node, start, node.end_lineno or node.lineno, defines, uses)
            self.stmts.append(st)
            for name in st.defines:
                self._by_name.setdefault(name, []).append(len(self.stmts) - 1)

    def top_level_names(self) -> set[str]:
        return set(self._by_name)

    def _closure(self, fn: ast.AST) -> list[int]:
        """Indices of the non-kernel top-level statements `fn` needs, in file order."""
        seen: set[int] = set()
        own = next((st for st in self.stmts if st.node is fn), None)
        todo = list(own.uses if own is not None else _uses(fn))
        done_names: set[str] = set()
        while todo:
            name = todo.pop()
            if name in done_names:
                continue
            done_names.add(name)
            for i in self._by_name.get(name, []):
                st = self.stmts[i]
                if st.node is fn or i in seen or _is_main_guard(st.node):
                    continue
                seen.add(i)
                todo += list(st.uses)
        # `import x` / `from x import *` statements are cheap and often needed implicitly
        for i, st in enumerate(self.stmts):
            if isinstance(st.node, ast.Import | ast.ImportFrom):
                seen.add(i)
        return sorted(seen)

    def context(self, fn: ast.AST) -> str:
        return "\n".join(self.segment(self.stmts[i]) for i in self._closure(fn))

    def segment(self, st: Stmt) -> str:
        return "\n".join(self.lines[st.start - 1 : st.end])

    def request_source(self, fn: ast.AST, start: int, end: int) -> str:
        keep = [False] * len(self.lines)
        for i in self._closure(fn):
            st = self.stmts[i]
            for ln in range(st.start, st.end + 1):
                keep[ln - 1] = True
        for ln in range(start, end + 1):
            if 0 < ln <= len(keep):
                keep[ln - 1] = True
        return "\n".join(line if k else "" for line, k in zip(self.lines, keep)) + "\n"

    def full_source(self) -> str:
        """The repaired text (the original one when it parses)."""
        if not self.broken:
            return self.text
        return "\n".join(self.lines) + "\n"


def _names(node: ast.stmt) -> tuple[set[str], set[str]]:
    """(names a top-level statement binds, names it reads) in one walk."""
    stores, loads = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (stores if isinstance(n.ctx, ast.Store) else loads).add(n.id)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        stores = {node.name}
    elif isinstance(node, ast.Import | ast.ImportFrom):
        stores = {(a.asname or a.name).split(".")[0] for a in node.names}
    return stores, loads


def _defines(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def _uses(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _is_main_guard(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def regions(lines: list[str]) -> list[tuple[int, int]]:
    """Top-level regions as (first, last) 1-based line numbers."""
    starts = []
    in_string = None  # the triple quote of a string that spans lines
    for i, line in enumerate(lines):
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        in_string = _opens_string(line)
        if not line or line[0] in " \t#)]}" or not line.strip():
            continue
        word = line.split(None, 1)[0].rstrip(":")
        if word in _CONTINUATIONS and starts:
            continue
        if starts and lines[starts[-1]].startswith("@") and _only_decorators(lines, starts[-1], i):
            continue  # a decorator belongs to the definition under it
        starts.append(i)
    out = []
    for j, s in enumerate(starts):
        e = (starts[j + 1] if j + 1 < len(starts) else len(lines)) - 1
        out.append((s + 1, e + 1))
    if starts and starts[0] > 0:
        out[0] = (1, out[0][1])
    return out or [(1, max(len(lines), 1))]


def _opens_string(line: str) -> str | None:
    """The triple quote left open at the end of `line`, if any (comments ignored, roughly)."""
    code = line.split("#", 1)[0] if "#" in line and '"""' not in line and "'''" not in line else line
    found = [(code.find(q), q) for q in ('"""', "'''") if q in code]
    if not found:
        return None
    q = min(found)[1]
    return q if code.count(q) % 2 else None


def _only_decorators(lines: list[str], a: int, b: int) -> bool:
    return all(not ln or ln[0] in " \t#@)]}" for ln in lines[a:b])


def _blank_code(line: str) -> str:
    return line if line.lstrip().startswith("#") else ""


_PARSE_ERRORS = (SyntaxError, RecursionError, ValueError, MemoryError)
_REGIONS: OrderedDict[tuple[int, str], list[ast.stmt] | None] = OrderedDict()  # (first line, text) -> statements
_NAMES: dict[int, tuple[ast.stmt, set[str], set[str]]] = {}  # id(statement) -> (statement, binds, reads)


def _parse_region(first: int, text: str) -> list[ast.stmt] | None:
    """The statements of one top-level region parsed at its place (None: it does not parse).
    Cached: an edit re-parses only the region it is in (and those it moved)."""
    key = (first, text)
    if key in _REGIONS:
        _REGIONS.move_to_end(key)
        return _REGIONS[key]
    try:
        body = ast.parse("\n" * (first - 1) + text).body
    except _PARSE_ERRORS:
        body = None
    _REGIONS[key] = body
    while len(_REGIONS) > 2048:
        _REGIONS.popitem(last=False)
    return body


def statement_names(node: ast.stmt) -> tuple[set[str], set[str]]:
    got = _NAMES.get(id(node))
    if got is None or got[0] is not node:
        if len(_NAMES) > 8192:
            _NAMES.clear()
        got = _NAMES[id(node)] = (node, *_names(node))
    return got[1], got[2]


@lru_cache(maxsize=16)
def parse_document(text: str) -> ParsedDoc:
    """Parse `text` once per version (cached by content). Raises nothing: see `ParsedDoc.syntax`.

    The file is parsed region by region (cached per region), so a one-line edit re-parses one
    region; when a region does not parse alone, the whole file is parsed to tell a real syntax
    error from a region split that Python does not see (a multi-line string at column 0)."""
    lines = text.splitlines()
    parts = [(a, b, _parse_region(a, "\n".join(lines[a - 1 : b]))) for a, b in regions(lines)]
    if all(body is not None for _, _, body in parts):
        tree = ast.Module(body=[st for _, _, body in parts for st in body], type_ignores=[])
        return ParsedDoc(text, lines, tree)
    try:
        return ParsedDoc(text, lines, ast.parse(text))
    except SyntaxError as err:
        first = err
    except _PARSE_ERRORS as err:
        first = SyntaxError(f"cannot parse: {err}")
        first.lineno, first.offset = 1, 1
    repaired = list(lines)
    broken = []
    for a, b, body in parts:
        if body is None:
            broken.append((a, b))
            for ln in range(a, b + 1):
                repaired[ln - 1] = _blank_code(lines[ln - 1])
    tree = ast.Module(body=[st for _, _, body in parts if body for st in body], type_ignores=[])
    doc = ParsedDoc(text, repaired, tree, first, broken)
    doc.text = text
    return doc
