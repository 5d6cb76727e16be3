"""Turning editor text into traceable functions without running module code.

Requires: the text of a Python module. Guarantees: module top-level code is
never executed. The namespace a kernel sees is built statically: imports of
`tilelang*` modules (trusted) are resolved, module-level constants with
literal values are evaluated, everything else is absent (a kernel that needs
it gets an "unresolved name" diagnostic, never a guess).
"""

from __future__ import annotations

import ast
import importlib
import linecache
import operator
from typing import Any

_SAFE_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def register_text(path: str, source: str) -> None:
    """Make `source` what `linecache` (and so spans and errors) see for `path`."""
    lines = source.splitlines(keepends=True)
    linecache.cache[path] = (len(source), None, lines, path)


def literal_value(node: ast.AST, env: dict) -> Any:
    """Evaluate literals, names of known constants, tuples/lists and + - * / // % ** on them."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        vals = [literal_value(e, env) for e in node.elts]
        return tuple(vals) if isinstance(node, ast.Tuple) else vals
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise KeyError(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = literal_value(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _SAFE_BINOPS:
        return _SAFE_BINOPS[type(node.op)](literal_value(node.left, env), literal_value(node.right, env))
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        base = env.get(node.value.id)
        if base is not None and getattr(base, "__name__", "").startswith("tilelang"):
            return getattr(base, node.attr)
    raise ValueError("not a literal")


def _import(name: str) -> Any:
    if name == "tilelang" or name.startswith("tilelang."):
        return importlib.import_module(name)
    raise ImportError(name)


def static_namespace(tree: ast.Module) -> dict[str, Any]:
    """Names a kernel may use: tilelang imports and literal module constants."""
    ns: dict[str, Any] = {"__name__": "__tilelang_analysis__"}
    for stmt in tree.body:
        try:
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname:
                        ns[a.asname] = _import(a.name)
                    else:
                        top = a.name.split(".")[0]
                        _import(a.name)
                        ns[top] = _import(top)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
                mod = _import(stmt.module)
                for a in stmt.names:
                    if a.name == "*":
                        continue
                    try:
                        ns[a.asname or a.name] = getattr(mod, a.name)
                    except AttributeError:
                        ns[a.asname or a.name] = _import(f"{stmt.module}.{a.name}")
            elif isinstance(stmt, ast.Assign):
                value = literal_value(stmt.value, ns)
                for t in stmt.targets:
                    _bind_target(t, value, ns)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
                ns[stmt.target.id] = literal_value(stmt.value, ns)
        except (ImportError, ValueError, KeyError, TypeError, ZeroDivisionError, AttributeError):
            continue
    return ns


def _bind_target(t: ast.AST, value: Any, ns: dict) -> None:
    if isinstance(t, ast.Name):
        ns[t.id] = value
    elif isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (tuple, list)) and len(value) == len(t.elts):
        for e, v in zip(t.elts, value):
            _bind_target(e, v, ns)


def find_top_function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def define_function(fn_node: ast.FunctionDef, path: str, ns: dict) -> Any:
    """Create the (undecorated) function object for `fn_node`, positions intact."""
    import copy

    node = copy.copy(fn_node)
    node.decorator_list = []
    mod = ast.Module(body=[node], type_ignores=[])
    code = compile(mod, path, "exec", dont_inherit=True)
    exec(code, ns)  # defines the function only; its body does not run
    return ns[fn_node.name]


def decorator_info(fn_node: ast.FunctionDef) -> dict:
    """jit options written literally in the decorator, e.g. out_idx / target."""
    out: dict = {}
    for d in fn_node.decorator_list:
        if isinstance(d, ast.Call):
            for kw in d.keywords:
                if kw.arg:
                    try:
                        out[kw.arg] = literal_value(kw.value, {})
                    except (ValueError, KeyError):
                        pass
    return out


def _dotted(node: ast.AST, env: dict) -> Any:
    """`a.b.c` resolved by attribute lookups on a tilelang module or class in `env`."""
    if isinstance(node, ast.Name):
        base = env.get(node.id)
        if base is None or not getattr(base, "__module__", getattr(base, "__name__", "")).startswith("tilelang"):
            raise KeyError(node.id)
        return base
    if isinstance(node, ast.Attribute):
        return getattr(_dotted(node.value, env), node.attr)
    raise ValueError("not a dotted name")


def decorator_pass_configs(fn_node: ast.FunctionDef, env: dict) -> dict:
    """The `pass_configs={...}` written in the function's `@tilelang.jit(...)` decorator, keys as
    strings (`"tl.disable_tma_lower"` or `tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER`), values as
    literals; entries it cannot read statically are left out (and so are not claimed)."""
    out: dict = {}
    for d in fn_node.decorator_list:
        if not isinstance(d, ast.Call):
            continue
        for kw in d.keywords:
            if kw.arg != "pass_configs" or not isinstance(kw.value, ast.Dict):
                continue
            for k, v in zip(kw.value.keys, kw.value.values):
                try:
                    key = k.value if isinstance(k, ast.Constant) else _dotted(k, env)
                    out[str(getattr(key, "value", key))] = literal_value(v, env)
                except (ValueError, KeyError, AttributeError, TypeError):
                    continue
    return out
