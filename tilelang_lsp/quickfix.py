"""Quick fixes that edit the kernel's source, written with libcst (formatting and comments kept).

A *site* is where one compile-time value of a kernel is written: a keyword or positional
argument of a call site (`matmul.compile(block_K=32)`), a signature default
(`block_K: int = 128`), the `# tilelang:` comment above the kernel, or a literal inside its
body (`T.Pipelined(..., num_stages=3)`, `threads=128`, `block_K = 64`). `set_value` rewrites
one site; the fix searches re-analyse each candidate text (the `analyse` callback runs the
real analysis on the edited file) and keep the first candidate that removes the diagnostic
without adding another error — nothing is guessed. No protocol types here: an edit is
(start line, start col, end line, end col, new text) in 0-based lines / string indices.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .bindings import KernelFunction, analyze_module

Edit = tuple[int, int, int, int, str]
Analyse = Callable[[str], "list[dict] | None"]  # edited text -> that kernel's diagnostics (None: failed)


@dataclass(frozen=True)
class Fix:
    title: str
    text: str  # the whole edited file
    edits: tuple[Edit, ...]
    kind: str = "quickfix"  # quickfix | refactor.rewrite


@dataclass(frozen=True)
class Site:
    kind: str  # call | default | comment | literal
    line: int  # 1-based line the value is written on (for messages)
    value: Any


def text_edits(old: str, new: str) -> tuple[Edit, ...]:
    """One edit replacing the differing middle of `old` by that of `new`."""
    if old == new:
        return ()
    p = 0
    n = min(len(old), len(new))
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    return (_pos(old, p) + _pos(old, len(old) - s) + (new[p : len(new) - s],),)


def _pos(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def _literal(value: Any) -> cst.BaseExpression:
    return cst.parse_expression(repr(value))


def _kernel(fns: list[KernelFunction], name: str) -> KernelFunction | None:
    return next((f for f in fns if f.name == name), None)


class _Locate(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, fn: KernelFunction):
        self.fn = fn
        self.def_node: cst.FunctionDef | None = None
        self.calls: list[tuple[int, cst.Call]] = []
        self.body_kw: list[tuple[int, cst.Arg]] = []
        self.body_assign: list[tuple[int, cst.Assign]] = []
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth == 0 and node.name.value == self.fn.name:
            self.def_node = node
        self.depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth -= 1

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def _inside(self, line: int) -> bool:
        return self.fn.def_line <= line <= self.fn.end_line

    def visit_Call(self, node: cst.Call) -> None:
        line = self._line(node)
        if not self._inside(line):
            self.calls.append((line, node))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and self._inside(self._line(node)):
            self.body_kw.append((self._line(node), node))

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._inside(self._line(node)):
            self.body_assign.append((self._line(node), node))


class _Replace(cst.CSTTransformer):
    def __init__(self, targets: dict[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode]]):
        self.targets = targets

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        fn = self.targets.get(original)
        return fn(updated) if fn is not None else updated


def _callee(call: cst.Call) -> str | None:
    f = call.func
    if isinstance(f, cst.Attribute) and f.attr.value in ("compile", "__call__"):
        f = f.value
    return f.value if isinstance(f, cst.Name) else None


def _directive_lines(fdef: cst.FunctionDef) -> list[int]:
    """Indices into `fdef.leading_lines` of the `# tilelang:` comments directly above it."""
    out = []
    for i in range(len(fdef.leading_lines) - 1, -1, -1):
        line = fdef.leading_lines[i]
        if line.comment is None:
            break
        if line.comment.value.lstrip("#").strip().startswith("tilelang:"):
            out.append(i)
    return sorted(out)


def _directive_items(text: str) -> list[tuple[str, str]]:
    """`M=4096, dtype="float16"` -> [("M", "4096"), ("dtype", '"float16"')] (source kept)."""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError:
        return []
    src = f"f({text})"
    return [(kw.arg, ast.get_source_segment(src, kw.value) or "") for kw in getattr(call, "keywords", []) if kw.arg]


def _with_directive(fdef: cst.FunctionDef, values: dict[str, Any]) -> cst.FunctionDef:
    """`fdef` whose `# tilelang:` comment sets `values` (merged into an existing one)."""
    idx = _directive_lines(fdef)
    lines = list(fdef.leading_lines)
    if idx:
        i = idx[0]
        old = lines[i].comment.value
        head, _, body = old.partition("tilelang:")
        items = dict(_directive_items(body.strip()))
        items.update({k: repr(v) for k, v in values.items()})
        text = head + "tilelang: " + ", ".join(f"{k}={v}" for k, v in items.items())
        lines[i] = lines[i].with_changes(comment=cst.Comment(text))
    else:
        text = "# tilelang: " + ", ".join(f"{k}={v!r}" for k, v in values.items())
        lines.append(cst.EmptyLine(comment=cst.Comment(text)))
    return fdef.with_changes(leading_lines=lines)


def locate(text: str, fn: KernelFunction, name: str) -> tuple[Site, Callable[[Any], str]] | None:
    """Where `name`'s value for kernel `fn` is written, and a function writing a new value there."""
    wrapper = MetadataWrapper(cst.parse_module(text))
    loc = _Locate(fn)
    wrapper.visit(loc)
    module = wrapper.module
    fdef = loc.def_node
    if fdef is None:
        return None

    def rewrite(targets: dict) -> str:
        return module.visit(_Replace(targets)).code

    source = fn.sources.get(name, "")
    value = fn.bindings.get(name)
    if source.startswith("comment line"):  # parameters and T.const sizes alike
        line = int(source.rsplit(" ", 1)[-1])
        return Site("comment", line, value), lambda v: rewrite({fdef: lambda n: _with_directive(n, {name: v})})
    if name in fn.params:
        m = re.match(r"call site line (\d+)", source)
        if m:
            line = int(m.group(1))
            positional = [p for p in fn.params]  # call sites bind positionals in signature order
            for cl, call in loc.calls:
                if cl != line or _callee(call) != fn.name:
                    continue
                for i, arg in enumerate(call.args):
                    hit = (arg.keyword is not None and arg.keyword.value == name) or (
                        arg.keyword is None and not arg.star and i < len(positional) and positional[i] == name
                    )
                    if hit:
                        return Site("call", line, value), lambda v, a=arg: rewrite(
                            {a: lambda n: n.with_changes(value=_literal(v))}
                        )
            return None
        if source == "default":
            for p in [*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params]:
                if p.name.value == name and p.default is not None:
                    return Site("default", fn.def_line, value), lambda v, p=p: rewrite(
                        {p: lambda n: n.with_changes(default=_literal(v))}
                    )
            return None
        return None
    # not a parameter: a literal in the kernel's body
    for line, arg in loc.body_kw:
        if arg.keyword.value == name and isinstance(arg.value, cst.Integer):
            return Site("literal", line, arg.value.evaluated_value), lambda v, a=arg: rewrite(
                {a: lambda n: n.with_changes(value=_literal(v))}
            )
    for line, asg in loc.body_assign:
        t = asg.targets
        if len(t) == 1 and isinstance(t[0].target, cst.Name) and t[0].target.value == name:
            if isinstance(asg.value, cst.Integer):
                return Site("literal", line, asg.value.evaluated_value), lambda v, a=asg: rewrite(
                    {a: lambda n: n.with_changes(value=_literal(v))}
                )
    return None


