"""A static index of the installed `tilelang` package: what `T.copy` or `tilelang.jit` is.

The server never imports the compiler, so the package's source is read with `ast`:
each module's top-level `def` / `class` / assignments, its `from . import` re-exports
(`as` aliases and `import *` with `__all__` as Python applies them), and the names a
module's `__getattr__` serves lazily (`if name in ("autotune",): from .autotuner import
autotune`). A symbol knows where it is defined, its signature (from the `def`, or a
class's `__init__`), and its docstring. `pass_config_keys()` reads
`tilelang/pass_config.py` the same way: every `PassConfigKey` value with what it does here.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Param:
    name: str
    label: str  # as written: "num_stages: int = 0"
    keyword_only: bool = False
    star: str = ""  # "*" for *args, "**" for **kwargs


@dataclass(frozen=True)
class Symbol:
    name: str  # the name it is reached by (`T.<name>`)
    qualname: str  # e.g. "tilelang.language.copy"
    kind: str  # function | class | variable | module
    path: str  # defining file
    line: int  # 1-based
    col: int
    end_col: int
    params: tuple[Param, ...] = ()
    returns: str = ""
    doc: str = ""
    module: str = ""  # for kind == "module": its dotted name

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else ""

    @property
    def callable(self) -> bool:
        return self.kind in ("function", "class")

    def signature(self) -> str:
        if not self.callable:
            return self.name
        parts: list[str] = []
        star_done = False
        for p in self.params:
            if p.keyword_only and not star_done:
                parts.append("*")
                star_done = True
            if p.star == "*":
                star_done = True
            parts.append(p.label)
        ret = f" -> {self.returns}" if self.returns and self.kind == "function" else ""
        return f"{self.name}({', '.join(parts)}){ret}"


@dataclass
class _Module:
    name: str
    path: Path
    names: dict[str, Symbol] = field(default_factory=dict)
    lazy: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (module, attribute)
    defs: dict[str, ast.FunctionDef] = field(default_factory=dict)  # this module's own functions


def package_root() -> Path | None:
    """The directory of the `tilelang` package the server would import (not imported here)."""
    try:
        spec = importlib.util.find_spec("tilelang")
    except (ImportError, ValueError):
        return None
    locs = list(spec.submodule_search_locations or []) if spec else []
    return Path(locs[0]) if locs else None


def _params(args: ast.arguments, drop_self: bool) -> tuple[Param, ...]:
    out: list[Param] = []
    pos = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(pos) - len(args.defaults)) + list(args.defaults)

    def label(a: ast.arg, d: ast.expr | None, star: str = "") -> str:
        text = star + a.arg
        if a.annotation is not None:
            text += f": {ast.unparse(a.annotation)}"
        if d is not None:
            text += (" = " if a.annotation is not None else "=") + ast.unparse(d)
        return text

    for i, (a, d) in enumerate(zip(pos, defaults)):
        if i == 0 and drop_self and a.arg in ("self", "cls"):
            continue
        out.append(Param(a.arg, label(a, d)))
    if args.vararg:
        out.append(Param(args.vararg.arg, label(args.vararg, None, "*"), star="*"))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(Param(a.arg, label(a, d), keyword_only=True))
    if args.kwarg:
        out.append(Param(args.kwarg.arg, label(args.kwarg, None, "**"), star="**"))
    return tuple(out)


def _class_init(node: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


class PackageIndex:
    """Modules of one package root, parsed on first use (each file once)."""

    def __init__(self, root: Path, package: str = "tilelang"):
        self.root = root
        self.package = package
        self.modules: dict[str, _Module | None] = {}
        self._busy: set[str] = set()

    def _file(self, modname: str) -> Path | None:
        parts = modname.split(".")
        if parts[0] != self.package:
            return None
        base = self.root.joinpath(*parts[1:])
        for cand in (base / "__init__.py", base.with_suffix(".py")):
            if cand.is_file():
                return cand
        return None

    def is_module(self, modname: str) -> bool:
        return self._file(modname) is not None

    def module(self, modname: str) -> _Module | None:
        if modname in self.modules:
            return self.modules[modname]
        path = self._file(modname)
        if path is None or modname in self._busy:  # an import cycle: what is known so far
            return None
        self._busy.add(modname)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            mod = self.modules[modname] = _Module(modname, path)
            self._fill(mod, tree, path.name == "__init__.py")
        except (OSError, SyntaxError, ValueError, RecursionError):
            self.modules[modname] = None
        finally:
            self._busy.discard(modname)
        return self.modules[modname]

    def _abs(self, modname: str, is_pkg: bool, level: int, target: str | None) -> str:
        if level == 0:
            return target or ""
        base = modname.split(".")
        if not is_pkg:
            base = base[:-1]
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join(base + ([target] if target else []))

    def _fill(self, mod: _Module, tree: ast.Module, is_pkg: bool) -> None:
        path = str(mod.path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name == "__getattr__":
                    self._lazy(mod, node, is_pkg)
                    continue
                mod.defs[node.name] = node
                mod.names[node.name] = Symbol(
                    node.name, f"{mod.name}.{node.name}", "function", path, node.lineno, node.col_offset + 4,
                    node.col_offset + 4 + len(node.name), _params(node.args, False),
                    ast.unparse(node.returns) if node.returns else "", ast.get_docstring(node) or "",
                )  # fmt: skip
            elif isinstance(node, ast.ClassDef):
                init = _class_init(node)
                mod.names[node.name] = Symbol(
                    node.name, f"{mod.name}.{node.name}", "class", path, node.lineno, node.col_offset + 6,
                    node.col_offset + 6 + len(node.name), _params(init.args, True) if init else (), "",
                    ast.get_docstring(node) or (ast.get_docstring(init) if init else "") or "",
                )  # fmt: skip
            elif isinstance(node, ast.ImportFrom):
                src = self._abs(mod.name, is_pkg, node.level, node.module)
                for a in node.names:
                    if a.name == "*":
                        target = self.module(src)
                        if target is not None:
                            for name, sym in self._star(target).items():
                                mod.names[name] = sym
                        continue
                    bound = a.asname or a.name
                    sym = self.lookup(src, a.name)
                    if sym is not None:
                        mod.names[bound] = _renamed(sym, bound)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for tgt in targets:
                    if not isinstance(tgt, ast.Name) or tgt.id == "__all__":
                        continue
                    ref = mod.names.get(node.value.id) if isinstance(node.value, ast.Name) else None
                    ref = ref or _made_by_factory(mod, node.value, tgt.id)
                    kind = ref.kind if ref is not None else "variable"
                    mod.names[tgt.id] = Symbol(
                        tgt.id, f"{mod.name}.{tgt.id}", kind, path, node.lineno, tgt.col_offset,
                        tgt.end_col_offset or tgt.col_offset + len(tgt.id), ref.params if ref else (),
                        ref.returns if ref else "", ref.doc if ref else "",
                    )  # fmt: skip
        mod.names.pop("__all__", None)
        all_names = _literal_all(tree)
        if all_names is not None:
            mod.names["__all__"] = Symbol("__all__", "", "variable", path, 1, 0, 0, doc="\n".join(all_names))

    def _lazy(self, mod: _Module, fn: ast.FunctionDef, is_pkg: bool) -> None:
        """Names a module-level `__getattr__` serves: `if name in (...)` / `==` branches that
        import them (`from .x import y`, `from . import x; return getattr(x, name)`,
        `importlib.import_module(f".{name}", ...)`)."""
        for node in ast.walk(fn):
            if not isinstance(node, ast.If):
                continue
            names = _compared_names(node.test)
            if not names:
                continue
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    src = self._abs(mod.name, is_pkg, stmt.level, stmt.module)
                    for a in stmt.names:
                        if a.name in names:
                            mod.lazy[a.asname or a.name] = (src, a.name)
                        elif src and self.is_module(f"{src}.{a.name}"):
                            for n in names:  # `from . import layout; return getattr(layout, name)`
                                mod.lazy.setdefault(n, (f"{src}.{a.name}", n))
            if any(isinstance(s, ast.Call) and getattr(s.func, "attr", "") == "import_module" for s in ast.walk(node)):
                for n in names:
                    mod.lazy.setdefault(n, (f"{mod.name}.{n}", ""))

    def _star(self, mod: _Module) -> dict[str, Symbol]:
        exported = mod.names.get("__all__")
        if exported is not None:
            keep = exported.doc.splitlines()
            return {n: mod.names[n] for n in keep if n in mod.names}
        return {n: s for n, s in mod.names.items() if not n.startswith("_")}

    def lookup(self, modname: str, name: str) -> Symbol | None:
        """`modname.name`: a symbol the module binds, a lazily served one, or a submodule."""
        mod = self.module(modname)
        if mod is not None:
            sym = mod.names.get(name)
            if sym is not None and name != "__all__":
                return sym
            if name in mod.lazy:
                src, attr = mod.lazy[name]
                got = self.lookup(src, attr) if attr else self.module_symbol(src, name)
                if got is not None:
                    return _renamed(got, name)
        return self.module_symbol(f"{modname}.{name}", name)

    def module_symbol(self, modname: str, name: str | None = None) -> Symbol | None:
        path = self._file(modname)
        if path is None:
            return None
        doc = ""
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        except (OSError, SyntaxError, ValueError):
            pass
        short = name or modname.rsplit(".", 1)[-1]
        return Symbol(short, modname, "module", str(path), 1, 0, 0, doc=doc, module=modname)

    def members(self, modname: str) -> dict[str, Symbol]:
        """The public names reachable as `modname.<name>` (what completion offers)."""
        mod = self.module(modname)
        if mod is None:
            return {}
        out = {n: s for n, s in mod.names.items() if not n.startswith("_")}
        for name in mod.lazy:
            if name not in out and not name.startswith("_"):
                sym = self.lookup(modname, name)
                if sym is not None:
                    out[name] = sym
        return out


def _renamed(sym: Symbol, name: str) -> Symbol:
    if sym.name == name:
        return sym
    return Symbol(
        name, sym.qualname, sym.kind, sym.path, sym.line, sym.col, sym.end_col, sym.params, sym.returns, sym.doc,
        sym.module,
    )  # fmt: skip


def _made_by_factory(mod: _Module, value: ast.expr | None, name: str) -> Symbol | None:
    """`exp = _unary("exp")` where `_unary` returns an inner `def`: that def's parameters, and
    the docstring the factory assigns (`fn.__doc__ = f"Elementwise `{op}`."`) with the call's
    literal arguments filled in."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in mod.defs):
        return None
    factory = mod.defs[value.func.id]
    inner = next((n for n in factory.body if isinstance(n, ast.FunctionDef)), None)
    if inner is None:
        return None
    args = {p.arg: a.value for p, a in zip(factory.args.args, value.args) if isinstance(a, ast.Constant)}
    doc = ast.get_docstring(inner) or ""
    for st in factory.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "__doc__" for t in st.targets):
            doc = _render(st.value, args) or doc
    return Symbol(name, "", "function", "", 0, 0, 0, _params(inner.args, False),
                  ast.unparse(inner.returns) if inner.returns else "", doc)  # fmt: skip


