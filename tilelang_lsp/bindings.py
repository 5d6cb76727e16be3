"""Find the kernel functions of a module and their compile-time values, statically.

Nothing here executes user code: the module is parsed with `ast` and only
literal expressions (numbers, strings, bools, None, tuples/lists of those,
dtype names, module constants and arithmetic on them) are evaluated.

For every top-level kernel function (``@tilelang.jit``, ``@jit`` imported from
tilelang, optionally under ``@autotune``; ``@T.prim_func``; or a factory whose
body holds an inner ``@T.prim_func``) parameter values are resolved in this
order: call sites in the same file, signature defaults, then a
``# tilelang: name=value, ...`` comment directly above the function.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from .literals import (
    assignments,
    module_constants,
    parse_directive,
    torch_shape,
    try_eval,
    value_nodes,
)

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
    sources: dict[str, str] = field(default_factory=dict)  # name -> "call site line N" | "default" | "comment line N"
    context: str = ""  # module-level imports/constants the function refers to (part of its cache key)


class Module:
    """What the module-level code lets us know without running it."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.tilelang_aliases = {"tilelang"}  # names bound to the tilelang package
        self.jit_names: set[str] = set()  # bare names bound to tilelang's jit / autotune
        self.autotune_names: set[str] = set()
        self.lang_aliases = {"T"}  # names bound to tilelang.language
        self._imports()
        self.env = module_constants(tree.body)

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


def _const_symbols(fn: ast.FunctionDef, module: Module) -> list[str]:
    out: list[str] = []
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "const"
            and module.is_lang(node.func.value)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out += [s for s in node.args[0].value.replace(",", " ").split() if s not in out]
    return out


def _tensor_shapes(fn: ast.FunctionDef) -> dict[str, ast.AST]:
    """Body annotations `A: T.Tensor((M, K), dtype)` -> shape node, keyed by parameter name."""
    shapes = {}
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _is_tensor_annotation(node.annotation)
        ):
            ann = node.annotation
            args = ann.args if isinstance(ann, ast.Call) else []
            if args:
                shapes[node.target.id] = args[0]
    return shapes


def _has_inner_prim_func(fn: ast.FunctionDef, module: Module) -> bool:
    return any(
        isinstance(n, ast.FunctionDef) and any(module.decorator_kind(d) == "prim_func" for d in n.decorator_list)
        for n in ast.walk(fn)
        if n is not fn
    )


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


class _Scopes(ast.NodeVisitor):
    """Collect (call node, env for its scope) for every call in the module."""

    def __init__(self, module: Module):
        self.module = module
        self.calls: list[tuple[ast.Call, dict[str, Any], dict[str, ast.AST]]] = []
        self.stack = [(module.env, value_nodes(module.tree.body))]

    def visit_FunctionDef(self, node):
        outer_env, outer_vals = self.stack[-1]
        env = {**outer_env, **module_constants(node.body, outer_env)}
        self.stack.append((env, {**outer_vals, **value_nodes(node.body)}))
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node):
        self.calls.append((node, *self.stack[-1]))
        self.generic_visit(node)


def analyze_module(source: str) -> list[KernelFunction]:
    """All kernel functions of `source` with resolved bindings. Raises SyntaxError."""
    tree = ast.parse(source)
    module = Module(tree)
    lines = source.splitlines()
    kernels: list[tuple[KernelFunction, ast.FunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kf = _kernel_function(node, module, lines)
            if kf is not None:
                kernels.append((kf, node))
    if not kernels:
        return []
    scopes = _Scopes(module)
    scopes.visit(tree)
    for kf, node in kernels:
        _resolve(kf, node, module, scopes.calls, lines)
        kf.context = _context(node, tree, source)
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
    body_tensors = _tensor_shapes(node)
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
    shapes = _tensor_shapes(node)

    def bind(name, value, source):
        if name in wanted and name not in kf.bindings:
            kf.bindings[name] = value
            kf.sources[name] = source

    # 1. call sites: `f(...)`, `f.compile(...)`, anywhere outside the function itself
    for call, env, values in calls:
        fn = call.func
        if isinstance(fn, ast.Attribute) and fn.attr in ("compile", "__call__"):
            fn = fn.value
        if not (isinstance(fn, ast.Name) and fn.id == kf.name):
            continue
        if kf.def_line <= call.lineno <= kf.end_line:
            continue
        where = f"call site line {call.lineno}"
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred) or i >= len(positional):
                break
            name = positional[i]
            if name in kf.tensor_params:
                _bind_from_tensor(arg, shapes.get(name), env, values, kf.consts, bind, where)
                continue
            ok, v = try_eval(arg, env)
            if ok:
                bind(name, v, where)
        for kw in call.keywords:
            if kw.arg is None:
                continue
            if kw.arg in kf.tensor_params:
                _bind_from_tensor(kw.value, shapes.get(kw.arg), env, values, kf.consts, bind, where)
                continue
            ok, v = try_eval(kw.value, env)
            if ok:
                bind(kw.arg, v, where)
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
    # 3. `# tilelang: name=value` comments directly above
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    for line, text in _comment_directives(lines, first)[0]:
        for k, v in parse_directive(text, module.env).items():
            bind(k, v, f"comment line {line}")
    kf.unresolved = [n for n in wanted if n not in kf.bindings and n not in has_default]


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


def _context(fn: ast.FunctionDef, tree: ast.Module, source: str) -> str:
    """Source of the top-level imports and assignments that bind a name `fn` reads."""
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
        n.value.id for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
    }
    parts = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            names = {name for name, _ in assignments([node])}
        else:
            continue
        if names & used or "*" in names:
            parts.append(ast.get_source_segment(source, node) or "")
    return "\n".join(parts)