def _errors(diags: list[dict]) -> set[str]:
    return {d.get("code", "") for d in diags if d.get("severity") == "error"}


def _search(
    text: str, fn_name: str, code: str, knobs: list[tuple[str, Callable[[int], list[int]]]], analyse: Analyse,
    rounds: int = 1,
) -> list[Fix]:  # fmt: skip
    """For each knob, its candidates (best first) are tried until one removes `code`.
    With `rounds` > 1, candidates are interleaved by rank across knobs and the first hit wins."""
    try:
        fn = _kernel(analyze_module(text), fn_name)
    except SyntaxError:
        return []
    if fn is None:
        return []
    before = analyse(text)
    if before is None or code not in {d.get("code") for d in before}:
        return []
    allowed = _errors(before)
    plans = []
    for name, candidates in knobs:
        found = locate(text, fn, name)
        if found is None or not isinstance(found[0].value, int) or isinstance(found[0].value, bool):
            continue
        site, write = found
        plans.append((name, site, write, candidates(site.value)))
    fixes: list[Fix] = []
    order = (
        [(p, c) for p in plans for c in p[3]]
        if rounds == 1
        else [(p, p[3][i]) for i in range(max((len(p[3]) for p in plans), default=0)) for p in plans if i < len(p[3])]
    )
    done: set[str] = set()
    for (name, site, write, _), cand in order:
        if name in done:
            continue
        new = write(cand)
        after = analyse(new)
        if after is None:
            continue
        if code in {d.get("code") for d in after} or not _errors(after) <= allowed:
            continue
        done.add(name)
        where = {"call": f"call site line {site.line}", "default": "default", "comment": "`# tilelang:` comment"}.get(
            site.kind, f"line {site.line}"
        )
        fixes.append(Fix(f"use {name}={cand} (was {site.value}, {where})", new, text_edits(text, new)))
        if rounds > 1:
            break
    return fixes


