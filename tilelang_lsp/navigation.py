"""Go-to-definition, hover, completion and signature help for `T.*` / `tilelang.*` names.

Editor-neutral: positions are 0-based lines and Python string indices (server.py
converts them). Names are resolved through the file's own imports
(`import tilelang.language as T`, `from tilelang import language as T`, `import
tilelang as tl` then `tl.language.copy`, `from tilelang.language import copy`) against
the static index of the installed package (symbols.py); nothing is executed. Works on
text that does not parse: then only the file's import lines are read.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .symbols import PackageIndex, PassConfigDoc, Symbol, default_index, pass_config_keys

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CHAIN = re.compile(rf"{_IDENT}(?:\s*\.\s*{_IDENT})*")
_IMPORT_LINE = re.compile(r"^\s*(import|from)\s")


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # function | class | variable | module | key
    detail: str
    documentation: str
    insert_text: str | None = None
    sort_text: str | None = None
    replace_start: int | None = None  # column on the cursor's line where the replaced text starts


@dataclass(frozen=True)
class Signature:
    label: str
    documentation: str
    params: tuple[str, ...]
    active: int | None


def import_aliases(text: str, package: str = "tilelang") -> dict[str, str]:
    """Names this file binds to the package: {"T": "tilelang.language", "copy": "tilelang.language.copy"}."""
    try:
        nodes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Import | ast.ImportFrom)]
    except (SyntaxError, ValueError, RecursionError):
        nodes = []
        for line in text.splitlines():
            if _IMPORT_LINE.match(line):
                try:
                    nodes += [n for n in ast.parse(line.strip()).body if isinstance(n, ast.Import | ast.ImportFrom)]
                except SyntaxError:
                    continue
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name != package and not a.name.startswith(package + "."):
                    continue
                if a.asname:
                    out[a.asname] = a.name
                else:  # `import tilelang.language` binds `tilelang`
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
        elif node.level == 0 and node.module and (node.module == package or node.module.startswith(package + ".")):
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


class Navigator:
    def __init__(self, index: PackageIndex | None = None):
        self.index = index if index is not None else default_index()

    # -- resolving -----------------------------------------------------------
    def resolve(self, dotted: str) -> Symbol | None:
        """A fully qualified dotted name (`tilelang.language.copy`) -> its symbol."""
        ix = self.index
        if ix is None:
            return None
        parts = dotted.split(".")
        if parts[0] != ix.package:
            return None
        sym: Symbol | None = ix.module_symbol(ix.package)
        for part in parts[1:]:
            if sym is None or sym.kind != "module":
                return None
            sym = ix.lookup(sym.module, part)
        return sym

    def resolve_chain(self, chain: list[str], aliases: dict[str, str]) -> Symbol | None:
        if not chain or chain[0] not in aliases:
            return None
        return self.resolve(".".join([aliases[chain[0]], *chain[1:]]))

    # -- features ------------------------------------------------------------
    def symbol_at(self, text: str, line0: int, col: int) -> Symbol | None:
        lines = text.splitlines()
        if not 0 <= line0 < len(lines):
            return None
        chain = chain_at(lines[line0], col)
        return self.resolve_chain(chain, import_aliases(text)) if chain else None

    def definition(self, text: str, line0: int, col: int) -> tuple[str, int, int, int] | None:
        """(file, 0-based line, start col, end col) of the definition of the name at the cursor."""
        sym = self.symbol_at(text, line0, col)
        if sym is None or not sym.path:
            return None
        return sym.path, max(sym.line - 1, 0), sym.col, sym.end_col

    def hover(self, text: str, line0: int, col: int) -> str | None:
        sym = self.symbol_at(text, line0, col)
        return hover_markdown(sym) if sym is not None else None

    def completions(self, text: str, line0: int, col: int) -> list[Completion]:
        lines = text.splitlines()
        line = lines[line0] if 0 <= line0 < len(lines) else ""
        before = line[:col]
        keys = pass_config_completions(text, line0, col)
        if keys is not None:
            return keys
        m = re.search(rf"({_IDENT}(?:\s*\.\s*{_IDENT})*)\s*\.\s*({_IDENT})?$", before)
        if not m or _in_string_or_comment(before[: m.start()]):
            return []
        chain = [p.strip() for p in m.group(1).split(".")]
        target = self.resolve_chain(chain, import_aliases(text))
        if target is None or target.kind != "module" or self.index is None:
            return []
        out = []
        for name, sym in sorted(self.index.members(target.module).items()):
            detail = sym.signature() if sym.callable else (sym.qualname or sym.name)
            out.append(Completion(name, sym.kind, detail, sym.doc.strip()))
        return out

    def signature_help(self, text: str, line0: int, col: int) -> Signature | None:
        lines = text.splitlines()
        if not 0 <= line0 < len(lines):
            return None
        found = open_call(lines, line0, col)
        if found is None:
            return None
        callee, args_text = found
        sym = self.resolve_chain(callee, import_aliases(text))
        if sym is None or not sym.callable:
            return None
        params = sym.params
        index, keyword = current_argument(args_text)
        active = None
        if keyword is not None:
            active = next((i for i, p in enumerate(params) if p.name == keyword), None)
            if active is None:
                active = next((i for i, p in enumerate(params) if p.star == "**"), None)
        else:
            positional = [i for i, p in enumerate(params) if not p.keyword_only and p.star != "**"]
            star = next((i for i, p in enumerate(params) if p.star == "*"), None)
            if index < len(positional):
                active = positional[index]
                if star is not None and active > star:
                    active = star
            elif star is not None:
                active = star
        return Signature(sym.signature(), sym.doc.strip(), tuple(p.label for p in params), active)


def hover_markdown(sym: Symbol) -> str:
    head = sym.signature() if sym.callable else sym.name
    where = sym.qualname or sym.module or sym.name
    out = [f"```python\n{_kind_word(sym)}{head}\n```", f"`{where}`"]
    if sym.summary:
        out += ["", sym.summary]
    return "\n".join(out)


def _kind_word(sym: Symbol) -> str:
    return {"function": "def ", "class": "class ", "module": "module "}.get(sym.kind, "")


def chain_at(line: str, col: int) -> list[str]:
    """The dotted name around `col`, cut after the part the cursor is on: `T.copy(` -> ["T", "copy"]."""
    for m in _CHAIN.finditer(line):
        if m.start() <= col <= m.end():
            if _in_string_or_comment(line[: m.start()]):
                return []
            parts = []
            for piece in re.finditer(_IDENT, m.group()):
                parts.append(piece.group())
                if m.start() + piece.end() >= col:
                    break
            return parts
    return []


def _in_string_or_comment(prefix: str) -> bool:
    """True when the end of `prefix` (one line) is inside a string literal or a comment."""
    quote = None
    i = 0
    while i < len(prefix):
        c = prefix[i]
        if quote:
            if c == "\\":
                i += 1
            elif prefix.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif c == "#":
            return True
        elif c in "'\"":
            quote = prefix[i : i + 3] if prefix[i : i + 3] in ('"""', "'''") else c
            i += len(quote) - 1
        i += 1
    return quote is not None