def _render(node: ast.expr, args: dict) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return ""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id in args:
            out.append(str(args[part.value.id]))
        else:
            return ""
    return "".join(out)


def _compared_names(test: ast.expr) -> list[str]:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
        right = test.comparators[0]
        if isinstance(test.ops[0], ast.In) and isinstance(right, ast.Tuple | ast.List | ast.Set):
            return [e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
            return [right.value]
    return []


def _literal_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(v) for v in value]
    return None


@functools.lru_cache(maxsize=1)
def default_index() -> PackageIndex | None:
    root = package_root()
    return PackageIndex(root) if root else None


@dataclass(frozen=True)
class PassConfigDoc:
    key: str  # the string value, e.g. "tl.disable_tma_lower"
    member: str  # PassConfigKey member name, e.g. "TL_DISABLE_TMA_LOWER"
    acts: bool | None  # None: not described in KEYS
    note: str
    line: int


@functools.lru_cache(maxsize=4)
def pass_config_keys(root: Path | None = None) -> tuple[PassConfigDoc, ...]:
    """Every `PassConfigKey` of tilelang/pass_config.py with the note of its `KEYS` entry."""
    root = root or package_root()
    path = root / "pass_config.py" if root else None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8")) if path else None
    except (OSError, SyntaxError, ValueError):
        tree = None
    if tree is None:
        return ()
    consts = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    members: dict[str, tuple[str, int]] = {}
    notes: dict[str, tuple[bool, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "PassConfigKey":
            for st in node.body:
                if (
                    isinstance(st, ast.Assign)
                    and isinstance(st.value, ast.Constant)
                    and isinstance(st.value.value, str)
                ):
                    for t in st.targets:
                        if isinstance(t, ast.Name):
                            members[t.id] = (st.value.value, st.lineno)
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Attribute) and isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.args:
                    arg = v.args[0]
                    text = arg.value if isinstance(arg, ast.Constant) else consts.get(getattr(arg, "id", ""), "")
                    notes[k.attr] = (v.func.id == "_acts", str(text))
    out = []
    for member, (key, line) in members.items():
        acts, note = notes.get(member, (None, ""))
        out.append(PassConfigDoc(key, member, acts, note, line))
    return tuple(out)