def smem_fixes(text: str, fn_name: str, analyse: Analyse) -> list[Fix]:
    """ "use num_stages=N" / "use block_K=N": the largest value below the current one that fits."""

    def stages(cur: int) -> list[int]:
        return list(range(cur - 1, 0, -1))

    def halves(cur: int) -> list[int]:
        out, v = [], cur // 2
        while v >= 8 and cur % v == 0:
            out.append(v)
            v //= 2
        return out

    return _search(text, fn_name, "smem-overflow", [("num_stages", stages), ("block_K", halves)], analyse)


def spill_fixes(text: str, fn_name: str, analyse: Analyse) -> list[Fix]:
    """The nearest change of threads (×2, ×4, ×8 up to 1024) or tile (block_N / block_M ÷2, ÷4, ÷8)
    that removes the register-pressure report."""

    def more(cur: int) -> list[int]:
        return [cur << s for s in (1, 2, 3) if cur << s <= 1024]

    def fewer(cur: int) -> list[int]:
        return [cur >> s for s in (1, 2, 3) if cur >> s >= 16 and cur % (1 << s) == 0]

    knobs = [("threads", more), ("block_N", fewer), ("block_M", fewer)]
    return _search(text, fn_name, "reg-pressure", knobs, analyse, rounds=3)


def pin_fix(text: str, fn_name: str, fn: KernelFunction | None = None) -> Fix | None:
    """ "Pin these bindings": the values the server assumed (not written in the file as a call site,
    a default or a `# tilelang:` comment) written into the kernel's `# tilelang:` comment.
    `fn`: the kernel as the server bound it (else its bindings are resolved from `text`)."""
    if fn is None:
        try:
            fn = _kernel(analyze_module(text), fn_name)
        except SyntaxError:
            return None
    if fn is None:
        return None
    written = ("call site", "default", "comment")
    values = {k: v for k, v in fn.bindings.items() if not fn.sources.get(k, "").startswith(written)}
    if not values:
        return None
    new = _set_directive(text, fn, values)
    if new is None:
        return None
    shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
    return Fix(f"Pin these bindings: # tilelang: {shown}", new, text_edits(text, new), "refactor.rewrite")


def _set_directive(text: str, fn: KernelFunction, values: dict[str, Any]) -> str | None:
    module = cst.parse_module(text)
    target = next(
        (n for n in module.body if isinstance(n, cst.FunctionDef) and n.name.value == fn.name),
        None,
    )
    if target is None:
        return None
    return module.visit(_Replace({target: lambda n: _with_directive(n, values)})).code


def apply_values(text: str, fn_name: str, values: dict[str, Any]) -> tuple[str, list[str]]:
    """Write each value where the kernel's value for it comes from (call site, default,
    comment); a parameter with none of those gets a default when Python allows one there.
    Returns the new text and the names that could not be written."""
    skipped = []
    for name, value in values.items():
        try:
            fn = _kernel(analyze_module(text), fn_name)
        except SyntaxError:
            return text, list(values)
        if fn is None:
            return text, list(values)
        if not isinstance(value, int | float | str | bool) or name not in fn.params:
            skipped.append(name)
            continue
        found = locate(text, fn, name)
        if found is not None:
            text = found[1](value)
            continue
        new = _add_default(text, fn_name, name, value)
        if new is None:
            skipped.append(name)
        else:
            text = new
    return text, skipped


def _add_default(text: str, fn_name: str, name: str, value: Any) -> str | None:
    module = cst.parse_module(text)
    fdef = next((n for n in module.body if isinstance(n, cst.FunctionDef) and n.name.value == fn_name), None)
    if fdef is None:
        return None
    ps = fdef.params
    for group in ("params", "kwonly_params"):
        params = list(getattr(ps, group))
        for i, p in enumerate(params):
            if p.name.value != name:
                continue
            if group == "params" and any(q.default is None for q in params[i + 1 :]):
                return None  # a default here would need defaults on the parameters after it
            eq = cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(" " if p.annotation else ""),
                whitespace_after=cst.SimpleWhitespace(" " if p.annotation else ""),
            )
            params[i] = p.with_changes(default=_literal(value), equal=eq)
            new_fdef = fdef.with_changes(params=ps.with_changes(**{group: params}))
            return module.visit(_Replace({fdef: lambda _n, f=new_fdef: f})).code
    return None
