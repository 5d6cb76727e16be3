"""Evaluate literal expressions statically: numbers, strings, bools, None, tuples/lists,
dtype names, and names bound once to such values (with arithmetic on them).
Nothing is executed; anything else raises `NotLiteral`."""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

# Names that mean "dtype" when read as `T.<name>` / `torch.<name>`.
DTYPES = {
    "float16", "float32", "float64", "bfloat16", "half", "float", "double",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz",
}  # fmt: skip
_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}  # fmt: skip
_TORCH_FACTORIES = {"randn", "rand", "empty", "zeros", "ones", "full", "randint"}


class NotLiteral(Exception):
    """The expression is not a compile-time literal."""


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        raise NotLiteral("not a finite number")  # inf / nan have no literal form to send to the worker
    return v


def evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    """Evaluate a literal expression; raise NotLiteral otherwise."""
    if isinstance(node, ast.Constant):
        return _finite(node.value)
    if isinstance(node, ast.Tuple | ast.List):
        vals = [evaluate(e, env) for e in node.elts]
        return tuple(vals) if isinstance(node, ast.Tuple) else vals
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise NotLiteral(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and f"{node.value.id}.{node.attr}" in env:
        return env[f"{node.value.id}.{node.attr}"]  # `args.batch`: an argparse default (see provenance.py)
    if isinstance(node, ast.Attribute) and node.attr in DTYPES and isinstance(node.value, ast.Name | ast.Attribute):
        return "float32" if node.attr == "float" else ("float16" if node.attr == "half" else node.attr)
    if isinstance(node, ast.UnaryOp):
        v = evaluate(node.operand, env)
        ops = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
        if type(node.op) in ops and isinstance(v, int | float | bool):
            return ops[type(node.op)](v)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = evaluate(node.left, env), evaluate(node.right, env)
        if isinstance(a, int | float) and isinstance(b, int | float):
            if isinstance(node.op, ast.Pow) and abs(b) > 64:
                raise NotLiteral("power too large")
            try:
                return _finite(_BINOPS[type(node.op)](a, b))
            except (ArithmeticError, ValueError) as e:
                raise NotLiteral(str(e)) from None
        if isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str):
            return a + b
    raise NotLiteral(ast.dump(node)[:40])


def try_eval(node: ast.AST, env: dict[str, Any]) -> tuple[bool, Any]:
    try:
        return True, evaluate(node, env)
    except (NotLiteral, RecursionError):
        return False, None


def assignments(body: list[ast.stmt]):
    """(target name, value node or None) for every binding in a scope, not descending into defs."""
    for node in body:
        if isinstance(node, ast.Assign):
            for tgt in node.targets:
                yield from _targets(tgt, node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, (node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, ast.For | ast.AsyncFor):
            yield from _targets(node.target, None)
            yield from assignments(node.body + node.orelse)
        elif isinstance(node, ast.If | ast.While):
            yield from assignments(node.body + node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    yield from _targets(item.optional_vars, None)
            yield from assignments(node.body)
        elif isinstance(node, ast.Try):
            yield from assignments(node.body + node.orelse + node.finalbody)
            for h in node.handlers:
                yield from assignments(h.body)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, None


def _targets(tgt: ast.AST, value: ast.AST | None):
    if isinstance(tgt, ast.Name):
        yield tgt.id, value
    elif isinstance(tgt, ast.Tuple | ast.List):
        vals = value.elts if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(tgt.elts) else None
        for i, e in enumerate(tgt.elts):
            yield from _targets(e, vals[i] if vals else None)


def module_constants(body: list[ast.stmt], outer: dict | None = None) -> dict[str, Any]:
    """Names bound exactly once (or always to the same value) to a literal in this scope."""
    env: dict[str, Any] = {}
    poisoned: set[str] = set()
    base = dict(outer or {})
    for name, value in assignments(body):
        ok, v = (False, None) if value is None else try_eval(value, {**base, **env})
        if not ok or name in poisoned or (name in env and env[name] != v):
            poisoned.add(name)
            env.pop(name, None)
            base.pop(name, None)
        else:
            env[name] = v
    return env


def value_nodes(body: list[ast.stmt]) -> dict[str, ast.AST]:
    vals: dict[str, ast.AST] = {}
    for name, value in assignments(body):
        if value is not None and name not in vals:
            vals[name] = value
    return vals


def torch_shape(node: ast.AST, env: dict[str, Any]) -> tuple | None:
    """`torch.randn(M, K, ...)` / `torch.empty((M, K))` -> literal shape, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _TORCH_FACTORIES):
        return None
    args = node.args[:1] if node.func.attr in ("full", "randint") else node.args
    if node.func.attr == "randint":
        args = node.args[2:3] if len(node.args) >= 3 else []
    if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
        args = args[0].elts
    ok, vals = try_eval(ast.Tuple(elts=list(args), ctx=ast.Load()), env)
    return vals if ok and vals and all(isinstance(v, int) for v in vals) else None


def parse_directive(text: str, env: dict[str, Any]) -> dict[str, Any]:
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError:
        return {}
    out = {}
    for kw in getattr(call, "keywords", []):
        ok, v = try_eval(kw.value, env)
        if kw.arg and ok:
            out[kw.arg] = v
    return out
