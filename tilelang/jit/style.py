"""Which style a `@tilelang.jit` function is written in: a lazy factory or an eager kernel body.

The public rule is "lazy if the function returns a PrimFunc". Calling the function to find out
would run an eager body outside a trace, so the source decides first wherever it can:

* an inner `@T.prim_func` makes it a lazy factory;
* constructs only an eager body can contain make it eager: `T.const` / `T.empty` calls, a
  parameter annotated in the body (`A: T.Tensor(...)`), a `with T.Kernel(...)` outside any nested
  function, a parameter annotated `T.Tensor` in the signature;
* otherwise (a factory that gets its PrimFunc from a helper) nothing is known until the call:
  `JITImpl` calls it once as a factory and keeps the PrimFunc it returns — and if it turns out to
  be a kernel body after all (a tracing-only construct raises `JITNoBuilderError` outside a
  trace) it becomes eager.

Names are resolved through the function's globals and closure, so `torch.empty(...)` in a
factory is not mistaken for `T.empty(...)`; an `X.empty(...)` whose `X` cannot be resolved
counts by its spelling.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def static_style(func: Callable, node: ast.FunctionDef | None, sig: inspect.Signature) -> str | None:
    """'lazy', 'eager', or None when only the call can tell."""
    if any(type(p.annotation).__name__ == "TensorType" for p in sig.parameters.values()):
        return "eager"
    if node is None:
        return None
    if _has_inner_prim_func(node):
        return "lazy"
    env = _environment(func)
    params = set(sig.parameters)
    for n in _own_nodes(node):
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id in params:
            return "eager"
        if isinstance(n, ast.Call) and _is_language(n.func, env, ("const", "empty")):
            return "eager"
        if isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                ctx = item.context_expr
                if isinstance(ctx, ast.Call) and _is_language(ctx.func, env, ("Kernel", "ClusterKernel")):
                    return "eager"
    return None


def _has_inner_prim_func(fn_node: ast.FunctionDef) -> bool:
    for node in ast.walk(fn_node):
        if node is fn_node or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for d in node.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            if isinstance(target, ast.Attribute) and target.attr == "prim_func":
                return True
            if isinstance(target, ast.Name) and target.id == "prim_func":
                return True
    return False


def _own_nodes(fn_node: ast.FunctionDef):
    """The nodes of `fn_node`'s body, not descending into nested functions, lambdas or classes."""
    todo = list(fn_node.body)
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _NESTED))


def _environment(func: Callable) -> dict:
    env = dict(getattr(func, "__globals__", {}) or {})
    code = getattr(func, "__code__", None)
    for name, cell in zip(code.co_freevars if code else (), getattr(func, "__closure__", None) or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:  # an empty cell: not bound yet
            pass
    return env


def _resolve(e: ast.expr, env: dict) -> Any:
    """The object a `name` / `a.b.c` expression denotes in `env`, or None (nothing is called)."""
    if isinstance(e, ast.Name):
        return env.get(e.id)
    if isinstance(e, ast.Attribute):
        base = _resolve(e.value, env)
        return None if base is None else getattr(base, e.attr, None)
    return None


def _is_language(e: ast.expr, env: dict, names: tuple) -> bool:
    """Whether `e` denotes one of `tilelang.language`'s `names`. `X.name` whose `X` cannot be
    resolved (an import the environment does not show) counts by its spelling."""
    from .. import language

    obj = _resolve(e, env)
    if obj is None:
        return isinstance(e, ast.Attribute) and e.attr in names and _resolve(e.value, env) is None
    return any(obj is getattr(language, n) for n in names)
