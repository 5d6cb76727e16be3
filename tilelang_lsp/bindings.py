"""Find the kernel functions of a module and their compile-time values, statically.

Nothing here executes user code: the module is parsed with `ast` and only
literal expressions (numbers, strings, bools, None, tuples/lists of those,
dtype names, module constants and arithmetic on them) are evaluated.

For every top-level kernel function (``@tilelang.jit``, ``@jit`` imported from
tilelang, optionally under ``@autotune``; ``@T.prim_func``; or a factory whose
body holds an inner ``@T.prim_func``) parameter values are resolved in this
order: literal call sites in the same file (also through the parameters of an
ordinary function such as ``main(M=1024)``), call sites fed by ``argparse``
defaults, signature defaults, the first ``@autotune(configs=...)`` config, a
``# tilelang: name=value, ...`` comment directly above the function, and last
representative values that keep the factory's own asserts true (marked
"assumed": see provenance.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from . import provenance as P
from .literals import (
    module_constants,
    parse_directive,
    torch_shape,
    try_eval,
    value_nodes,
)
from .regions import ParsedDoc, parse_document

# Per-statement results, keyed by the node's identity: regions.parse_document reuses the nodes of
# regions that did not change, so an edit recomputes only what it touched.
_SCANS: dict[tuple, tuple] = {}
_CALLS: dict[tuple, tuple] = {}
TENSOR_ANNOTATIONS = {"Tensor", "Buffer", "SharedBuffer", "FragmentBuffer", "StridedTensor", "LocalBuffer"}


@dataclass
class KernelFunction:
    name: str
    kind: str  # "jit" (eager or lazy), "prim_func", "factory"
    start_line: int  # 1-based, first decorator (or comment directive) line
    def_line: int  # 1-based line of `def`
    end_line: int  # 1-based, inclusive
    params: list[str]
    tensor_params: list[str]
    consts: list[str]  # T.const symbols (eager style)
    bindings: dict[str, Any] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(
        default_factory=dict
    )  # name -> "call site line N" | "argparse default (--x, line N)" | "default" | "autotune config" | "comment line N" | "assumed"
    context: str = ""  # module-level statements the function refers to (part of its cache key)
    assumed: list[str] = field(default_factory=list)  # names bound to representative values
    node: Any = field(default=None, repr=False, compare=False)  # the ast.FunctionDef

    def origin_summary(self) -> str:
        """One line for the kernel: where the values nobody sees in the signature come from."""
        groups: dict[str, list[str]] = {}
        for name, src in self.sources.items():
            if src == "default":
                continue
            kind = src.split(" (")[0].split(" line")[0]
            groups.setdefault(kind, []).append(f"{name}={self.bindings[name]!r}")
        parts = [f"{', '.join(v)} — from {k}s" for k, v in groups.items() if k != P.ASSUMED]
        if P.ASSUMED in groups:
            parts.append(f"assuming {', '.join(groups[P.ASSUMED])}")
        return " · ".join(parts)


class Module:
    """What the module-level code lets us know without running it."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.tilelang_aliases = {"tilelang"}  # names bound to the tilelang package
        self.jit_names: set[str] = set()  # bare names bound to tilelang's jit / autotune
        self.autotune_names: set[str] = set()
        self.lang_aliases = {"T"}  # names bound to tilelang.language
        self._imports()
        self.alias_key = (frozenset(self.tilelang_aliases), frozenset(self.jit_names), frozenset(self.lang_aliases))
        self.argparse, holders = P.argparse_defaults(tree, module_constants(tree.body))
        self.argparse_keys = {f"{a}.{d}" for a in holders for d in self.argparse}
        parsed = {f"{a}.{d}": self.argparse[d][0] for a in holders for d in self.argparse}
        self.env = {**parsed, **module_constants(tree.body, parsed)}  # `batch = args.batch` at module level too
        self.taint = _taint(tree.body, {k: _origin(self.argparse, k) for k in self.argparse_keys})
        self.values = value_nodes(tree.body)

    def _imports(self):
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "tilelang":
                        self.tilelang_aliases.add(a.asname or "tilelang")
                    elif a.name == "tilelang.language" and a.asname:
                        self.lang_aliases.add(a.asname)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tilelang"):
                for a in node.names:
                    bound = a.asname or a.name
                    if a.name == "jit":
                        self.jit_names.add(bound)
                    elif a.name == "autotune":
                        self.autotune_names.add(bound)
                    elif a.name == "language":
                        self.lang_aliases.add(bound)

    def is_lang(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in self.lang_aliases or _dotted(node) == "tilelang.language"

    def decorator_kind(self, dec: ast.expr) -> str | None:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = _dotted(target)
        if name is None:
            return None
        head, _, attr = name.rpartition(".")
        if (head in self.tilelang_aliases and attr == "jit") or (not head and name in self.jit_names):
            return "jit"
        if (head in self.tilelang_aliases and attr == "autotune") or (not head and name in self.autotune_names):
            return "autotune"
        if head.endswith("autotuner") and attr == "autotune":
            return "autotune"
        if attr == "prim_func" and (head in self.lang_aliases or head == "tilelang.language"):
            return "prim_func"
        return None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_tensor_annotation(ann: ast.AST | None) -> bool:
    if ann is None:
        return False
    node = ann.func if isinstance(ann, ast.Call) else ann.value if isinstance(ann, ast.Subscript) else ann
    return isinstance(node, ast.Attribute) and node.attr in TENSOR_ANNOTATIONS


def _scan(fn: ast.FunctionDef, module: Module) -> tuple[list[str], dict[str, ast.AST], bool]:
    """One walk of a function: its `T.const` symbols (eager style), its body annotations
    `A: T.Tensor((M, K), dtype)` (shape node by parameter name), and whether an inner
    `@T.prim_func` makes it a factory."""
    key = (id(fn), module.alias_key)
    got = _SCANS.get(key)
    if got is not None and got[0] is fn:
        return got[1]
    consts: list[str] = []
    shapes: dict[str, ast.AST] = {}
    inner = False
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "const"
                and module.is_lang(node.func.value)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                consts += [s for s in node.args[0].value.replace(",", " ").split() if s not in consts]
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and _is_tensor_annotation(node.annotation):
                ann = node.annotation
                args = ann.args if isinstance(ann, ast.Call) else []
                if args:
                    shapes[node.target.id] = args[0]
        elif isinstance(node, ast.FunctionDef) and node is not fn and not inner:
            inner = any(module.decorator_kind(d) == "prim_func" for d in node.decorator_list)
    if len(_SCANS) > 4096:
        _SCANS.clear()
    _SCANS[key] = (fn, (consts, shapes, inner))  # the node is kept: its id cannot be reused meanwhile
    return consts, shapes, inner


def _const_symbols(fn: ast.FunctionDef, module: Module) -> list[str]:
    return _scan(fn, module)[0]


def _tensor_shapes(fn: ast.FunctionDef, module: Module) -> dict[str, ast.AST]:
    return _scan(fn, module)[1]


def _has_inner_prim_func(fn: ast.FunctionDef, module: Module) -> bool:
    return _scan(fn, module)[2]


def _comment_directives(lines: list[str], first_line: int) -> tuple[list[tuple[int, str]], int]:
    """`# tilelang: ...` lines in the comment block directly above 1-based `first_line`."""
    found = []
    i = first_line - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        text = lines[i].strip().lstrip("#").strip()
        if text.startswith("tilelang:"):
            found.append((i + 1, text[len("tilelang:") :].strip()))
        i -= 1
    start = min([ln for ln, _ in found], default=first_line)
    return list(reversed(found)), start


class _Scopes:
    """Every call of a top-level function name, with the scope it is in, from one traversal;
    the constants of a scope are computed when a call in it is looked at.

    A function's parameters count as constants of its body when they have a literal default
    or a call site gives them one (`main(args.batch)` with `--batch` defaulting to 8)."""

    def __init__(self, module: Module, names: set[str], functions: dict[str, ast.FunctionDef], kernels: set[str]):
        self.module = module
        self.functions = functions  # ordinary top-level functions (their parameters may come from call sites)
        self.kernels = kernels
        self.by_name: dict[str, list[tuple[ast.Call, tuple]]] = {}
        self._scope: dict[int, tuple[dict, dict, set]] = {}
        self._params: dict[int, tuple[dict, dict]] = {}
        self._busy: set[int] = set()
        names_key = frozenset(names)
        for stmt in module.tree.body:
            key = (id(stmt), names_key)
            got = _CALLS.get(key)
            if got is None or got[0] is not stmt:
                found: dict[str, list] = {}
                self._walk(
                    stmt, (stmt,) if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) else (), names, found
                )
                if len(_CALLS) > 4096:
                    _CALLS.clear()
                got = _CALLS[key] = (stmt, found)
            for name, calls in got[1].items():
                self.by_name.setdefault(name, []).extend(calls)

    def _walk(self, node: ast.AST, chain: tuple, names: set[str], found: dict) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                self._walk(child, (*chain, child), names, found)
                continue
            if isinstance(child, ast.Call):
                fn = child.func
                if isinstance(fn, ast.Attribute) and fn.attr in ("compile", "__call__"):
                    fn = fn.value
                if isinstance(fn, ast.Name) and fn.id in names:
                    found.setdefault(fn.id, []).append((child, chain))
            if isinstance(child, ast.expr | ast.stmt | ast.comprehension | ast.keyword | ast.withitem):
                self._walk(child, chain, names, found)
            elif isinstance(child, ast.excepthandler | ast.match_case):
                self._walk(child, chain, names, found)

    def calls(self, name: str):
        """(call, env, value nodes, argparse-derived names) for each call of `name`."""
        for call, chain in self.by_name.get(name, []):
            yield (call, *self.scope(chain))

    def scope(self, chain: tuple) -> tuple[dict, dict, set]:
        if not chain:
            m = self.module
            return m.env, m.values, m.taint
        key = id(chain[-1])
        if key not in self._scope:
            node = chain[-1]
            outer_env, outer_vals, outer_taint = self.scope(chain[:-1])
            penv, ptaint = self.params(node) if len(chain) == 1 else ({}, {})
            penv = {**_param_defaults(node, outer_env), **penv}
            local = {p.arg for p in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
            base = {k: v for k, v in outer_env.items() if k not in local}
            env = {**base, **penv, **module_constants(node.body, {**base, **penv})}
            vals = {**outer_vals, **value_nodes(node.body)}
            inherited = {k: v for k, v in outer_taint.items() if k not in local}
            self._scope[key] = (env, vals, _taint(node.body, {**inherited, **ptaint}))
        return self._scope[key]

    def params(self, node: ast.FunctionDef) -> tuple[dict, set]:
        """Values the first call sites give the parameters of an ordinary top-level function."""
        key = id(node)
        if key in self._params or key in self._busy or node.name not in self.functions or node.name in self.kernels:
            return self._params.get(key, ({}, {}))
        self._busy.add(key)
        penv: dict[str, Any] = {}
        ptaint: dict[str, str] = {}
        positional = [p.arg for p in node.args.posonlyargs + node.args.args]
        for call, chain in self.by_name.get(node.name, []):
            if node.lineno <= call.lineno <= (node.end_lineno or node.lineno):
                continue  # recursion
            env, _values, taint = self.scope(chain)
            pairs = [
                (positional[i], a) for i, a in enumerate(call.args[: len(positional)]) if not isinstance(a, ast.Starred)
            ]
            pairs += [(k.arg, k.value) for k in call.keywords if k.arg]
            for name, arg in pairs:
                ok, v = try_eval(arg, env)
                if ok and name not in penv:
                    penv[name] = v
                    origin = _tainted(arg, taint)
                    if origin:
                        ptaint[name] = origin
        self._busy.discard(key)
        self._params[key] = (penv, ptaint)
        return self._params[key]


def _origin(argparse: dict, key: str) -> str:
    dest = key.split(".", 1)[1]
    return f"--{dest}, line {argparse[dest][1]}"


def _tainted(node: ast.AST, taint: dict[str, str]) -> str | None:
    """The argparse option an expression's value comes from (`--batch, line 12`), if any."""
    return next((taint[r] for r in sorted(_refs(node)) if r in taint), None)


def _taint(body: list[ast.stmt], taint: dict[str, str]) -> dict[str, str]:
    """`taint` plus the names of `body` whose value reads one of them (argparse-derived values)."""
    out = dict(taint)
    for name, value in value_nodes(body).items():
        origin = _tainted(value, out)
        if origin:
            out[name] = origin
    return out


def _refs(node: ast.AST) -> set[str]:
    """Names and `x.attr` pairs an expression reads."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            out.add(f"{n.value.id}.{n.attr}")
    return out


def _param_defaults(node: ast.FunctionDef, env: dict) -> dict[str, Any]:
    a = node.args
    pos = a.posonlyargs + a.args
    out = {}
    for p, d in list(zip(pos[len(pos) - len(a.defaults) :], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
        ok, v = try_eval(d, env) if d is not None else (False, None)
        if ok:
            out[p.arg] = v
    return out


def analyze_module(source: str) -> list[KernelFunction]:
    """All kernel functions of `source` with resolved bindings. Raises SyntaxError."""
    doc = parse_document(source)
    if doc.syntax is not None:
        raise doc.syntax
    return analyze_document(doc)


def analyze_document(doc: ParsedDoc) -> list[KernelFunction]:
    """The kernels of a parsed document (its repaired tree when the file does not parse);
    computed once per document version (`parse_document` returns the same ParsedDoc for the same
    text), so the analysis pass, code actions and quick fixes share it — callers do not mutate it."""
    if doc.kernels is None:
        doc.kernels = _analyze_document(doc)
    return list(doc.kernels)


def _analyze_document(doc: ParsedDoc) -> list[KernelFunction]:
    tree = doc.tree
    module = Module(tree)
    lines = doc.text.splitlines()
    kernels: list[tuple[KernelFunction, ast.FunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kf = _kernel_function(node, module, lines)
            if kf is not None:
                kernels.append((kf, node))
    if not kernels:
        return []
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    names = {kf.name for kf, _ in kernels}
    scopes = _Scopes(module, set(functions), functions, names)
    for kf, node in kernels:
        _resolve(kf, node, module, list(scopes.calls(kf.name)), lines)
        kf.node = node
        kf.context = doc.context(node)
    return [kf for kf, _ in kernels]


def _kernel_function(node: ast.FunctionDef, module: Module, lines: list[str]) -> KernelFunction | None:
    kinds = [module.decorator_kind(d) for d in node.decorator_list]
    if "jit" in kinds:
        kind = "jit"
    elif "prim_func" in kinds:
        kind = "prim_func"
    elif _has_inner_prim_func(node, module):
        kind = "factory"
    else:
        return None
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    _, start = _comment_directives(lines, first)
    a = node.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    body_tensors = _tensor_shapes(node, module)
    tensors = [
        p.arg
        for p in a.posonlyargs + a.args + a.kwonlyargs
        if _is_tensor_annotation(p.annotation) or p.arg in body_tensors
    ]
    if kind == "prim_func":
        tensors = params[:]
    consts = _const_symbols(node, module) if kind == "jit" else []
    return KernelFunction(node.name, kind, start, node.lineno, node.end_lineno or node.lineno, params, tensors, consts)


def _resolve(kf: KernelFunction, node: ast.FunctionDef, module: Module, calls, lines: list[str]) -> None:
    wanted = [p for p in kf.params if p not in kf.tensor_params] + [c for c in kf.consts if c not in kf.params]
    positional = [p.arg for p in node.args.posonlyargs + node.args.args]
    shapes = _tensor_shapes(node, module)

    def bind(name, value, source):
        if name in wanted and name not in kf.bindings:
            kf.bindings[name] = value
            kf.sources[name] = source

    # 1. call sites: `f(...)`, `f.compile(...)`, anywhere outside the function itself; literal
    #    values first, then those that come from argparse defaults
    for want_argparse in (False, True):
        for call, env, values, taint in calls:
            if kf.def_line <= call.lineno <= kf.end_line:
                continue
            pairs = []
            for i, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred) or i >= len(positional):
                    break
                pairs.append((positional[i], arg))
            pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg is not None]
            for name, arg in pairs:
                derived = _tainted(arg, taint)
                if (derived is not None) != want_argparse:
                    continue
                where = f"{P.ARGPARSE} ({derived})" if derived else f"call site line {call.lineno}"
                if name in kf.tensor_params:
                    _bind_from_tensor(arg, shapes.get(name), env, values, kf.consts, bind, where)
                    continue
                ok, v = try_eval(arg, env)
                if ok:
                    bind(name, v, where)
    # 2. signature defaults
    a = node.args
    pos = a.posonlyargs + a.args
    for p, d in zip(pos[len(pos) - len(a.defaults) :], a.defaults):
        ok, v = try_eval(d, module.env)
        if ok:
            bind(p.arg, v, "default")
    has_default = {p.arg for p in pos[len(pos) - len(a.defaults) :]}
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        if d is not None:
            has_default.add(p.arg)
            ok, v = try_eval(d, module.env)
            if ok:
                bind(p.arg, v, "default")
    # 3. the autotuner's first config
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call) and module.decorator_kind(dec) == "autotune":
            configs = next((k.value for k in dec.keywords if k.arg == "configs"), dec.args[0] if dec.args else None)
            first = P.first_config(configs, module.env, module.tree) if configs is not None else None
            for k, v in (first or {}).items():
                bind(k, v, P.AUTOTUNE)
    # 4. `# tilelang: name=value` comments directly above
    first_line = min([d.lineno for d in node.decorator_list] + [node.lineno])
    for line, text in _comment_directives(lines, first_line)[0]:
        for k, v in parse_directive(text, module.env).items():
            bind(k, v, f"comment line {line}")
    # 5. representative values that keep the factory's asserts true
    missing = [n for n in wanted if n not in kf.bindings and n not in has_default]
    if missing:
        annotations = {p.arg: p.annotation for p in pos + a.kwonlyargs}
        env = {**module.env, **kf.bindings}
        for k, v in P.choose(missing, annotations, P.factory_asserts(node), env).items():
            bind(k, v, P.ASSUMED)
            kf.assumed.append(k)
    kf.unresolved = [n for n in wanted if n not in kf.bindings and n not in has_default]


def alternative_bindings(kf: KernelFunction) -> dict[str, Any] | None:
    """The bindings with a second representative choice for every assumed value (None when
    there is none): an error that goes away with them depends on the assumption."""
    if not kf.assumed or kf.node is None:
        return None
    a = kf.node.args
    annotations = {p.arg: p.annotation for p in a.posonlyargs + a.args + a.kwonlyargs}
    fixed = {k: v for k, v in kf.bindings.items() if k not in kf.assumed}
    alt = P.choose(kf.assumed, annotations, P.factory_asserts(kf.node), fixed, skip=1)
    if all(alt.get(k) == kf.bindings.get(k) for k in kf.assumed):
        return None
    return {**kf.bindings, **alt}


def _bind_from_tensor(arg, shape_node, env, values, consts, bind, where) -> None:
    """`matmul(a, b)` with `a = torch.randn(M, K)` at module level binds the T.const dims of `A: T.Tensor((M, K))`."""
    if shape_node is None or not isinstance(shape_node, ast.Tuple | ast.List):
        return
    value = values.get(arg.id) if isinstance(arg, ast.Name) else arg
    shape = torch_shape(value, env) if value is not None else None
    if shape is None or len(shape) != len(shape_node.elts):
        return
    for dim, v in zip(shape_node.elts, shape):
        if isinstance(dim, ast.Name) and dim.id in consts:
            bind(dim.id, v, where)
