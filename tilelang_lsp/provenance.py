"""Where compile-time values come from when no call site writes them: argparse defaults,
an autotuner's first config, and representative values that satisfy the kernel's asserts.

Everything here is static (`ast` only): the user's code is never executed.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from typing import Any

from .literals import NotLiteral, evaluate, try_eval, value_nodes

ARGPARSE = "argparse default"
AUTOTUNE = "autotune config"
ASSUMED = "assumed"


# -- argparse ----------------------------------------------------------------------------------
def argparse_defaults(tree: ast.Module, env: dict[str, Any]) -> tuple[dict[str, tuple[Any, int]], set[str]]:
    """`parser.add_argument("--batch", type=int, default=8)` anywhere in the module -> {"batch": (8, line)},
    and the names bound to `<parser>.parse_args(...)` (plus `args`, the usual parameter name).

    `store_true` / `store_false` flags default to False / True; an option without a default is absent."""
    out: dict[str, tuple[Any, int]] = {}
    holders = {"args"}
    for node in _argparse_nodes(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in ("parse_args", "parse_known_args")
        ):
            holders |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        ):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest = None
        if "dest" in kw:
            ok, dest = try_eval(kw["dest"], {})
        if not dest:
            longs = [f for f in flags if f.startswith("--")]
            name = (longs or flags or [""])[0].lstrip("-")
            dest = name.replace("-", "_")
        if not isinstance(dest, str) or not dest.isidentifier():
            continue
        action = kw.get("action")
        act = action.value if isinstance(action, ast.Constant) else None
        if "default" in kw:
            ok, v = try_eval(kw["default"], env)
            if not ok:
                continue
            typ = kw.get("type")
            if isinstance(typ, ast.Name) and typ.id in ("int", "float") and isinstance(v, str):
                try:
                    v = int(v) if typ.id == "int" else float(v)  # argparse converts string defaults
                except ValueError:
                    continue
        elif act in ("store_true", "store_false"):
            v = act == "store_false"
        else:
            continue
        out.setdefault(dest, (v, node.lineno))
    return out, holders


_ARGPARSE_NODES: dict[int, tuple[ast.stmt, list[ast.AST]]] = {}


def _argparse_nodes(tree: ast.Module) -> list[ast.AST]:
    """The `add_argument(...)` calls and `x = ....parse_args()` assignments, per top-level
    statement (cached by the statement node: unchanged regions keep their nodes)."""
    out: list[ast.AST] = []
    for stmt in tree.body:
        got = _ARGPARSE_NODES.get(id(stmt))
        if got is None or got[0] is not stmt:
            hits = [
                n
                for n in ast.walk(stmt)
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument")
                or (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call))
            ]
            if len(_ARGPARSE_NODES) > 4096:
                _ARGPARSE_NODES.clear()
            got = _ARGPARSE_NODES[id(stmt)] = (stmt, hits)
        out += got[1]
    return out


# -- autotune -----------------------------------------------------------------------------------
_MAX_ITEMS = 4096


def first_config(node: ast.AST, env: dict[str, Any], module: ast.Module) -> dict | None:
    """The first dict an autotuner's `configs=` expression yields, when that is statically clear."""
    funcs = {s.name: s for s in module.body if isinstance(s, ast.FunctionDef)}
    values = value_nodes(module.body)
    try:
        for item in _iterate(node, env, values, funcs, 0):
            return item if isinstance(item, dict) and all(isinstance(k, str) for k in item) else None
    except (NotLiteral, RecursionError, TypeError, ValueError):
        return None
    return None


