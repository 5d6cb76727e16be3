"""AST rewrite of kernel bodies: Python control flow → calls into the trace runtime.

Requires: the `ast.FunctionDef` of a kernel body, with its original positions.
Guarantees: the rewritten function, when executed, behaves like the original
for Python values (meta-programming stays Python), and emits IR for control
flow on IR values. Every generated node copies the location of the user node
it replaces, so bytecode positions — and therefore spans — point into the
user's file.

Rewrites (`R` is the runtime namespace, injected as `__tl__`):
- `for t in it:`            → `for t in R.iterate(it, names):`  (IR loop or Python iteration)
- `if c:` / `elif` / `else` → IR `IfThenElse` when `c` is an IR value, else Python `if`
- `while c:`                → IR `While` when `c` is an IR value, else Python `while`
- `break` / `continue`      → IR statements inside IR loops, Python ones inside Python loops
- `x = v`                   → `x = R.assign("x", v, <previous x>)` (stores into T.alloc_var,
                               let-binds loads, names freshly allocated buffers)
- `x op= v`                 → same through `R.aug_assign`
- `A: T.Tensor(...)`        → `A = R.annotate("A", T.Tensor(...), A)` (eager parameters)
- `a if c else b`, `and`, `or`, `not`, chained comparisons → lazy runtime helpers
- `assert c, msg`           → `R.assert_(c, msg)` (T.device_assert on IR values)
- `with X as (a, b):`       → unpacking through `R.unpack` (so `as (bx,)` works for 1-D grids)
- `return v`                → `return R.returned(v)` (records the statement's span)
"""

from __future__ import annotations

import ast
import copy
import itertools

RT = "__tl__"


def _rt(attr: str, node: ast.AST) -> ast.Attribute:
    return ast.copy_location(
        ast.Attribute(value=ast.copy_location(ast.Name(RT, ast.Load()), node), attr=attr, ctx=ast.Load()), node
    )


def _call(attr: str, args: list, node: ast.AST) -> ast.Call:
    return ast.copy_location(ast.Call(func=_rt(attr, node), args=args, keywords=[]), node)


