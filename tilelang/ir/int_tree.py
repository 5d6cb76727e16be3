"""Integer IR expressions as plain JSON data, and a small evaluator for that data.

Why: launch metadata (the CUDA grid) is stored on disk in the kernel cache and read
back by later processes. Storing Python source and `eval`-ing it would run whatever
an edited file says; this format is data: a tree of lists and ints, checked node by
node and evaluated by closures built here, so nothing from disk is ever compiled.

Format (`to_tree`): an int is a constant; `["p", i]` is scalar parameter `i`,
`["d", k]` dynamic dimension `k`; `[op, a, ...]` applies `op` to its operand trees:
`add sub mul floordiv floormod div bitand bitor bitxor shl shr min max` (binary; `div`
truncates toward zero), `eq ne lt le gt ge and or` (binary, giving 0/1), `not bitnot`
(unary), `select` (cond, then, else), `int` (truncate a float parameter toward zero),
`bool` (a float parameter as 0/1).

Requires (to_tree): integer arithmetic over the Vars that `names` maps to leaves.
Guarantees (compile_tree): the callable computes on Python ints exactly what
`ir.py_source` would; a malformed tree (unknown op, wrong arity, non-int constant,
too deep or too large) is a `ValueError` when compiled, never at a launch; shifts by
more than 64 bits raise instead of allocating huge ints; subtrees without leaves are
folded once.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from .expr import And, BinaryOp, Call, Cast, Compare, IntImm, Not, Or, PrimExpr, Select, Var
from .py_source import truncdiv

MAX_DEPTH = 64
MAX_NODES = 4096
_INT_LIMIT = 1 << 64  # constants beyond 64 bits cannot come from a kernel's launch grid


def _shl(a: int, b: int) -> int:
    if not 0 <= b <= 64:
        raise ValueError(f"launch-grid shift by {b} bits")
    return a << b


def _shr(a: int, b: int) -> int:
    if b < 0:
        raise ValueError(f"launch-grid shift by {b} bits")
    return a >> b


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "floormod": operator.mod,
    "div": truncdiv,
    "bitand": operator.and_,
    "bitor": operator.or_,
    "bitxor": operator.xor,
    "shl": _shl,
    "shr": _shr,
    "min": min,
    "max": max,
    "eq": lambda a, b: int(a == b),
    "ne": lambda a, b: int(a != b),
    "lt": lambda a, b: int(a < b),
    "le": lambda a, b: int(a <= b),
    "gt": lambda a, b: int(a > b),
    "ge": lambda a, b: int(a >= b),
    "and": lambda a, b: int(bool(a) and bool(b)),
    "or": lambda a, b: int(bool(a) or bool(b)),
}
_UNARY: dict[str, Callable[[Any], Any]] = {
    "not": lambda a: int(not a),
    "bitnot": operator.invert,
    "int": int,
    "bool": lambda a: int(bool(a)),
}
_IR_BINARY = {
    "add",
    "sub",
    "mul",
    "floordiv",
    "floormod",
    "div",
    "bitand",
    "bitor",
    "bitxor",
    "shl",
    "shr",
    "min",
    "max",
}


def host_leaves(func: Any) -> dict:
    """The leaves a host-side tree of `func` may use: each scalar parameter (`("p", index)`) and
    each dynamic dimension (`("d", index)`, in `func.dynamic_vars()` order) — what the launcher
    has in hand before a launch (grids, scratch shapes)."""
    from .expr import Var

    names: dict = {}
    for i, p in enumerate(func.params):
        if isinstance(p, Var):
            names[p] = ("p", i)
    for k, v in enumerate(func.dynamic_vars()):
        names.setdefault(v, ("d", k))
    return names


def to_tree(e: PrimExpr | int, names: dict) -> Any:
    """The JSON tree of integer expression `e`; `names` maps each Var to `["p", i]` or
    `["d", k]`. Raises TypeError for anything that is not integer arithmetic and
    ValueError for a Var that `names` lacks."""
    if isinstance(e, bool):
        return int(e)
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return int(e.value)
    if isinstance(e, Var):
        if e not in names:
            raise ValueError(f"expression uses `{e.name}`, which is not a parameter or tensor dimension")
        return list(names[e])
    if isinstance(e, BinaryOp) and e.op in _IR_BINARY:
        return [e.op, to_tree(e.a, names), to_tree(e.b, names)]
    if isinstance(e, Compare):
        return [e.op, to_tree(e.a, names), to_tree(e.b, names)]
    if isinstance(e, And):
        return ["and", to_tree(e.a, names), to_tree(e.b, names)]
    if isinstance(e, Or):
        return ["or", to_tree(e.a, names), to_tree(e.b, names)]
    if isinstance(e, Not):
        return ["not", to_tree(e.a, names)]
    if isinstance(e, Select):
        return ["select", to_tree(e.cond, names), to_tree(e.true_value, names), to_tree(e.false_value, names)]
    if isinstance(e, Cast) and (e.dtype.is_integer or e.dtype.is_bool):
        inner = to_tree(e.value, names)
        if e.value.dtype.is_integer or e.value.dtype.is_bool:
            return inner
        return ["int" if e.dtype.is_integer else "bool", inner]  # C's float conversion truncates toward zero
    if isinstance(e, Call) and e.op == "bitnot":
        return ["bitnot", to_tree(e.args[0], names)]
    raise TypeError(f"not integer arithmetic: `{e}`")


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0


def compile_tree(tree: Any, n_params: int, n_dyn: int) -> Callable[[Any, Any], Any]:
    """`fn(values, dyn)` evaluating `tree` with `["p", i]` = `values[i]` (i < n_params) and
    `["d", k]` = `dyn[k]` (k < n_dyn). A tree without leaves gives a function with a
    `.const` attribute holding its value. Raises ValueError for a malformed tree."""
    fn, const = _compile(tree, n_params, n_dyn, 0, _Budget())
    if fn is None:
        return _constant(const)
    return fn


def _constant(value: int) -> Callable[[Any, Any], Any]:
    def const_fn(values: Any, dyn: Any) -> Any:
        return value

    const_fn.const = value  # type: ignore[attr-defined]
    return const_fn


def _check_int(x: Any) -> int:
    if type(x) is not int or not -_INT_LIMIT < x < _INT_LIMIT:
        raise ValueError(f"expression constant {x!r} is not a 64-bit integer")
    return x


def _compile(tree: Any, n_params: int, n_dyn: int, depth: int, budget: _Budget) -> tuple[Any, Any]:
    """(closure, None) for a subtree with leaves, (None, value) for a constant one."""
    budget.nodes += 1
    if depth > MAX_DEPTH or budget.nodes > MAX_NODES:
        raise ValueError("expression tree too deep or too large")
    if type(tree) is int:
        return None, _check_int(tree)
    if type(tree) is not list or not tree or type(tree[0]) is not str:
        raise ValueError(f"malformed expression node {tree!r:.80}")
    op, args = tree[0], tree[1:]
    if op in ("p", "d"):
        limit = n_params if op == "p" else n_dyn
        if len(args) != 1 or type(args[0]) is not int or not 0 <= args[0] < limit:
            raise ValueError(f"expression leaf {tree!r:.80} is out of range")
        i = args[0]
        if op == "p":
            return (lambda values, dyn: values[i]), None
        return (lambda values, dyn: dyn[i]), None
    parts = [_compile(a, n_params, n_dyn, depth + 1, budget) for a in args]
    if op in _BINARY and len(parts) == 2:
        fused = _ceildiv(op, args) if parts[1][0] is None else None
        return (fused, None) if fused is not None else _binary(_BINARY[op], parts[0], parts[1])
    if op in _UNARY and len(parts) == 1:
        f = _UNARY[op]
        (fa, ca) = parts[0]
        if fa is None:
            return None, f(ca)
        return (lambda values, dyn: f(fa(values, dyn))), None
    if op == "select" and len(parts) == 3:
        (fc, cc), (ft, ct), (ff, cf) = parts
        if fc is None:
            return (ft, ct) if cc else (ff, cf)
        ft = ft or _constant(ct)
        ff = ff or _constant(cf)
        return (lambda values, dyn: ft(values, dyn) if fc(values, dyn) else ff(values, dyn)), None
    raise ValueError(f"unknown expression operator {op!r:.40} with {len(parts)} operand(s)")


def _ceildiv(op: str, args: list) -> Callable | None:
    """One closure for `(leaf + c1) // c2`, the shape of almost every launch-grid dimension
    (`T.ceildiv(n, block)`), which is evaluated at every launch."""
    inner, c2 = args
    if op != "floordiv" or type(c2) is not int or c2 == 0:
        return None
    if type(inner) is not list or len(inner) != 3 or inner[0] != "add" or type(inner[2]) is not int:
        return None
    leaf, c1 = inner[1], inner[2]
    if type(leaf) is not list or len(leaf) != 2 or leaf[0] not in ("p", "d"):
        return None
    i = leaf[1]  # already checked by _compile
    if leaf[0] == "d":
        return lambda values, dyn: (dyn[i] + c1) // c2
    return lambda values, dyn: (values[i] + c1) // c2


def _binary(f: Callable, a: tuple, b: tuple) -> tuple[Any, Any]:
    (fa, ca), (fb, cb) = a, b
    if fa is None and fb is None:
        try:
            return None, f(ca, cb)
        except ArithmeticError as err:
            raise ValueError(f"expression constant folding failed: {err}") from None
    if fb is None:
        return (lambda values, dyn: f(fa(values, dyn), cb)), None
    if fa is None:
        return (lambda values, dyn: f(ca, fb(values, dyn))), None
    return (lambda values, dyn: f(fa(values, dyn), fb(values, dyn))), None