def _value(node: ast.AST, env: dict, values: dict, funcs: dict, depth: int) -> Any:
    if depth > 40:
        raise NotLiteral("too deep")
    if isinstance(node, ast.Dict):
        return {
            _value(k, env, values, funcs, depth + 1): _value(v, env, values, funcs, depth + 1)
            for k, v in zip(node.keys, node.values)
            if k is not None
        }
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {k.arg: _value(k.value, env, values, funcs, depth + 1) for k in node.keywords if k.arg}
    if isinstance(node, ast.Subscript):
        base = _value(node.value, env, values, funcs, depth + 1)
        return base[_value(node.slice, env, values, funcs, depth + 1)]
    if isinstance(node, ast.Name) and node.id not in env and node.id in values:
        return _value(values[node.id], env, values, funcs, depth + 1)
    if isinstance(node, ast.ListComp | ast.Call):
        return list(itertools.islice(_iterate(node, env, values, funcs, depth + 1), _MAX_ITEMS))
    if isinstance(node, ast.Tuple | ast.List):
        vals = [_value(e, env, values, funcs, depth + 1) for e in node.elts]
        return tuple(vals) if isinstance(node, ast.Tuple) else vals
    return evaluate(node, env)


def _iterate(node: ast.AST, env: dict, values: dict, funcs: dict, depth: int) -> Iterator[Any]:
    if depth > 40:
        raise NotLiteral("too deep")
    if isinstance(node, ast.Name) and node.id not in env and node.id in values:
        yield from _iterate(values[node.id], env, values, funcs, depth + 1)
        return
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name == "product" and not node.keywords:
            pools = [list(itertools.islice(_iterate(a, env, values, funcs, depth + 1), 256)) for a in node.args]
            yield from itertools.islice(itertools.product(*pools), _MAX_ITEMS)
            return
        if name in ("list", "tuple") and len(node.args) == 1:
            yield from _iterate(node.args[0], env, values, funcs, depth + 1)
            return
        if name == "range" and node.args:
            args = [_value(a, env, values, funcs, depth + 1) for a in node.args]
            yield from itertools.islice(range(*args), _MAX_ITEMS)
            return
        if isinstance(node.func, ast.Name) and node.func.id in funcs and not node.args and not node.keywords:
            fn = funcs[node.func.id]
            local = value_nodes(fn.body)
            ret = next((s.value for s in fn.body if isinstance(s, ast.Return) and s.value is not None), None)
            if ret is None:
                raise NotLiteral("no return")
            yield from _iterate(ret, env, {**values, **local}, funcs, depth + 1)
            return
        raise NotLiteral("call")
    if isinstance(node, ast.ListComp | ast.GeneratorExp) and len(node.generators) == 1:
        gen = node.generators[0]
        for item in _iterate(gen.iter, env, values, funcs, depth + 1):
            scope = dict(env)
            _bind(gen.target, item, scope)
            if all(_value(c, scope, values, funcs, depth + 1) for c in gen.ifs):
                yield _value(node.elt, scope, values, funcs, depth + 1)
        return
    v = _value(node, env, values, funcs, depth + 1)
    if not isinstance(v, list | tuple):
        raise NotLiteral("not iterable")
    yield from v


def _bind(target: ast.AST, value: Any, scope: dict) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif (
        isinstance(target, ast.Tuple | ast.List) and isinstance(value, tuple | list) and len(value) == len(target.elts)
    ):
        for t, v in zip(target.elts, value):
            _bind(t, v, scope)
    else:
        raise NotLiteral("target")


# -- representative values ----------------------------------------------------------------------
_SIZE = [1024, 256, 4096, 2048, 512, 128, 64, 8192]  # the second is the alternative choice