def _strip_strings(text: str) -> str:
    """`text` with string contents and comments blanked (same length), for bracket counting."""
    out = list(text)
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and i + 1 < len(text):
                out[i] = out[i + 1] = " "
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            if c != "\n":
                out[i] = " "
        elif c == "#":
            while i < len(text) and text[i] != "\n":
                out[i] = " "
                i += 1
            continue
        elif c in "'\"":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else c
            i += len(quote)
            continue
        i += 1
    return "".join(out)


def open_call(lines: list[str], line0: int, col: int, max_lines: int = 40) -> tuple[list[str], str] | None:
    """The innermost unclosed call around the cursor: (callee chain, argument text so far)."""
    first = max(0, line0 - max_lines)
    text = "\n".join(lines[first:line0] + [lines[line0][:col]])
    clean = _strip_strings(text)
    depth = 0
    for i in range(len(clean) - 1, -1, -1):
        c = clean[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth:
                depth -= 1
                continue
            if c != "(":
                return None
            m = re.search(rf"({_IDENT}(?:\s*\.\s*{_IDENT})*)\s*$", clean[:i])
            if not m:
                return None
            return [p.strip() for p in m.group(1).split(".")], clean[i + 1 :]
    return None


def current_argument(args_text: str) -> tuple[int, str | None]:
    """(index of the argument being typed, its keyword if it has one) — `args_text` is cleaned."""
    depth, index, start = 0, 0, 0
    for i, c in enumerate(args_text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            index += 1
            start = i + 1
    m = re.match(rf"\s*({_IDENT})\s*=(?!=)", args_text[start:])
    return index, m.group(1) if m else None


_PASS_CONFIGS = re.compile(r"(?:\bpass_configs\s*=|\bannotate_pass_configs\s*\()\s*\{")


def pass_config_completions(text: str, line0: int, col: int) -> list[Completion] | None:
    """Keys of `PassConfigKey` when the cursor is at a key of a `pass_configs={...}` literal."""
    lines = text.splitlines()
    if not 0 <= line0 < len(lines):
        return None
    first = max(0, line0 - 40)
    before = "\n".join(lines[first:line0] + [lines[line0][:col]])
    clean = _strip_strings(before)
    opens = list(_PASS_CONFIGS.finditer(clean))
    if not opens:
        return None
    start = opens[-1].end()
    depth = 0
    last_sep = start
    for i in range(start, len(clean)):
        c = clean[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return None  # the dict was closed before the cursor
            depth -= 1
        elif c == "," and depth == 0:
            last_sep = i + 1
    if depth != 0 or ":" in clean[last_sep:]:
        return None  # inside a nested value, or at a value position
    typed = before[last_sep:].lstrip()
    quote = typed[:1] if typed[:1] in ("'", '"') else ""
    if not quote and typed:
        return None  # a name or an expression (`PassConfigKey.X`) is being typed, not a string key
    # replace what was typed of the key (dots are word separators in most editors)
    replace = col - (len(typed) - len(quote)) if "\n" not in typed else col
    return [_key_item(k, quote, replace) for k in pass_config_keys()]


def _key_item(k: PassConfigDoc, quote: str, replace: int) -> Completion:
    if k.acts is None:
        detail = f"PassConfigKey.{k.member}"
    else:
        detail = f"PassConfigKey.{k.member} — {'acts' if k.acts else 'no effect in this compiler'}"
    doc = k.note if k.acts else (f"No effect here: {k.note}" if k.note else "")
    insert = k.key if quote else f'"{k.key}"'
    sort = ("0" if k.acts else "1") + k.key
    return Completion(k.key, "key", detail, doc, insert, sort, replace)
