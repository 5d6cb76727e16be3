"""Turning editor text into traceable functions without running module code.

Requires: the text of a Python module. Guarantees: with trust "kernels" (the
default) module top-level code is never executed. The namespace a kernel sees
is built statically: imports of `tilelang*`, `torch*`, `math`, `functools`,
`itertools` and `typing` are resolved, module-level constants with literal values
(arithmetic on them, `T.*` / `torch.*` dtypes, `math.*` calls) are evaluated, and
functions defined in the file are defined (their bodies run only when a kernel
calls them; a decorator is applied only when it is tilelang's or functools'). Everything
else is absent (a kernel that needs it gets an "unresolved name" diagnostic, never
a guess). With trust "workspace" (`trust("workspace")`) the module's top level is
executed once per text, so every module-level name resolves.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import hashlib
import importlib
import linecache
import operator
import sys
import types
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

TRUST_LEVELS = ("kernels", "workspace", "none")
_TRUST: contextvars.ContextVar[str] = contextvars.ContextVar("tilelang_analysis_trust", default="kernels")
_MODULES: OrderedDict[tuple[str, str], dict] = OrderedDict()  # (path, sha1 of text) -> executed namespace
_ALLOWED_IMPORTS = ("tilelang", "torch", "math", "functools", "itertools", "typing")
_SAFE_CALLS = {"int": int, "float": float, "min": min, "max": max, "abs": abs, "round": round, "bool": bool}


@contextlib.contextmanager
def trust(level: str) -> Iterator[None]:
    """Within the block, `static_namespace` follows `level` ("kernels" | "workspace")."""
    token = _TRUST.set(level if level in TRUST_LEVELS else "kernels")
    try:
        yield
    finally:
        _TRUST.reset(token)


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
    if isinstance(node, ast.Attribute):
        base = (
            literal_value(node.value, env)
            if isinstance(node.value, ast.Attribute)
            else env.get(getattr(node.value, "id", ""))
        )
        if base is not None and _trusted_module(base):
            return getattr(base, node.attr)
    if isinstance(node, ast.Call) and not node.keywords:
        fn = (
            literal_value(node.func, env)
            if isinstance(node.func, ast.Attribute)
            else _SAFE_CALLS.get(getattr(node.func, "id", ""))
        )
        if fn is not None and (fn in _SAFE_CALLS.values() or getattr(fn, "__module__", None) == "math"):
            args = [literal_value(a, env) for a in node.args]
            if all(isinstance(a, int | float) for a in args):
                return fn(*args)
    raise ValueError("not a literal")


def _trusted_module(obj: Any) -> bool:
    name = getattr(obj, "__name__", "") or ""
    return isinstance(obj, types.ModuleType) and name.split(".")[0] in _ALLOWED_IMPORTS


class _LazyModule(types.ModuleType):
    """`import torch` costs seconds: the module is imported when a kernel first reads it."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def _import(name: str, lazy: bool = False) -> Any:
    if name.split(".")[0] not in _ALLOWED_IMPORTS:
        raise ImportError(name)
    if lazy and name not in sys.modules and not name.startswith("tilelang"):
        return _LazyModule(name)
    return importlib.import_module(name)


def static_namespace(tree: ast.Module, path: str = "<kernel>") -> dict[str, Any]:
    """Names a kernel may use (see the module docstring); with trust "workspace", the
    namespace the module's executed top level left (once per text and path)."""
    if _TRUST.get() == "workspace":
        return dict(_executed_module(tree, path))
    ns: dict[str, Any] = {"__name__": "__tilelang_analysis__"}
    defs = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.append(stmt)
            continue
        try:
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname:
                        ns[a.asname] = _import(a.name, lazy=True)
                    else:
                        top = a.name.split(".")[0]
                        if a.name != top:
                            _import(a.name, lazy=True)
                        ns[top] = _import(top, lazy=True)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
                if stmt.module.split(".")[0] != "tilelang" and stmt.module not in sys.modules:
                    continue  # `from torch import nn` would import torch now (seconds): left unresolved
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
        except (ImportError, ValueError, KeyError, TypeError, ZeroDivisionError, AttributeError, OverflowError):
            continue
    for stmt in defs:
        _define_helper(stmt, path, ns)
    return ns


def _define_helper(node: ast.FunctionDef, path: str, ns: dict) -> None:
    """Define a module-level function (its body does not run); decorators are applied only
    when they are tilelang's or functools' (`@T.macro`, `@tilelang.jit`, `@functools.cache`)."""
    decorators = []
    for d in node.decorator_list:
        try:
            target = d.func if isinstance(d, ast.Call) else d
            obj = literal_value(target, ns) if isinstance(target, ast.Attribute) else ns.get(getattr(target, "id", ""))
        except (ValueError, KeyError, AttributeError, TypeError):
            return
        if obj is None or (getattr(obj, "__module__", "") or "").split(".")[0] not in ("tilelang", "functools"):
            return  # an unknown decorator could change what the name means: leave the name unresolved
        decorators.append(d)
    import copy

    node = copy.copy(node)
    node.decorator_list = decorators
    try:
        exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec", dont_inherit=True), ns)
    except Exception:  # noqa: BLE001 - a default value or decorator that fails leaves the name unresolved
        ns.pop(node.name, None)


def _executed_module(tree: ast.Module, path: str) -> dict:
    """Trust "workspace": run the module's top level (not as __main__), once per (path, text)."""
    text = "".join(linecache.cache.get(path, (0, None, [], path))[2])
    key = (path, hashlib.sha1(text.encode()).hexdigest())
    got = _MODULES.get(key)
    if got is None:
        ns: dict[str, Any] = {"__name__": "__tilelang_analysis__", "__file__": path}
        try:
            exec(compile(tree, path, "exec", dont_inherit=True), ns)
        except Exception:  # noqa: BLE001 - e.g. a module-level CUDA tensor on a machine without a GPU:
            # keep what ran before the failure, and the static names for the rest
            with trust("kernels"):
                ns = {**static_namespace(tree, path), **ns}
        got = _MODULES[key] = ns
        while len(_MODULES) > 8:
            _MODULES.popitem(last=False)
    _MODULES.move_to_end(key)
    return got


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