def _equality(node: ast.Compare) -> ast.AST:
    """`a == b` / `a != b` (one comparison) as `eq(a, b)` / `ne(a, b)`: a `T.alloc_var` scalar
    compares as its value there (a Buffer's own `==` is identity, as dictionaries need)."""
    op = node.ops[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        return _call("eq" if isinstance(op, ast.Eq) else "ne", [node.left, node.comparators[0]], node)
    return node


def _const(v, node: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(v), node)


def _name(n: str, ctx, node: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(n, ctx), node)


def _lookup(name: str, node: ast.AST) -> ast.expr:
    # locals().get(name): the previous binding, or None (never raises)
    loc = ast.copy_location(ast.Call(func=_name("locals", ast.Load(), node), args=[], keywords=[]), node)
    get = ast.copy_location(ast.Attribute(value=loc, attr="get", ctx=ast.Load()), node)
    return ast.copy_location(ast.Call(func=get, args=[_const(name, node)], keywords=[]), node)


def _lambda(body: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.copy_location(ast.Lambda(args=args, body=body), body)


def _target_names(t: ast.expr) -> ast.expr:
    if isinstance(t, ast.Name):
        return ast.Tuple([ast.Constant(t.id)], ast.Load())
    if isinstance(t, (ast.Tuple, ast.List)):
        return ast.Tuple([ast.Constant(e.id if isinstance(e, ast.Name) else "i") for e in t.elts], ast.Load())
    return ast.Tuple([], ast.Load())


class KernelRewriter(ast.NodeTransformer):
    def __init__(self) -> None:
        self.counter = itertools.count()

    def tmp(self) -> str:
        return f"__tl_t{next(self.counter)}"

    # nested function definitions are left alone (macros are rewritten when called)
    def visit_FunctionDef(self, node: ast.FunctionDef):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda):
        return node

    def _body(self, stmts: list) -> list:
        out: list = []
        for s in stmts:
            r = self.visit(s)
            if isinstance(r, list):
                out.extend(r)
            elif r is not None:
                out.append(r)
        return out or [ast.copy_location(ast.Pass(), stmts[0]) if stmts else ast.Pass()]

    # -- loops ---------------------------------------------------------------
    def visit_For(self, node: ast.For):
        it = self.visit(node.iter)
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it = ast.copy_location(ast.Call(func=_rt("range_", it), args=it.args, keywords=it.keywords), it)
        names = ast.copy_location(_target_names(node.target), node)
        ast.fix_missing_locations(names)
        new_iter = _call("iterate", [it, names], node.iter)
        node.iter = new_iter
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse) if node.orelse else []
        return node

    def visit_While(self, node: ast.While):
        t = self.tmp()
        body = self._body(node.body)
        test = self.visit(node.test)
        assign = ast.copy_location(ast.Assign(targets=[_name(t, ast.Store(), node)], value=test), node)
        ir_while = ast.copy_location(
            ast.With(
                items=[ast.withitem(context_expr=_call("While", [_name(t, ast.Load(), node)], node))],
                body=body,
            ),
            node,
        )
        brk = ast.copy_location(ast.Break(), node)
        ir_branch = ast.copy_location(
            ast.If(test=_call("is_ir", [_name(t, ast.Load(), node)], node), body=[ir_while, brk], orelse=[]), node
        )
        not_truth = ast.copy_location(
            ast.UnaryOp(op=ast.Not(), operand=_call("truth", [_name(t, ast.Load(), node)], node)), node
        )
        py_exit = ast.copy_location(
            ast.If(test=not_truth, body=[ast.copy_location(ast.Break(), node)], orelse=[]), node
        )
        loop = ast.copy_location(
            ast.While(test=_const(True, node), body=[assign, ir_branch, py_exit, *body], orelse=[]), node
        )
        return ast.copy_location(
            ast.With(items=[ast.withitem(context_expr=_call("py_loop", [], node))], body=[loop]), node
        )

    def visit_Break(self, node: ast.Break):
        return ast.copy_location(ast.If(test=_call("brk", [], node), body=[node], orelse=[]), node)

    def visit_Continue(self, node: ast.Continue):
        return ast.copy_location(ast.If(test=_call("cont", [], node), body=[node], orelse=[]), node)

    # -- branches --------------------------------------------------------------
    def visit_If(self, node: ast.If):
        t = self.tmp()
        test = self.visit(node.test)
        body = self._body(node.body)
        orelse = self._body(node.orelse) if node.orelse else []
        assign = ast.copy_location(ast.Assign(targets=[_name(t, ast.Store(), node)], value=test), node.test)
        ir_then = ast.copy_location(
            ast.With(items=[ast.withitem(context_expr=_call("If", [_name(t, ast.Load(), node)], node))], body=body),
            node,
        )
        ir_stmts: list = [ir_then]
        if orelse:
            anchor = node.orelse[0]
            ir_stmts.append(
                ast.copy_location(
                    ast.With(items=[ast.withitem(context_expr=_call("Else", [], anchor))], body=orelse), anchor
                )
            )
        # Python branch: the body is duplicated (only one copy ever runs).
        py_if = ast.copy_location(
            ast.If(
                test=_call("truth", [_name(t, ast.Load(), node)], node),
                body=_clone(body),
                orelse=_clone(orelse),
            ),
            node,
        )
        dispatch = ast.copy_location(
            ast.If(test=_call("is_ir", [_name(t, ast.Load(), node)], node), body=ir_stmts, orelse=[py_if]), node
        )
        return [assign, dispatch]

    def visit_IfExp(self, node: ast.IfExp):
        return _call(
            "ifexp", [self.visit(node.test), _lambda(self.visit(node.body)), _lambda(self.visit(node.orelse))], node
        )

    def visit_BoolOp(self, node: ast.BoolOp):
        values = [self.visit(v) for v in node.values]
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        acc = values[0]
        for v in values[1:]:
            acc = _call(fn, [acc, _lambda(v)], node)
        return acc

    def visit_UnaryOp(self, node: ast.UnaryOp):
        node.operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return _call("not_", [node.operand], node)
        return node

    def visit_Compare(self, node: ast.Compare):
        node.left = self.visit(node.left)
        node.comparators = [self.visit(c) for c in node.comparators]
        if len(node.ops) == 1:
            return _equality(node)
        # a < b < c  →  and_(a < (t := b), lambda: t < c)
        parts = []
        left = node.left
        for i, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if i < len(node.ops) - 1:
                t = self.tmp()
                named = ast.copy_location(ast.NamedExpr(target=_name(t, ast.Store(), right), value=right), right)
                parts.append(_equality(ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[named]), node)))
                left = _name(t, ast.Load(), right)
            else:
                parts.append(_equality(ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[right]), node)))
        acc = parts[0]
        for p in parts[1:]:
            acc = _call("and_", [acc, _lambda(p)], node)
        return acc

    def visit_Expr(self, node: ast.Expr):
        # a bare call's value is dropped, but an extern call must still run (language/extern.py)
        node = self.generic_visit(node)
        if isinstance(node.value, ast.Call):
            node.value = _call("expr_stmt", [node.value], node.value)
        return node

    def visit_Assert(self, node: ast.Assert):
        msg = self.visit(node.msg) if node.msg is not None else _const("", node)
        return ast.copy_location(ast.Expr(_call("assert_", [self.visit(node.test), msg], node)), node)

    def visit_Return(self, node: ast.Return):
        value = self.visit(node.value) if node.value is not None else _const(None, node)
        node.value = _call("returned", [value], node)
        return node

    # -- assignments -----------------------------------------------------------
    def visit_Assign(self, node: ast.Assign):
        node.value = self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            node.value = _call("assign", [_const(name, node), node.value, _lookup(name, node)], node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign):
        node.value = self.visit(node.value)
        if isinstance(node.target, ast.Name):
            name = node.target.id
            op = type(node.op).__name__
            value = _call(
                "aug_assign",
                [_const(name, node), _const(op, node), _name(name, ast.Load(), node), node.value],
                node,
            )
            return ast.copy_location(ast.Assign(targets=[_name(name, ast.Store(), node)], value=value), node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if isinstance(node.target, ast.Name):
            name = node.target.id
            ann = self.visit(node.annotation)
            if node.value is None:
                value = _call("annotate", [_const(name, node), ann, _lookup(name, node)], node)
            else:
                value = _call("annotate_value", [_const(name, node), ann, self.visit(node.value)], node)
            return ast.copy_location(ast.Assign(targets=[_name(name, ast.Store(), node)], value=value), node)
        return node

    def visit_With(self, node: ast.With):
        prologue = []
        for item in node.items:
            item.context_expr = self.visit(item.context_expr)
            if isinstance(item.optional_vars, (ast.Tuple, ast.List)):
                t = self.tmp()
                target = item.optional_vars
                item.optional_vars = _name(t, ast.Store(), target)
                count = _const(len(target.elts), target)
                prologue.append(
                    ast.copy_location(
                        ast.Assign(
                            targets=[target], value=_call("unpack", [_name(t, ast.Load(), target), count], target)
                        ),
                        target,
                    )
                )
        node.body = prologue + self._body(node.body)
        return node


def _clone(stmts: list) -> list:
    import copy

    return [copy.deepcopy(s) for s in stmts]


def rewrite_function(fn_node: ast.FunctionDef) -> ast.FunctionDef:
    """Rewrite the body of `fn_node` (decorators removed); positions are kept.

    Works on a copy: `fn_node` belongs to a parsed module shared by every trace of the file,
    possibly on other threads, and the rewriter edits nodes in place."""
    fn_node = copy.deepcopy(fn_node)
    rw = KernelRewriter()
    new = ast.FunctionDef(
        name=fn_node.name,
        args=fn_node.args,
        body=rw._body(fn_node.body),
        decorator_list=[],
        returns=None,
        type_comment=None,
        **({"type_params": []} if hasattr(fn_node, "type_params") else {}),
    )
    ast.copy_location(new, fn_node)
    # strip parameter annotations: they are evaluated by the caller, not the trace
    for a in [*new.args.posonlyargs, *new.args.args, *new.args.kwonlyargs]:
        a.annotation = None
    if new.args.vararg:
        new.args.vararg.annotation = None
    if new.args.kwarg:
        new.args.kwarg.annotation = None
    ast.fix_missing_locations(new)
    return new