def candidates(name: str, annotation: ast.AST | None) -> list[Any]:
    """Values to try for a parameter nobody gave a value, most typical first."""
    n = name.lower()
    ann = annotation.id if isinstance(annotation, ast.Name) else getattr(annotation, "attr", None)
    if ann == "bool" or n.startswith(("is_", "use_", "enable_", "has_", "with_", "trans")) or n in ("causal",):
        return [False, True]
    if "dtype" in n or n in ("dt", "precision"):
        return ["float32"] if n.startswith(("accum", "acc")) else ["float16"]
    if ann == "float" or n in ("scale", "sm_scale", "softmax_scale", "alpha", "beta", "eps", "epsilon"):
        return [1e-5] if n.startswith("eps") else [1.0]
    if ann == "str":
        return []
    if "thread" in n:
        return [128, 256, 64]
    if "stage" in n:
        return [2, 3, 1]
    if n.startswith(("block", "blk", "tile", "bm", "bn", "bk")) or n in ("bm", "bn", "bk"):
        return [32, 64, 16, 128] if n.endswith("k") else [128, 64, 32, 256, 16]
    if n in ("batch", "batch_size", "bs", "b", "bsz"):
        return [1, 2, 4, 8]
    if "head" in n and "dim" not in n or n in ("h", "nheads"):
        return [8, 16, 32, 4, 1] if "kv" not in n else [1, 2, 4, 8]
    if "group" in n:
        return [1, 2, 4, 8]
    if n in ("dim", "d", "head_dim", "headdim", "d_head", "dim_qk", "dim_v", "dv", "dk") or n.startswith("dim"):
        return [128, 64, 256]
    if "seq" in n or "len" in n or "ctx" in n or "token" in n:
        return [4096, 1024, 2048, 512]
    if "split" in n or "chunk" in n or "page" in n:
        return [4, 2, 8, 1, 16, 64]
    if n.startswith(("num_", "n_")) and "warp" in n:
        return [4, 8]
    if n in ("k_pack", "pack", "unroll", "vec", "vector_size", "rasterization", "swizzle", "enable_rasteration"):
        return [1, 2, 4]
    return _SIZE


def factory_asserts(fn: ast.FunctionDef) -> list[ast.expr]:
    """`assert` tests at the top of the factory body (those run before the kernel is built)."""
    out = []
    for stmt in fn.body:
        if isinstance(stmt, ast.Assert):
            out.append(stmt.test)
        elif isinstance(stmt, ast.If):
            out += [s.test for s in stmt.body if isinstance(s, ast.Assert)]
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


_CMP = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}  # fmt: skip


def _compare(test: ast.Compare, env: dict) -> tuple[bool, Any]:
    try:
        left = evaluate(test.left, env)
        for op, right_node in zip(test.ops, test.comparators):
            right = evaluate(right_node, env)
            if type(op) not in _CMP or not _CMP[type(op)](left, right):
                return True, type(op) not in _CMP
            left = right
        return True, True
    except (NotLiteral, TypeError, ZeroDivisionError, RecursionError):
        return False, None


def _eval_bool(test: ast.expr, env: dict) -> tuple[bool, Any]:
    if isinstance(test, ast.BoolOp):
        vals = [_eval_bool(v, env) for v in test.values]
        if not all(ok for ok, _ in vals):
            return False, None
        bools = [v for _, v in vals]
        return True, all(bools) if isinstance(test.op, ast.And) else any(bools)
    if isinstance(test, ast.Compare):
        return _compare(test, env)
    return try_eval(test, env)


def choose(
    names: list[str], annotations: dict[str, ast.AST | None], tests: list[ast.expr], env: dict, skip: int = 0
) -> dict[str, Any]:
    """Representative values for `names` that keep every evaluable assert true (greedy, then a
    small joint search). `skip=1` gives a second, different choice where one exists: it is used
    to tell whether an error depends on the assumed values."""
    cands = {n: candidates(n, annotations.get(n)) for n in names}
    tests = [t for t in tests if _names(t) & set(names)]

    def ok(values: dict) -> bool:
        scope = {**env, **values}
        return all(not r[0] or r[1] for r in (_eval_bool(t, scope) for t in tests))

    chosen: dict[str, Any] = {}
    for n in names:
        options = cands[n][skip:] + cands[n][:skip] if len(cands[n]) > skip else cands[n]
        pick = next((c for c in options if ok({**chosen, n: c})), options[0] if options else None)
        if options:
            chosen[n] = pick
    if ok(chosen):
        return chosen
    pools = [cands[n][:4] for n in chosen]
    for combo in itertools.islice(itertools.product(*pools), 5000):
        trial = dict(zip(chosen, combo))
        if ok(trial):
            return trial
    return chosen
