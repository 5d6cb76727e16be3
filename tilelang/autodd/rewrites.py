"""Candidate programs for the delta debugger: every way of making one program a little smaller.

Each candidate is the source of the current program with one edit applied — a run of statements
removed, a compound statement replaced by its body, a call replaced by an argument, an integer
shrunk. Candidates come out coarse first (large runs of statements before single ones, statements
before expressions), which is what makes delta debugging converge in few runs.

Nothing that uses `__freeze__` is ever touched: `with __freeze__:` blocks and statements holding a
`__freeze__(...)` call stay as written (see `tilelang.autodd.__freeze__`).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

FREEZE = "__freeze__"

# Where an edit applies: the path of (field, index) steps from the module to a node or a list.
Path = tuple[tuple[str, int | None], ...]


def size(tree: ast.AST) -> int:
    """What the debugger minimises: AST nodes, then the magnitude of integer constants."""
    nodes = 0
    magnitude = 0
    for node in ast.walk(tree):
        nodes += 1
        if isinstance(node, ast.Constant) and type(node.value) is int:
            magnitude += abs(node.value).bit_length()
    return nodes * 64 + magnitude


def _frozen(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == FREEZE:
            return True
        if isinstance(sub, ast.alias) and (sub.asname or sub.name) == FREEZE:
            return True  # its import: without it the frozen code would not run
    return False


def _resolve(tree: ast.AST, path: Path) -> object:
    obj: object = tree
    for field, index in path:
        obj = getattr(obj, field)
        if index is not None:
            obj = obj[index]  # type: ignore[index]
    return obj


def _statement_lists(node: ast.AST, path: Path = ()) -> Iterator[tuple[Path, list[ast.stmt]]]:
    """Every statement list in the tree, outermost first (a breadth-first order)."""
    queue: list[tuple[ast.AST, Path]] = [(node, path)]
    while queue:
        cur, p = queue.pop(0)
        if _frozen_block(cur):
            continue
        for field in ("body", "orelse", "finalbody"):
            value = getattr(cur, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield p + ((field, None),), value
                for i, child in enumerate(value):
                    queue.append((child, p + ((field, i),)))
        for i, handler in enumerate(getattr(cur, "handlers", []) or []):
            queue.append((handler, p + (("handlers", i),)))


def _frozen_block(node: ast.AST) -> bool:
    if isinstance(node, ast.With):
        return any(isinstance(it.context_expr, ast.Name) and it.context_expr.id == FREEZE for it in node.items)
    return False


def _edited(tree: ast.Module, path: Path, replace) -> str | None:
    """The source after `replace(old) -> new` at `path` (on a copy), or None when it does not unparse."""
    new_tree = copy.deepcopy(tree)
    *head, (field, index) = path
    parent = _resolve(new_tree, tuple(head))
    old = getattr(parent, field) if index is None else getattr(parent, field)[index]
    new = replace(old)
    if new is None:
        return None
    if index is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[index] = new
    try:
        return ast.unparse(ast.fix_missing_locations(new_tree)) + "\n"
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None


def _without_run(start: int, stop: int):
    def replace(body: list[ast.stmt]) -> list[ast.stmt] | None:
        if any(_frozen(s) for s in body[start:stop]):
            return None
        rest = body[:start] + body[stop:]
        return rest or [ast.Pass()]

    return replace


def statement_removals(tree: ast.Module) -> Iterator[str]:
    """Runs of statements removed, halves first, then quarters, … then single statements."""
    lists = list(_statement_lists(tree))
    longest = max((len(body) for _, body in lists), default=0)
    chunk = 1
    while chunk * 2 <= longest:
        chunk *= 2
    while chunk >= 1:
        for path, body in lists:
            if len(body) < chunk or (len(body) == 1 and isinstance(body[0], ast.Pass)):
                continue
            for start in range(0, len(body), chunk):
                out = _edited(tree, path, _without_run(start, min(start + chunk, len(body))))
                if out is not None:
                    yield out
        chunk //= 2


def _bind_zero(target: ast.expr) -> ast.stmt:
    if isinstance(target, ast.Tuple | ast.List):
        value: ast.expr = ast.Tuple(elts=[ast.Constant(0) for _ in target.elts], ctx=ast.Load())
    else:
        value = ast.Constant(0)
    return ast.Assign(targets=[copy.deepcopy(target)], value=value, lineno=0)


def _unwrapped(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """Bodies a compound statement can be replaced by (loop and `as` variables bound to 0)."""
    if _frozen_block(stmt):
        return []
    if isinstance(stmt, ast.If):
        return [b for b in (stmt.body, stmt.orelse) if b]
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [[_bind_zero(stmt.target), *stmt.body]]
    if isinstance(stmt, ast.While):
        return [stmt.body]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        binds = [_bind_zero(it.optional_vars) for it in stmt.items if it.optional_vars is not None]
        return [binds + stmt.body]
    if isinstance(stmt, ast.Try):
        return [stmt.body + stmt.finalbody]
    return []


def structure_simplifications(tree: ast.Module) -> Iterator[str]:
    """Compound statements replaced by their bodies; decorators dropped."""
    for path, body in list(_statement_lists(tree)):
        for i, stmt in enumerate(body):
            for new_body in _unwrapped(stmt):

                def replace(old: list[ast.stmt], i=i, new_body=new_body) -> list[ast.stmt]:
                    return old[:i] + copy.deepcopy(new_body) + old[i + 1 :]

                out = _edited(tree, path, replace)
                if out is not None:
                    yield out
            for d in range(len(getattr(stmt, "decorator_list", []) or [])):
                if _frozen(stmt.decorator_list[d]):
                    continue

                def drop(old: list[ast.stmt], i=i, d=d) -> list[ast.stmt]:
                    new = copy.deepcopy(old[i])
                    del new.decorator_list[d]
                    return old[:i] + [new] + old[i + 1 :]

                out = _edited(tree, path, drop)
                if out is not None:
                    yield out


def _expression_paths(tree: ast.Module) -> Iterator[tuple[Path, ast.expr]]:
    def walk(node: ast.AST, path: Path) -> Iterator[tuple[Path, ast.expr]]:
        if _frozen_block(node) or _frozen_call(node):
            return
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                if _editable(value):
                    yield path + ((field, None),), value
                yield from walk(value, path + ((field, None),))
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        if _editable(item):
                            yield path + ((field, i),), item
                        yield from walk(item, path + ((field, i),))

    yield from walk(tree, ())


def _frozen_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == FREEZE


def _editable(node: ast.AST) -> bool:
    store = isinstance(getattr(node, "ctx", None), ast.Store | ast.Del)
    return isinstance(node, ast.expr) and not store and not _frozen_call(node)


def _smaller_expressions(node: ast.expr) -> list[ast.expr]:
    out: list[ast.expr] = []
    if isinstance(node, ast.Call):
        out += [a for a in node.args if not isinstance(a, ast.Starred)][:2]
        for k in range(len(node.keywords)):
            fewer = copy.deepcopy(node)
            del fewer.keywords[k]
            out.append(fewer)
    elif isinstance(node, ast.BinOp):
        out += [node.left, node.right]
    elif isinstance(node, ast.BoolOp):
        out += node.values
    elif isinstance(node, ast.UnaryOp):
        out.append(node.operand)
    elif isinstance(node, ast.IfExp):
        out += [node.body, node.orelse]
    elif isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) > 1:
        out += [ast.Constant(1), ast.Constant(node.value // 2)]
    return out


def expression_simplifications(tree: ast.Module) -> Iterator[str]:
    """Calls by their arguments, operations by an operand, integers made smaller."""
    for path, node in list(_expression_paths(tree)):
        for smaller in _smaller_expressions(node):
            out = _edited(tree, path, lambda old, smaller=smaller: copy.deepcopy(smaller))
            if out is not None:
                yield out


def candidates(source: str) -> Iterator[str]:
    """Every one-edit smaller program of `source`, coarse edits first."""
    tree = ast.parse(source)
    seen = {source}
    for gen in (statement_removals, structure_simplifications, expression_simplifications):
        for out in gen(tree):
            if out not in seen:
                seen.add(out)
                yield out
